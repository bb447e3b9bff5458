"""diff, sweep and gate end to end on the bundled examples (CPU), including vllm#50488."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cgplan.api.plan import plan_file
from cgplan.core.compare.gate import DEFAULT_POLICY
from cgplan.io.config import Overrides
from cgplan.io.policies import load_policy
from tests.cli_helpers import run
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
PR = ROOT / "configs/examples/pr50488-eagle-k16.yaml"
H200 = ROOT / "benchmarks/results/h200"


def fixed_config(tmp_path: Path) -> Path:
    """The vllm#50488 example with the fix `cgplan plan` proposes applied (read from the plan)."""
    _, plan = plan_file(PR)
    key, value = plan.fixes[0].config_change[0]
    assert key == "compilation_config.max_cudagraph_capture_size"
    text = PR.read_text().replace(
        "model: ../models/tiny-llama", f"model: {ROOT / 'configs/models/tiny-llama'}"
    )
    path = tmp_path / "fixed.yaml"
    path.write_text(text + f"compilation_config:\n  max_cudagraph_capture_size: {value}\n")
    return path


def test_default_policy_file_is_the_builtin_default() -> None:
    assert load_policy(ROOT / "configs/gates/default.yaml") == DEFAULT_POLICY


def test_plan_budgets_are_the_default_gates() -> None:
    """`plan` reads the default budgets from core.budgets (without the gate's module): they are
    the default gate policy's."""
    from cgplan.core.compare import gate
    from cgplan.core.plan import budgets

    assert budgets.DEFAULT_BUDGETS == gate.budgets_of(DEFAULT_POLICY) == gate.DEFAULT_BUDGETS


