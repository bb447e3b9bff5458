"""Tensor-parallel capture through vLLM's MultiprocExecutor, with fakes (no GPU, no vLLM here):
the engine's environment, the hand-over to forked workers, the per-rank payloads that
`collective_rpc` brings back, the report's per-rank section, reading it back and rendering it,
and the single-process path left exactly as it was."""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from cgplan.api import capture as capture_mod
from cgplan.api.plan import plan_file
from cgplan.core.compare.measure import GraphMeasurement, RankMeasurement
from cgplan.core.model.types import Plan
from cgplan.errors import ReportError
from cgplan.gpu import vllm_backend as vb
from cgplan.gpu.recorder import GraphRecorder, NullProgress
from cgplan.io.config import Overrides, load_config
from cgplan.io.reports import ranks_from_report, read_capture_report, report_text, side_from_report
from cgplan.io.schema.capture import rank_to_dict
from cgplan.io.schema.reports import capture_from_json
from cgplan.render.capture import render_capture
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
CONFIGS = ROOT / "configs/gpu"
TP2 = CONFIGS / "llama8b-tp2-mns128.yaml"
TP2_EAGLE = CONFIGS / "llama8b-eagle-k3-tp2-mns64.yaml"
TP1 = CONFIGS / "llama8b-mns256.yaml"
MIB = 1 << 20
WORKER_ENV = (
    "VLLM_WORKER_MULTIPROC_METHOD",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
    "PYTORCH_NVML_BASED_CUDA_CHECK",
    "VLLM_ENABLE_V1_MULTIPROCESSING",
    "VLLM_USE_V2_MODEL_RUNNER",
)


class FakeNvml:
    def __init__(self, name: str = "NVIDIA H200", index: int = 0) -> None:
        self.used = 1000
        self._name, self._index = name, index

    def memory_used_bytes(self) -> int:
        return self.used

    def names(self) -> list[str]:
        return [self._name]

    def indices(self) -> list[int]:
        return [self._index]


def _graphs(plan: Plan, mib_each: int) -> tuple[GraphMeasurement, ...]:
    """Every planned graph, as a worker would have measured it."""
    out: list[GraphMeasurement] = []
    for family, graphs in plan.graphs.items():
        for g in graphs:
            shape = (g.mode, g.num_tokens, g.num_reqs, g.query_len)
            out.append(GraphMeasurement(len(out), family, *shape, 1, 2.0, 5.0, mib_each * MIB, 4))
    return tuple(out)


def _payloads(plan: Plan) -> list[vb.RankPayload]:
    rank0 = RankMeasurement(0, 0, "NVIDIA H200", 0, _graphs(plan, 3), 12.5, 900 * MIB)
    rank1 = RankMeasurement(1, 1, "NVIDIA H200", 1, _graphs(plan, 2), 13.25, 700 * MIB)
    return [
        # out of order on purpose: the parent sorts by rank
        vb.RankPayload(rank1, returned_bytes=1, log_lines=("INFO vllm: Graph capturing finished in 99 s",)),
        vb.RankPayload(
            rank0,
            returned_bytes=123,
            log_lines=("INFO vllm.x: Graph capturing finished in 13 secs, took 0.88 GiB",),
            model_runner=plan.model_runner,
            cudagraph_mode=plan.cudagraph_mode,
            capture_sizes=tuple(plan.capture_sizes),
            max_capture_size=plan.capture_sizes[-1] if plan.capture_sizes else None,
            uniform_decode=dict(plan.uniform_decode),
            mixed=plan.mixed,
        ),
    ]


class FakeEngine:
    def __init__(self) -> None:
        cache = types.SimpleNamespace(num_gpu_blocks=1000, block_size=16)
        self.vllm_config = types.SimpleNamespace(cache_config=cache)


class FakeGraph:
    def __enter__(self) -> FakeGraph:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


