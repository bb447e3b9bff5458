"""#28: a config YAML is accepted exactly when `yaml.safe_load` (what `vllm serve --config` uses)
accepts it, by both of cgplan's readers: the plain reader (`_plain_yaml`) and PyYAML's (the pure
`SafeLoader`: libyaml's `CSafeLoader` accepts a tab before a comment, which `yaml.safe_load`
refuses). Differential: hand-picked edge cases and generated documents, each read by both.

cgplan refuses more than safe_load only by name, for its bounds (tags, numbers beyond 64 bits or
not finite, invalid dates, depth, alias expansion): each such refusal is one of those messages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cgplan.io.files import ReadError, _NotPlain, _plain_yaml, parse_yaml
from tests.cli_helpers import run
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
BOUNDS = (
    "YAML tags are not accepted",
    "number out of range",
    "not a finite number",
    "not a valid date",
    "nested too deeply",
    "expands to more than",
    "a cycle",
)
"""cgplan's own refusals of documents safe_load accepts (cgplan/io/files.py's module docstring)."""

CASES = {
    "tab before a comment": "model: x\t# c\n",
    "tab after a value": "model: x\t\n",
    "tab as the separator": "a:\t1\n",
    "tab-indented comment": "a:\n\t# c\n  b: 1\n",
    "space then tab before a comment": "a: 1 \t# c\n",
    "tab then #": "a: 1\t#c\n",
    "one byte-order mark": "\ufeffmodel: x\n",
    "two byte-order marks": "\ufeff\ufeffmodel: x\n",
    "a byte-order mark inside": "model: x\n\ufeffb: 1\n",
    "a 1,023-character key": "k" * 1023 + ": 1\n",
    "a 1,024-character key": "k" * 1024 + ": 1\n",
    "a 1,025-character key": "k" * 1025 + ": 1\n",
    "a 1,100-character key in a flow mapping": "{" + "k" * 1100 + ": 1}\n",
    "a 1,100-character key in a sequence": "- " + "k" * 1100 + ": 1\n",
    "a long quoted key": '"' + "k" * 1100 + '": 1\n',
    "a long explicit key": "? " + "k" * 1100 + "\n: 1\n",
    "a long value": "a: " + "v" * 5000 + "\n",
    "duplicate keys": "a: 1\na: 2\n",
    "CRLF": "a: 1\r\nb: 2\r\n",
    "CR": "a: 1\rb: 2\r",
    "NEL": "a: 1\x85b: 2\n",
    "LS": "a: 1\u2028b: 2\n",
    "a control character": "a: \x01\n",
    "DEL": "a: b\x7f\n",
    "a control character in a comment": "# \x01\na: 1\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "document end": "a: 1\n...\n",
    "document start": "---\na: 1\n",
    "a directive": "%YAML 1.1\n---\na: 1\n",
    "no space after the colon": "a:1\n",
    "a colon in the value": "a: b:c\n",
    "a hash in the value": "a: b#c\n",
    "a trailing comma": "a: [1, 2,]\n",
    "an empty flow entry": "a: [1, , 2]\n",
    "an empty value": "a:\n",
    "nothing": "",
    "only a comment": "# x\n",
    "only spaces": "   \n",
    "only a byte-order mark": "\ufeff",
    "NUL": "a: 1\x00\n",
    "U+FFFE": "a: \ufffe\n",
    "an emoji": "a: \U0001f600\n",
    "a tab-indented key": "a:\n\tb: 1\n",
    "a quoted key": '"a": 1\n',
    "a tag": "a: !!str 1\n",
    "a huge integer": "a: " + "9" * 30 + "\n",
    "infinity": "a: .inf\n",
    "an invalid date": "a: 2001-13-45\n",
    "a set": "a: !!set {x, y}\n",
    "an alias": "a: &x [1]\nb: *x\n",
    "an unknown alias": "a: *x\n",
    "a merge key": "<<: {a: 1}\nb: 2\n",
    "an indentless sequence": "a:\n- 1\n- 2\nb: 3\n",
    "a bad indentation": "a:\n  - 1\n - 2\n",
    "a nested flow mapping": "a: {b: [1, {c: d}]}\n",
    "an unclosed flow": "a: [1, 2\n",
    "a block scalar": "a: |\n  x\n  y\nb: 1\n",
    "a folded scalar with a tab": "a: >\n\tx\n",
    "a quoted string with an escape": 'a: "x\\ty"\n',
    "a single-quoted string with a doubled quote": "a: 'it''s'\n",
    "yes and no": "a: yes\nb: No\nc: on\nd: ~\n",
    "an octal and a hex": "a: 0o17\nb: 0x1F\nc: 1_000\nd: 017\n",
    "a version": "a: 0.33.0\nb: v0.33\n",
    "a float": "a: 0.85\nb: 1e3\nc: 1.5e3\n",
    "a key that is a number": "1: a\n",
    "a key that is null": "null: a\n",
    "a complex key": "? [a]\n: 1\n",
}


def safe_load(text: str) -> tuple[bool, Any]:
    try:
        return True, yaml.safe_load(text)
    except Exception as e:  # a YAMLError, or a ValueError for a date: vLLM fails alike
        return False, str(e)


def _same(a: Any, b: Any) -> bool:
    """Equal values, NaN equal to itself."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def check(text: str) -> None:
    ok, ref = safe_load(text)
    try:
        plain = _plain_yaml(text)
    except _NotPlain:
        pass
    else:  # the plain reader reads only what safe_load reads, as safe_load reads it
        assert ok and _same(plain, ref), (text[:80], plain, ref)
    try:
        ours = parse_yaml(text, "f.yaml", exact=True)
    except ReadError as e:
        assert e.source == "f.yaml" and "\n" not in str(e)
        if ok:  # refused though safe_load reads it: only by one of cgplan's bounds, by name
            assert any(b in e.problem for b in BOUNDS), (text[:80], e.problem, ref)
        return
    except RecursionError:  # pragma: no cover - would be a bug
        raise
    assert ok, (text[:80], ours, ref)  # never more lenient than safe_load
    assert _same(ours, ref), (text[:80], ours, ref)


