"""Capture: the recorded GPU evidence against today's planner, the comparison logic, the
recorder, vLLM-figure parsing, and every failure path (with fakes; no GPU here)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from cgplan.api import capture as capture_mod
from cgplan.api.fleet import iter_reports
from cgplan.api.plan import plan_file
from cgplan.core.compare.measure import GraphMeasurement, MeasuredCapture, compare
from cgplan.core.model.reports import ReqRange, TokenRange
from cgplan.core.model.types import DispatchRange
from cgplan.errors import CaptureError, ConfigRejected, ExitCode, GpuUnavailableError, exit_code_of
from cgplan.gpu.recorder import GraphRecorder
from cgplan.gpu.vllm_backend import vllm_figures
from cgplan.io.config import Overrides
from cgplan.io.reports import read_capture_report, read_fleet_report
from cgplan.render.capture import render_capture
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
H200 = ROOT / "benchmarks/results/h200"
CRASHED = {"tiny-eagle-dyn-v2-vllm"}  # vLLM itself failed to start: see test_gpu_crash_is_predicted
# Top level: the capture issue's runs; cost/: the cost model's fit and held-out runs; tp2/: TP=2.
EVIDENCE = sorted(
    p
    for pat in (
        "*-vllm.json",
        "cost/*-vllm.json",
        "tp2/*-vllm.json",
        "moe/*-vllm.json",
        "moe/call2/*-vllm.json",
        "lora/*-vllm.json",
        "lora/call2/*-vllm.json",
        "lora/call3/*-vllm.json",
    )
    for p in H200.glob(pat)
    if p.stem not in CRASHED
)
CONFIGS = ROOT / "configs/gpu"
# fleet/: multi-config captures (issue 19); their aggregates list the complete reports.
FLEET_AGGREGATES = sorted(H200.glob("fleet/*/fleet.json"))
EVIDENCE += sorted(r for agg in FLEET_AGGREGATES for r in iter_reports(read_fleet_report(agg), agg.parent))


def _config_of(report: Path) -> Path:
    # cost/, moe/ (issue 16) and lora/ reports come from configs/gpu/cost, configs/gpu/moe, configs/gpu/lora
    # moe/call2: two of them captured again after the recorder's baseline fix (6544303);
    # lora/call2, lora/call3: later calls of the LoRA suite
    parent = report.parent.parent if report.parent.name.startswith("call") else report.parent
    folder = CONFIGS / parent.name if parent.name in ("cost", "moe", "lora") else CONFIGS
    name = report.stem.removesuffix("-vllm")
    # regenerated since its capture (issue 13 item 6): the ladder captured then is kept under this name
    name = {"med-llama-mns256-optimized": "med-llama-mns256-optimized-captured"}.get(name, name)
    return folder / (name + ".yaml")


def test_evidence_exists() -> None:
    assert len(EVIDENCE) >= 24


def test_fleet_aggregates_agree_with_their_reports() -> None:
    """The committed multi-config runs: every row's report is there and says what the row says."""
    assert FLEET_AGGREGATES
    for agg in FLEET_AGGREGATES:
        doc = read_fleet_report(agg)
        assert doc.kind == "fleet" and doc.schema_version == 1
        for row in doc.configs:
            if row.report is None:
                assert row.status == "not run" or row.failure_class is not None
                continue
            report = read_capture_report(agg.parent / row.report)
            assert report.status == row.status
            assert report.config_fingerprint == row.config_fingerprint


@pytest.mark.parametrize("report", EVIDENCE, ids=[str(p.relative_to(H200).with_suffix("")) for p in EVIDENCE])
def test_gpu_evidence_matches_todays_plan(report: Path) -> None:
    """What vLLM captured and dispatched on the H200 equals what cgplan plans now."""
    doc = read_capture_report(report)
    assert doc.status == "complete"
    config = _config_of(report)
    _, plan = plan_file(config, Overrides(vllm_version=doc.environment.vllm))
    measured = doc.measured
    assert measured.model_runner == plan.model_runner
    assert measured.cudagraph_mode == plan.cudagraph_mode
    assert measured.capture_sizes == plan.capture_sizes
    for family, graphs in plan.graphs.items():
        got = sorted(
            (g.mode, g.num_tokens, g.num_reqs, g.query_len, g.num_active_loras)
            for g in measured.graphs
            if g.family == family
        )
        want = sorted((g.mode, g.num_tokens, g.num_reqs, g.query_len, g.num_active_loras) for g in graphs)
        assert got == want, family
    assert {g.family for g in measured.graphs} <= set(plan.graphs)
    for ql, rows in measured.uniform_decode.items():
        want_rows = tuple(
            ReqRange(r.first, r.last, r.mode, r.padded_tokens, r.padded_reqs) for r in plan.uniform_decode[ql]
        )
        assert rows == want_rows, f"uniform decode q={ql}"
    # with LoRA: the probe with one active adapter (present in LoRA captures only)
    for ql, rows in measured.uniform_decode_lora1.items():
        want_rows = tuple(
            ReqRange(r.first, r.last, r.mode, r.padded_tokens, r.padded_reqs)
            for r in plan.uniform_decode_lora[ql]
        )
        assert rows == want_rows, f"uniform decode with one LoRA adapter q={ql}"
    assert ("uniform_decode_lora1" not in measured.absent) == bool(plan.uniform_decode_lora)
    want_mixed = tuple(
        TokenRange(r.first, r.last, r.mode, r.padded_tokens, r.padded_reqs) for r in plan.mixed
    )
    assert measured.mixed == want_mixed
    assert doc.comparison is not None and doc.comparison.matches is True
    v = measured.vllm
    assert v.capture_took_gib is not None and v.kv_cache_tokens is not None and v.kv_cache_tokens > 0
    # every captured descriptor was measured: capture time and NVML delta present
    assert all(g.pieces >= 1 and g.nvml_delta_bytes is not None for g in measured.graphs)


