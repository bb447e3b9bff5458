"""`cgplan verify` on the command line: exit codes, one-line errors, JSON, the formats and --save
(the interpreter is tests/api/fake_vllm.py with vLLM's recorded answers: CI has no vLLM)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from cgplan.core.vllm import releases
from tests.api.test_verify import CORPUS, EXAMPLE, answer, fake
from tests.cli_helpers import run


def test_the_example_agrees_with_vllm_0_33_as_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's "done when", with the recorded answer of vLLM 0.33.0's code."""
    py = fake(tmp_path, [answer("0.33.0")])
    code, out, err = run(monkeypatch, capsys, "verify", EXAMPLE, "--python", py, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["schema_version"], doc["kind"], doc["agree"]) == (1, "verify", True)
    assert doc["vllm_version"] == doc["rules_release"] == "0.33.0"
    assert doc["configs"][0]["differing"] == []
    assert doc["configs"][0]["vllm"]["gaps"] == [
        {"query_len": 17, "from_reqs": 31, "to_reqs": 32, "mode": "NONE"}
    ]
    assert doc["limits"]


def test_a_planted_rule_change_exits_1_naming_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = releases.RELEASES["0.33.0"]
    monkeypatch.setitem(releases.RELEASES, "0.33.0", replace(rules, decode_sizes_capped=False))
    py = fake(tmp_path, [answer("0.33.0")])
    code, out, _ = run(monkeypatch, capsys, "verify", EXAMPLE, "--python", py, "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["agree"] is False
    fields = [d["field"] for d in doc["configs"][0]["differing"]]
    assert "capture_sizes" in fields
    code, out, _ = run(monkeypatch, capsys, "verify", EXAMPLE, "--python", py, "--no-color")
    assert code == 1
    assert "capture_sizes differs (the capture-size ladder (core/vllm/ladder.py))" in out
    assert "  vLLM:   55 sizes, 1..512" in out


def test_no_vllm_exits_3_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    py = fake(tmp_path, [answer("0.33.0")], mode="no-vllm")
    code, out, err = run(monkeypatch, capsys, "verify", EXAMPLE, "--python", py)
    assert code == 3 and out == ""
    assert (
        err
        == f"cgplan: error: --python {py}: cannot import vLLM: ModuleNotFoundError: No module named 'vllm'\n"
    )


def test_a_python_that_does_not_exist_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(monkeypatch, capsys, "verify", EXAMPLE, "--python", "/no/such/python")
    assert code == 2
    assert err == (
        "cgplan: error: --python: /no/such/python does not exist (expected the python of an "
        "environment with vLLM)\n"
    )


def test_a_bad_config_exits_2_before_vllm_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: configs/models/tiny-llama\nmax_num_seqs: many\n")
    py = fake(tmp_path, [answer("0.33.0")], mode="die")  # would exit 3 if it were started
    code, _, err = run(monkeypatch, capsys, "verify", bad, "--python", py)
    assert code == 2
    assert err.startswith(f"cgplan: error: {bad}:max_num_seqs: ") and err.count("\n") == 1


def test_a_config_without_an_answer_exits_3_after_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    py = fake(tmp_path, [answer("0.33.0"), answer("0.33.0")], mode="crash:1")
    code, out, err = run(
        monkeypatch, capsys, "verify", EXAMPLE, CORPUS / "nospec-mns256.yaml", "--python", py, "--no-color"
    )
    assert code == 3
    assert "no answer" in out and "the engine crashed on it" in out
    assert "1 config(s) got no answer from vLLM's code" in err


def test_fail_on_change_needs_against(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    py = fake(tmp_path, [answer("0.33.0")])
    code, _, err = run(monkeypatch, capsys, "verify", EXAMPLE, "--python", py, "--fail-on-change")
    assert code == 2 and "--fail-on-change" in err and "--against" in err and err.count("\n") == 1


def test_before_after_as_markdown_and_saved_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = fake(tmp_path, [answer("0.28.0")], version="0.28.0")
    after = fake(tmp_path, [answer("0.29.0")], version="0.29.0")
    saved = tmp_path / "out.json"
    args: list[str | Path] = [
        "verify",
        EXAMPLE,
        "--python",
        before,
        "--against",
        after,
        "--markdown",
        "--save",
        saved,
    ]
    code, out, err = run(monkeypatch, capsys, *args)
    assert code == 0, err
    assert out.startswith("### cgplan verify · before: vLLM 0.28.0")
    assert "| `" in out and "51 → 55" in out and "169 → 178" in out
    doc = json.loads(saved.read_text())
    assert doc["kind"] == "verify-against" and doc["changes"][0]["changed"] is True
    assert doc["before"]["rules_release"] == "0.28.0" and doc["after"]["rules_release"] == "0.29.0"
    code, _, _ = run(monkeypatch, capsys, *args[:6], "--fail-on-change")
    assert code == 1


def test_a_nightly_says_which_rules_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    py = fake(tmp_path, [answer("0.33.0")], version="0.34.0rc1")
    code, out, err = run(monkeypatch, capsys, "verify", EXAMPLE, "--python", py)
    assert code == 0
    assert f"compared with cgplan's {releases.LATEST_VERSION} rules" in out
    assert "cgplan has no rules for vLLM 0.34.0rc1" in err
