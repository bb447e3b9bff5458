"""cgplan's vLLM general plugin on a fake engine (tests/plugin/fake_engine.py: the attribute names
of vLLM 0.26.0 and 0.33.0): opt-in, the start-up block, the counters, failure isolation, and the
wheel's entry point. The real engine's answers: tests/gpu/test_plugin_gpu.py and
scripts/plugin_oracle_check.py (vLLM's own dispatcher objects, on the CPU)."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cgplan.core.logs.plugin import parse_plugin_lines
from cgplan.gpu import vllm_plugin as vp
from cgplan.plugin import ENABLE_ENV, enabled, engine, register
from cgplan.plugin.counting import StepCounter
from tests.paths import ROOT_DIR
from tests.plugin import fake_engine as fe

RELEASES = ("0.26.0", "0.33.0")


def _fill_window(window: vp.MemoryWindow) -> None:
    window.free_before, window.reserved_before, window.capture_s = 80 << 30, 1 << 30, 0.0


def _after(window: vp.MemoryWindow, returned: object) -> None:
    window.free_after, window.reserved_after, window.capture_s = (
        (80 << 30) - (96 << 20),
        (1 << 30) + (64 << 20),
        1.5,
    )
    window.returned = returned if isinstance(returned, int) else None


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The plugin's hooks on the fake engine's classes, torch's readings made up (no GPU)."""
    monkeypatch.setattr(vp, "before_capture", _fill_window)
    monkeypatch.setattr(vp, "after_capture", _after)
    monkeypatch.setattr(vp, "gpu_name", lambda: "H200")
    monkeypatch.setenv("CGPLAN_PLUGIN_SUMMARY_STEPS", "3")
    monkeypatch.delenv("CGPLAN_PLUGIN_COUNTERS", raising=False)
    for cls in (fe.GPUModelRunner, fe.V2GPUModelRunner):
        monkeypatch.setattr(cls, "capture_model", cls.capture_model)
        vp.wrap_method(cls, "capture_model", engine._wrap_capture_model)
    monkeypatch.setattr(fe.Worker, "compile_or_warm_up_model", fe.Worker.compile_or_warm_up_model)
    vp.wrap_method(fe.Worker, "compile_or_warm_up_model", engine._wrap_compile_or_warm_up)
    engine.ENGINES.clear()
    yield
    engine.ENGINES.clear()


def _start(
    monkeypatch: pytest.MonkeyPatch, release: str, runner: str = "v1", **config: Any
) -> tuple[Any, engine.Engine]:
    monkeypatch.setattr(vp, "_vllm_version", lambda: release)
    vc = fe.vllm_config(**config)
    r: Any = fe.GPUModelRunner(vc) if runner == "v1" else fe.V2GPUModelRunner(vc, release)
    fe.Worker(r).compile_or_warm_up_model()
    assert engine.ENGINES, "the start-up check did not run"
    return r, engine.ENGINES[-1]


def _records(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "vllm.cgplan"]


# --------------------------------------------------------------------------------------------
# Opt-in: nothing at all when disabled
# --------------------------------------------------------------------------------------------


def test_enabled_only_by_its_variable_or_vllm_plugins() -> None:
    assert not enabled({})
    assert not enabled({"VLLM_PLUGINS": "lora_resolver", ENABLE_ENV: "0"})
    assert enabled({ENABLE_ENV: "1"}) and enabled({ENABLE_ENV: "yes"})
    assert enabled({"VLLM_PLUGINS": "other, cgplan"})
    assert not enabled({"VLLM_PLUGINS": "cgplanx"})


