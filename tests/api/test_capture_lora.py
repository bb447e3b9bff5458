"""LoRA deployments through `cgplan capture --gpu` (no GPU here): the engine arguments, the
adapter count recorded per graph, the dispatcher probed with and without an active adapter, and
the comparison of both with the plan.

vLLM 0.26.0 captures every size once per LoRA case (`CudagraphDispatcher._get_lora_cases`, V2
`gpu/lora_utils.get_lora_capture_cases`) with its own dummy adapters, and keys dispatch on the
active-adapter count; the configs under configs/gpu/lora/ are the ones the H200 runs
(scripts/device/lora_suite.sh)."""

from __future__ import annotations

import bisect
import json
import os
import subprocess
import sys
import tarfile
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cgplan.api.plan import plan_file
from cgplan.core.compare.measure import GraphMeasurement, MeasuredCapture, compare
from cgplan.core.model.types import DispatchRange, Graph, Plan
from cgplan.gpu import vllm_backend as vb
from cgplan.gpu.recorder import GraphRecorder
from cgplan.io.config import Overrides, load_config
from cgplan.io.reports import side_from_report
from cgplan.io.schema.capture import measured_to_dict
from cgplan.io.schema.reports import capture_from_json
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
LORA = ROOT / "configs/gpu/lora"
M1, M3_V1 = LORA / "tiny-lora-m1.yaml", LORA / "tiny-lora-m3-v1.yaml"
NOSPEC_V1, NOSPEC_V2 = LORA / "tiny-lora-m3-nospec-v1.yaml", LORA / "tiny-lora-m3-nospec-v2.yaml"
ENV_KEYS = ("VLLM_USE_V2_MODEL_RUNNER", "VLLM_ENABLE_V1_MULTIPROCESSING", "HF_HUB_OFFLINE")


def _kwargs(config: Path) -> dict[str, Any]:
    inp = load_config(config, Overrides()).input
    return vb.engine_kwargs(inp, yaml.safe_load(config.read_text()), str(ROOT))


def test_engine_kwargs_pass_lora_settings_by_vllm_names() -> None:
    kw = _kwargs(NOSPEC_V1)
    assert (kw["enable_lora"], kw["max_loras"], kw["max_lora_rank"]) == (True, 3, 8)
    assert kw["compilation_config"] == {"cudagraph_specialize_lora": False}
    # at vLLM's default (on) it is named too: the engine captures the cases the plan was made for
    kw1 = _kwargs(M1)
    assert (kw1["enable_lora"], kw1["max_loras"]) == (True, 1)
    assert kw1["compilation_config"] == {"cudagraph_specialize_lora": True}
    plain = _kwargs(ROOT / "configs/gpu/tiny-nospec.yaml")
    assert not {"enable_lora", "max_loras", "max_lora_rank", "compilation_config"} & set(plain)


def test_lora_configs_plan_the_cases_vllm_captures() -> None:
    """The four device configs span V1/V2 and specialize on/off (checked against vLLM 0.26.0's
    own code with the oracle: scripts/record_golden.py on copies with platform hopper)."""
    cases = {}
    for config in (M1, M3_V1, NOSPEC_V1, NOSPEC_V2):
        _, plan = plan_file(config)
        cases[config.stem] = (plan.model_runner, sorted({g.num_active_loras for g in plan.graphs["target"]}))
    assert cases == {
        "tiny-lora-m1": ("v2", [0, 2]),
        "tiny-lora-m3-v1": ("v1", [0, 4]),
        "tiny-lora-m3-nospec-v1": ("v1", [4]),
        "tiny-lora-m3-nospec-v2": ("v2", [0, 4]),
    }


def _measured_graphs(plan: Plan, lora_of: Any = None) -> tuple[GraphMeasurement, ...]:
    out: list[GraphMeasurement] = []
    for g in plan.graphs["target"]:
        lora = g.num_active_loras if lora_of is None else lora_of(g)
        out.append(
            GraphMeasurement(
                len(out), "target", g.mode, g.num_tokens, g.num_reqs, g.query_len, 1, 1.0, 2.0, 0, 0, lora
            )
        )
    return tuple(out)


