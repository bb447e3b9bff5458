"""A fix as lines of the YAML config it is for: the top-level keys to set, spelled as the file
spells them, each a whole value that replaces the file's own (issue 28).

`vllm serve --config FILE` reads every top-level key as a flag (`load_config_file`), so a fix lands
where the file already sets that value: a top-level `max-cudagraph-capture-size` stays one, a
`compilation_config` mapping gets the changed keys merged in (vLLM refuses a top-level
`--max-cudagraph-capture-size` beside `compilation_config.max_cudagraph_capture_size`), and
`cudagraph_mode`, which has no flag of its own, goes into `compilation_config`. Values are written in
YAML's flow style (JSON, which `yaml.safe_load` reads), so each key is one line; pasted at the end of
the file, each replaces the key it names (a later key wins in `yaml.safe_load`). Pure: no PyYAML.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from cgplan.core.model.types import Fix

_SIZE_FLAGS = ("max_cudagraph_capture_size", "cudagraph_capture_sizes")
"""The compilation keys that are also top-level flags (EngineArgs fields of their own)."""


def _spellings(document: Mapping[Any, Any]) -> dict[str, str]:
    """snake_case key → the key as the file writes it."""
    return {k.replace("-", "_"): k for k in document if isinstance(k, str)}


def _mapping_of(value: object) -> dict[str, Any] | None:
    """A file's value for a JSON flag as a mapping (a YAML mapping, or a JSON string of one)."""
    if isinstance(value, Mapping):
        return dict(value)
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return None
        return dict(parsed) if isinstance(parsed, dict) else None
    return None


def _merged(document: Mapping[Any, Any], key: str, changes: dict[str, object]) -> dict[str, Any] | None:
    base = _mapping_of(document.get(key))
    if base is None:
        return None
    for k, v in changes.items():
        if v is None:
            base.pop(k, None)
        else:
            base[k] = v
    return base


def _line(key: str, value: object) -> str | None:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # a date or another YAML-only value in the file's mapping
        return None
    return f"{key}: {text}"


def fix_config_lines(document: Mapping[Any, Any], change: tuple[tuple[str, object], ...]) -> tuple[str, ...]:
    """The YAML lines that make `change` (a Fix's `config_change`: dotted keys and values) in
    `document` (the file's top-level mapping, as read); empty when a value cannot be written so.

    >>> fix_config_lines({"model": "m"}, (("compilation_config.max_cudagraph_capture_size", 544),))
    ('max_cudagraph_capture_size: 544',)
    >>> fix_config_lines({"compilation-config": {"cudagraph_mode": "FULL"}},
    ...                  (("compilation_config.max_cudagraph_capture_size", 544),))
    ('compilation-config: {"cudagraph_mode": "FULL", "max_cudagraph_capture_size": 544}',)
    """
    spelled = _spellings(document)
    top: dict[str, object] = {}
    nested: dict[str, dict[str, object]] = {"compilation_config": {}, "speculative_config": {}}
    for path, value in change:
        head, _, rest = path.partition(".")
        if head == "compilation_config" and rest in _SIZE_FLAGS and rest in spelled:
            top[rest] = value  # the file sets it as a flag: it stays one
        elif head in nested and rest:
            nested[head][rest] = value
        else:
            top[head] = value
    cc = nested["compilation_config"]
    if cc and "compilation_config" not in spelled and set(cc) <= set(_SIZE_FLAGS):
        top.update(cc)  # no mapping in the file: the flags themselves
        cc = {}
    for key, changes in (("compilation_config", cc), ("speculative_config", nested["speculative_config"])):
        if changes:
            merged = _merged(document, spelled.get(key, key), changes)
            if merged is None:
                return ()
            top[key] = merged
    lines = []
    for key, value in top.items():
        if value is None:
            if key in spelled:
                return ()  # a key to delete: not a line to paste
            continue
        line = _line(spelled.get(key, key), value)
        if line is None:
            return ()
        lines.append(line)
    return tuple(lines)


def flags_beside(fix: Fix, flag_keys: Iterable[str]) -> Fix:
    """`fix` with its command-line flags made to work beside a config that sets `flag_keys` (of
    `max_cudagraph_capture_size`, `cudagraph_capture_sizes`) as flags of their own: vLLM refuses
    `--max-cudagraph-capture-size` beside a `--compilation-config` that sets the same key
    (EngineArgs.create_engine_config), so each such key leaves the fix's JSON and is given again as
    its own flag (the later flag wins). A JSON left empty is dropped: the config's own mapping
    stays as it is."""
    keys = [k for k in _SIZE_FLAGS if k in set(flag_keys)]
    if not keys:
        return fix
    words: list[tuple[str, ...]] = []
    for group in fix.argv:
        if group[:1] != ("--compilation-config",) or len(group) != 2:
            words.append(group)
            continue
        cc = json.loads(group[1])
        moved = [(k, cc.pop(k)) for k in keys if k in cc]
        if not moved:
            words.append(group)
            continue
        if cc:
            words.append(("--compilation-config", json.dumps(cc, separators=(",", ":"))))
        for key, value in moved:
            flag = "--" + key.replace("_", "-")
            words.append((flag, *map(str, value)) if isinstance(value, list) else (flag, str(value)))
    flags = tuple(" ".join(shlex.quote(w) for w in group) for group in words)
    return replace(fix, flags=flags, argv=tuple(words))
