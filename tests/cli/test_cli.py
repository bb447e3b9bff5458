"""`cgplan plan` end to end through the console entry point: streams and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import run
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
EXAMPLE = ROOT / "configs" / "examples" / "pr50488-eagle-k16.yaml"


def test_json_contract_pr50488(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(monkeypatch, capsys, "plan", str(EXAMPLE), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema_version"] == 1
    q = doc["uniform_decode_query_len"]
    assert q == 17
    rows = doc["uniform_decode"][str(q)]
    eager = [r for r in rows if r["mode"] == "NONE"]
    # The widest decode steps cannot fit under the inferred maximum: derive, don't type.
    assert eager and eager[-1]["to_reqs"] == 32
    assert all(r["from_reqs"] * q > doc["max_capture_size"] for r in eager)
    assert doc["gaps"] and doc["fixes"]
    best = doc["fixes"][0]
    assert best["remaining_gaps"] == 0
    assert best["flags"] == [f"--max-cudagraph-capture-size {32 * q}"]


def test_fix_replans_clean(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fixed = tmp_path / "fixed.yaml"
    text = EXAMPLE.read_text().replace(
        "model: ../models/tiny-llama", f"model: {ROOT / 'configs/models/tiny-llama'}"
    )
    fixed.write_text(text + "compilation_config:\n  max_cudagraph_capture_size: 544\n")
    code, out, _ = run(monkeypatch, capsys, "plan", str(fixed), "--json", "--fail-on-gap")
    assert code == 0
    assert json.loads(out)["gaps"] == []


def test_fail_on_gap(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run(monkeypatch, capsys, "plan", str(EXAMPLE), "--fail-on-gap", "--json")
    assert code == 1


def test_table_and_markdown(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(monkeypatch, capsys, "plan", str(EXAMPLE))
    assert code == 0 and "EAGER" in out and "--max-cudagraph-capture-size 544" in out
    assert "\x1b[" not in out  # not a TTY: no colour codes
    code, out, _ = run(monkeypatch, capsys, "plan", str(EXAMPLE), "--markdown")
    assert code == 0 and out.startswith("### cgplan plan") and "| 31-32 | **EAGER** |" in out


def test_output_file_atomic(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "plan.json"
    target.write_text("previous")
    code, out, _ = run(
        monkeypatch, capsys, "plan", str(ROOT / "tests/data/bad/unknown-key.yaml"), "-o", str(target)
    )
    assert code == 2 and target.read_text() == "previous"
    code, out, _ = run(monkeypatch, capsys, "plan", str(EXAMPLE), "--json", "-o", str(target))
    assert code == 0 and out == "" and json.loads(target.read_text())["schema_version"] == 1


def test_overrides(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        monkeypatch, capsys, "plan", str(EXAMPLE), "--json", "--vllm-version", "0.26.0", "--platform", "B200"
    )
    doc = json.loads(out)
    assert code == 0 and doc["vllm_version"] == "0.26.0" and doc["platform"] == "blackwell"


def test_version_and_help(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(monkeypatch, capsys, "--version")
    assert code == 0 and out.startswith("cgplan ")
    code, out, _ = run(monkeypatch, capsys, "plan", "--help")
    assert code == 0 and "--vllm-version" in out and "Exit codes" in out


def test_yaml_key_that_looks_like_an_option_is_located(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Found by the fuzzer: a YAML key "--max-graphs" lost its file name."""
    cfg = tmp_path / "x.yaml"
    cfg.write_text(
        EXAMPLE.read_text().replace("../models", str(ROOT / "configs/models")) + "--max-graphs: 3\n"
    )
    code, _, err = run(monkeypatch, capsys, "plan", str(cfg))
    assert code == 2 and err.startswith(f"cgplan: error: {cfg}:")