def test_gpu_crash_is_predicted() -> None:
    """vLLM 0.26.0 failed an assertion capturing the drafter's decode graphs on the H200;
    today's planner refuses that config for 0.26.0-0.31.0 and accepts it from 0.32.0."""
    doc = read_capture_report(H200 / "tiny-eagle-dyn-v2-vllm.json")
    assert doc.status == "partial" and doc.failure is not None and "AssertionError" in doc.failure
    captured = [g for g in doc.measured.graphs if g.family == "drafter_decode"]
    assert [g.query_len for g in captured] == [1]  # the next descriptor (query length -1) crashed it
    with pytest.raises(
        ConfigRejected, match=r"fails an assertion \(AssertionError\) while capturing the drafter's decode"
    ):
        plan_file(CONFIGS / "tiny-eagle-dyn-v2.yaml", Overrides(vllm_version="0.26.0"))
    plan_file(CONFIGS / "tiny-eagle-dyn-v2.yaml", Overrides(vllm_version="0.32.0"))


def test_vllm_figures_from_real_log() -> None:
    lines = (
        gzip.decompress((ROOT / "tests/data/logs/tiny-ngram-k16-vllm.log.gz").read_bytes())
        .decode()
        .splitlines()
    )
    f = vllm_figures(lines, returned_bytes=123)
    assert f.capture_finished_secs is not None and f.capture_took_gib is not None
    assert f.estimated_cudagraph_gib is not None and f.actual_vs_estimated is not None
    assert f.kv_cache_tokens is not None and f.kv_cache_tokens > 1_000_000
    assert f.capture_returned_bytes == 123


class FakeNvml:
    def __init__(self) -> None:
        self.used = 1000
        self.queries = 0

    def memory_used_bytes(self) -> int:
        self.queries += 1
        return self.used


def test_recorder_groups_pieces_and_families() -> None:
    nvml = FakeNvml()
    rec = GraphRecorder(nvml)  # type: ignore[arg-type]
    reserved = 0
    rec.begin("target", "PIECEWISE", 64, None, None)
    for _ in range(3):
        rec.piece_started(reserved_bytes=reserved)
        nvml.used += 10
        reserved += 4
        rec.piece_ended(reserved_bytes=reserved, t_before_enter=0.0)
    with rec.family("drafter"):
        rec.piece_started(reserved_bytes=reserved)
        nvml.used += 7
        rec.piece_ended(reserved_bytes=reserved, t_before_enter=0.0)
    rec.begin("target", "FULL", 32, 32, 1)
    rec.piece_started(reserved_bytes=reserved)
    nvml.used += 100
    reserved += 4
    rec.piece_ended(reserved_bytes=reserved, t_before_enter=0.0)
    rec.end()
    got = [
        (g.family, g.mode, g.num_tokens, g.pieces, g.nvml_delta_bytes, g.torch_reserved_delta_bytes)
        for g in rec.measurements()
    ]
    assert got == [
        ("target", "PIECEWISE", 64, 3, 30, 12),
        ("drafter", "PIECEWISE", 64, 1, 7, 0),
        ("target", "FULL", 32, 1, 100, 4),
    ]


def test_recorder_reads_memory_per_descriptor_not_per_piece() -> None:
    """issue 18: an NVML query per compiled piece made the hooks cost 17% of vLLM's capture time; a
    descriptor of 33 pieces now costs two queries (and two reserved-bytes readings), not 66."""
    nvml = FakeNvml()
    reserved_reads: list[int] = []
    rec = GraphRecorder(nvml)  # type: ignore[arg-type]

    def reserved() -> int:
        reserved_reads.append(1)
        return 8 * len(reserved_reads)

    rec.reserved_bytes = reserved
    for tokens in (512, 256):
        rec.begin("target", "PIECEWISE", tokens, None, None)
        for _ in range(33):
            rec.piece_started()
            nvml.used += 2
            rec.piece_ended(None, 0.0)
    rec.end()
    assert nvml.queries == 4 and len(reserved_reads) == 4
    got = [
        (g.num_tokens, g.pieces, g.nvml_delta_bytes, g.torch_reserved_delta_bytes) for g in rec.measurements()
    ]
    assert got == [(512, 33, 66, 8), (256, 33, 66, 8)]
    assert rec.hook_s > 0  # the hooks' own host time, reported as measured.instrumentation_s


