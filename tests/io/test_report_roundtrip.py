"""Reports as types (issue 26): every committed report reads into its type and writes back to the
same bytes, whatever cgplan release wrote it; the checked reader and the unchecked conversion of a
document cgplan builds itself give the same object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cgplan.core.model.reports import CaptureReport, FleetReport, PlanDocument
from cgplan.io.reports import read_capture_report, read_fleet_report, read_report, report_text
from cgplan.io.schema.reports import capture_from_json, plan_from_json, to_json
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
KINDS = ("plan", "capture", "fleet")


def _reports() -> list[Path]:
    """Every committed JSON document of a report kind: the GPU runs under benchmarks/results/,
    the plan goldens under tests/golden/, and any under tests/data/."""
    found = []
    for folder in ("benchmarks/results", "tests/golden", "tests/data"):
        for path in sorted((ROOT / folder).rglob("*.json")):
            doc = json.loads(path.read_text())
            if not (isinstance(doc, dict) and "schema_version" in doc):
                continue
            # the plugin's counters file (per-outcome step counts) has no kind and is not a report
            if "kind" not in doc and {"decode", "mixed", "per_mode"} <= doc.keys():
                continue
            if doc.get("kind", "plan") in KINDS:
                found.append(path)
    return found


REPORTS = _reports()


def test_the_committed_reports_are_found() -> None:
    kinds = [json.loads(p.read_text()).get("kind", "plan") for p in REPORTS]
    assert kinds.count("capture") >= 80 and kinds.count("fleet") >= 5 and kinds.count("plan") >= 4


def _read(path: Path) -> PlanDocument | CaptureReport | FleetReport:
    if json.loads(path.read_text()).get("kind") == "fleet":
        return read_fleet_report(path)
    return read_report(path)


@pytest.mark.parametrize("path", REPORTS, ids=[str(p.relative_to(ROOT)) for p in REPORTS])
def test_a_report_is_written_back_to_its_bytes(path: Path) -> None:
    assert report_text(_read(path)) == path.read_text()


def test_older_shapes_are_among_them() -> None:
    """Reports written before some keys existed (schema 1 all the same) read with those keys
    absent and are written back without them."""
    captures = [r for r in map(_read, REPORTS) if isinstance(r, CaptureReport)]
    absent_measured = set().union(*(r.measured.absent for r in captures))
    absent_plan = set().union(*(r.plan.absent for r in captures))
    assert {"instrumentation_s", "instrumentation_nvml_s", "ranks", "uniform_decode_lora1"} <= absent_measured
    assert {"kv_cache", "assumed", "predicted_latency", "step_padding"} <= absent_plan
    assert any("outcome" in g.absent for r in captures for g in r.plan.gaps)
    assert any("command_line" in f.absent for r in captures for f in r.plan.fixes)


@pytest.mark.parametrize("path", REPORTS[::7], ids=[str(p.relative_to(ROOT)) for p in REPORTS[::7]])
def test_the_checks_change_no_value(path: Path) -> None:
    doc = json.loads(path.read_text())
    if doc.get("kind") == "fleet":
        pytest.skip("the aggregate has no checks of its own")
    convert = capture_from_json if doc.get("kind") == "capture" else plan_from_json
    checked, unchecked = convert(doc, "r"), convert(doc, "r", check=False)
    assert checked == unchecked
    assert to_json(unchecked) == doc


def test_a_fresh_capture_report_reads_back_as_made(tmp_path: Path) -> None:
    from cgplan.api.capture import run_capture
    from cgplan.io.config import Overrides

    out = tmp_path / "r.json"
    outcome = run_capture(ROOT / "configs/gpu/tiny-nospec.yaml", Overrides(), backend="fake", output=out)
    assert read_capture_report(out) == outcome.report
    assert report_text(outcome.report) == out.read_text()
