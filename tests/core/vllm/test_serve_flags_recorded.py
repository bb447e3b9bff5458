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
from cgplan.core.vllm.serve_flags import (
    AFFECTS,
    IGNORED,
    READ,
    SPECIAL_DESTS,
    UNMODELLED,
    serve_flags_for,
)
from cgplan.errors import ConfigError
from cgplan.io.vllm_args import read_vllm_args
from tests.paths import ROOT_DIR, TESTS_DIR

ROOT = ROOT_DIR
MODEL = "configs/models/tiny-llama"
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


@pytest.mark.parametrize("release", SUPPORTED_VERSIONS)
def test_every_flag_of_vllms_parser_is_classified(release: str) -> None:
    """#28: every action of the release's `vllm serve` parser is in the table (or is --help,
    --config or the MODEL positional), and each unmodelled flag says what it can change."""
    table = {f.dest: f for f in serve_flags_for(release).flags}
    missing = [
        a["dest"]
        for a in recorded(release)["actions"]
        if a["dest"] not in table and a["dest"] not in SPECIAL_DESTS
    ]
    assert missing == []
    for flag in table.values():
        assert flag.role in (READ, IGNORED, UNMODELLED), flag
        assert bool(flag.affects) == (flag.role == UNMODELLED), flag
        assert set(flag.affects) <= set(AFFECTS), flag


def _value(action: dict[str, Any]) -> list[str]:
    """A value for the flag on a command line: vLLM's default where it is a plain value."""
    if action["nargs"] == 0:
        return []
    default = action["default"]
    text = (
        "x" if default is None or isinstance(default, bool) or str(default).startswith("'") else str(default)
    )
    return [text if text != "==SUPPRESS==" else "x"]


@pytest.mark.parametrize("release", SUPPORTED_VERSIONS)
def test_every_flag_of_every_release_is_read(release: str) -> None:
    """#28: each option string vLLM's parser accepts, on a command line of that release, is read:
    planned (READ: any refusal is about its value, never "unknown"), listed as ignored (neutral, or
    not modelled at vLLM's default) or named in a note (not modelled, set). --strict refuses exactly
    the noted ones, by name."""
    table = {f.dest: f for f in serve_flags_for(release).flags}
    wrong = []
    for action in recorded(release)["actions"]:
        flag = table.get(action["dest"])
        if flag is None:
            continue
        for option in action["option_strings"]:
            argv = ["serve", MODEL, option, *_value(action)]
            try:
                parsed = read_vllm_args(argv, model_config=None, base_dir=ROOT, vllm_version=release)
            except ConfigError as e:
                if flag.role != READ or "unknown" in e.message or "not a flag of" in e.message:
                    wrong.append(f"{option}: {e.message}")
                continue
            if flag.role == IGNORED and parsed.ignored != [flag.names[0]]:
                wrong.append(f"{option}: neutral, but ignored is {parsed.ignored}")
            if flag.role == UNMODELLED:
                noted = [u for u in parsed.unmodelled if u.startswith(option)]
                if parsed.ignored != [flag.names[0]] and len(noted) != 1:
                    wrong.append(f"{option}: not modelled, but neither ignored nor noted: {parsed}")
                try:
                    read_vllm_args(argv, model_config=None, base_dir=ROOT, vllm_version=release, strict=True)
                    refused = False
                except ConfigError as e:
                    refused = (
                        e.message.startswith(f"--vllm-args:{option}: ") and "--strict refuses it" in e.message
                    )
                if refused != bool(noted):
                    wrong.append(f"{option}: --strict refused={refused}, noted={noted}")
    assert wrong == []