def test_recorder_disarmed_records_nothing() -> None:
    rec = GraphRecorder(None, armed=False)
    rec.begin("target", "FULL", 8, 8, 1)
    rec.piece_started(0)
    rec.piece_ended(0, 0.0)
    assert rec.measurements() == ()


def _measured(**kw: Any) -> MeasuredCapture:
    return MeasuredCapture(backend="vllm", status="complete", **kw)


def test_compare_finds_missing_unexpected_and_dispatch_changes() -> None:
    _, plan = plan_file(ROOT / "configs/examples/pr50488-eagle-k16.yaml")
    target = plan.graphs["target"]
    graphs = (
        *(
            GraphMeasurement(i, "target", g.mode, g.num_tokens, g.num_reqs, g.query_len, 1, 1.0, 2.0, 0, 0)
            for i, g in enumerate(target[1:])  # the first planned graph is missing
        ),
        GraphMeasurement(99, "target", "FULL", 9999, 1, 17, 1, 1.0, 1.0, 0, 0),
    )
    q = plan.uniform_decode_query_len
    rows = list(plan.uniform_decode[q])
    rows[-1] = DispatchRange(
        rows[-1].first, rows[-1].last, "FULL", 544, 32
    )  # measured a graph where plan says eager
    c = compare(plan, _measured(graphs=graphs, uniform_decode={q: tuple(rows)}, mixed=plan.mixed))
    tdiff = next(d for d in c.graphs if d.family == "target")
    assert tdiff.missing == (target[0],) and len(tdiff.unexpected) == 1
    assert [(d.first, d.last, d.predicted, d.measured) for d in c.dispatch] == [(31, 32, "NONE", "FULL@544")]
    assert not c.matches


def test_no_gpu_is_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capture_mod, "gpu_unavailable_reason", lambda: "no CUDA GPU is visible")
    with pytest.raises(GpuUnavailableError) as info:
        capture_mod.run_capture(CONFIGS / "tiny-nospec.yaml", Overrides())
    assert exit_code_of(info.value) == ExitCode.ENVIRONMENT


def test_unknown_vllm_version_is_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capture_mod, "gpu_unavailable_reason", lambda: None)
    monkeypatch.setattr("cgplan.gpu.vllm_backend.installed_vllm_version", lambda: "0.99.0")
    with pytest.raises(GpuUnavailableError, match=r"vLLM 0\.99\.0 is installed"):
        capture_mod.run_capture(CONFIGS / "tiny-nospec.yaml", Overrides(), backend="vllm")


@pytest.mark.parametrize(
    ("exc", "words"),
    [
        (RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"), "out of memory"),
        (KeyboardInterrupt(), "interrupted (SIGINT)"),
        (capture_mod.Terminated(), "terminated (SIGTERM)"),
        (ValueError("engine exploded"), "engine error"),
    ],
)
def test_failure_half_way_keeps_partial_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, exc: BaseException, words: str
) -> None:
    monkeypatch.setattr(capture_mod, "gpu_unavailable_reason", lambda: None)
    monkeypatch.setattr("cgplan.gpu.vllm_backend.installed_vllm_version", lambda: "0.26.0")

    def fake_capture(
        inp: Any,
        raw: Any,
        base: Any,
        recorder: GraphRecorder,
        nvml: Any,
        log_lines: list[str],
        per_graph: bool,
    ) -> Any:
        nv = FakeNvml()
        recorder.nvml = nv  # type: ignore[assignment]
        recorder.begin("target", "PIECEWISE", 64, None, None)
        recorder.piece_started(0)
        nv.used += 2 << 20
        recorder.piece_ended(0, 0.0)
        log_lines.append("INFO x: Capturing CUDA graphs (PIECEWISE)")
        raise exc

    monkeypatch.setattr("cgplan.gpu.vllm_backend.capture_vllm", fake_capture)
    out = tmp_path / "report.json"
    out.write_text("previous content")
    outcome = capture_mod.run_capture(CONFIGS / "tiny-nospec.yaml", Overrides(), backend="vllm", output=out)
    assert isinstance(outcome.failure, CaptureError)
    assert exit_code_of(outcome.failure) == ExitCode.CAPTURE_FAILED
    assert words in outcome.failure.message
    doc = read_capture_report(out)
    assert doc == outcome.report  # the report as written reads back as it was made
    assert doc.status == "partial" and doc.failure is not None and words in doc.failure
    assert [g.num_tokens for g in doc.measured.graphs] == [64]
    assert doc.measured.graphs[0].nvml_delta_bytes == 2 << 20
    assert not list(tmp_path.glob(".report.json.*"))  # no temporary file left behind
    assert "partial" in render_capture(doc)


def test_report_reader_rejects_newer_schema(tmp_path: Path) -> None:
    p = tmp_path / "r.json"
    p.write_text(json.dumps({"schema_version": 99, "kind": "capture"}))
    with pytest.raises(Exception, match=r"schema_version: 99 is newer than this cgplan reads"):
        read_capture_report(p)
