"""Compilation off and breakable CUDA graphs (#27): vLLM's config-time decisions, per release.

The plans themselves are held to vLLM's own code by tests/core/vllm/test_golden.py (corpus `compile-*`,
`torch-compile-*`, `breakable-*`, every release). Here: the notes say what vLLM logs, in its own
words, as the oracle recorded them; each rule on both sides of its release boundary; what the
CPU oracle cannot reach (V1 under STOCK_TORCH_COMPILE, docs/planner.md "Compilation off").
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from cgplan.core.model.spec import PlanInput
from cgplan.core.model.types import Plan
from cgplan.core.plan.build import build_plan
from cgplan.core.vllm.releases import RELEASES, SUPPORTED_VERSIONS, first_release
from cgplan.io.config import Overrides, load_config, parse_config
from cgplan.io.vllm_args import read_vllm_args
from tests.paths import TESTS_DIR

DATA = TESTS_DIR / "data"
TINY = "configs/models/tiny-llama"
_NORMALIZE_KEEPS_FULL = first_release(lambda r: r.non_compile_keeps_full_decode)
_BEFORE = SUPPORTED_VERSIONS[SUPPORTED_VERSIONS.index(_NORMALIZE_KEEPS_FULL) - 1]


def _input(doc: dict[str, Any], version: str) -> PlanInput:
    inp, _ = parse_config(
        {"model": TINY, "max_num_seqs": 32, **doc}, Path.cwd(), Overrides(vllm_version=version)
    )
    return inp


def _plan(doc: dict[str, Any], version: str) -> Plan:
    return build_plan(_input(doc, version), with_fixes=False)


def _kinds(plan: Plan) -> list[str]:
    return [n.kind for n in plan.notes]


# ------------------------------------------------------------------ the recorded list and log words


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_breakable_architectures_are_the_wheels(version: str) -> None:
    """VllmRules.breakable_architectures is each wheel's own list (scripts/oracle/breakable_archs.py)."""
    recorded = json.loads((DATA / "oracle-breakable" / f"{version}.json").read_text())
    assert recorded["vllm_version"] == version
    assert sorted(RELEASES[version].breakable_architectures) == recorded["breakable_architectures"]


_VLLM_WORDED = (
    "torch_compile_disable",
    "non_compile",
    "v2_stock_compile",
    "breakable_auto",
    "breakable_compile_off",
)


def _recorded(stem: str, version: str, folder: str = "oracle") -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(
        gzip.decompress((DATA / folder / f"{stem}.{version}.json.gz").read_bytes())
    )
    return doc


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@pytest.mark.parametrize(
    "stem",
    [
        "compile-mode-none",
        "torch-compile-disable",
        "compile-mode-stock-v2",
        "compile-mode-dynamo-once",
        # -O0's own compilation mode (none, 0 in vLLM's line), no compilation_config.mode given
        "boundaries/o0-full-and-piecewise",
    ],
)
def test_notes_are_vllms_log_lines(stem: str, version: str) -> None:
    """Each note of a compilation decision starts with a line vLLM logged for the same config."""
    folder, corpus = ("oracle", "corpus") if "/" not in stem else ("oracle-boundaries", "corpus-boundaries")
    stem = stem.rsplit("/", 1)[-1]
    if not (DATA / folder / f"{stem}.{version}.json.gz").exists():
        pytest.skip("not recorded in this release")
    rec = _recorded(stem, version, folder)
    if rec.get("error"):
        pytest.skip("vLLM refuses this config in this release")
    cfg = load_config(DATA / corpus / f"{stem}.yaml", Overrides(vllm_version=version))
    plan = build_plan(cfg.input, with_fixes=False)
    logged = [line.split(": ", 1)[1] for line in rec["log"]]
    worded = [n for n in plan.notes if n.kind in _VLLM_WORDED]
    assert worded or plan.compilation_mode == "VLLM_COMPILE", "a compilation decision without a note"
    for note in worded:
        vllm_part = (
            note.message.split(" (", 1)[0] if note.kind in ("non_compile", "breakable_auto") else note.message
        )
        assert vllm_part in logged, (note.kind, vllm_part, logged)
        if note.kind == "non_compile":
            # the cause in parentheses is what vLLM logged: TORCH_COMPILE_DISABLE where it warned that
            # the variable disabled torch.compile, else the configured mode
            disabled = any(line.startswith("TORCH_COMPILE_DISABLE is set") for line in logged)
            assert ("(TORCH_COMPILE_DISABLE=1: " in note.message) is disabled, (note.message, logged)


# --------------------------------------------------------------------------- compilation mode NONE


