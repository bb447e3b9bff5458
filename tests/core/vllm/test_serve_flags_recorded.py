"""cgplan's `vllm serve` flag table against vLLM's own parser, release by release.

tests/data/oracle-serve-flags/<release>.json is what `vllm serve`'s argparse parser of that release
accepts, recorded with vLLM's own code (no GPU):

    for v in 0.26.0 0.27.0 0.27.1 0.28.0 0.29.0 0.30.0 0.31.0 0.32.0 0.33.0; do
        .cache/venv-$v/bin/python scripts/oracle/serve_flags.py > tests/data/oracle-serve-flags/$v.json
    done                                         # part of `make golden`

Every flag cgplan knows must take exactly the option strings vLLM's parser accepts for it in that
release, with the same arity, and an unmodelled flag's no-op value must be vLLM's default.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cgplan.core.vllm.releases import SUPPORTED_VERSIONS
from cgplan.core.vllm.serve_flags import UNMODELLED, serve_flags_for
from tests.paths import TESTS_DIR

RECORDED = TESTS_DIR / "data" / "oracle-serve-flags"
ARITY: dict[str, tuple[tuple[int | str | None, ...], tuple[str, ...] | None]] = {
    # cgplan's arity -> (argparse nargs, action classes; None: any storing action, e.g. vLLM's
    # LoRAParserAction, or _AppendAction for a repeatable one-value flag)
    "one": ((None,), None),
    "many": (("+", "*"), None),
    "optional": (("?",), None),
    "none": ((0,), ("_StoreTrueAction", "_StoreConstAction")),
    "bool": ((0, None), ("BooleanOptionalAction", "EnableDisableAction")),
}


def recorded(release: str) -> dict[str, Any]:
    path = RECORDED / f"{release}.json"
    assert path.exists(), f"{path} is missing: record it with make golden (scripts/oracle/serve_flags.py)"
    doc: dict[str, Any] = json.loads(path.read_text())
    assert doc["vllm_version"] == release
    return doc


def test_every_release_is_recorded() -> None:
    assert sorted(p.stem for p in RECORDED.glob("*.json")) == sorted(SUPPORTED_VERSIONS)


@pytest.mark.parametrize("release", SUPPORTED_VERSIONS)
def test_flags_match_vllms_parser(release: str) -> None:
    actions = {a["dest"]: a for a in recorded(release)["actions"]}
    wrong = []
    for flag in serve_flags_for(release).flags:
        action = actions.get(flag.dest)
        if action is None:
            wrong.append(f"{flag.dest}: no such flag in vLLM {release}")
            continue
        ours, theirs = {*flag.names, *flag.negatives}, set(action["option_strings"])
        if ours != theirs:
            wrong.append(f"{flag.dest}: cgplan takes {sorted(ours)}, vLLM {sorted(theirs)}")
        nargs, classes = ARITY[flag.arity]
        if action["nargs"] not in nargs or (classes is not None and action["action"] not in classes):
            got = f"{action['action']} nargs={action['nargs']}"
            wrong.append(f"{flag.dest}: {flag.arity} but vLLM's is {got}")
        if flag.role == UNMODELLED and flag.default is not None and str(action["default"]) != flag.default:
            wrong.append(f"{flag.dest}: no-op value {flag.default}, vLLM's default {action['default']}")
    assert wrong == []
