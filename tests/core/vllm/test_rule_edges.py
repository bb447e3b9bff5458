"""Rule edges no recorded config reached (issue 35: each one a mutant that survived `make mutate`).

Each expectation is vLLM's own: a recorded answer (tests/data/oracle*/, scripts/record_golden.py)
or the rule as vLLM's source states it, quoted in the test.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from typing import Any

import packaging.version
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgplan.core.model.modes import CGSupport, Mode, Platform
from cgplan.core.model.spec import VLLM_COMPILE
from cgplan.core.model.types import Rejected
from cgplan.core.plan.build import build_plan
from cgplan.core.vllm import graphs as graphs_mod
from cgplan.core.vllm.attention import cudagraph_support
from cgplan.core.vllm.dynamic_sd import ScheduleError, lookup_ranges, normalize_schedule
from cgplan.core.vllm.graphs import EAGER, NO_LORA, Microbatching, V2Manager, _Desc, v2_manager
from cgplan.core.vllm.releases import (
    LATEST_VERSION,
    SUPPORTED_VERSIONS,
    V2Candidates,
    closest_release,
    kv_cache_dtype_message,
    numeric_release,
    release_for,
    rules_for,
    version_key,
)
from cgplan.core.vllm.resolve import Attention, Compilation, ModeDecision, attention, resolve_mode
from cgplan.io.config import Overrides, load_config
from tests.paths import TESTS_DIR

DATA = TESTS_DIR / "data"


def _record(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(gzip.decompress((DATA / "oracle" / f"{name}.json.gz").read_bytes()))
    return doc


def _input(corpus: str, version: str = "0.33.0"):  # type: ignore[no-untyped-def]
    return load_config(DATA / "corpus" / f"{corpus}.yaml", Overrides(vllm_version=version)).input


def test_version_key_reads_every_number_of_a_release() -> None:
    # the recorder's own version strings: each release's numbers, dev and local suffixes dropped
    versions = {
        _record(p.name.removesuffix(".json.gz"))["vllm_version"]
        for p in (DATA / "oracle").glob("mode-full.*")
    }
    assert {version_key(v) for v in versions} == {tuple(int(x) for x in v.split(".")) for v in versions}
    assert version_key("0.26.1.dev5+gabc") == (0, 26, 1)  # the docstring's rule


@pytest.mark.parametrize("platform", list(Platform), ids=[p.value for p in Platform])
def test_platform_capability_is_the_recorded_device(platform: Platform) -> None:
    # vLLM's own `get_device_capability()` on the recording's device, for every platform the
    # corpus records (A100 8.0, H200 9.0, B200 10.0, RTX PRO 6000 and RTX 5090 12.0, GB10 12.1)
    seen = set()
    for path in sorted((DATA / "oracle").glob("*.0.33.0.json.gz")):
        p = _record(path.name.removesuffix(".json.gz"))["platform"]
        if p["name"] == platform.value:
            seen.add(tuple(int(x) for x in p["device_capability"].split(".")))
    assert seen == {platform.compute_capability}


def test_explicit_sizes_kept_as_given_are_not_reported_overridden() -> None:
    # vLLM recorded these explicit sizes unchanged, so nothing overrode them
    for corpus in ("sizes-explicit-mns32", "sizes-matching-max"):
        rec = _record(f"{corpus}.0.33.0")
        assert (
            rec["runtime"]["cudagraph_capture_sizes"]
            == rec["input"]["compilation_config"]["cudagraph_capture_sizes"]
        )
        plan = build_plan(_input(corpus), with_fixes=False)
        assert "explicit_sizes_overridden" not in [n.kind for n in plan.notes]


def test_schedule_entry_of_two_items_is_vllms_error() -> None:
    # vllm/v1/spec_decode/dynamic/utils.py validate_and_normalize_dynamic_sd_schedule
    with pytest.raises(ScheduleError, match="must be a 3-item sequence"):
        normalize_schedule([(1, 16)])
    with pytest.raises(ScheduleError, match="must be a 3-item sequence"):
        normalize_schedule([(1, 16, 2, 4)])


def test_schedule_range_ending_at_zero_is_not_positive() -> None:
    # `if start <= 0 or end <= 0: raise ValueError(f"Batch-size range ({start}, {end}) must be positive.")`
    # comes before the start <= end check in vLLM's loop
    with pytest.raises(ScheduleError, match=r"^Batch-size range \(1, 0\) must be positive\.$"):
        normalize_schedule([(1, 0, 2)])


@pytest.mark.parametrize(
    ("splits", "mode"), [(False, Mode.FULL_DECODE_ONLY), (True, Mode.FULL_AND_PIECEWISE)]
)
def test_full_mode_downgrade_follows_whether_attention_splits(splits: bool, mode: Mode) -> None:
    # CompilationConfig.resolve_cudagraph_mode_and_sizes: FULL with a backend below ALWAYS becomes
    # FULL_AND_PIECEWISE when `splitting_ops_contain_attention()`, else FULL_DECODE_ONLY
    notes: list[Any] = []
    got = resolve_mode(
        ModeDecision(Mode.FULL, splits, Compilation(VLLM_COMPILE, False)),
        Attention("FLASH_ATTN", CGSupport.UNIFORM_BATCH),
        1,
        notes,
    )
    assert got is mode
    assert notes[-1].message.endswith(f"setting cudagraph_mode={mode.value}")


def test_b12x_refuses_decode_context_parallel_of_two() -> None:
    # B12X `validate_configuration`: "DCP not supported" for any dcp_world_size > 1
    inp = _input("b12x-rtx5090-nospec")
    assert attention(inp, rules_for("0.33.0")).backend == "B12X"
    with pytest.raises(Rejected, match="DCP not supported"):
        attention(dataclasses.replace(inp, decode_context_parallel_size=2), rules_for("0.33.0"))


def test_fa4_on_sm100_reports_always_from_033() -> None:
    # 0.33.0: FA4 on SM10x reports AttentionCGSupport.ALWAYS; before, FLASH_ATTN there is UNIFORM_BATCH
    assert cudagraph_support("FLASH_ATTN", Platform.BLACKWELL, 128, rules_for("0.33.0")) is CGSupport.ALWAYS
    assert (
        cudagraph_support("FLASH_ATTN", Platform.BLACKWELL, 128, rules_for("0.32.0"))
        is CGSupport.UNIFORM_BATCH
    )


def test_kv_cache_dtype_refusal_is_each_releases_words() -> None:
    # scripts/oracle/kv_cache_dtypes.py recorded CacheConfig's refusal of an unknown cache_dtype per release
    recorded = json.loads((DATA / "kv_cache_dtypes.json").read_text())
    for version, rec in recorded.items():
        assert kv_cache_dtype_message(rec["invalid"], rules_for(version)) == rec["refusal"], version


def test_dense_lookup_fills_a_gap_with_the_previous_k() -> None:
    # build_dynamic_sd_schedule_lookup: a gap carries the previous K, the tail the last, clamped to K
    # (its dense table [0, 3, 3, 3, 1, 1] in runs)
    assert lookup_ranges([(1, 2, 5), (4, 4, 1)], max_batch_size=5, num_speculative_tokens=3) == [
        (1, 3, 3),
        (4, 5, 1),
    ]


@pytest.mark.parametrize("candidates", list(V2Candidates))
def test_v2_dispatch_of_no_tokens_is_eager(candidates: V2Candidates) -> None:
    # vllm/v1/worker/gpu/cudagraph_utils.py (0.33.0), CudaGraphManager.dispatch:
    #     if self._graphs_captured and num_tokens > 0 and key in self._candidates: ...
    #     return BatchExecutionDescriptor(cg_mode=CUDAGraphMode.NONE, ...)
    for mode in (Mode.FULL_AND_PIECEWISE, Mode.PIECEWISE, Mode.FULL):
        mgr = V2Manager((1, 2, 4, 8), 8, mode, 2, [2], 8, candidates, NO_LORA, None, False)
        assert mgr.picker(None, 0)(1, 1) != EAGER  # the smallest graph takes one token
        assert mgr.picker(None, 0)(0, 0) == EAGER
        assert mgr.picker(2, 0)(0, 0) == EAGER
        assert mgr.picker(None, 0, reqs_cap=8)(0, 0) == EAGER


def test_v2_managers_are_shared_and_their_memo_is_bounded() -> None:
    # v2_manager's contract (its docstring): one manager per key, shared by every plan that asks for
    # it (its dispatch tables are memoised on it), max_num_seqs clipped to the widest size in the key;
    # the memo holds at most 256 managers (a sweep of distinct configs never grows it further)
    args = ((1, 2, 4, 8), 8, Mode.FULL_AND_PIECEWISE, 1, [1], 8, V2Candidates.PER_MODE)
    first = v2_manager(*args)
    assert v2_manager(*args) is first
    assert v2_manager(*args[:5], 1000, args[6]) is v2_manager(*args[:5], 8000, args[6])
    assert v2_manager(*args[:5], 4, args[6]) is not first  # fewer requests: other decode graphs
    assert v2_manager(*args) is first  # making another kept this one
    for n in range(300):
        v2_manager((1, 2, 4, 8 + n), 8 + n, *args[2:])
        assert len(graphs_mod._MANAGERS) <= 256
    assert v2_manager(*args) is v2_manager(*args)  # still shared after the memo was cleared


@pytest.mark.parametrize(
    ("mode", "num_reqs", "query_len"),
    [(Mode.PIECEWISE, 8, None), (Mode.PIECEWISE, 4, 2), (Mode.FULL, None, None), (Mode.NONE, 8, None)],
)
def test_only_full_descriptors_with_a_request_count_get_a_microbatched_twin(
    mode: Mode, num_reqs: int | None, query_len: int | None
) -> None:
    # vllm/v1/worker/gpu/cudagraph_utils.py (0.33.0), CudaGraphManager._maybe_ubatch_twin:
    #     if self.ubatch_runner is None or desc.cg_mode != CUDAGraphMode.FULL:
    #         return None
    #     if desc.num_reqs is None:
    #         return None
    ubatch = Microbatching(num_ubatches=2, min_tokens=1)
    assert ubatch.twin(_Desc(mode, 8, num_reqs, query_len, 0, 1)) is None
    twin = ubatch.twin(_Desc(Mode.FULL, 8, 8, None, 0, 1))  # the same descriptor in FULL has one
    assert twin == _Desc(Mode.FULL, 8, 8, 1, 0, 2)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=4),
    st.sampled_from(["", "rc", "a", "b", "c", "pre", "preview"]),
    st.sampled_from(["", ".", "-", "_"]),
    st.integers(0, 9),
    st.sampled_from(["", ".post2", "-3", ".dev7", "rc1.dev5", ".dev0+g1a2b3c", "+local.7", ".post1.dev2"]),
)
def test_version_key_is_the_pep440_release(
    release: list[int], pre: str, sep: str, pre_n: int, tail: str
) -> None:
    # A vLLM build's version is PEP 440 (setuptools-scm: "0.11.1rc2.dev5+g1234"); its release
    # numbers are packaging's `Version.release`, what pip orders builds by. A pre-release written
    # with a separator ("0.26rc.1") ends the numbers as "0.26rc1" does.
    version = ".".join(map(str, release)) + (f"{pre}{sep}{pre_n}" if pre else "") + tail
    try:
        parsed = packaging.version.Version(version)
    except packaging.version.InvalidVersion:
        return
    assert version_key(version) == parsed.release, version


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_default_v2_architectures_are_each_releases(version: str) -> None:
    # scripts/oracle/v2_default_archs.py read DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES off each
    # release's vllm/config/vllm.py (null from 0.29.0: V2 is every model's default)
    recorded = json.loads((DATA / "oracle-v2-default-archs" / f"{version}.json").read_text())
    assert recorded["vllm_version"] == version
    table = rules_for(version).v2_default_moe_architectures
    expected = recorded["default_v2_architectures"]
    assert (None if table is None else sorted(table)) == expected


def test_numeric_release_reads_parts_of_at_most_five_digits() -> None:
    # numeric_release's rule: a part of six digits or more is no release number (so "0.33.100000" is
    # not read as a patch release of 0.33)
    assert numeric_release("0.33.99999") == (0, 33, 99999)
    assert release_for("0.33.99999") == "0.33.0"
    assert numeric_release("0.33.100000") is None
    assert release_for("0.33.100000") is None


def test_closest_release_of_a_version_without_numbers_is_the_newest() -> None:
    # closest_release's rule: the newest supported release when the version has no numbers
    assert closest_release("nightly") == closest_release("") == LATEST_VERSION
    assert closest_release("0.0.1") == SUPPORTED_VERSIONS[0]  # older than every release: the oldest


@pytest.mark.parametrize("i", range(len(SUPPORTED_VERSIONS)))
def test_closest_release_of_an_unknown_build_is_the_newest_release_not_newer(i: int) -> None:
    # closest_release's rule where release_for has no answer: the newest supported release whose
    # numbers are not above the build's. A patch past numeric_release's range sits just above its
    # own release; the next minor, just above the newest release below it.
    v = SUPPORTED_VERSIONS[i]
    major, minor, _ = numeric_release(v) or (0, 0, 0)
    past_patches = f"{major}.{minor}.100000"
    assert release_for(past_patches) is None
    newest_of_minor = [r for r in SUPPORTED_VERSIONS if r.startswith(f"{major}.{minor}.")][-1]
    assert closest_release(past_patches) == newest_of_minor
    next_minor = f"{major}.{minor + 1}.0"
    if release_for(next_minor) is None:
        assert closest_release(next_minor) == newest_of_minor


def test_no_release_picks_smallest_any_mode_with_microbatched_twins() -> None:
    """V2Manager keeps no microbatched twin among 0.26-0.28's any-mode candidates (graphs.py): vLLM's
    `_maybe_ubatch_twin` came with 0.30.0, after 0.29.0's per-mode candidate ranges."""
    both = [
        v
        for v in SUPPORTED_VERSIONS
        if rules_for(v).v2_candidates is V2Candidates.SMALLEST_ANY_MODE and rules_for(v).v2_ubatch_twins
    ]
    assert both == []
    assert next(v for v in SUPPORTED_VERSIONS if rules_for(v).v2_ubatch_twins) == "0.30.0"