@pytest.mark.parametrize(
    "doc",
    [
        {"compilation_config": {"mode": 0}},
        {"compilation_config": {"mode": "none"}},
        {"compilation_config": {"mode": "DYNAMO_TRACE_ONCE"}},
        {"cgplan": {"env": {"TORCH_COMPILE_DISABLE": "1"}}},
        {"optimization_level": 0, "compilation_config": {"cudagraph_mode": "FULL_AND_PIECEWISE"}},
    ],
    ids=["mode-0", "mode-none", "dynamo-once", "torch-compile-disable", "O0"],
)
def test_no_compilation_boundary(doc: dict[str, Any]) -> None:
    """0.26-0.29: FULL_AND_PIECEWISE without VLLM_COMPILE becomes NONE (nothing captured); 0.30+:
    FULL_DECODE_ONLY (`without_piecewise`), mixed batches eager."""
    before, after = _plan(doc, _BEFORE), _plan(doc, _NORMALIZE_KEEPS_FULL)
    assert (before.cudagraph_mode, before.capture_sizes, len(before.graphs["target"])) == ("NONE", (), 0)
    assert after.cudagraph_mode == "FULL_DECODE_ONLY"
    assert {g.mode for g in after.graphs["target"]} == {"FULL"}
    assert all(r.mode == "NONE" for r in after.mixed)
    assert "non_compile" in _kinds(before) and "non_compile" in _kinds(after)
    assert before.requested_cudagraph_mode == "NONE"


def test_piecewise_without_compilation_is_none_everywhere() -> None:
    for version in SUPPORTED_VERSIONS:
        plan = _plan({"compilation_config": {"mode": 0, "cudagraph_mode": "PIECEWISE"}}, version)
        assert (plan.cudagraph_mode, len(plan.graphs["target"])) == ("NONE", 0), version


def test_full_without_compilation_is_kept_everywhere() -> None:
    for version in SUPPORTED_VERSIONS:
        plan = _plan({"compilation_config": {"mode": 0, "cudagraph_mode": "FULL"}}, version)
        assert plan.cudagraph_mode == "FULL", version
        assert "non_compile" not in _kinds(plan)


def test_torch_compile_disable_is_only_1() -> None:
    """vLLM compares `os.environ.get("TORCH_COMPILE_DISABLE") == "1"`: any other value compiles."""
    for value in ("0", "true", ""):
        plan = _plan({"cgplan": {"env": {"TORCH_COMPILE_DISABLE": value}}}, _BEFORE)
        assert plan.cudagraph_mode == "FULL_AND_PIECEWISE", value


def test_vllm_compile_wins_over_o0() -> None:
    """-O0 only defaults the compilation mode: an explicit VLLM_COMPILE compiles."""
    plan = _plan(
        {"optimization_level": 0, "compilation_config": {"mode": 3, "cudagraph_mode": "FULL_AND_PIECEWISE"}},
        _BEFORE,
    )
    assert plan.cudagraph_mode == "FULL_AND_PIECEWISE"


def test_enforce_eager_beats_everything() -> None:
    plan = _plan({"enforce_eager": True, "compilation_config": {"mode": 3}}, _NORMALIZE_KEEPS_FULL)
    assert plan.cudagraph_mode == "NONE" and not plan.graphs["target"]


def test_the_fix_turns_compilation_back_on() -> None:
    inp = _input({"compilation_config": {"mode": 0}}, _BEFORE)
    plan = build_plan(inp)
    assert plan.gaps and "compiles nothing" in plan.gaps[0].reason
    assert plan.fixes and plan.fixes[0].flags == ("--compilation-config '{\"mode\":3}'",)


# ----------------------------------------------------------------------------- STOCK_TORCH_COMPILE

_STOCK_NO_GRAPHS = first_release(lambda r: r.v2_stock_compile_no_graphs)
_STOCK_BEFORE = SUPPORTED_VERSIONS[SUPPORTED_VERSIONS.index(_STOCK_NO_GRAPHS) - 1]


def test_stock_compile_v2_boundary() -> None:
    """V2 lacks "stock torch.compile" up to 0.31 (auto: V1); from 0.32 it runs it with graphs off."""
    doc = {"compilation_config": {"mode": "STOCK_TORCH_COMPILE"}}
    before = _plan(doc, _STOCK_BEFORE)
    assert before.model_runner == "v1" and "runner_fallback" in _kinds(before)
    after = _plan(doc, _STOCK_NO_GRAPHS)
    assert after.model_runner == "v2"
    assert (after.cudagraph_mode, after.capture_sizes) == ("NONE", ())
    assert "v2_stock_compile" in _kinds(after)


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_stock_compile_v1_captures_nothing(version: str) -> None:
    """V1's `load_model` compiles with model.compile(fullgraph=True) and returns before any
    CUDA-graph wrapper (vllm/v1/worker/gpu_model_runner.py, every release; the CPU oracle only
    sees the dispatcher's keys): nothing is captured, whatever cudagraph_mode says."""
    plan = _plan({"compilation_config": {"mode": 1}, "cgplan": {"model_runner": "v1"}}, version)
    assert (plan.cudagraph_mode, len(plan.graphs["target"])) == ("NONE", 0)
    # before 0.30 the config already says NONE (the normalisation); from 0.30 it keeps
    # FULL_DECODE_ONLY, which the runner never captures
    keeps = RELEASES[version].non_compile_keeps_full_decode
    assert ("v1_stock_compile" in _kinds(plan)) is keeps


