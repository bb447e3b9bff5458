#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The architectures a vLLM release registers as hybrid or attention-free, read from its code.

vLLM's registry (`vllm/model_executor/models/registry.py`: the `_*_MODELS` tables, architecture ->
(module, class)) resolves an architecture to a class; the class is hybrid when it is an `IsHybrid`
(`is_hybrid = True`: attention beside Mamba, linear-attention, short-conv or GDN state layers) and
attention-free when it is an `IsAttentionFree` (`vllm/model_executor/models/interfaces.py`),
directly or through a base class. vLLM reads these from the class, not from config.json, so a
config that names its state layers in keys cgplan does not read is still one of them. This parses
the installed (or unpacked) vLLM's sources with `ast` (no import, no torch) and prints
`{"vllm_version": ..., "hybrid": [...], "attention_free": [...], "hybrid_attention_layer_types": [...]}`
(the last: the `layer_types` names `ModelConfig.is_hybrid` counts as attention, which make an
IsHybrid class no hybrid when they are all a config lists):

    VENV/bin/python scripts/oracle/model_kinds.py > tests/data/oracle-model-kinds/X.json
    python3 scripts/oracle/model_kinds.py /path/to/site-packages 0.33.0

tests/core/vllm/test_model_kinds.py holds cgplan's tables (cgplan/core/vllm/models.py) to these files.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

MARKERS = {"IsHybrid": "hybrid", "IsAttentionFree": "attention_free"}


def _base_names(node: ast.ClassDef) -> list[str]:
    out = []
    for b in node.bases:
        if isinstance(b, ast.Name):
            out.append(b.id)
        elif isinstance(b, ast.Attribute):
            out.append(b.attr)
        elif isinstance(b, ast.Subscript) and isinstance(b.value, ast.Name):
            out.append(b.value.id)
    return out


def _class_flags(node: ast.ClassDef) -> set[str]:
    # `is_hybrid = True` / `is_attention_free = True` set in the class body (without the mixin)
    flags = set()
    for stmt in node.body:
        target = value = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            target, value = stmt.target, stmt.value
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and value.value is True:
            if target.id == "is_hybrid":
                flags.add("hybrid")
            elif target.id == "is_attention_free":
                flags.add("attention_free")
    return flags


def _classes(vllm_dir: Path) -> dict[str, tuple[list[str], set[str]]]:
    """Every class of vLLM's source by name: its base names and the kind flags its body sets."""
    out: dict[str, tuple[list[str], set[str]]] = {}
    for path in sorted(vllm_dir.rglob("*.py")):
        if "models" not in path.parts:
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases, flags = out.get(node.name, ([], set()))
                out[node.name] = (bases + _base_names(node), flags | _class_flags(node))
    return out


def _kinds(name: str, classes: dict[str, tuple[list[str], set[str]]], seen: set[str]) -> set[str]:
    if name in MARKERS:
        return {MARKERS[name]}
    if name in seen or name not in classes:
        return set()
    seen.add(name)
    bases, flags = classes[name]
    found = set(flags)
    for b in bases:
        found |= _kinds(b, classes, seen)
    return found


def _registry(registry_py: Path) -> dict[str, str]:
    """Architecture -> class name, from every `_*_MODELS = {...}` table of the registry."""
    tree = ast.parse(registry_py.read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict)):
            continue
        for k, v in zip(node.value.keys, node.value.values, strict=True):
            if (
                isinstance(k, ast.Constant)
                and isinstance(k.value, str)
                and isinstance(v, ast.Tuple)
                and len(v.elts) >= 2
                and isinstance(v.elts[1], ast.Constant)
                and isinstance(v.elts[1].value, str)
            ):
                out[k.value] = v.elts[1].value
    return out


def hybrid_attention_layer_types(model_py: Path) -> list[str]:
    """The layer_types names `ModelConfig.is_hybrid` counts as attention (vllm/config/model.py):
    the strings of its `layer == "..."` or `layer in (...)` comparison."""
    tree = ast.parse(model_py.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "is_hybrid":
            for n in ast.walk(node):
                if isinstance(n, ast.Compare) and isinstance(n.left, ast.Name) and n.left.id == "layer":
                    return sorted(
                        c.value
                        for c in ast.walk(n.comparators[0])
                        if isinstance(c, ast.Constant) and isinstance(c.value, str)
                    )
    return []


def model_kinds(vllm_dir: Path) -> dict[str, list[str]]:
    """The hybrid and the attention-free architectures of one vLLM source tree."""
    classes = _classes(vllm_dir)
    registry = _registry(vllm_dir / "model_executor" / "models" / "registry.py")
    out: dict[str, list[str]] = {
        "hybrid": [],
        "attention_free": [],
        "hybrid_attention_layer_types": hybrid_attention_layer_types(vllm_dir / "config" / "model.py"),
    }
    for arch, cls in sorted(registry.items()):
        for kind in sorted(_kinds(cls, classes, set())):
            out[kind].append(arch)
    return out


def main() -> None:
    if len(sys.argv) == 3:
        site, version = Path(sys.argv[1]), sys.argv[2]
        vllm_dir = site / "vllm" if (site / "vllm").is_dir() else site
    else:
        import importlib.metadata
        import importlib.util

        spec = importlib.util.find_spec("vllm")
        assert spec is not None and spec.origin is not None, "no vllm installed"
        vllm_dir = Path(spec.origin).parent
        version = importlib.metadata.version("vllm")
    print(json.dumps({"vllm_version": version, **model_kinds(vllm_dir)}, indent=1))


if __name__ == "__main__":
    main()
