"""Data-parallel step synchronisation, modelled from vLLM's source (runtime: no oracle reaches it).
No product path calls it yet (docs/parallel.md, "What the CPU cannot reach"); tests/core/vllm/test_dp_sync.py
holds its invariants.

`vllm/v1/worker/dp_utils.py` `coordinate_batch_across_dp` (V1 `gpu_model_runner`
`_determine_batch_execution_and_padding`; V2 `gpu/dp_utils.py` does the same): every DP rank
dispatches its own batch, then one all-reduce gives each rank every rank's padded token count
and runtime mode. The synced mode is the minimum over ranks (NONE 0 < PIECEWISE 1 < FULL 2):
one eager rank makes every rank eager. When the synced mode is not NONE (or the ranks agree to
microbatch), every rank pads to the largest rank's padded token count and dispatches again with
only the synced mode allowed. Checking this on GPUs (DP=2 on the H200 pair) is future work
(docs/parallel.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cgplan.core.model.modes import Mode
from cgplan.core.vllm.graphs import EAGER, Outcome

_RANK = {Mode.NONE: 0, Mode.PIECEWISE: 1, Mode.FULL: 2}


@dataclass(frozen=True)
class DpStep:
    """One DP step: what each rank replays after synchronisation."""

    synced_mode: Mode
    """The minimum runtime mode over ranks."""
    outcomes: tuple[Outcome, ...]
    """Per rank, after DP padding and the second dispatch."""
    padded_tokens_per_rank: int | None
    """The common token count every rank runs (None when eager: no DP padding)."""


def synchronize_dp(
    own: Sequence[Outcome],
    redispatch: Callable[[int, int, Mode], Outcome],
) -> DpStep:
    """Combine the ranks' own dispatches as `_synchronize_dp_ranks` does.

    `own[r]` is rank r's dispatch of its unpadded batch; `redispatch(r, tokens, mode)` is rank r's
    dispatcher called again with the padded token count and only `mode` allowed (eager when no
    graph of that mode fits).
    """
    synced = min((o.mode for o in own), key=_RANK.__getitem__, default=Mode.NONE)
    if synced is Mode.NONE:
        return DpStep(Mode.NONE, tuple(EAGER for _ in own), None)
    tokens = max(o.padded_tokens or 0 for o in own)
    return DpStep(synced, tuple(redispatch(r, tokens, synced) for r in range(len(own))), tokens)
