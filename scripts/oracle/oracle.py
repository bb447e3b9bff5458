#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The project's oracle: the product's engine (cgplan/gpu/vllm_oracle.py), as a test-data tool.

The code that runs vLLM's own config, dispatcher and graph-manager code on a CPU lives in the
package (`cgplan verify` runs it); this wrapper keeps the old command line of this folder:

    .cache/venv-0.33.0/bin/python scripts/oracle/oracle.py my-config.yaml          # one config -> stdout
    .cache/venv-0.33.0/bin/python scripts/oracle/oracle.py --out-dir out/ a.yaml b.yaml   # batch

What it adds to the engine: YAML configs (read with the venv's PyYAML, handed over as JSON; the
package reads YAML only in cgplan/io/), relative `model_dir` values starting at configs/models/
(`--models-dir`), and EngineArgs' own usage context (`--usage-context none`, as this script always
ran; scripts/record_golden.py and `cgplan verify` use `vllm serve`'s, the engine's default).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
ENGINE = HERE.parent.parent / "cgplan" / "gpu" / "vllm_oracle.py"
MODELS = HERE.parent.parent / "configs" / "models"


def engine() -> ModuleType:
    """cgplan/gpu/vllm_oracle.py loaded by path (the venv has vLLM, not cgplan)."""
    spec = importlib.util.spec_from_file_location("cgplan_oracle", ENGINE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["cgplan_oracle"] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    args = sys.argv[1:]
    if "--models-dir" not in args:
        args += ["--models-dir", str(MODELS)]
    if "--usage-context" not in args:
        args += ["--usage-context", "none"]
    with tempfile.TemporaryDirectory(prefix="cgplan-oracle-") as tmp:
        out = []
        for a in args:
            if a.endswith((".yaml", ".yml")) and Path(a).is_file():
                import yaml

                target = Path(tmp) / f"{Path(a).stem}.json"  # the stem names the batch output
                target.write_text(json.dumps(yaml.safe_load(Path(a).read_text()) or {}))
                a = str(target)
            out.append(a)
        return int(engine().main(out))


if __name__ == "__main__":
    sys.exit(main())