@pytest.mark.parametrize("name", sorted(CASES))
def test_edge_cases_read_as_safe_load(name: str) -> None:
    check(CASES[name])


_PIECES = st.sampled_from(
    [
        "model", "max_num_seqs", "a", "k" * 1030, "x-y", "on", "null", "1", ":", ": ", ":\t", " ", "  ", "\t",
        "#", " # c", "\t# c", "\n", "\r\n", "\r", "\x85", "\ufeff", "- ", "-", "[", "]", "{", "}", ",", ", ",
        "'q'", '"q"', "'", '"', "0.33.0", "32", "0.85", "8k", "yes", "~", "&a ", "*a", "!!str ", "? ",
        "---\n", "...\n", "|\n", ">\n", "\x01", "\u2028", "1e3", "0o17", "2001-12-14",
    ]
)  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=24))
def test_generated_documents_read_as_safe_load(pieces: list[str]) -> None:
    check("".join(pieces))


_CONFIG = (
    "model: configs/models/tiny-llama\nmax_num_seqs: 32   # requests\nspeculative_config:\n  method: eagle\n"
)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, len(_CONFIG)), st.sampled_from(["\t", "\ufeff", "\r", " ", "#", ":", "\t#x", "\x85"]))
def test_a_config_with_one_character_more(at: int, piece: str) -> None:
    check(_CONFIG[:at] + piece + _CONFIG[at:])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "model: configs/models/tiny-llama\t# the model\n",
            "serve.yaml: invalid YAML: line 1, column 33: found character '\\t' that cannot start any token",
        ),
        (
            "\ufeff\ufeffmodel: configs/models/tiny-llama\n",
            "serve.yaml:'\\ufeffmodel': unknown key; did you mean 'model'?",
        ),
        (
            "k" * 1025 + ": 1\nmodel: configs/models/tiny-llama\n",
            "serve.yaml: invalid YAML: line 1, column 1026: mapping values are not allowed here",
        ),
    ],
)
def test_plan_refuses_what_vllm_cannot_load(
    text: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(ROOT)
    path = tmp_path / "serve.yaml"
    path.write_bytes(text.encode())
    code, out, err = run(monkeypatch, capsys, "plan", str(path))
    assert code == 2 and out == ""
    assert err.startswith(f"cgplan: error: {tmp_path}/{message}"), err
    assert err.count("\n") == 1
    # the same file through `serve --config FILE`
    code, _, err = run(
        monkeypatch, capsys, "plan", "--", "serve", "configs/models/tiny-llama", "--config", str(path)
    )
    assert code == 2 and "--vllm-args:" in err


def test_a_bom_is_read_as_vllm_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Python's open() keeps a byte-order mark and safe_load skips one: one BOM plans as none."""
    monkeypatch.chdir(ROOT)
    path = tmp_path / "serve.yaml"
    path.write_bytes(b"\xef\xbb\xbfmodel: configs/models/tiny-llama\nmax_num_seqs: 32\n")
    code, _, err = run(monkeypatch, capsys, "plan", str(path), "--json")
    assert code == 0, err
