#!/usr/bin/env python3
"""Record each release's speculative methods from vLLM's own source (vllm/config/speculative.py).

`SpeculativeConfig.method` is typed `SpeculativeMethod`, a `Literal` built from other literals
(`EagleModelTypes`, `MTPModelTypes`, ...); `__post_init__` replaces every MTP model type but "mtp"
by "mtp" with a warning. This reads the literals with `ast` (no import: the file needs torch) and
writes, per release, every method name vLLM accepts, the MTP model types, and the warning's text.

    python3 scripts/oracle/spec_methods.py -o tests/data/oracle-spec-methods/methods.json \
        0.26.0=/work/oracle-venvs/venv-0.26.0/lib/python3.11/site-packages \
        0.27.0=/tmp/vw/0.27.0 ...   # a folder holding vllm/config/speculative.py (an unzipped wheel)

(`pip download --no-deps vllm==X` and `unzip X.whl 'vllm/config/speculative.py'` give the file.)
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path


def _literals(tree: ast.Module) -> dict[str, list[ast.expr]]:
    out: dict[str, list[ast.expr]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Subscript) and getattr(value.value, "id", None) == "Literal":
                items = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
                out[node.targets[0].id] = list(items)
    return out


def _expand(name: str, table: dict[str, list[ast.expr]]) -> list[str]:
    names: list[str] = []
    for item in table[name]:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            names.append(item.value)
        elif isinstance(item, ast.Name):
            names.extend(_expand(item.id, table))
        else:
            raise ValueError(f"{name}: an entry that is neither a string nor a literal ({ast.dump(item)})")
    return names


def release_methods(root: Path) -> dict[str, object]:
    source = (root / "vllm" / "config" / "speculative.py").read_text()
    table = _literals(ast.parse(source))
    m = re.search(r'"(method `%s` is deprecated and replaced with mtp\.)"', source)
    return {
        "methods": sorted(set(_expand("SpeculativeMethod", table))),
        "mtp_model_types": sorted(set(_expand("MTPModelTypes", table))),
        "mtp_alias_warning": m.group(1) if m else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("releases", nargs="+", help="VERSION=FOLDER (FOLDER/vllm/config/speculative.py)")
    ap.add_argument("-o", "--out", type=Path, required=True)
    args = ap.parse_args()
    doc = {}
    for entry in args.releases:
        version, folder = entry.split("=", 1)
        doc[version] = release_methods(Path(folder))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
