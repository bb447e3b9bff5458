"""Issue 33: a multi-config capture loses, mixes up or trusts no report it should not.

Each test is one finding of the issue, run through the real CLI with the fake backend (children
are real processes): report names that cannot collide (with each other or with the aggregate),
resume keyed on the vLLM release too, --out-dir checked (a file, a device, a lock, tampered,
foreign or linked files), symbolic links in a config folder refused by name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cgplan.api import fleet
from cgplan.api.calibrate import expand_reports
from cgplan.io.config import Overrides
from tests.api.test_fleet import write_config

CAPTURE = [sys.executable, "-m", "cgplan", "capture", "--gpu"]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cgplan", "capture", "--gpu", *args, "--backend", "fake"],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def _rows(out: Path) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = json.loads((out / "fleet.json").read_text())["configs"]
    return rows


def _own_report(row: dict[str, object], out: Path) -> dict[str, object]:
    assert isinstance(row["report"], str), row
    doc: dict[str, object] = json.loads((out / row["report"]).read_text())
    return doc


def _assert_each_config_once_with_its_own_report(configs: list[Path], out: Path) -> None:
    rows = _rows(out)
    assert sorted(str(r["config"]) for r in rows) == sorted(str(c) for c in configs)
    assert len({r["report"] for r in rows}) == len(rows)  # no two rows share a report file
    for row in rows:
        assert row["status"] == "complete", row
        # the report a row names was made from that row's config, and nothing else
        assert _own_report(row, out)["source"] == row["config"]


# ----------------------------------------------------------------------------- finding 1


def test_a_config_named_fleet_keeps_its_report_and_resumes(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    configs = [write_config(cfg, "fleet"), write_config(cfg, "a", max_num_seqs=16)]
    out = tmp_path / "out"
    first = _cli(str(cfg), "--out-dir", str(out))
    assert first.returncode == 0, first.stderr
    assert json.loads((out / "fleet.json").read_text())["kind"] == "fleet"
    _assert_each_config_once_with_its_own_report(sorted(configs), out)
    # a rerun resumes both: the aggregate did not replace fleet.yaml's report
    again = _cli(str(cfg), "--out-dir", str(out), "--json")
    assert again.returncode == 0, again.stderr
    assert [r["resumed"] for r in json.loads(again.stdout)["configs"]] == [True, True]
    # calibrate's folder reading lists both capture reports, never the aggregate
    reports, _ = expand_reports([out])
    assert sorted(p.name for p in reports) == sorted(str(r["report"]) for r in _rows(out))
    assert all(json.loads(p.read_text())["kind"] == "capture" for p in reports)


# ----------------------------------------------------------------------------- finding 2


@pytest.mark.parametrize("gpus", [None, "0", "0,1,2"])
def test_report_names_never_collide(tmp_path: Path, gpus: str | None) -> None:
    c = tmp_path / "c"
    configs = [
        write_config(c / "p", "x", max_num_seqs=8),
        write_config(c / "q" / "p", "x", max_num_seqs=16),
        write_config(c, "p-x-1", max_num_seqs=24),
        write_config(c / "r", "p-x", max_num_seqs=32),
        write_config(c, "fleet", max_num_seqs=40),
        write_config(c, "manifest", max_num_seqs=48),
    ]
    out = tmp_path / "out"
    argv = [*map(str, configs), "--out-dir", str(out)] + (["--gpus", gpus] if gpus else [])
    r = _cli(*argv)
    assert r.returncode == 0, r.stderr
    _assert_each_config_once_with_its_own_report(configs, out)
    # each report measured its own config (max_num_seqs differs per config)
    for row in _rows(out):
        report = _own_report(row, out)
        plan = report["plan"]
        assert isinstance(plan, dict)
        assert plan["max_num_seqs"] == _mns(Path(str(row["config"])))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "fleet-manifest"
    assert {m["config"]: m["report"] for m in manifest["configs"]} == {
        str(r["config"]): r["report"] for r in _rows(out)
    }


def _mns(config: Path) -> int:
    for line in config.read_text().splitlines():
        if line.startswith("max_num_seqs:"):
            return int(line.split(":")[1])
    raise AssertionError(config)


def test_names_are_stable_unique_and_readable(tmp_path: Path) -> None:
    a = write_config(tmp_path / "p", "x")
    b = write_config(tmp_path / "q" / "p", "x")
    jobs = fleet.make_jobs([a, b], tmp_path / "out", Overrides(), "fake")
    names = [j.name for j in jobs]
    assert len(set(names)) == 2 and all(n.startswith("x-") for n in names)
    # the same config gets the same name in every run, whatever else is captured with it
    assert fleet.make_jobs([b], tmp_path / "out", Overrides(), "fake")[0].name == names[1]
    assert all(n not in fleet.RESERVED_NAMES for n in names)


# ----------------------------------------------------------------------------- finding 3


def test_another_vllm_release_is_captured_again(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "cfg", "a")
    out = tmp_path / "out"
    assert _cli(str(cfg), "--out-dir", str(out), "--vllm-version", "0.26.0").returncode == 0
    same = _cli(str(cfg), "--out-dir", str(out), "--vllm-version", "0.26.0", "--json")
    assert json.loads(same.stdout)["configs"][0]["resumed"] is True
    other = _cli(str(cfg), "--out-dir", str(out), "--vllm-version", "0.27.0", "--json")
    assert other.returncode == 0, other.stderr
    row = json.loads(other.stdout)["configs"][0]
    assert row["resumed"] is False
    assert _own_report(row, out)["plan"]["vllm_version"] == "0.27.0"  # type: ignore[index]
    assert "vLLM 0.26.0" in other.stderr  # why it was captured again, by name


def test_the_resume_key_names_the_release_for_torch_too(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "cfg", "a")
    out = tmp_path / "out"
    assert _cli(str(cfg), "--out-dir", str(out), "--vllm-version", "0.26.0").returncode == 0
    (report,) = (p for p in out.glob("a-*.json"))
    job = fleet.make_jobs([cfg], out, Overrides("0.27.0"), "torch")[0]
    assert job.planned_vllm_version == "0.27.0"
    problem = fleet.resume_problem(job, fleet.host_environment_key(), "torch")
    assert problem is not None and "0.26.0" in problem and str(report) in problem


# ----------------------------------------------------------------------------- finding 5


@pytest.mark.parametrize("where", ["file", "device"])
def test_out_dir_naming_a_file_or_a_device_is_one_line(tmp_path: Path, where: str) -> None:
    cfg = write_config(tmp_path / "cfg", "a")
    target = tmp_path / "afile" if where == "file" else Path("/dev/null")
    if where == "file":
        target.write_text("keep me\n")
    r = _cli(str(cfg), "--out-dir", str(target))
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"cgplan: error: {target}: ") and "not a folder" in r.stderr
    if where == "file":
        assert target.read_text() == "keep me\n"


def test_a_second_run_on_the_same_out_dir_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    write_config(cfg, "a")
    write_config(cfg, "b", max_num_seqs=16)
    out = tmp_path / "out"
    first = subprocess.Popen(
        [*CAPTURE, str(cfg), "--backend", "fake", "--out-dir", str(out), "--gpus", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CGPLAN_FAKE_CAPTURE": "a=sleep:6"},
    )
    try:
        lock = out / fleet.LOCK_NAME
        for _ in range(300):
            if lock.is_file() and lock.read_text().strip():
                break
            subprocess.run(["sleep", "0.05"], check=True)
        second = _cli(str(cfg), "--out-dir", str(out))
        assert second.returncode == 2, second.stderr
        assert second.stderr.count("\n") == 1
        assert f"{out}: another cgplan capture (pid {first.pid}) is writing to this folder" in second.stderr
    finally:
        first.communicate(timeout=120)
    assert first.returncode == 0
    assert _cli(str(cfg), "--out-dir", str(out)).returncode == 0  # the lock went with its holder


@pytest.mark.parametrize(
    "content",
    [b"{", b"[1, 2]", b'{"schema_version": 1, "kind": "capture"}', b"\xff\xfe\x00", b'{"kind": "plan"}'],
    ids=["cut", "list", "hollow", "binary", "foreign"],
)
def test_a_tampered_report_is_refused_by_name_and_captured_again(tmp_path: Path, content: bytes) -> None:
    cfg = tmp_path / "cfg"
    write_config(cfg, "a")
    write_config(cfg, "b", max_num_seqs=16)
    out = tmp_path / "out"
    assert _cli(str(cfg), "--out-dir", str(out)).returncode == 0
    (a,) = out.glob("a-*.json")
    a.write_bytes(content)
    r = _cli(str(cfg), "--out-dir", str(out), "--json")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if str(a) in ln]
    assert len(lines) == 1 and "captured again" in lines[0], r.stderr
    assert [row["resumed"] for row in json.loads(r.stdout)["configs"]] == [False, True]
    assert json.loads(a.read_text())["kind"] == "capture"


def test_another_configs_report_is_not_resumed(tmp_path: Path) -> None:
    # two files with the same content: one fingerprint, but each row must hold its own report
    cfg = tmp_path / "cfg"
    a, b = write_config(cfg, "a"), write_config(cfg, "b")
    out = tmp_path / "out"
    assert _cli(str(cfg), "--out-dir", str(out)).returncode == 0
    (ra,), (rb,) = out.glob("a-*.json"), out.glob("b-*.json")
    rb.write_bytes(ra.read_bytes())  # a's report where b's should be
    r = _cli(str(cfg), "--out-dir", str(out), "--json")
    assert [row["resumed"] for row in json.loads(r.stdout)["configs"]] == [True, False]
    assert json.loads(rb.read_text())["source"] == str(b) and str(a) != str(b)
    assert f"{rb}: " in r.stderr and "captured again" in r.stderr


def test_a_link_in_out_dir_is_never_written_through(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "cfg", "a")
    out = tmp_path / "out"
    job = fleet.make_jobs([cfg], out, Overrides(), "fake")[0]
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    job.report.symlink_to(victim)
    r = _cli(str(cfg), "--out-dir", str(out))
    assert r.returncode == 2, r.stderr
    assert victim.read_text() == "precious\n"
    assert f"{job.report}: a symbolic link" in r.stderr and "precious" not in r.stderr
    job.report.unlink()
    job.log.symlink_to(victim)
    r = _cli(str(cfg), "--out-dir", str(out))
    assert r.returncode == 2 and victim.read_text() == "precious\n"
    assert f"{job.log}: a symbolic link" in r.stderr


# ----------------------------------------------------------------------------- finding 6: links


def test_a_link_in_a_config_folder_is_refused_by_name(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    write_config(cfg, "a")
    secret = tmp_path / "secret.yaml"
    secret.write_text("first line is secret: hunter2\n")
    (cfg / "b.yaml").symlink_to(secret)
    r = _cli(str(cfg), "--out-dir", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1
    assert f"{cfg / 'b.yaml'}: a symbolic link in a config folder" in r.stderr
    assert "hunter2" not in r.stderr and str(secret) not in r.stderr
    assert not (tmp_path / "out").exists()  # refused before any work
