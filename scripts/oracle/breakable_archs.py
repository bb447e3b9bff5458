#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The architectures a vLLM release runs with breakable CUDA graphs by default, read from its code.

vLLM auto-enables `VLLM_USE_BREAKABLE_CUDAGRAPH=1` (compilation mode NONE, piecewise modes kept)
for model classes that carry no `@support_torch_compile`: 0.26-0.28 list them inline in
`VllmConfig.__post_init__` (`any(a in (...) for a in self.model_config.architectures)`), 0.29+
in the module constant `DEFAULT_BREAKABLE_CUDAGRAPH_ARCHITECTURES` (CUDA; ROCm trims it). This
parses `vllm/config/vllm.py` of an installed vLLM or of an unpacked wheel (no import, no GPU) and
prints `{"vllm_version": ..., "breakable_architectures": [...]}`:

    python3 scripts/oracle/breakable_archs.py /work/vllm-src/0.33.0 0.33.0 \\
        > tests/data/oracle-breakable/0.33.0.json
    VENV/bin/python scripts/oracle/breakable_archs.py     # the installed vllm, its own version

tests/core/vllm/test_compilation_rules.py holds cgplan's `VllmRules.breakable_architectures` to these files.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def breakable_architectures(vllm_py: Path) -> list[str]:
    """The CUDA default list of one `vllm/config/vllm.py`."""
    tree = ast.parse(vllm_py.read_text())
    for node in tree.body:  # 0.29+: the module constant
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "DEFAULT_BREAKABLE_CUDAGRAPH_ARCHITECTURES"
            for t in node.targets
        ):
            return sorted(_strings(node.value))
    # 0.26-0.28: the tuple in `any(a in (...) for a in self.model_config.architectures)` of the
    # `if` that sets VLLM_USE_BREAKABLE_CUDAGRAPH
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        sets_env = any(
            isinstance(n, ast.Constant) and n.value == "VLLM_USE_BREAKABLE_CUDAGRAPH"
            for n in ast.walk(node.test)
        )
        if not sets_env:
            continue
        for n in ast.walk(node.test):
            if (
                isinstance(n, ast.Compare)
                and isinstance(n.ops[0], ast.In)
                and isinstance(n.comparators[0], ast.Tuple)
            ):
                return sorted(_strings(n.comparators[0]))
    return []


def main() -> int:
    if len(sys.argv) == 3:
        root, version = Path(sys.argv[1]), sys.argv[2]
    else:
        import vllm  # the installed release

        root, version = Path(vllm.__file__).parent.parent, vllm.__version__
    archs = breakable_architectures(root / "vllm" / "config" / "vllm.py")
    json.dump({"vllm_version": version, "breakable_architectures": archs}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