def test_compare_tells_graphs_apart_by_adapter_count() -> None:
    _, plan = plan_file(M3_V1)
    measured = MeasuredCapture(
        backend="vllm",
        status="complete",
        graphs=_measured_graphs(plan),
        uniform_decode=dict(plan.uniform_decode),
        mixed=plan.mixed,
        uniform_decode_lora=dict(plan.uniform_decode_lora),
    )
    assert compare(plan, measured).matches
    # the same shapes captured for one adapter instead of max_loras + 1: none is the planned one
    wrong = MeasuredCapture(
        backend="vllm", status="complete", graphs=_measured_graphs(plan, lambda g: min(g.num_active_loras, 1))
    )
    diff = next(d for d in compare(plan, wrong).graphs if d.family == "target")
    with_lora = [g for g in plan.graphs["target"] if g.num_active_loras]
    assert set(diff.missing) == set(with_lora) and len(diff.unexpected) == len(with_lora)
    assert {g.num_active_loras for g in diff.unexpected} == {1}


def test_compare_checks_the_one_adapter_dispatch() -> None:
    _, plan = plan_file(NOSPEC_V1)
    q = plan.uniform_decode_query_len
    assert {r.mode for r in plan.uniform_decode[q]} == {"NONE"}  # no graph without an adapter
    assert {r.mode for r in plan.uniform_decode_lora[q]} == {"FULL"}
    eager = (DispatchRange(1, plan.max_num_seqs, "NONE", None, None),)
    measured = MeasuredCapture(
        backend="vllm",
        status="complete",
        graphs=_measured_graphs(plan),
        uniform_decode=dict(plan.uniform_decode),
        mixed=plan.mixed,
        uniform_decode_lora={q: eager},
    )
    c = compare(plan, measured)
    assert not c.matches
    assert {d.family for d in c.dispatch} == {"uniform_decode_lora1"}
    assert c.dispatch[0].first == 1 and c.dispatch[-1].last == plan.max_num_seqs


def test_report_carries_adapter_counts_only_with_lora(tmp_path: Path) -> None:
    _, plan = plan_file(NOSPEC_V1)
    m = MeasuredCapture(
        backend="vllm",
        status="complete",
        graphs=_measured_graphs(plan),
        uniform_decode_lora=dict(plan.uniform_decode_lora),
    )
    d = measured_to_dict(m)
    assert {g["num_active_loras"] for g in d["graphs"]} == {4}
    assert "uniform_decode_lora1" in d
    _, plain_plan = plan_file(ROOT / "configs/gpu/tiny-nospec.yaml")
    plain = measured_to_dict(
        MeasuredCapture(backend="vllm", status="complete", graphs=_measured_graphs(plain_plan))
    )
    assert all("num_active_loras" not in g for g in plain["graphs"]) and "uniform_decode_lora1" not in plain
    # a capture report read back as a diff side keeps each graph's adapter count
    doc = {
        "schema_version": 1,
        "kind": "capture",
        "status": "complete",
        "config_fingerprint": None,
        "plan": {
            "schema_version": 1,
            "vllm_version": "0.26.0",
            "uniform_decode_query_len": 1,
            "max_num_seqs": 32,
            "graphs": {"target": []},
            "uniform_decode": {},
        },
        "measured": json.loads(json.dumps(d)),
    }
    side = side_from_report(capture_from_json(doc, "gpu"), "gpu")
    assert {g.num_active_loras for g in side.graphs["target"]} == {4}


def test_recorder_keeps_the_descriptors_adapter_count() -> None:
    rec = GraphRecorder(None)
    rec.begin("target", "FULL", 8, 8, 1, 4)
    rec.piece_started(0)
    rec.piece_ended(0, 0.0)
    rec.begin("target", "FULL", 8, 8, 1)
    rec.piece_started(0)
    rec.piece_ended(0, 0.0)
    rec.end()
    assert [g.num_active_loras for g in rec.measurements()] == [4, 0]


# --- the vllm backend against stand-ins for vLLM 0.26.0's V1 runner and dispatcher ------------


class _Mode:
    def __init__(self, name: str) -> None:
        self.name = name


class _Desc:
    """V1 `BatchDescriptor`."""

    def __init__(self, num_tokens: int, num_reqs: int | None, uniform: bool, num_active_loras: int) -> None:
        self.num_tokens, self.num_reqs, self.uniform = num_tokens, num_reqs, uniform
        self.has_lora, self.num_active_loras = num_active_loras > 0, num_active_loras