@contextmanager
def fake_stack(
    monkeypatch: pytest.MonkeyPatch, payloads: list[vb.RankPayload] | None
) -> Iterator[dict[str, Any]]:
    """A fake `vllm` (its LLM answers collective_rpc with `payloads`) and `torch`, and no GPU check."""
    seen: dict[str, Any] = {"rpc": [], "nvml_sessions": [], "llm_kwargs": None}

    class LLM:
        def __init__(self, **kw: Any) -> None:
            seen["llm_kwargs"] = kw
            seen["env_at_start"] = {k: os.environ.get(k) for k in WORKER_ENV}
            seen["handed_over"] = vb._HANDOVER is not None
            self.llm_engine = FakeEngine()

        def collective_rpc(self, method: Any, timeout: float | None = None, **kw: Any) -> list[Any]:
            seen["rpc"].append((method, timeout))
            assert payloads is not None
            return list(payloads)

    vllm = types.ModuleType("vllm")
    vllm.LLM = LLM  # type: ignore[attr-defined]
    vllm.__version__ = "0.26.0"  # type: ignore[attr-defined]
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_initialized=lambda: False, graph=FakeGraph, synchronize=lambda: None, memory_reserved=lambda: 0
    )
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "torch", torch)
    for key in WORKER_ENV:
        monkeypatch.delenv(key, raising=False)  # restored after the test, whatever the code sets
    monkeypatch.setattr(capture_mod, "gpu_unavailable_reason", lambda: None)

    def environment(idx: list[int] | None = None) -> dict[str, Any]:
        return {"vllm": "0.26.0", "torch": None, "gpus": [{"name": "NVIDIA H200"}] * len(idx or [])}

    monkeypatch.setattr("cgplan.gpu.environment.collect_environment", environment)

    @contextmanager
    def fake_session(indices: list[int]) -> Iterator[FakeNvml]:
        seen["nvml_sessions"].append(list(indices))
        yield FakeNvml()

    monkeypatch.setattr("cgplan.gpu.nvml.nvml_session", fake_session)
    yield seen


def test_tp2_configs_plan() -> None:
    for config in (TP2, TP2_EAGLE):
        loaded, plan = plan_file(config)
        assert loaded.input.tensor_parallel_size == 2 and plan.graphs["target"]
    _, eagle = plan_file(TP2_EAGLE)
    assert set(eagle.graphs) > {"target"}


def test_engine_kwargs_name_the_multiproc_executor_only_for_tp() -> None:
    tp2 = load_config(TP2, Overrides()).input
    raw = yaml.safe_load(TP2.read_text())
    kw = vb.engine_kwargs(tp2, raw, str(CONFIGS))
    assert kw["tensor_parallel_size"] == 2 and kw["distributed_executor_backend"] == "mp"
    tp1 = load_config(TP1, Overrides()).input
    kw1 = vb.engine_kwargs(tp1, yaml.safe_load(TP1.read_text()), str(CONFIGS))
    assert kw1["tensor_parallel_size"] == 1 and "distributed_executor_backend" not in kw1


