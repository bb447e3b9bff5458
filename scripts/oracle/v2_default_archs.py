#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The architectures a vLLM release runs on Model Runner V2 by default, read from its code.

vllm/config/vllm.py (0.26.0-0.28.0) holds `DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = frozenset({...})`,
the models `_is_default_v2_model_runner_model` sends to V2 when the runner is `auto`; from 0.29.0
V2 is the default for every model and the table is gone. This parses the installed (or unpacked)
vLLM's vllm/config/vllm.py with `ast` (no import, no torch) and prints
`{"vllm_version": ..., "default_v2_architectures": [...] or null}`:

    VENV/bin/python scripts/oracle/v2_default_archs.py > tests/data/oracle-v2-default-archs/X.json
    python3 scripts/oracle/v2_default_archs.py /path/to/site-packages 0.28.0

(an unpacked wheel serves: `unzip vllm-X.whl 'vllm/config/*'`). tests/core/vllm/test_rule_edges.py
holds `VllmRules.v2_default_moe_architectures` to these files.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

NAME = "DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES"


def read(site_packages: Path) -> list[str] | None:
    tree = ast.parse((site_packages / "vllm" / "config" / "vllm.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == NAME for t in node.targets
        ):
            value = node.value
            if isinstance(value, ast.Call):  # frozenset({...})
                (value,) = value.args
            assert isinstance(value, (ast.Set, ast.List, ast.Tuple)), ast.dump(value)
            return sorted(ast.literal_eval(e) for e in value.elts)
    return None


def main(argv: list[str]) -> int:
    if argv:
        site, version = Path(argv[0]), argv[1]
    else:
        import importlib.metadata

        import vllm

        site = Path(vllm.__file__).resolve().parent.parent
        version = importlib.metadata.version("vllm")
    print(json.dumps({"vllm_version": version, "default_v2_architectures": read(site)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