# ------------------------------------------------------------------------------- inputs and env


def test_vllm_args_env_prefix() -> None:
    for argv in (
        ["TORCH_COMPILE_DISABLE=1", "vllm", "serve", TINY],
        ["env", "TORCH_COMPILE_DISABLE=1", "vllm", "serve", TINY],
    ):
        args = read_vllm_args(argv, model_config=None, base_dir=Path.cwd())
        assert args.doc["cgplan"]["env"] == {"TORCH_COMPILE_DISABLE": "1"}
    args = read_vllm_args(["vllm", "serve", TINY, "-cc.mode=none"], model_config=None, base_dir=Path.cwd())
    assert args.doc["compilation_config"] == {"mode": "none"}


def test_env_model_runner_and_unread_names() -> None:
    notes: list[str] = []
    inp, _ = parse_config(
        {"model": TINY, "cgplan": {"env": {"VLLM_USE_V2_MODEL_RUNNER": "0", "CUDA_VISIBLE_DEVICES": "0"}}},
        Path.cwd(),
        notes=notes,
    )
    assert inp.model_runner == "v1" and inp.env == ()
    assert any("CUDA_VISIBLE_DEVICES is not read by cgplan" in n for n in notes)


# ---------------------------------------------------------------------------- breakable CUDA graphs

GLM_DSA = "configs/models/tiny-breakable-glm-dsa"
_GLM_BREAKABLE = first_release(lambda r: "GlmMoeDsaForCausalLM" in r.breakable_architectures)
_GLM_BEFORE = SUPPORTED_VERSIONS[SUPPORTED_VERSIONS.index(_GLM_BREAKABLE) - 1]


def test_breakable_architecture_boundary() -> None:
    """GLM-5's GlmMoeDsaForCausalLM joins DEFAULT_BREAKABLE_CUDAGRAPH_ARCHITECTURES in 0.29: from
    then on vLLM compiles nothing and keeps FULL_AND_PIECEWISE as breakable graphs."""
    doc = {"model": GLM_DSA}
    before, after = _plan(doc, _GLM_BEFORE), _plan(doc, _GLM_BREAKABLE)
    assert (before.compilation_mode, before.breakable_cudagraphs) == ("VLLM_COMPILE", False)
    assert (after.compilation_mode, after.breakable_cudagraphs) == ("NONE", True)
    assert after.cudagraph_mode == "FULL_AND_PIECEWISE"
    assert {"breakable_auto", "breakable"} <= set(_kinds(after))
    assert any("breakable" in x for x in after.cost_withheld)
    # before 0.29 vLLM compiles it, as far as cgplan can tell: an architecture it does not know
    assert [x for x in before.cost_withheld if "breakable" in x] == []
    assert any("does not know" in x for x in before.cost_withheld)


def test_breakable_opt_out() -> None:
    """VLLM_USE_BREAKABLE_CUDAGRAPH set to anything keeps vLLM from auto-enabling it; only "1" is on."""
    for value in ("0", "no"):
        plan = _plan(
            {"model": GLM_DSA, "cgplan": {"env": {"VLLM_USE_BREAKABLE_CUDAGRAPH": value}}}, _GLM_BREAKABLE
        )
        assert (plan.compilation_mode, plan.breakable_cudagraphs) == ("VLLM_COMPILE", False), value


def test_breakable_keeps_piecewise_without_compilation() -> None:
    """Breakable graphs skip the normalisation even with compilation_config.mode 0, in every release."""
    for version in SUPPORTED_VERSIONS:
        plan = _plan(
            {"compilation_config": {"mode": 0}, "cgplan": {"env": {"VLLM_USE_BREAKABLE_CUDAGRAPH": "1"}}},
            version,
        )
        assert plan.cudagraph_mode == "FULL_AND_PIECEWISE", version
        assert "non_compile" not in _kinds(plan)


_FULL_IS_FULL = first_release(lambda r: r.breakable_full_is_full)


def test_breakable_v1_full_descriptors_note() -> None:
    """V1 before 0.30 captured FULL descriptors as breakable graphs too (gpu_model_runner.py)."""
    doc = {"cgplan": {"model_runner": "v1", "env": {"VLLM_USE_BREAKABLE_CUDAGRAPH": "1"}}}
    before = _plan(doc, SUPPORTED_VERSIONS[SUPPORTED_VERSIONS.index(_FULL_IS_FULL) - 1])
    after = _plan(doc, _FULL_IS_FULL)
    note = next(n.message for n in before.notes if n.kind == "breakable")
    assert "no FULL graph is whole" in note
    assert "no FULL graph is whole" not in next(n.message for n in after.notes if n.kind == "breakable")


def test_breakable_withholds_the_memory_figure() -> None:
    from cgplan.api.plan import plan_file

    result = plan_file(DATA / "corpus" / "breakable-env.yaml")[1]
    assert result.cost is not None and not result.cost.domain.figure
    assert any("breakable CUDA graphs" in x for x in result.cost.domain.outside)