def test_diff_one_config_two_releases(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(monkeypatch, capsys, "diff", str(PR), "--vllm-version", "0.26.0..0.33.0", "--json")
    assert code == 0
    doc = json.loads(out)
    _, a = plan_file(PR, Overrides(vllm_version="0.26.0"))
    _, b = plan_file(PR, Overrides(vllm_version="0.33.0"))
    for row in doc["graphs"]:
        want_a = sum(1 for g in a.graphs.get(row["family"], ()) if g.mode == row["mode"])
        want_b = sum(1 for g in b.graphs.get(row["family"], ()) if g.mode == row["mode"])
        assert (row["count_a"], row["count_b"]) == (want_a, want_b)
        assert want_b - want_a == len(row["added"]) - len(row["removed"])
    assert doc["coverage_moves"] == []  # both releases leave 31-32 requests eager on Hopper


def test_diff_config_vs_fix_shows_the_gap_closing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(monkeypatch, capsys, "diff", str(PR), str(fixed_config(tmp_path)), "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["coverage_moves"] == [
        {"query_len": 17, "first_reqs": 31, "last_reqs": 32, "mode_a": "NONE", "mode_b": "FULL"}
    ]
    code, out, _ = run(monkeypatch, capsys, "diff", str(PR), str(fixed_config(tmp_path)), "--markdown")
    assert "| 17 | 31-32 | EAGER | FULL |" in out  # one name for eager in every human format


def test_diff_plan_against_capture_report(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = ROOT / "configs/gpu/tiny-eagle-k16.yaml"
    code, out, _ = run(
        monkeypatch,
        capsys,
        "diff",
        str(cfg),
        str(H200 / "tiny-eagle-k16-vllm.json"),
        "--json",
        "--vllm-version",
        "0.26.0",
    )
    doc = json.loads(out)
    assert code == 0 and doc["fingerprints_match"] and doc["unchanged"]
    assert doc["pool_bytes"]["source_b"] == "measured" and doc["pool_bytes"]["b"] > 0


def test_diff_refuses_reports_of_different_configs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = H200 / "tiny-eagle-k16-vllm.json", H200 / "tiny-eagle-k16-max544-vllm.json"
    code, out, err = run(monkeypatch, capsys, "diff", str(a), str(b))
    assert code == 2 and "describe different configs" in err and "--allow-mismatch" in err and out == ""
    code, out, _ = run(monkeypatch, capsys, "diff", str(a), str(b), "--allow-mismatch", "--json")
    doc = json.loads(out)
    assert code == 0
    assert {"query_len": 17, "first_reqs": 31, "last_reqs": 32, "mode_a": "NONE", "mode_b": "FULL"} in doc[
        "coverage_moves"
    ]


def test_sweep_ranges_and_release_disagreement(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        monkeypatch,
        capsys,
        "sweep",
        str(PR),
        "--set",
        "max_num_seqs=8..64",
        "--vllm-version",
        "0.26.0",
        "--vllm-version",
        "0.33.0",
        "--json",
    )
    doc = json.loads(out)
    assert code == 0 and doc["plans"] == 57 * 2
    covered = sum(r["points"] for r in doc["ranges"])
    assert covered == 57
    # derive the expected boundary: the first max_num_seqs whose widest decode step is eager
    first_gap = next(
        s
        for s in range(8, 65)
        if plan_file(PR, Overrides(vllm_version="0.33.0")) and any(g.mode == "NONE" for g in _plan_s(s).gaps)
    )
    starts = [r["first"] for r in doc["ranges"]]
    assert first_gap in starts
    gap_range = next(r for r in doc["ranges"] if r["first"] == first_gap)
    assert gap_range["outcomes"]["0.33.0"]["status"] == "gaps"


def _plan_s(s: int):  # type: ignore[no-untyped-def]
    import dataclasses

    from cgplan.core.plan.build import build_plan

    loaded, _ = plan_file(PR)
    return build_plan(dataclasses.replace(loaded.input, max_num_seqs=s), with_fixes=False)


def test_sweep_bad_set_is_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(monkeypatch, capsys, "sweep", str(PR), "--set", "max_num_seqs=64..8")
    assert code == 2 and "--set: max_num_seqs: empty range" in err
    code, _, err = run(monkeypatch, capsys, "sweep", str(PR), "--set", "gpu_memory=1,2")
    assert code == 2 and "cannot sweep 'gpu_memory'" in err


def test_gate_pr50488_fails_default_policy_and_passes_with_the_fix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    verdict, md, junit = tmp_path / "v.json", tmp_path / "v.md", tmp_path / "junit.xml"
    code, out, _ = run(
        monkeypatch,
        capsys,
        "gate",
        str(PR),
        "--vllm-version",
        "0.33.0",
        "--json",
        str(verdict),
        "--markdown",
        str(md),
        "--junit",
        str(junit),
    )
    assert code == 1
    doc = json.loads(verdict.read_text())
    checks = {c["name"]: c for c in doc["targets"][0]["checks"]}
    assert not checks["no_eager_uniform_decode"]["passed"]
    assert "31-32 requests × 17" in checks["no_eager_uniform_decode"]["detail"]
    assert "**FAIL**" in md.read_text()
    assert 'failures="2"' in junit.read_text()
    code, out, _ = run(monkeypatch, capsys, "gate", str(fixed_config(tmp_path)), "--vllm-version", "0.33.0")
    assert code == 0 and out.startswith("gate passed: 1/1 targets pass\nPASS ")


def test_gate_regression_against_baseline(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("no_eager_uniform_decode: false\nwidest_decode_full: false\nno_regression: true\n")
    code, out, _ = run(
        monkeypatch,
        capsys,
        "gate",
        str(PR),
        "--baseline",
        str(fixed_config(tmp_path)),
        "--policy",
        str(policy),
        "--json",
        "-",
    )
    doc = json.loads(out)
    assert code == 1
    check = next(c for c in doc["targets"][0]["checks"] if c["name"] == "no_regression")
    assert check["detail"].startswith("2 request counts lose coverage: 31-32 requests × 17: FULL → NONE")
    assert (check["value"], check["limit"]) == (2, 0)


def test_gate_measured_memory_and_time(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = H200 / "llama8b-mns256-vllm.json"
    measured = json.loads(report.read_text())["measured"]
    gib = measured["graph_nvml_total_bytes"] / (1 << 30)
    policy = tmp_path / "p.yaml"
    policy.write_text(f"max_pool_gib: {gib / 2:.4f}\nmax_capture_seconds: 1000\n")
    code, out, _ = run(monkeypatch, capsys, "gate", str(report), "--policy", str(policy), "--json", "-")
    checks = {c["name"]: c for c in json.loads(out)["targets"][0]["checks"]}
    assert code == 1 and not checks["max_pool_gib"]["passed"] and checks["max_capture_seconds"]["passed"]


@pytest.mark.parametrize(
    ("policy_text", "message"),
    [
        ("no_eager_decode: true\n", "unknown policy key; did you mean 'no_eager_uniform_decode'?"),
        ("max_pool_gib: -1\n", "max_pool_gib: must be a number >= 0"),
        ("max_graphs_per_family: {target: lots}\n", "max_graphs_per_family.target: must be an integer >= 0"),
        ("- a list\n", "must be a mapping of policy keys"),
    ],
)
def test_gate_bad_policy_is_exit_2(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    policy_text: str,
    message: str,
) -> None:
    policy = tmp_path / "bad.yaml"
    policy.write_text(policy_text)
    code, _, err = run(monkeypatch, capsys, "gate", str(PR), "--policy", str(policy))
    assert code == 2 and message in err and err.startswith(f"cgplan: error: {policy}:")


def test_gate_script_exit_codes(tmp_path: Path) -> None:
    script = ROOT / "scripts/cgplan-gate"
    env = {**os.environ, "PYTHON": sys.executable, "PATH": "/usr/bin:/bin"}

    def gate(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(script), *args], capture_output=True, text=True, check=False, env=env)

    assert gate(str(ROOT / "configs/gpu/tiny-nospec.yaml")).returncode == 0
    assert gate(str(PR)).returncode == 1
    bad = gate(str(tmp_path / "missing.yaml"))
    assert bad.returncode == 2 and "no such file" in bad.stderr


def test_sweep_range_shows_its_worst_point_not_its_first() -> None:
    """Before: "31..2048 gaps: 31×17 eager" — the first point's detail for the whole range
    (issue 13 item 5)."""
    from cgplan.api.sweep import sweep_config
    from cgplan.render.sweep import render_sweep

    calls: list[tuple[int, int]] = []
    r = sweep_config(
        PR, ["max_num_seqs=31..600"], ["0.33.0"], progress=lambda done, total: calls.append((done, total))
    )
    assert calls[-1] == (570, 570)  # the progress callback sees every plan
    gap_range = next(x for x in r.ranges if x.outcomes[0].status == "gaps")
    assert gap_range.detail_varies[0]
    # widest schedulable batch: max_num_batched_tokens 8192 // 17 = 481 requests
    assert gap_range.outcomes[0].detail == "31-481×17 eager" and gap_range.worst_at[0] == 481
    text = render_sweep(r)
    assert "(worst, at 481): 31-481×17 eager" in text


def test_sweep_categorical_axis_is_listed_not_a_range() -> None:
    from cgplan.api.sweep import sweep_config
    from cgplan.render.sweep import render_sweep

    r = sweep_config(PR, ["compilation_config.cudagraph_mode=FULL_AND_PIECEWISE,FULL,PIECEWISE"], ["0.33.0"])
    text = render_sweep(r)
    assert "FULL_AND_PIECEWISE, FULL " in text and "FULL_AND_PIECEWISE..FULL" not in text


def test_gate_json_carries_the_fix_as_data_and_its_yaml_closes_the_gap(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The verdict's `fix` is data a bot can apply: its YAML lines, added to the config, pass the
    gate (planned again, not trusted); its flags and deltas are the plan's own fix."""
    code, out, _ = run(monkeypatch, capsys, "gate", str(PR), "--json", "-")
    assert code == 1
    (target,) = json.loads(out)["targets"]
    fix = target["fix"]
    _, plan = plan_file(PR)
    best = plan.fixes[0]
    assert fix["flags"] == list(best.flags) and fix["config_change"] == dict(best.config_change)
    assert fix["argv"] == [list(w) for w in best.argv]
    assert fix["delta_graphs"] == best.graphs_after - best.graphs_before
    assert plan.latency is not None
    timed = {f.fix: f for f in plan.latency.fixes}[0]
    assert fix["expected_step_ms_after"] == round(timed.expected_step_ms_after, 4)
    fixed = tmp_path / "fixed.yaml"
    fixed.write_text(PR.read_text() + "\n".join(fix["yaml"]) + "\n")
    code, out, _ = run(monkeypatch, capsys, "gate", str(fixed), "--json", "-")
    doc = json.loads(out)
    assert code == 0 and doc["passed"] and doc["targets"][0]["fix"] is None


def test_every_check_states_its_figure(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Passed or failed, a check with a limit states the figure beside it (`85 ≤ 400`), in words
    and as `value`/`limit`."""
    policy = tmp_path / "all.yaml"
    policy.write_text(
        "no_piecewise_uniform_decode: true\nmax_graphs_per_family: {'*': 400, target: 50}\n"
        "max_total_graphs: 1000\nmax_pool_gib: 4\nmax_capture_seconds: 60\n"
        "max_decode_padding_ratio: 0.5\nmax_eager_time_share: 0.5\n"
    )
    fixed = fixed_config(tmp_path)
    code, out, _ = run(
        monkeypatch, capsys, "gate", str(fixed), "--policy", str(policy), "--baseline", str(PR), "--json", "-"
    )
    checks = {c["name"]: c for c in json.loads(out)["targets"][0]["checks"]}
    assert code == 1 and not checks["max_graphs_per_family[target]"]["passed"]
    for name, c in checks.items():
        assert c["value"] is not None, name
        if c["limit"] is not None and c["limit"] != 0:
            assert " ≤ " in c["detail"] or " > " in c["detail"], (name, c["detail"])
    assert checks["max_total_graphs"]["detail"] == f"{checks['max_total_graphs']['value']:.0f} ≤ 1000 graphs"
    assert checks["max_graphs_per_family[target]"]["detail"].endswith(" > 50")