def test_tp_capture_report_has_every_rank(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _, plan = plan_file(TP2)
    with fake_stack(monkeypatch, _payloads(plan)) as seen:
        out = tmp_path / "tp.json"
        outcome = capture_mod.run_capture(TP2, Overrides(), backend="vllm", output=out)
    assert outcome.failure is None
    # the engine started with forked workers that inherit the hooks, NVLink multicast off,
    # and no NVML session held by the parent across the fork
    env = seen["env_at_start"]
    assert env["VLLM_WORKER_MULTIPROC_METHOD"] == "fork"
    assert env["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1"
    multicast = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")
    assert [env[k] for k in multicast] == ["0", "1", "1"]
    assert seen["handed_over"] and vb._HANDOVER is None  # handed over during start-up only
    assert seen["nvml_sessions"] == []
    assert seen["llm_kwargs"]["distributed_executor_backend"] == "mp"
    assert [m for m, _ in seen["rpc"]] == [vb.rank_payload]
    doc = read_capture_report(out)
    m = doc.measured
    assert doc.status == "complete" and doc.comparison is not None and doc.comparison.matches is True
    assert [r.rank for r in m.ranks] == [0, 1]
    assert m.graphs == m.ranks[0].graphs  # rank 0's graphs are the ones compared
    n = sum(len(g) for g in plan.graphs.values())
    assert m.ranks[0].graph_nvml_total_bytes == 3 * MIB * n
    assert m.ranks[1].graph_nvml_total_bytes == 2 * MIB * n
    assert m.capture_nvml_delta_bytes == 1600 * MIB  # both GPUs
    assert m.capture_wall_s == 13.25  # the slowest rank
    assert m.vllm.capture_took_gib == 0.88 and m.vllm.capture_finished_secs == 13  # rank 0's
    assert m.vllm.kv_cache_tokens == 16000
    assert any(line.startswith("(rank 0) ") for line in doc.vllm_log)
    # JSON round trip through the strict reader
    ranks = ranks_from_report(doc)
    assert ranks == tuple(p.measurement for p in sorted(_payloads(plan), key=lambda p: p.measurement.rank))
    side = side_from_report(doc, "tp.json")
    # graph memory is rank 0's capture phase (like the prediction and vLLM's "took"), per rank;
    # the graph sections' sum stays as the labelled detail
    assert side.pool_bytes == m.ranks[0].capture_nvml_delta_bytes != m.capture_nvml_delta_bytes
    assert side.graph_sections_bytes == 3 * MIB * n
    text = render_capture(doc, width=140)
    assert "2 tensor-parallel ranks" in text and "NVIDIA H200 (NVML 1)" in text
    assert "1600.0" not in text.split("tensor-parallel ranks")[1]  # per rank, not summed
    assert "700.0" in text and "13.25" in text


def test_tp_eagle_capture_keeps_families(monkeypatch: pytest.MonkeyPatch) -> None:
    _, plan = plan_file(TP2_EAGLE)
    with fake_stack(monkeypatch, _payloads(plan)):
        outcome = capture_mod.run_capture(TP2_EAGLE, Overrides(), backend="vllm")
    doc = outcome.report
    assert doc.comparison is not None and doc.comparison.matches is True
    assert {g.family for g in doc.measured.ranks[1].graphs} == set(plan.graphs)


def test_spawned_worker_is_a_failure_not_an_empty_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker without the hooks (spawned) says so; the capture fails instead of reporting nothing."""
    worker = types.SimpleNamespace(rank=1, local_rank=1)
    lost = vb.rank_payload(worker)  # no hand-over in this process
    assert lost.error is not None and "spawned" in lost.error
    _, plan = plan_file(TP2)
    with fake_stack(monkeypatch, [_payloads(plan)[1], lost]):
        outcome = capture_mod.run_capture(TP2, Overrides(), backend="vllm")
    assert outcome.failure is not None and "spawned" in outcome.failure.message
    assert "an unknown number of graphs" in outcome.failure.message
    assert outcome.report.status == "failed"


def test_tp1_path_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_stack(monkeypatch, None) as seen:
        outcome = capture_mod.run_capture(TP1, Overrides(), backend="vllm")
    assert seen["rpc"] == [] and not seen["handed_over"]
    assert seen["nvml_sessions"] == [[0]]
    assert "distributed_executor_backend" not in seen["llm_kwargs"]
    env = seen["env_at_start"]
    assert env["VLLM_WORKER_MULTIPROC_METHOD"] is None and env["PYTORCH_NVML_BASED_CUDA_CHECK"] is None
    assert env["NCCL_NVLS_ENABLE"] is None
    m = outcome.report.measured
    assert "ranks" in m.absent and "ranks" not in json.loads(report_text(outcome.report))["measured"]
    assert ranks_from_report(outcome.report) == ()
    assert "tensor-parallel" not in render_capture(outcome.report)


def _record_one(recorder: GraphRecorder, nvml: FakeNvml, mib: int) -> None:
    recorder.begin("target", "FULL", 8, 8, 1)
    recorder.piece_started(0)
    nvml.used += mib * MIB
    recorder.piece_ended(4, 0.0)
    recorder.end()


def _worker(recorder: GraphRecorder, state: vb._State, lines: list[str], conn: Any) -> None:
    """A forked 'worker': the at-fork hook has run; measure one graph and answer like collective_rpc."""
    took_over = (
        state.in_worker,
        recorder.nvml is None,
        isinstance(recorder.progress, NullProgress),
        list(lines),
    )
    nvml = FakeNvml(index=3)
    state.worker_nvml = nvml  # type: ignore[assignment]
    recorder.nvml = nvml  # type: ignore[assignment]
    recorder.armed = True
    lines.append("INFO vllm: Graph capturing finished in 1 secs, took 0.01 GiB")
    _record_one(recorder, nvml, 5)
    conn.send((took_over, vb.rank_payload(types.SimpleNamespace(rank=1, local_rank=1))))
    conn.close()


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_forked_worker_takes_over_its_own_copy() -> None:
    """A real fork: the worker drops the parent's NVML handles, progress bar and log lines, and its
    records come back; the parent's objects are untouched."""
    parent_nvml = FakeNvml()
    recorder = GraphRecorder(parent_nvml, progress="parent bar")  # type: ignore[arg-type]
    state = vb._State()
    lines = ["INFO vllm: parent line"]
    ctx = multiprocessing.get_context("fork")
    reader, writer = ctx.Pipe(duplex=False)
    with vb._hand_over_to_workers(recorder, state, lines):
        proc = ctx.Process(target=_worker, args=(recorder, state, lines, writer))
        proc.start()
    writer.close()
    took_over, payload = reader.recv()
    proc.join(timeout=30)
    assert proc.exitcode == 0
    assert took_over == (True, True, True, [])
    assert payload.error is None
    r = payload.measurement
    assert (r.rank, r.local_rank, r.device_name, r.nvml_index) == (1, 1, "NVIDIA H200", 3)
    assert [(g.num_tokens, g.nvml_delta_bytes) for g in r.graphs] == [(8, 5 * MIB)]
    assert payload.log_lines == ("INFO vllm: Graph capturing finished in 1 secs, took 0.01 GiB",)
    assert payload.uniform_decode == {}  # only rank 0 probes the dispatcher
    # the parent: nothing recorded, its handles and lines as they were, no hand-over left
    assert recorder.measurements() == () and recorder.nvml is parent_nvml  # type: ignore[comparison-overlap]
    assert lines == ["INFO vllm: parent line"] and not state.in_worker and vb._HANDOVER is None


def _bad(doc: dict[str, Any], **rank0: Any) -> dict[str, Any]:
    bad: dict[str, Any] = json.loads(json.dumps(doc))
    bad["measured"]["ranks"][0].update(rank0)
    return bad


def test_report_reader_checks_the_rank_section() -> None:
    graph = GraphMeasurement(0, "target", "FULL", 8, 8, 1, 1, 1.5, 2.5, -3, 4)  # NVML can shrink
    ranks = (RankMeasurement(0, 0, "NVIDIA H200", 2, (graph,), 1.0, 10), RankMeasurement(1, 1, None, None))
    doc = json.loads((ROOT / "benchmarks/results/h200/tiny-nospec-vllm.json").read_text())
    doc["measured"]["ranks"] = [rank_to_dict(r) for r in ranks]
    assert ranks_from_report(capture_from_json(json.loads(json.dumps(doc)), "r")) == ranks
    cases = [
        (_bad(doc, rank=1), r"ranks\[1\]\.rank: ranks must be sorted and unique"),
        (_bad(doc, rank="0"), r"ranks\[0\]\.rank: expected an integer"),
        (_bad(doc, device_name="\x1b[31mred"), r"ranks\[0\]\.device_name: expected a GPU name"),
        (_bad(doc, capture_wall_s=-1), r"ranks\[0\]\.capture_wall_s: expected a number"),
        (_bad(doc, capture_nvml_delta_bytes=1.5), r"ranks\[0\]\.capture_nvml_delta_bytes: expected a byte"),
        (_bad(doc, graphs=[{"family": "target"}]), r"ranks\[0\]\.graphs\[0\]\.mode: expected FULL"),
        (_bad(doc, graphs="x"), r"ranks\[0\]\.graphs: expected a list"),
    ]
    for bad, words in cases:
        with pytest.raises(ReportError, match=words):
            capture_from_json(bad, "r")
    not_a_list = json.loads(json.dumps(doc))
    not_a_list["measured"]["ranks"] = {"0": {}}
    with pytest.raises(ReportError, match=r"r:measured\.ranks: expected a list of ranks"):
        capture_from_json(not_a_list, "r")


def test_old_capture_reports_still_read() -> None:
    """Reports written before the rank section (schema 1, no `ranks`) read as before."""
    for path in sorted((ROOT / "benchmarks/results/h200").glob("*-vllm.json")):
        doc = read_capture_report(path)
        assert ranks_from_report(doc) == ()
        side_from_report(doc, path.name)
