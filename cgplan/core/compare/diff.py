"""diff: what changes between two sides (graphs, coverage per tier, padding, memory, time)."""

from __future__ import annotations

from dataclasses import dataclass

from cgplan.core.compare.sides import Side, coverage_moves, decode_gaps, padding
from cgplan.core.model.notation import ladder_text
from cgplan.core.model.types import Graph


@dataclass(frozen=True)
class FamilyModeDelta:
    """Graphs of one (family, mode) on each side."""

    family: str
    mode: str
    count_a: int
    count_b: int
    added: tuple[Graph, ...]
    removed: tuple[Graph, ...]


@dataclass(frozen=True)
class CoverageMove:
    """Request counts of one tier whose outcome changed."""

    query_len: int
    first_reqs: int
    last_reqs: int
    mode_a: str
    """FULL, PIECEWISE, NONE (eager) or "-" (not in this tier on that side)."""
    mode_b: str


@dataclass(frozen=True)
class TierPadding:
    """Padding waste of one tier: padded tokens over real tokens."""

    query_len: int
    padded_a: int
    real_a: int
    padded_b: int
    real_b: int

    @staticmethod
    def ratio(padded: int, real: int) -> float | None:
        """padded / real, None without graph-replayed batches."""
        return round(padded / real, 4) if real else None


@dataclass(frozen=True)
class Diff:
    """Everything that moved from A to B."""

    a: Side
    b: Side
    families: tuple[FamilyModeDelta, ...]
    moves: tuple[CoverageMove, ...]
    padding: tuple[TierPadding, ...]

    @property
    def fingerprints_match(self) -> bool:
        """Both sides describe the same config (or one side has no fingerprint)."""
        return (
            self.a.fingerprint is None
            or self.b.fingerprint is None
            or self.a.fingerprint == self.b.fingerprint
        )

    @property
    def unchanged(self) -> bool:
        """Same graphs and the same coverage."""
        return not self.moves and all(not f.added and not f.removed for f in self.families)


def diff_sides(a: Side, b: Side) -> Diff:
    """Compare two sides: graphs added/removed per family and mode, coverage moves, padding."""
    families: list[FamilyModeDelta] = []
    for family in list(dict.fromkeys([*a.graphs, *b.graphs])):
        for mode in ("PIECEWISE", "FULL"):
            ga = tuple(g for g in a.graphs.get(family, ()) if g.mode == mode)
            gb = tuple(g for g in b.graphs.get(family, ()) if g.mode == mode)
            if not ga and not gb:
                continue
            sa, sb = set(ga), set(gb)
            added = tuple(g for g in gb if g not in sa)
            removed = tuple(g for g in ga if g not in sb)
            families.append(FamilyModeDelta(family, mode, len(ga), len(gb), added, removed))
    moves: list[CoverageMove] = []
    pads: list[TierPadding] = []
    for ql in sorted(set(a.query_lens) | set(b.query_lens)):
        moves += [CoverageMove(ql, lo, hi, xa, xb) for lo, hi, xa, xb in coverage_moves(a, b, ql)]
        pa, ra = padding(a, ql)
        pb, rb = padding(b, ql)
        pads.append(TierPadding(ql, pa, ra, pb, rb))
    return Diff(a, b, tuple(families), tuple(moves), tuple(pads))


def _sizes(graphs: tuple[Graph, ...]) -> str:
    return ladder_text(sorted({g.num_tokens for g in graphs}))


def size_changes(d: Diff) -> list[str]:
    """ "target PIECEWISE: +1024, 2048; -16" lines: the token counts of graphs added and removed;
    with LoRA graphs on either side, one line per adapter count (`num_active_loras`), since the
    same token count is a graph per adapter case."""
    out = []
    for f in d.families:
        cases = sorted({g.num_active_loras for g in (*f.added, *f.removed)})
        sides = (*d.a.graphs.get(f.family, ()), *d.b.graphs.get(f.family, ()))
        lora = any(g.num_active_loras for g in sides)
        for n in cases if lora else [None]:
            added = tuple(g for g in f.added if n is None or g.num_active_loras == n)
            removed = tuple(g for g in f.removed if n is None or g.num_active_loras == n)
            parts = []
            if added:
                parts.append(f"+{_sizes(added)}")
            if removed:
                parts.append(f"-{_sizes(removed)}")
            if parts:
                which = f" (num_active_loras={n})" if lora else ""
                out.append(f"{f.family} {f.mode} tokens{which}: {'; '.join(parts)}")
    return out


def shared_gaps(d: Diff) -> list[tuple[int, int, int, str]]:
    """Gaps both sides have (same tier, same request counts, same outcome): no move, not all clear."""
    if d.a.rejected or d.b.rejected:
        return []
    gb = set(decode_gaps(d.b))
    return [g for g in decode_gaps(d.a) if g in gb]
