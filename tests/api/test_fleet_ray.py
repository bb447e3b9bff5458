"""The Ray path of `cgplan capture --gpu ... --ray`: a local Ray cluster with fake GPU resources
and the fake backend (no GPU). Skipped when Ray is not installed (pip install 'cgplan[ray]')."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cgplan.api import fleet
from cgplan.api.fleet import ChildOptions
from cgplan.io.config import Overrides
from tests.api.test_fleet import write_config
from tests.paths import ROOT_DIR

if os.environ.get("CI") == "true":
    import ray  # .ci/run installs the ray extra next to dev: this path must run there, not be skipped
else:
    ray = pytest.importorskip("ray", reason="Ray is an optional extra (pip install 'cgplan[ray]')")

from cgplan.api import fleet_ray


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """One local cluster for the module: 2 fake GPUs, CPUs enough for the tasks."""
    ray.init(
        num_cpus=4,
        num_gpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT_DIR)}},
    )
    yield ray
    ray.shutdown()


def _jobs(tmp_path: Path, tps: dict[str, int]) -> list[fleet.FleetJob]:
    configs = [write_config(tmp_path / "cfg", n, tp=tp) for n, tp in tps.items()]
    (tmp_path / "out").mkdir(exist_ok=True)
    return fleet.make_jobs(configs, tmp_path / "out", Overrides(), "fake")


def test_ray_runs_each_config_with_its_gpus_and_gathers_the_reports(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CGPLAN_FAKE_CAPTURE", "bad=fail")
    jobs = _jobs(tmp_path, {"one": 1, "two": 2, "bad": 1, "huge": 3})
    results, interrupted = fleet_ray.run_ray(jobs, "auto", ChildOptions("fake"), poll_s=0.2)
    assert not interrupted
    by = {r.job.config.stem: r for r in results}  # fleet names add a path hash: key by the stem
    assert (by["one"].status, len(by["one"].gpus), by["one"].host) == ("complete", 1, os.uname().nodename)
    assert (by["two"].status, sorted(by["two"].gpus)) == ("complete", ["0", "1"])
    # the report came back to the caller's folder, made on the GPUs Ray gave the task
    doc = json.loads(jobs[1].report.read_text())
    assert doc["source"] == str(jobs[1].config)  # as the caller named it (calibrate reads it)
    assert doc["status"] == "complete" and sorted(doc["environment"]["cuda_visible_devices"].split(",")) == [
        "0",
        "1",
    ]
    assert (by["bad"].status, by["bad"].failure_class) == ("partial", "capture")
    assert "engine exploded" in str(by["bad"].message) and jobs[2].log.is_file()
    assert (by["huge"].status, by["huge"].failure_class) == ("not run", "unschedulable")
    agg = fleet.aggregate(
        fleet.FleetRun(tuple(results), "ray", (), False, ("cgplan",), "t", tmp_path / "out")
    )
    assert agg.runner == "ray" and fleet.exit_code(agg) == 4

    # again: the complete reports are resumed (checked on the worker), the partial one is not
    results, _ = fleet_ray.run_ray(jobs[:3], "auto", ChildOptions("fake"), poll_s=0.2)
    assert [r.resumed for r in results] == [True, True, False]


def test_a_lost_worker_is_retried_once_then_reported(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = _jobs(tmp_path, {"flaky": 1})
    marker = tmp_path / "lost-once"
    monkeypatch.setenv("CGPLAN_FAULT_LOSE_WORKER", f"flaky:once:{marker}")
    results, _ = fleet_ray.run_ray(jobs, "auto", ChildOptions("fake"), poll_s=0.2)
    assert marker.exists()  # the first attempt's worker died
    assert (results[0].status, results[0].failure_class) == ("complete", None)

    jobs = _jobs(tmp_path, {"doomed": 1})
    monkeypatch.setenv("CGPLAN_FAULT_LOSE_WORKER", "doomed")
    results, _ = fleet_ray.run_ray(jobs, "auto", ChildOptions("fake"), poll_s=0.2)
    r = results[0]
    assert (r.status, r.failure_class, r.attempts) == ("failed", "worker lost", 2)
    assert "retry" in str(r.message)


def test_the_cli_runs_through_ray(cluster: Any, tmp_path: Path) -> None:
    """`--ray ADDRESS` from the command line, against the running cluster (its GCS address)."""
    import subprocess

    cfg = tmp_path / "cfg"
    for n in ("a", "b"):
        write_config(cfg, n)
    address = cluster.get_runtime_context().gcs_address
    r = subprocess.run(
        [
            *(sys.executable, "-m", "cgplan", "capture", "--gpu", str(cfg), "--backend", "fake"),
            *("--out-dir", str(tmp_path / "out"), "--ray", address, "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["runner"] == "ray" and [c["status"] for c in doc["configs"]] == ["complete", "complete"]
    assert all(c["host"] for c in doc["configs"])


def test_missing_ray_is_an_environment_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    from cgplan.errors import GpuUnavailableError

    with pytest.raises(GpuUnavailableError, match=r"pip install 'cgplan\[ray\]'"):
        fleet_ray.connect("auto")


def test_a_task_reports_its_own_run_time_not_its_wait_for_a_gpu(tmp_path: Path) -> None:
    # On the H200's one-GPU cluster (2026-12-01) every task was submitted at once, and the caller's
    # clock made the six configs read 38, 71, 101, 133, 165, 193 s: each wait for the GPU added in.
    (job,) = _jobs(tmp_path, {"queued": 1})
    got = fleet_ray.TaskResult(0, "node", ("0",), None, "log\n", run_s=31.5)
    fake_ray: Any = type("FakeRay", (), {"get": staticmethod(lambda ref: got)})
    result = fleet_ray._gather(fake_ray, object(), job, 193.3)
    assert result.wall_s == 31.5
    older = fleet_ray.TaskResult(0, "node", ("0",), None, "log\n")  # a worker on an older cgplan
    fake_ray.get = staticmethod(lambda ref: older)
    assert fleet_ray._gather(fake_ray, object(), job, 193.3).wall_s == 193.3
