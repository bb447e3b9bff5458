"""Why a gap is open, by the decision that made it (issue 35): the note of the decision that turned
CUDA graphs off, and the ceiling the capture ladder used, as the plan's own notes and ladder say."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgplan.core.model.modes import Mode, Platform
from cgplan.core.model.spec import ModelShape, PlanInput, SpeculativeSpec
from cgplan.core.model.types import Plan
from cgplan.core.plan.build import build_plan
from cgplan.core.plan.gaps import _COMPILE_OFF_NOTES
from cgplan.core.plan.policies import BUILTIN_POLICIES
from cgplan.core.vllm.ladder import capture_ladder, token_grid
from cgplan.core.vllm.releases import SUPPORTED_VERSIONS, first_release, rules_for
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides, load_config
from tests.paths import TESTS_DIR

COMPILE_CONFIGS = sorted(
    p
    for folder in ("corpus", "corpus-boundaries")
    for p in (TESTS_DIR / "data" / folder).glob("*.yaml")
    if any(w in p.stem for w in ("compile", "stock", "opt-level"))
)


def _plans() -> list[tuple[str, Plan]]:
    out = []
    for path in COMPILE_CONFIGS:
        for version in SUPPORTED_VERSIONS:
            try:
                plan = build_plan(load_config(path, Overrides(vllm_version=version)).input, with_fixes=False)
            except ConfigError:
                continue
            out.append((f"{Path(path).stem}@{version}", plan))
    return out


def test_graphs_off_by_compilation_name_the_decision_that_turned_them_off() -> None:
    compared = 0
    for name, plan in _plans():
        off = [n for n in plan.notes if n.kind in _COMPILE_OFF_NOTES]
        if plan.cudagraph_mode != "NONE" or not off or not plan.gaps:
            continue
        last = off[-1]  # the decision made last is the one that left NONE
        assert last.kind != "non_compile" or "to NONE" in last.message, (name, last.message)
        for gap in plan.gaps:
            if last.kind == "non_compile":
                assert "compiles nothing" in gap.reason, (name, gap.reason)
            else:
                assert f"STOCK_TORCH_COMPILE on model runner {plan.model_runner}" in gap.reason, (
                    name,
                    gap.reason,
                )
        compared += 1
    assert compared >= 10, compared


@pytest.mark.parametrize("platform", [Platform.HOPPER, Platform.BLACKWELL])
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_an_eager_gap_above_the_maximum_names_the_ceiling_it_came_from(
    platform: Platform, version: str
) -> None:
    # EAGLE K=5 at 1,024 requests: the inferred maximum is the platform's ceiling, far below the
    # widest decode step
    inp = PlanInput(
        vllm_version=version,
        platform=platform,
        model=ModelShape(),
        max_num_seqs=1024,
        max_num_batched_tokens=16384,
        speculative=SpeculativeSpec("eagle", 5, None),
    )
    plan = build_plan(inp, with_fixes=False)
    eager = [g for g in plan.gaps if g.mode == "NONE"]
    assert eager
    sm100_1024 = rules_for(version).sm100_ceiling_1024 and platform is Platform.BLACKWELL
    ceiling = 1024 if sm100_1024 else 512
    assert plan.max_capture_size <= ceiling
    since = first_release(lambda r: r.sm100_ceiling_1024)
    origin = "(SM10x, vllm#49390)" if sm100_1024 else f"(1024 on SM10x from vLLM {since}, vllm#49390)"
    for g in eager:
        assert f"the {platform.value} platform's default ceiling {ceiling} {origin}" in g.reason, g.reason
        # max_num_seqs x 6 x 2 = 12,288 is past the ceiling: the minimum of the two is the maximum
        assert f"infers the maximum as min(max_num_seqs×6×2 = 12288, {ceiling}) = {ceiling}" in g.reason


@pytest.mark.parametrize("k", [None, 1, 5])
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_an_inferred_maximum_says_whether_decode_sizes_were_appended(version: str, k: int | None) -> None:
    # 1,024 requests, the maximum inferred (the 512 ceiling): with EAGLE K=5 vLLM appends the
    # uniform-decode sizes 6, 12, ... up to it (off every token grid); with K=1 it appends 2, 4,
    # 8, ... (on the grid, but appended: the ladder lists them); without speculation (one token a
    # request) it appends none, and the reason must not say it did
    inp = PlanInput(
        vllm_version=version,
        platform=Platform.HOPPER,
        model=ModelShape(),
        max_num_seqs=1024,
        max_num_batched_tokens=16384,
        speculative=SpeculativeSpec("eagle", k, None) if k else None,
    )
    plan = build_plan(inp, with_fixes=False)
    eager = [g for g in plan.gaps if g.mode == "NONE"]
    assert eager
    ladder = capture_ladder(inp, rules_for(version), True, False)
    appended = bool(ladder.uniform_decode_sizes_tokens)
    assert appended == (k is not None and rules_for(version).decode_sizes.name != "NONE")
    if k == 5:  # the ladder shows them: off the token grid
        off_grid = set(ladder.sizes_tokens) - set(token_grid(plan.max_capture_size, interactivity=False))
        assert appended == bool(off_grid)
    for g in eager:
        assert ("appends uniform-decode sizes only up to it" in g.reason) == appended, (appended, g.reason)


@pytest.mark.parametrize("policy", ["upstream", "explicit-max-keeps-decode"])
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_an_explicit_maximum_says_whether_decode_sizes_were_appended(version: str, policy: str) -> None:
    # EAGLE K=2 (3 tokens a request) under an explicit maximum of 64: vLLM's uniform-decode sizes
    # (3, 6, 12, ...) are on no token grid, so the ladder shows whether they were appended (no
    # release appends them to an explicit maximum; the what-if policy vllm#54933 asks for does)
    inp = PlanInput(
        vllm_version=version,
        platform=Platform.HOPPER,
        model=ModelShape(),
        max_num_seqs=64,
        max_num_batched_tokens=16384,
        speculative=SpeculativeSpec("eagle", 2, None),
        max_cudagraph_capture_size=64,
    )
    plan = build_plan(inp, with_fixes=False, policy=BUILTIN_POLICIES[policy])
    eager = [g for g in plan.gaps if g.mode == "NONE"]
    assert eager
    ladder = capture_ladder(inp, BUILTIN_POLICIES[policy].apply(rules_for(version)), True, False)
    appended = bool(set(ladder.sizes_tokens) - set(token_grid(64, interactivity=False)))
    for g in eager:
        assert "max_cudagraph_capture_size 64 is set explicitly" in g.reason, g.reason
        assert ("appends uniform-decode sizes only up to it" in g.reason) == appended, (appended, g.reason)
        assert ("appends no uniform-decode sizes" in g.reason) == (not appended), (appended, g.reason)


@pytest.mark.parametrize("off", ["enforce_eager", "cudagraph_mode", "-O0"])
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_graphs_off_by_a_setting_name_it(version: str, off: str) -> None:
    inp = PlanInput(
        vllm_version=version,
        platform=Platform.HOPPER,
        model=ModelShape(),
        max_num_seqs=8,
        max_num_batched_tokens=64,
        enforce_eager=off == "enforce_eager",
        cudagraph_mode=Mode.NONE if off == "cudagraph_mode" else None,
        optimization_level=0 if off == "-O0" else 2,
    )
    plan = build_plan(inp, with_fixes=False)
    assert plan.cudagraph_mode == "NONE" and plan.gaps
    words = {
        "enforce_eager": "enforce_eager is set",
        "cudagraph_mode": "compilation_config.cudagraph_mode is NONE",
        "-O0": f"-O0 selects cudagraph_mode NONE in vLLM {version}",
    }[off]
    for g in plan.gaps:
        assert g.reason == f"CUDA graphs are off: {words}", g.reason
