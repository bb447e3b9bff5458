"""DP synchronisation (cgplan/core/vllm/dp_sync.py), checked for the properties vLLM's source states.

No oracle reaches it (it runs at each step on the GPU ranks); the checks are the invariants of
`_synchronize_dp_ranks`: the synced mode is the minimum, one eager rank makes all eager, and
every rank runs the largest rank's padded token count.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cgplan.core.model.modes import Mode
from cgplan.core.vllm.dp_sync import synchronize_dp
from cgplan.core.vllm.graphs import EAGER, V1Dispatcher

SIZES = (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64)
DISPATCHER = V1Dispatcher(SIZES, 64, Mode.FULL_AND_PIECEWISE, 1, 32)


def _redispatch(_rank: int, tokens: int, mode: Mode):  # type: ignore[no-untyped-def]
    o = DISPATCHER.dispatch(tokens, True)
    return o if o.mode is mode else DISPATCHER.dispatch(tokens, False) if mode is Mode.PIECEWISE else EAGER


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 80), min_size=2, max_size=8))
def test_ranks_run_one_padded_size_or_all_eager(tokens: list[int]) -> None:
    own = [DISPATCHER.dispatch(t, True) for t in tokens]
    step = synchronize_dp(own, _redispatch)
    if any(o.mode is Mode.NONE for o in own):
        assert step.synced_mode is Mode.NONE and all(o is EAGER for o in step.outcomes)
        return
    assert step.padded_tokens_per_rank == max(o.padded_tokens or 0 for o in own)
    assert len({o.padded_tokens for o in step.outcomes}) == 1
    assert all(
        o.padded_tokens is not None and o.padded_tokens >= t
        for o, t in zip(step.outcomes, tokens, strict=True)
    )


def test_one_rank_above_the_capture_maximum_makes_every_rank_eager() -> None:
    own = [DISPATCHER.dispatch(3, True), DISPATCHER.dispatch(65, True)]
    assert own[0].mode is Mode.FULL
    assert synchronize_dp(own, _redispatch).outcomes == (EAGER, EAGER)