class _Dispatcher:
    """V1 `CudagraphDispatcher.dispatch` over the keys captured (vLLM 0.26.0's lookup: pad to the
    next capture size, FULL key first, then the relaxed PIECEWISE key; with adapters the key
    holds max_loras + 1, as `specialize_active_lora` is off)."""

    def __init__(
        self, descs: list[tuple[str, _Desc]], sizes: list[int], q: int, s: int, max_loras: int
    ) -> None:
        self.keys = {(m, d.num_tokens, d.num_reqs, d.uniform, d.num_active_loras) for m, d in descs}
        self.sizes, self.q, self.s, self.max_loras = sizes, q, s, max_loras
        self.calls: list[tuple[bool, int]] = []

    def dispatch(
        self, num_tokens: int, uniform_decode: bool = False, has_lora: bool = False, num_active_loras: int = 0
    ) -> tuple[_Mode, Any]:
        self.calls.append((has_lora, num_active_loras))
        eager = (_Mode("NONE"), types.SimpleNamespace(num_tokens=num_tokens, num_reqs=None))
        if num_tokens > self.sizes[-1]:
            return eager
        lora = self.max_loras + 1 if has_lora and num_active_loras > 0 else 0
        padded = self.sizes[bisect.bisect_left(self.sizes, num_tokens)]
        reqs = min(padded // self.q, self.s)
        if uniform_decode and ("FULL", padded, reqs, True, lora) in self.keys:
            return _Mode("FULL"), types.SimpleNamespace(num_tokens=padded, num_reqs=reqs)
        if ("PIECEWISE", padded, None, False, lora) in self.keys:
            return _Mode("PIECEWISE"), types.SimpleNamespace(num_tokens=padded, num_reqs=None)
        return eager


class _Graph:
    def __enter__(self) -> _Graph:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


@pytest.fixture
def fake_v1_engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    seen: dict[str, Any] = {}

    class GPUModelRunner:
        def __init__(self, vllm_config: Any, descs: list[tuple[str, _Desc]]) -> None:
            self.vllm_config, self.descs = vllm_config, descs
            self.uniform_decode_query_len = 1
            cc = vllm_config.compilation_config
            lora = vllm_config.lora_config
            self.cudagraph_dispatcher = _Dispatcher(
                descs,
                cc.cudagraph_capture_sizes,
                1,
                vllm_config.scheduler_config.max_num_seqs,
                lora.max_loras,
            )

        def capture_model(self) -> int:
            for mode, desc in self.descs:
                self._warmup_and_capture(desc, _Mode(mode))
            return 1 << 20

        def _warmup_and_capture(self, desc: _Desc, cudagraph_runtime_mode: _Mode) -> None:
            with sys.modules["torch"].cuda.graph():
                pass

    class LLM:
        def __init__(self, **kw: Any) -> None:
            seen["llm_kwargs"] = kw
            plan = seen["plan"]
            cc = types.SimpleNamespace(
                cudagraph_mode=_Mode(plan.cudagraph_mode),
                cudagraph_capture_sizes=list(plan.capture_sizes),
                max_cudagraph_capture_size=plan.max_capture_size,
            )
            vc = types.SimpleNamespace(
                scheduler_config=types.SimpleNamespace(
                    max_num_seqs=kw["max_num_seqs"], max_num_batched_tokens=kw["max_num_batched_tokens"]
                ),
                num_speculative_tokens=0,
                speculative_config=None,
                compilation_config=cc,
                lora_config=types.SimpleNamespace(max_loras=kw["max_loras"])
                if kw.get("enable_lora")
                else None,
                cache_config=types.SimpleNamespace(num_gpu_blocks=100, block_size=16),
                use_v2_model_runner=False,
            )
            descs = [
                (g.mode, _Desc(g.num_tokens, g.num_reqs, g.query_len is not None, g.num_active_loras))
                for g in plan.graphs["target"]
            ]
            runner = GPUModelRunner(vc, descs)
            seen["runner"] = runner
            runner.capture_model()
            self.llm_engine = types.SimpleNamespace(vllm_config=vc)

    mods = {
        n: types.ModuleType(n)
        for n in ("vllm", "vllm.v1", "vllm.v1.worker", "vllm.v1.worker.gpu_model_runner")
    }
    mods["vllm"].LLM = LLM  # type: ignore[attr-defined]
    mods["vllm"].__version__ = "0.26.0"  # type: ignore[attr-defined]
    mods["vllm.v1.worker.gpu_model_runner"].GPUModelRunner = GPUModelRunner  # type: ignore[attr-defined]
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        graph=_Graph,
        synchronize=lambda: None,
        empty_cache=lambda: None,
        is_initialized=lambda: False,
        memory_stats_as_nested_dict=lambda: {"reserved_bytes": {"all": {"current": 0}}},
    )
    for name, mod in {**mods, "torch": torch}.items():
        monkeypatch.setitem(sys.modules, name, mod)
    for key in ENV_KEYS:
        monkeypatch.delenv(key, raising=False)  # restored after the test, whatever capture sets
    yield seen


