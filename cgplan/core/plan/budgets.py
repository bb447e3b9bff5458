"""The budgets a proposed fix must stay within: the CI gate's, taken as input (pure).

One place: `cgplan.core.compare.gate.DEFAULT_POLICY` (what configs/gates/default.yaml says) is turned
into `FixBudgets` by `budgets_of`, and the fix search takes `FixBudgets` as an argument, so the
search and the gate can never disagree on what "within budget" means.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB_PER_GIB = 1024


@dataclass(frozen=True)
class FixBudgets:
    """Limits from a gate policy; None switches one off."""

    max_graphs_per_family: tuple[tuple[str, int], ...] = (("*", 400),)
    """family (or "*" for every family) → most graph descriptors."""
    max_total_graphs: int | None = None
    """Most graph descriptors over all families."""
    max_pool_mib: float | None = None
    """Most predicted capture-phase memory per rank."""
    max_capture_s: float | None = None
    """Longest predicted capture phase."""
    max_decode_padding_ratio: float | None = None
    """Most padded/real tokens over any tier's graph-replayed decode batches."""

    def graph_limit(self, family: str) -> int | None:
        """The tightest per-family limit that applies to `family`."""
        limits = [n for f, n in self.max_graphs_per_family if f in ("*", family)]
        return min(limits) if limits else None

    @property
    def tightest_family_limit(self) -> int | None:
        """The smallest per-family limit of any family (a bound for pruning)."""
        limits = [n for _, n in self.max_graphs_per_family]
        if self.max_total_graphs is not None:
            limits.append(self.max_total_graphs)
        return min(limits) if limits else None


DEFAULT_BUDGETS = FixBudgets(max_graphs_per_family=(("*", 400),))
"""The default gate's budgets (`cgplan.core.compare.gate.budgets_of(DEFAULT_POLICY)`, which a test holds
equal): what every printed fix stays within unless --allow-over-budget. Here, not in the gate's
module, so that `plan` does not import the gate (its policy and result types) to read them."""

NO_BUDGETS = FixBudgets(max_graphs_per_family=())
"""Every budget off (`--allow-over-budget` still reports what a fix breaks against the gate's)."""