_PROBE = (
    "import sys; import cgplan.plugin as p; p.register(); p.register(); "
    "print(sum(type(f).__name__ == '_AfterImport' for f in sys.meta_path), "
    "sorted(m for m in sys.modules if m.startswith(('cgplan.plugin.', 'cgplan.gpu', 'cgplan.api', "
    "'torch', 'vllm', 'prometheus_client'))))"
)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "0 []"),
        ({ENABLE_ENV: "1"}, "1 ['cgplan.gpu', "),
        ({"VLLM_PLUGINS": "cgplan"}, "1 ['cgplan.gpu', "),
    ],
)
def test_register_disabled_imports_and_patches_nothing(env: dict[str, str], expected: str) -> None:
    """Disabled: not one module beyond the package, no import hook. Enabled: one hook however
    often vLLM loads the plugin, and still no torch, vLLM or prometheus_client of its own."""
    clean = {k: v for k, v in os.environ.items() if k not in (ENABLE_ENV, "VLLM_PLUGINS")}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env={**clean, **env, "PYTHONPATH": str(ROOT_DIR)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.startswith(expected), proc.stdout
    assert "torch" not in proc.stdout and "'vllm" not in proc.stdout and "prometheus" not in proc.stdout


def test_the_import_hook_patches_vllm_modules_when_imported(tmp_path: Path) -> None:
    """vLLM's worker module is patched as it is imported (the API server process never imports
    it, so it is never patched there)."""
    pkg = tmp_path / "vllm" / "v1" / "worker"
    pkg.mkdir(parents=True)
    for d in (tmp_path / "vllm", tmp_path / "vllm" / "v1", pkg):
        (d / "__init__.py").write_text("")
    (pkg / "gpu_worker.py").write_text("from tests.plugin.fake_engine import Worker\n")
    code = (
        "import sys, cgplan.plugin as p; p.register(); "
        "assert 'vllm.v1.worker.gpu_worker' not in sys.modules; "
        "from vllm.v1.worker.gpu_worker import Worker; "
        "print(getattr(Worker.compile_or_warm_up_model, '_cgplan_plugin_wrapped', False))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, ENABLE_ENV: "1", "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT_DIR}"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == "True", proc.stderr


# --------------------------------------------------------------------------------------------
# The start-up block
# --------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("fake_vllm")
@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("runner", ["v1", "v2"])
def test_startup_block_names_the_gap_its_fix_and_the_pool(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, release: str, runner: str
) -> None:
    caplog.set_level(logging.INFO, logger="vllm.cgplan")
    _, eng = _start(monkeypatch, release, runner, max_num_seqs=64, max_size=32)
    blocks = [m for m in _records(caplog) if "[cgplan] start-up:" in m]
    assert len(blocks) == 1, "one block, one log record"
    lines = blocks[0].splitlines()
    assert all(line.startswith("[cgplan] start-up: ") for line in lines)
    text = "\n".join(lines)
    assert f"vLLM {release}, model runner {runner.upper()}, GPU H200" in text
    assert "captured (target model): PIECEWISE 7 (1..32 tokens), FULL 7 (1..32 tokens)" in text
    assert re.search(
        r"gap: requests 33-64 × 1 tokens → EAGER \(32 request counts\): 33\.\.64 tokens exceed", text
    )
    assert re.search(r"fix: .*\"max_cudagraph_capture_size\":64", text), text
    assert "cgplan's plan agrees with the engine: 14 graphs" in text
    assert "graph pool: 96.0 MiB measured (device free memory over capture_model, 1.50 s); " in text
    assert "PyTorch reserved +64.0 MiB; capture_model returned 96.0 MiB" in text
    assert eng.hook is not None and eng.hook.is_on


@pytest.mark.usefixtures("fake_vllm")
def test_no_gap_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    _, eng = _start(monkeypatch, "0.33.0", max_num_seqs=32, max_size=64)
    assert any(line.startswith("gaps: none") for line in eng.startup), eng.startup
    assert not any(line.startswith("gap:") for line in eng.startup)


@pytest.mark.usefixtures("fake_vllm")
@pytest.mark.parametrize("runner", ["v1", "v2"])
def test_a_difference_from_the_plan_is_flagged_as_a_cgplan_bug(
    monkeypatch: pytest.MonkeyPatch, runner: str
) -> None:
    """An engine whose captured set differs from cgplan's plan (here: one FULL graph missing)."""

    def drop_full_16(self: Any) -> int:
        if runner == "v1":
            keys = self.cudagraph_dispatcher.cudagraph_keys[fe.CUDAGraphMode.FULL]
            keys.discard(next(k for k in keys if k.num_tokens == 16))
        else:
            descs = self.cudagraph_manager._capture_descs[fe.CUDAGraphMode.FULL]
            descs.remove(next(d for d in descs if d.num_tokens == 16))
        return 96 << 20

    cls = fe.GPUModelRunner if runner == "v1" else fe.V2GPUModelRunner
    monkeypatch.setattr(cls, "capture_model", drop_full_16)
    _, eng = _start(monkeypatch, "0.26.0", runner)
    diff = [line for line in eng.startup if line.startswith("DIFFERENCE")]
    assert len(diff) == 1, eng.startup
    assert "this is a cgplan bug, please report it" in diff[0]
    assert "target FULL 16 tokens (reqs 16): planned, not captured" in diff[0]
    assert not any(line.startswith("cgplan's plan agrees") for line in eng.startup)
    assert not any(line.startswith("gap:") for line in eng.startup), "cgplan's gaps are not vouched for"


@pytest.mark.usefixtures("fake_vllm")
def test_a_config_cgplan_cannot_plan_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    _, eng = _start(monkeypatch, "0.19.0")
    line = next(x for x in eng.startup if x.startswith("not planned:"))
    assert "0.19.0" in line
    assert any(x.startswith("captured (target model)") for x in eng.startup)
    assert eng.hook is not None and eng.hook.is_on, "counting goes on without a plan"


# --------------------------------------------------------------------------------------------
# The counters
# --------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("fake_vllm")
@pytest.mark.parametrize("runner", ["v1", "v2"])
def test_counters_count_served_steps_per_outcome_and_size(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, runner: str
) -> None:
    caplog.set_level(logging.INFO, logger="vllm.cgplan")
    r, eng = _start(monkeypatch, "0.33.0", runner)
    assert eng.counter is not None and eng.counter.steps == 0, "start-up's dummy runs are not steps"
    outcomes = [r.step(48, 48, True), r.step(48, 48, True), r.step(16, 16, True), r.step(3, 100, False)]
    assert outcomes == ["NONE", "NONE", "FULL", "NONE"], "the plugin does not change what vLLM dispatches"
    r._dummy_run(8)  # an idle data-parallel rank's step: not counted
    counts = eng.counter.snapshot()
    assert counts.decode == {"NONE": {48: 2}, "FULL": {16: 1}}
    assert counts.mixed == {"NONE": {100: 1}}
    lines = [m for m in _records(caplog) if "[cgplan] counters:" in m]
    assert len(lines) == 1, "a summary every 3 steps (CGPLAN_PLUGIN_SUMMARY_STEPS)"
    assert "decode FULL 1, PIECEWISE 0, eager 2 (eager at 48 requests)" in lines[0]
    back = parse_plugin_lines(lines, "-").counts
    assert back is not None and dict(back.decode) == {"NONE": {48: 2}, "FULL": {16: 1}}


@pytest.mark.usefixtures("fake_vllm")
def test_only_the_steps_own_v1_dispatch_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kv-sharing decoder call (no uniform_decode=) is not a step; a data-parallel
    re-dispatch (valid_modes=) replaces its step's first count."""
    r, eng = _start(monkeypatch, "0.26.0")
    d = r.cudagraph_dispatcher
    d.dispatch(40, invalid_modes={fe.CUDAGraphMode.FULL})
    assert eng.counter is not None and eng.counter.steps == 0
    d.dispatch(num_tokens=40, uniform_decode=True, has_lora=False, num_active_loras=0)
    d.dispatch(num_tokens=48, uniform_decode=True, valid_modes={fe.CUDAGraphMode.NONE})
    assert eng.counter.snapshot().decode == {"NONE": {48: 1}}


def test_summary_every_n_seconds() -> None:
    now = [0.0]
    lines: list[str] = []
    c = StepCounter(1, lines.append, summary_steps=10**9, summary_s=30.0, clock=lambda: now[0])
    for _ in range(64):
        c.record(True, fe.CUDAGraphMode.FULL, 4)
    assert lines == []
    now[0] = 31.0
    for _ in range(64):
        c.record(True, fe.CUDAGraphMode.FULL, 4)
    assert len(lines) == 1 and "128 steps in 31 s" in lines[0]


@pytest.mark.usefixtures("fake_vllm")
def test_hook_off_is_vllms_own_method(monkeypatch: pytest.MonkeyPatch) -> None:
    r, eng = _start(monkeypatch, "0.33.0")
    assert eng.hook is not None
    eng.hook.off()
    assert r.cudagraph_dispatcher.dispatch.__func__ is fe.FakeDispatcher.dispatch
    r.step(4, 4, True)
    assert eng.counter is not None and eng.counter.steps == 0
    eng.hook.on()
    r.step(4, 4, True)
    assert eng.counter.steps == 1


# --------------------------------------------------------------------------------------------
# Never fails the engine
# --------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("fake_vllm")
def test_a_failing_check_is_one_line_and_the_engine_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(*a: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("cgplan.plugin.startup.measured_capture", boom)
    caplog.set_level(logging.INFO, logger="vllm.cgplan")
    vc = fe.vllm_config()
    r = fe.GPUModelRunner(vc)
    assert fe.Worker(r).compile_or_warm_up_model() == 96 << 20, "vLLM's own return value"
    errors = [m for m in _records(caplog) if "[cgplan] error:" in m]
    assert errors == [
        "[cgplan] error: the start-up check failed (RuntimeError: boom second line); "
        "the engine is unaffected, the plugin stops there"
    ]
    assert r.step(48, 48, True) == "NONE"
    assert engine.ENGINES[-1].counter is not None and engine.ENGINES[-1].counter.steps == 1


@pytest.mark.usefixtures("fake_vllm")
def test_a_raise_while_counting_never_reaches_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    r, eng = _start(monkeypatch, "0.33.0")

    def broken(*a: object) -> None:
        raise KeyError("counting broke")

    assert eng.counter is not None
    monkeypatch.setattr(eng.counter, "record", broken)
    assert r.step(16, 16, True) == "FULL"


def test_register_never_raises(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def boom() -> None:
        raise ImportError("no vllm here")

    monkeypatch.setenv(ENABLE_ENV, "1")
    monkeypatch.setattr(engine, "install", boom)
    caplog.set_level(logging.WARNING, logger="vllm.cgplan")
    register()
    assert _records(caplog) == [
        "[cgplan] error: register failed (ImportError: no vllm here); the engine is unaffected, "
        "the plugin stops there"
    ]


@pytest.mark.usefixtures("fake_vllm")
def test_a_failing_memory_reading_leaves_the_pool_unmeasured(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_torch(window: vp.MemoryWindow) -> None:
        raise ModuleNotFoundError("No module named 'torch'")

    monkeypatch.setattr(vp, "before_capture", no_torch)
    _, eng = _start(monkeypatch, "0.33.0")
    assert "graph pool: not measured (torch.cuda memory unreadable)" in eng.startup


# --------------------------------------------------------------------------------------------
# The wheel declares the entry point
# --------------------------------------------------------------------------------------------


def test_pyproject_declares_the_general_plugin() -> None:
    text = (ROOT_DIR / "pyproject.toml").read_text()
    m = re.search(r'^\[project\.entry-points\."vllm\.general_plugins"\]\n(.*?)(?:\n\[|\Z)', text, re.M | re.S)
    assert m is not None, 'no [project.entry-points."vllm.general_plugins"] table'
    assert m.group(1).strip() == 'cgplan = "cgplan.plugin:register"'
    assert callable(register)


def test_the_installed_dist_declares_it() -> None:
    """What vLLM's `load_plugins_by_group` reads: importlib.metadata's entry points."""
    import importlib.metadata as md

    try:
        dist = md.distribution("cgplan")
    except md.PackageNotFoundError:
        pytest.skip("cgplan is not installed as a distribution here")
    eps = [e for e in dist.entry_points if e.group == "vllm.general_plugins"]
    if not eps:
        pytest.skip(
            f"the installed cgplan ({dist.locate_file('')}) predates the plugin: reinstall (make install)"
        )
    assert [(e.name, e.value) for e in eps] == [("cgplan", "cgplan.plugin:register")]
    assert eps[0].load() is register