@pytest.mark.parametrize("config", [NOSPEC_V1, M3_V1], ids=lambda p: p.stem)
def test_v1_capture_records_adapters_and_probes_with_one(
    fake_v1_engine: dict[str, Any], config: Path
) -> None:
    loaded, plan = plan_file(config)
    fake_v1_engine["plan"] = plan
    raw = yaml.safe_load(config.read_text())
    measured = vb.capture_vllm(loaded.input, raw, str(ROOT), GraphRecorder(None), None, [])
    kw = fake_v1_engine["llm_kwargs"]
    assert kw["enable_lora"] is True and kw["max_loras"] == 3
    assert os.environ["VLLM_USE_V2_MODEL_RUNNER"] == "0"
    # every graph with its descriptor's adapter count, in capture order
    got = [Graph(g.mode, g.num_tokens, g.num_reqs, g.query_len, g.num_active_loras) for g in measured.graphs]  # type: ignore[arg-type]
    assert got == list(plan.graphs["target"])
    # probed without adapters (has_lora False) and with one (has_lora True, one adapter)
    calls = set(fake_v1_engine["runner"].cudagraph_dispatcher.calls)
    assert calls == {(False, 0), (True, 1)}
    assert measured.uniform_decode_lora == plan.uniform_decode_lora
    assert measured.uniform_decode == plan.uniform_decode and measured.mixed == plan.mixed
    c = compare(plan, measured)
    assert c.matches and c.dispatch_checked > sum(
        r.last - r.first + 1 for rs in plan.uniform_decode.values() for r in rs
    ) + sum(r.last - r.first + 1 for r in plan.mixed)


class _V2Manager:
    def __init__(self) -> None:
        self.calls: list[int] = []

    def dispatch(
        self, num_reqs: int, num_tokens: int, uniform_token_count: int | None, num_active_loras: int
    ) -> Any:
        self.calls.append(num_active_loras)
        mode = "FULL" if num_active_loras == 1 and uniform_token_count else "NONE"
        return types.SimpleNamespace(cg_mode=_Mode(mode), num_tokens=num_tokens, num_reqs=num_reqs)


def _v2_config(lora: bool) -> Any:
    return types.SimpleNamespace(
        scheduler_config=types.SimpleNamespace(max_num_seqs=4, max_num_batched_tokens=64),
        num_speculative_tokens=0,
        speculative_config=None,
        compilation_config=types.SimpleNamespace(max_cudagraph_capture_size=8),
        lora_config=types.SimpleNamespace(max_loras=3) if lora else None,
    )


def test_v2_probe_passes_the_adapter_count_to_the_manager() -> None:
    mgr = _V2Manager()
    runner = types.SimpleNamespace(cudagraph_manager=mgr)
    got = vb.probe_lora_dispatch(runner, _v2_config(lora=True))
    assert set(mgr.calls) == {1}
    assert got == {
        1: (
            DispatchRange(1, 1, "FULL", 1, 1),
            DispatchRange(2, 2, "FULL", 2, 2),
            DispatchRange(3, 3, "FULL", 3, 3),
            DispatchRange(4, 4, "FULL", 4, 4),
        )
    }
    mgr.calls.clear()
    uniform, _ = vb.probe_dispatch(runner, _v2_config(lora=True))
    assert set(mgr.calls) == {0} and {r.mode for r in uniform[1]} == {"NONE"}
    mgr.calls.clear()
    assert vb.probe_lora_dispatch(runner, _v2_config(lora=False)) == {} and mgr.calls == []


STUB = """
import json, os, sys, time
i = int(os.environ["CGPLAN_TURN"]); d = os.environ["CGPLAN_TURN_DIR"]
open(os.path.join(d, f"ready.{i}"), "w").close()
while not os.path.exists(os.path.join(d, f"go.{i}")):
    time.sleep(0.01)
cfg = sys.argv[sys.argv.index("--gpu") + 1]
assert os.path.isfile(cfg), cfg
json.dump({"config": cfg}, open(sys.argv[sys.argv.index("-o") + 1], "w"))
"""


