"""What diff, sweep and gate compare: a plan or a capture, reduced to the same shape (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from cgplan.core.gaps import gap_batches, graph_count, padding_tokens
from cgplan.core.types import DispatchRange, Graph, Plan


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a plan (predicted) or a capture report (measured)."""

    label: str
    """How to name it to a person (a file, "config @ 0.33.0", ...)."""
    kind: str
    """plan or capture."""
    vllm_version: str
    fingerprint: str | None
    max_num_seqs: int
    uniform_decode_query_len: int
    graphs: dict[str, tuple[Graph, ...]]
    uniform_decode: dict[int, tuple[DispatchRange, ...]]
    lookup: tuple[tuple[int, int, int], ...] | None
    """Dynamic-SD lookup (first_batch, last_batch, K), None without a schedule."""
    pool_bytes: int | None = None
    """Graph-pool memory: measured (capture) or predicted (plan with a cost model)."""
    pool_source: str | None = None
    """measured or predicted."""
    capture_time_s: float | None = None
    rejected: str | None = None
    """The release refuses the config (then nothing else is meaningful)."""

    def tier_batches(self, query_len: int) -> list[tuple[int, int]]:
        """Request-count runs that decode at `query_len`."""
        if self.lookup is None:
            return [(1, self.max_num_seqs)] if query_len == self.uniform_decode_query_len else []
        return [(a, b) for a, b, k in self.lookup if k + 1 == query_len]

    def decode_modes(self, query_len: int) -> dict[int, tuple[str, int | None]]:
        """request count → (mode, padded tokens) over the tier's own batches."""
        out: dict[int, tuple[str, int | None]] = {}
        ranges = self.uniform_decode.get(query_len, ())
        for lo, hi in self.tier_batches(query_len):
            for r in ranges:
                for n in range(max(lo, r.first), min(hi, r.last) + 1):
                    out[n] = (r.mode, r.padded_tokens)
        return out

    @property
    def query_lens(self) -> list[int]:
        """Every decode tier's query length."""
        if self.lookup is None:
            return [self.uniform_decode_query_len]
        return sorted({k + 1 for _, _, k in self.lookup})


def side_from_plan(
    plan: Plan, label: str, fingerprint: str | None = None, pool_bytes: int | None = None
) -> Side:
    """A plan as a comparison side (its predicted cost, when it has one, as the pool and time)."""
    if pool_bytes is None and plan.cost is not None and plan.cost.graphs:
        pool_bytes = round(plan.cost.total_mib * (1 << 20))
    return Side(
        label=label,
        kind="plan",
        vllm_version=plan.vllm_version,
        fingerprint=fingerprint,
        max_num_seqs=plan.max_num_seqs,
        uniform_decode_query_len=plan.uniform_decode_query_len,
        graphs=plan.graphs,
        uniform_decode=plan.uniform_decode,
        lookup=plan.dynamic_sd_lookup,
        pool_bytes=pool_bytes,
        pool_source="predicted" if pool_bytes is not None else None,
        capture_time_s=round(plan.cost.capture_s, 2) if plan.cost is not None and plan.cost.graphs else None,
    )


def rejected_side(label: str, version: str, reason: str) -> Side:
    """A config the release refuses."""
    return Side(label, "plan", version, None, 0, 1, {}, {}, None, rejected=reason)


def padding(side: Side, query_len: int) -> tuple[int, int]:
    """(padded tokens, real tokens) over the tier's batches that replay a graph."""
    padded = real = 0
    for n, (mode, tokens) in side.decode_modes(query_len).items():
        if mode != "NONE" and tokens is not None:
            padded += tokens
            real += n * query_len
    return padded, real


def decode_gaps(side: Side) -> list[tuple[int, int, int, str]]:
    """(query_len, first, last, mode) runs of the tiers' own batches that are not FULL."""
    out: list[tuple[int, int, int, str]] = []
    for ql in side.query_lens:
        modes = side.decode_modes(ql)
        for n in sorted(modes):
            mode = modes[n][0]
            if mode == "FULL":
                continue
            if out and out[-1][0] == ql and out[-1][2] == n - 1 and out[-1][3] == mode:
                out[-1] = (ql, out[-1][1], n, mode)
            else:
                out.append((ql, n, n, mode))
    return out


__all__ = ["Side", "decode_gaps", "gap_batches", "graph_count", "padding", "padding_tokens", "side_from_plan"]
