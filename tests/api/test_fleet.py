"""Several configs in one `cgplan capture --gpu`: scheduling onto GPUs (TP sizes), resume,
failures, Ctrl-C, the aggregate report; the fake backend (no GPU) and fake launchers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cgplan.api import fleet
from cgplan.api.fleet import ChildOptions, FleetJob, FleetRun, JobResult
from cgplan.core.model.reports import EagerRun, FleetReport, FleetRow, FleetTotals
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides
from cgplan.render.fleet import fleet_html, fleet_markdown, fleet_table
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
MODEL = ROOT / "configs/models/tiny-llama-v512"
REPORT = (ROOT / "benchmarks/results/h200/tiny-nospec-vllm.json").read_text()
"""What a fake child writes: a complete capture report (the reader checks every report it reads)."""


def write_config(folder: Path, name: str, *, tp: int = 1, max_num_seqs: int = 8) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / f"{name}.yaml"
    p.write_text(
        f"model: {MODEL}\nmax_model_len: 2048\nmax_num_seqs: {max_num_seqs}\n"
        f"max_num_batched_tokens: 2048\ntensor_parallel_size: {tp}\n"
        "cgplan:\n  vllm_version: 0.26.0\n  platform: H200\n"
    )
    return p


class FakeHandle:
    """A child that 'runs' for a number of polls, then writes a fake complete report."""

    def __init__(self, job: FleetJob, polls: int, rc: int, log: list[tuple[str, str]]) -> None:
        self.job, self.left, self.rc, self.log = job, polls, rc, log
        self.signals: list[int] = []

    def poll(self) -> int | None:
        if self.left > 0:
            self.left -= 1
            return None
        if self.rc == 0 and not self.job.report.exists():
            self.job.report.write_text(REPORT)
            self.log.append(("end", self.job.config.stem))
        return self.rc

    def send_signal(self, sig: int) -> None:
        self.signals.append(sig)
        self.rc, self.left = 4, 0

    def kill(self) -> None:
        self.rc, self.left = -9, 0

    def wait(self, timeout: float | None = None) -> int:
        self.left = 0
        rc = self.poll()
        assert rc is not None
        return rc


class FakeLauncher:
    def __init__(self, polls: dict[str, int] | None = None, rcs: dict[str, int] | None = None) -> None:
        self.polls, self.rcs = polls or {}, rcs or {}
        self.events: list[tuple[str, str]] = []
        self.busy: set[str] = set()
        self.max_busy = 0
        self.given: dict[str, tuple[str, ...]] = {}
        self.handles: dict[str, FakeHandle] = {}

    def __call__(self, job: FleetJob, gpus: tuple[str, ...]) -> FakeHandle:
        # No GPU is ever given to two children at once.
        assert not self.busy & set(gpus), (job.name, gpus, self.busy)
        self.busy |= set(gpus)
        self.max_busy = max(self.max_busy, len(self.busy))
        self.given[job.config.stem] = gpus
        self.events.append(("start", job.config.stem))
        h = FakeHandle(job, self.polls.get(job.config.stem, 2), self.rcs.get(job.config.stem, 0), self.events)
        original = h.poll

        def poll() -> int | None:
            rc = original()
            if rc is not None:
                self.busy -= set(gpus)
            return rc

        h.poll = poll  # type: ignore[method-assign]
        self.handles[job.config.stem] = h
        return h


def _report(out: Path, stem: str) -> Path:
    """The report of config `stem` in `out` (named `<stem>-<hash>.json`), as the run's manifest
    (written before any child starts) names it; a path that does not exist before that."""
    manifest = out / fleet.MANIFEST_NAME
    if manifest.is_file():
        for entry in json.loads(manifest.read_text())["configs"]:
            if Path(entry["config"]).stem == stem:
                return out / str(entry["report"])
    return out / f"{stem}.not-yet.json"


def _jobs(tmp_path: Path, tps: dict[str, int]) -> list[FleetJob]:
    configs = [write_config(tmp_path / "cfg", n, tp=tp) for n, tp in tps.items()]
    return fleet.make_jobs(configs, tmp_path / "out", Overrides(), "fake")


def test_configs_are_scheduled_onto_free_gpus_by_tp_size(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path, {"a": 1, "b": 2, "c": 1, "d": 4, "e": 1})
    (tmp_path / "out").mkdir()
    launcher = FakeLauncher(polls={"a": 5, "b": 2, "c": 1})
    results, interrupted = fleet.run_local(jobs, ["0", "1", "2", "3"], launcher, poll_s=0)
    assert not interrupted
    assert [r.status for r in results] == ["complete"] * 5
    assert {n: len(g) for n, g in launcher.given.items()} == {"a": 1, "b": 2, "c": 1, "d": 4, "e": 1}
    # a, b and c start at once on four GPUs; d (TP=4) waits until every GPU is free
    assert launcher.events[:3] == [("start", "a"), ("start", "b"), ("start", "c")]
    d_start = launcher.events.index(("start", "d"))
    assert {("end", "a"), ("end", "b"), ("end", "c")} <= set(launcher.events[:d_start])
    assert launcher.given["d"] == ("0", "1", "2", "3") and launcher.max_busy == 4


def test_one_gpu_runs_configs_in_turn(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path, {"a": 1, "b": 1, "c": 1})
    (tmp_path / "out").mkdir()
    launcher = FakeLauncher()
    results, _ = fleet.run_local(jobs, ["0"], launcher, poll_s=0)
    assert launcher.max_busy == 1 and [r.gpus for r in results] == [("0",)] * 3
    assert launcher.events == [(k, n) for n in "abc" for k in ("start", "end")]
    # no GPU found at all: one unpinned slot, still in turn
    launcher = FakeLauncher()
    for j in jobs:
        j.report.unlink()
    results, _ = fleet.run_local(jobs, [], launcher, poll_s=0)
    assert launcher.events == [(k, n) for n in "abc" for k in ("start", "end")]
    assert [r.gpus for r in results] == [()] * 3


def test_a_config_needing_more_gpus_than_given_is_unschedulable(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path, {"big": 4, "small": 1})
    (tmp_path / "out").mkdir()
    results, _ = fleet.run_local(jobs, ["0", "1"], FakeLauncher(), poll_s=0)
    assert [(r.job.config.stem, r.status, r.failure_class) for r in results] == [
        ("big", "not run", "unschedulable"),
        ("small", "complete", None),
    ]
    assert "needs 4 GPUs" in str(results[0].message)


def test_ctrl_c_signals_running_children_once_and_marks_the_rest(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path, {"a": 1, "b": 1, "c": 1, "d": 1})
    (tmp_path / "out").mkdir()
    # two GPUs: a and b finish at once, c runs for ever, d waits behind it... until Ctrl-C
    launcher = FakeLauncher(polls={"a": 0, "b": 0, "c": 10_000, "d": 10_000})
    calls = {"n": 0}

    def sleep(_: float) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt

    monkeypatch_sleep = pytest.MonkeyPatch()
    monkeypatch_sleep.setattr("cgplan.api.fleet.time.sleep", sleep)
    try:
        results, interrupted = fleet.run_local(
            [*jobs, *_jobs(tmp_path, {"e": 1})], ["0", "1"], launcher, poll_s=1
        )
    finally:
        monkeypatch_sleep.undo()
    assert interrupted
    by = {r.job.config.stem: r for r in results}
    assert by["a"].status == by["b"].status == "complete"
    assert by["c"].failure_class == "interrupted" and launcher.handles["c"].signals == [signal.SIGINT]
    assert by["d"].failure_class == "interrupted" and launcher.handles["d"].signals == [signal.SIGINT]
    assert set(launcher.handles) == {"a", "b", "c", "d"}
    assert (by["e"].status, by["e"].failure_class) == ("not run", "interrupted")
    assert jobs[0].report.exists() and jobs[1].report.exists()


def test_exit_code_and_failure_classes(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path, {"ok": 1, "bad": 1, "env": 1, "gone": 1})
    (tmp_path / "out").mkdir()
    launcher = FakeLauncher(rcs={"bad": 2, "env": 3, "gone": -9})
    results, _ = fleet.run_local(jobs, ["0"], launcher, poll_s=0)
    classes = {r.job.config.stem: r.failure_class for r in results}
    assert classes == {"ok": None, "bad": "config", "env": "environment", "gone": "crashed"}
    doc = fleet.aggregate(
        FleetRun(tuple(results), "local", ("0",), False, ("cgplan",), "t", tmp_path / "out")
    )
    assert fleet.exit_code(doc) == 4
    only_config = fleet.aggregate(
        FleetRun(tuple(results[:2]), "local", ("0",), False, ("cgplan",), "t", tmp_path / "out")
    )
    assert fleet.exit_code(only_config) == 2
    assert "killed by signal 9" in str(results[3].message)


def test_a_stale_report_is_not_taken_for_a_crashed_childs(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path, {"a": 1})
    (tmp_path / "out").mkdir()
    jobs[0].report.write_text(REPORT)
    results, _ = fleet.run_local(jobs, ["0"], FakeLauncher(rcs={"a": -9}), poll_s=0)
    assert (results[0].status, results[0].failure_class, results[0].has_report) == (
        "failed",
        "crashed",
        False,
    )
    assert "without a report" in str(results[0].message)


def test_discover_and_name_configs(tmp_path: Path) -> None:
    a = write_config(tmp_path / "x", "same")
    b = write_config(tmp_path / "y", "same")
    write_config(tmp_path / "x" / "sub", "deeper")  # sub-folders are not entered
    found = fleet.discover_configs([tmp_path / "x", b, a])
    assert found == [a, b]
    names = [j.name for j in fleet.make_jobs(found, tmp_path, Overrides(), "fake")]
    assert [n.rsplit("-", 1)[0] for n in names] == ["same", "same"] and len(set(names)) == 2
    with pytest.raises(ConfigError, match="no such file"):
        fleet.discover_configs([tmp_path / "missing.yaml"])
    with pytest.raises(ConfigError, match=r"no \*\.yaml"):
        fleet.discover_configs([_empty(tmp_path)])


def _empty(tmp_path: Path) -> Path:
    d = tmp_path / "empty"
    d.mkdir()
    return d


def test_visible_gpus_index_what_this_process_sees(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6")
    assert fleet.visible_gpus(None) == ("4", "5", "6")
    assert fleet.visible_gpus([2, 0]) == ("6", "4")
    with pytest.raises(ConfigError, match="GPU 3 is not visible"):
        fleet.visible_gpus([3])


def test_environment_key_decides_resume() -> None:
    host = fleet.EnvironmentKey("0.1.0", "2.11.0", "0.26.0", "580.1", frozenset({"NVIDIA H200"}))
    same = fleet.EnvironmentKey("0.1.0", "2.11.0", "0.26.0", "580.1", frozenset({"NVIDIA H200"}))
    assert fleet.same_environment(same, host)
    for changed in (
        fleet.EnvironmentKey("0.2.0", "2.11.0", "0.26.0", "580.1", frozenset({"NVIDIA H200"})),
        fleet.EnvironmentKey("0.1.0", "2.11.0", "0.27.1", "580.1", frozenset({"NVIDIA H200"})),
        fleet.EnvironmentKey("0.1.0", "2.11.0", "0.26.0", "575.0", frozenset({"NVIDIA H200"})),
        fleet.EnvironmentKey("0.1.0", "2.11.0", "0.26.0", "580.1", frozenset({"NVIDIA H100"})),
    ):
        assert not fleet.same_environment(changed, host)


def test_renderers_show_every_config() -> None:
    doc = FleetReport(
        schema_version=1,
        runner="local",
        gpus=("0",),
        command=("cgplan", "capture"),
        interrupted=False,
        configs=(
            FleetRow(
                name="a|b",
                config="a.yaml",
                status="complete",
                tensor_parallel_size=1,
                wall_s=1.0,
                resumed=True,
                plan_matches=True,
                eager_fallbacks_measured=(EagerRun(query_len=17, from_reqs=31, to_reqs=32),),
                predicted_memory_mib=169.1,
                predicted_memory_domain="hidden size 512 is outside the fitted 2048..5120",
                measured_memory_mib=96.0,
                predicted_capture_s=2.75,
                measured_capture_s=0.59,
                gpus=("0",),
                report="a.json",
            ),
            FleetRow(
                name="c",
                config="c.yaml",
                status="failed",
                tensor_parallel_size=1,
                wall_s=0.0,
                failure_class="crashed",
                failure="<died>",
            ),
        ),
        totals=FleetTotals(
            configs=2,
            by_status={"complete": 1, "failed": 1},
            resumed=1,
            plans_matched=1,
            plans_differed=0,
            failed=1,
        ),
    )
    table = fleet_table(doc)
    assert "complete (resumed)" in table and "31-32×17" in table and "169 / 96" in table
    assert "crashed: <died>" in table
    assert (
        "169 / 96 †" in table and "† a|b: predicted outside the cost model's domain (hidden size 512" in table
    )
    assert "a\\|b" in fleet_markdown(doc)
    page = fleet_html(doc)
    assert '<a href="a.json">a|b</a>' in page and "&lt;died&gt;" in page


# ----------------------------------------------------------------- the real CLI, real child processes


def _cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cgplan", "capture", "--gpu", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=300,
    )


def test_folder_capture_resume_failure_and_force(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    for n in ("a", "b", "c"):
        write_config(cfg, n)
    out = tmp_path / "out"
    first = _cli(
        str(cfg),
        "--backend",
        "fake",
        "--out-dir",
        str(out),
        "--gpus",
        "0",
        env={"CGPLAN_FAKE_CAPTURE": "b=fail"},
    )
    assert first.returncode == 4, first.stderr
    doc = json.loads((out / "fleet.json").read_text())
    assert doc["schema_version"] == 1 and doc["kind"] == "fleet"
    rows = {Path(r["config"]).stem: r for r in doc["configs"]}
    assert (rows["a"]["status"], rows["a"]["plan_matches"], rows["a"]["gpus"]) == ("complete", True, ["0"])
    assert (rows["b"]["status"], rows["b"]["failure_class"]) == ("partial", "capture")
    assert "engine exploded" in rows["b"]["failure"]
    assert rows["c"]["status"] == "complete"  # the failure did not stop the others
    assert rows["a"]["predicted_memory_mib"] is not None and rows["a"]["measured_memory_mib"] is not None
    assert json.loads(_report(out, "a").read_text())["environment"]["cuda_visible_devices"] == "0"
    assert (out / "fleet.md").is_file() and (out / "fleet.html").is_file()
    assert "[3/3]" in first.stderr and "a" in first.stdout
    stamps = {n: _report(out, n).stat().st_mtime_ns for n in "ac"}

    # Again: a and c are resumed untouched; b (partial) is captured again and now succeeds.
    second = _cli(str(cfg), "--backend", "fake", "--out-dir", str(out), "--json")
    assert second.returncode == 0, second.stderr
    rows = {Path(r["config"]).stem: r for r in json.loads(second.stdout)["configs"]}
    assert [rows[n]["resumed"] for n in "abc"] == [True, False, True]
    assert {n: _report(out, n).stat().st_mtime_ns for n in "ac"} == stamps

    # A changed config (new fingerprint) and --force both capture again.
    write_config(cfg, "a", max_num_seqs=16)
    third = _cli(str(cfg), "--backend", "fake", "--out-dir", str(out), "--json")
    rows = {Path(r["config"]).stem: r for r in json.loads(third.stdout)["configs"]}
    assert [rows[n]["resumed"] for n in "abc"] == [False, True, True]
    forced = _cli(str(cfg), "--backend", "fake", "--out-dir", str(out), "--json", "--force")
    assert not any(r["resumed"] for r in json.loads(forced.stdout)["configs"])


def test_a_report_from_another_cgplan_version_is_captured_again(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "cfg", "a")
    out = tmp_path / "out"
    assert _cli(str(cfg), "--backend", "fake", "--out-dir", str(out)).returncode == 0
    doc = json.loads(_report(out, "a").read_text())
    doc["environment"]["cgplan"] = "0.0.1"
    _report(out, "a").write_text(json.dumps(doc))
    again = _cli(str(cfg), "--backend", "fake", "--out-dir", str(out), "--json")
    assert json.loads(again.stdout)["configs"][0]["resumed"] is False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_keeps_every_finished_report(tmp_path: Path, sig: signal.Signals) -> None:
    cfg = tmp_path / "cfg"
    for n in ("a", "b", "c"):
        write_config(cfg, n)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cgplan",
            "capture",
            "--gpu",
            str(cfg),
            "--backend",
            "fake",
            "--out-dir",
            str(out),
            "--gpus",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CGPLAN_FAKE_CAPTURE": "b=sleep:60"},
    )
    deadline = time.monotonic() + 120

    def log() -> Path:
        return _report(out, "b").with_suffix(".log")

    while not _report(out, "a").exists() or not log().exists() or "captures for" not in log().read_text():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.2)
    # b's child is now asleep inside its capture
    a_before = _report(out, "a").read_bytes()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 4, err
    assert f"interrupted ({sig.name}); 1 complete report(s) kept" in err
    assert _report(out, "a").read_bytes() == a_before
    doc = json.loads((out / "fleet.json").read_text())
    rows = {Path(r["config"]).stem: r for r in doc["configs"]}
    assert doc["interrupted"] is True
    assert rows["a"]["status"] == "complete"
    assert rows["b"]["failure_class"] == "interrupted" and rows["b"]["status"] in ("partial", "failed")
    assert json.loads(_report(out, "b").read_text())["failure"].startswith("interrupted (SIGINT)")
    assert (rows["c"]["status"], rows["c"]["failure_class"]) == ("not run", "interrupted")
    # and a run afterwards resumes a, captures b and c
    again = _cli(str(cfg), "--backend", "fake", "--out-dir", str(out), "--json")
    assert [r["resumed"] for r in json.loads(again.stdout)["configs"]] == [True, False, False]


def test_single_config_keeps_the_single_report_path(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, "a")
    r = _cli(str(cfg), "--backend", "fake", "-o", str(tmp_path / "r.json"), cwd=tmp_path)
    assert r.returncode == 0 and json.loads((tmp_path / "r.json").read_text())["kind"] == "capture"
    assert not (tmp_path / "cgplan-capture").exists()


def test_child_command_line() -> None:
    argv = ChildOptions("vllm", "0.26.0", None, "v2", "timing", True).argv(Path("c.yaml"), Path("r.json"))
    assert argv[1:] == [
        "-m", "cgplan", "capture", "--gpu", "c.yaml", "-o", "r.json", "--backend", "vllm",
        "--vllm-version", "0.26.0", "--model-runner", "v2", "--instrument", "timing", "--allow-unknown-vllm",
    ]  # fmt: skip


def test_job_result_defaults() -> None:
    job = FleetJob(Path("c.yaml"), "c", 1, None, Path("c.json"), Path("c.log"))
    assert JobResult(job, "complete", None, None, 0, (), 0.0).has_report is False