def test_lora_suite_runs_the_four_configs_and_packs_them(tmp_path: Path) -> None:
    stub = tmp_path / "stub.py"
    stub.write_text(STUB)
    out, work = tmp_path / "out", tmp_path / "work"
    env = {
        **os.environ,
        "OUT": str(out),
        "LORA_WORK": str(work),
        "LIMIT": "40",
        "RESERVE": "1",
        "DEVX": str(tmp_path / "no-devx"),
        "MOE_CHILD": f"{sys.executable} {stub}",
    }
    subprocess.run(
        ["bash", str(ROOT / "scripts/device/lora_suite.sh")],
        env=env,
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert sorted(p.name for p in out.iterdir()) == ["lora.tgz"]  # one file comes back
    with tarfile.open(out / "lora.tgz") as t:
        names = set(t.getnames())
    assert {f"r/{c.stem}-vllm.json" for c in (M1, M3_V1, NOSPEC_V1, NOSPEC_V2)} <= names
    assert "r/timeline.json" in names


def test_diff_names_the_adapter_count_of_graphs_added_and_removed() -> None:
    """Two LoRA ladders differ by adapter case, not token count: the diff listed "-1, 2, 4, ..."
    for both cases alike, so the reader could not tell which set went."""
    from cgplan.api.plan import plan_file
    from cgplan.core.compare.diff import diff_sides, size_changes
    from cgplan.core.compare.sides import side_from_plan

    lora = ROOT / "configs/gpu/lora"
    a = side_from_plan(plan_file(lora / "tiny-lora-m3-v1.yaml", with_fixes=False)[1], "a")
    b = side_from_plan(plan_file(lora / "tiny-lora-m1.yaml", with_fixes=False)[1], "b")
    lines = size_changes(diff_sides(a, b))
    assert "target PIECEWISE tokens (num_active_loras=2): +1, 2, 4, 8..64/8" in lines
    assert "target PIECEWISE tokens (num_active_loras=4): -1, 2, 4, 8..64/8" in lines
    # without LoRA on either side the lines stay as they were
    plain = ROOT / "configs/gpu"
    c = side_from_plan(plan_file(plain / "tiny-nospec.yaml", with_fixes=False)[1], "c")
    d = side_from_plan(plan_file(plain / "tiny-eagle-k16.yaml", with_fixes=False)[1], "d")
    assert all("num_active_loras" not in line for line in size_changes(diff_sides(c, d)))


def test_specialize_active_lora_is_read_from_yaml_and_serve_flags() -> None:
    """`specialize_active_lora` (LoRAConfig, `--specialize-active-lora`) was refused as an unknown
    key; vLLM then captures a graph set per adapter count 1, 2, ... (vLLM 0.26.0-0.33.0 oracle:
    tests/data/oracle-deploy/lora-m3-active*)."""
    from cgplan.api.plan import plan_vllm_args

    _, by_flag = plan_vllm_args(
        [
            "serve",
            "configs/models/tiny-llama",
            "--enable-lora",
            "--max-loras",
            "3",
            "--specialize-active-lora",
        ],
        base_dir=ROOT,
        with_fixes=False,
    )
    _, by_yaml = plan_file(ROOT / "tests/data/corpus-deploy/lora-m3-active.yaml", with_fixes=False)
    for plan in (by_flag, by_yaml):
        assert sorted({g.num_active_loras for g in plan.graphs["target"]}) == [0, 1, 2, 4]
    # without cudagraph_specialize_lora it changes nothing (V1: the adapter set only)
    _, off = plan_file(ROOT / "tests/data/corpus-deploy/lora-m3-active-nospec-v1.yaml", with_fixes=False)
    assert {g.num_active_loras for g in off.graphs["target"]} == {4}


def test_a_bad_specialize_active_lora_is_one_located_line(tmp_path: Path) -> None:
    from cgplan.errors import ConfigError
    from cgplan.io.config import load_config

    bad = tmp_path / "bad.yaml"
    bad.write_text(
        f"model: {ROOT / 'configs/models/tiny-llama'}\nenable_lora: true\nspecialize_active_lora: maybe\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(bad)
    assert str(info.value) == (
        f"{bad}:specialize_active_lora: must be true or false (got 'maybe'; expected a boolean)"
    )
