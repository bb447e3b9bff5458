"""Graph memory compared like for like (pure): one definition, the capture phase on one rank.

vLLM's "Graph capturing finished in N secs, took X GiB", the cost model's prediction and a capture
report's `capture_nvml_delta_bytes` (rank 0's under tensor parallelism) all count the whole
capture phase, warmup runs included. The sum over the graph sections alone (warmups excluded) is
a different, smaller quantity: it stays available as a labelled detail and is never held against
a capture-phase figure.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgplan.core.compare.sides import Side

MIB = 1 << 20


@dataclass(frozen=True)
class MemoryComparison:
    """A's and B's graph memory and, where one is predicted and the other measured, the error."""

    a_mib: float | None
    b_mib: float | None
    a_source: str | None
    b_source: str | None
    measured_over_predicted: float | None
    """measured / predicted when one side is each (None otherwise)."""
    band: tuple[float, float] | None
    """The prediction's documented band as measured/predicted ratios."""
    within_band: bool | None
    """Whether the measurement lies in the band (None: no pair, or outside the fitted domain)."""
    caveats: tuple[str, ...]
    """Why the band does not hold (outside the cost model's fitted domain)."""
    a_sections_mib: float | None
    b_sections_mib: float | None
    """Detail: graph sections only (warmups excluded)."""
    kv_tokens: int | None = None
    """The prediction's graph memory in KV-cache tokens (pool bytes ÷ KV bytes per token)."""
    vllm_kv_cache_tokens: int | None = None
    """vLLM's own KV-cache size in tokens (a capture report's), beside it for scale."""
    a_withheld: str | None = None
    b_withheld: str | None = None
    """Why a plan side has no figure (the cost model's own words), shown in its place."""

    def kv_text(self) -> str | None:
        """ "= N KV-cache tokens (vLLM's KV cache: M tokens)"."""
        if self.kv_tokens is None:
            return None
        text = f"  the predicted graph memory = {self.kv_tokens:,} KV-cache tokens per rank"
        if self.vllm_kv_cache_tokens is not None:
            share = 100 * self.kv_tokens / self.vllm_kv_cache_tokens if self.vllm_kv_cache_tokens else 0.0
            text += (
                f"; vLLM's KV cache on that run: {self.vllm_kv_cache_tokens:,} tokens ({share:.1f}% of it)"
            )
        return text

    def text(self) -> str:
        """One line for humans, in MiB like `plan`."""

        def mib(x: float | None, src: str | None, withheld: str | None) -> str:
            if x is None:
                return withheld or "-"
            return f"{x:,.0f} MiB {src or ''}".rstrip()

        line = (
            f"graph memory (capture phase, per rank): A {mib(self.a_mib, self.a_source, self.a_withheld)} → "
            f"B {mib(self.b_mib, self.b_source, self.b_withheld)}"
        )
        if self.measured_over_predicted is not None:
            err = 100 * (1 / self.measured_over_predicted - 1) if self.measured_over_predicted else 0.0
            line += f"; predicted {err:+.1f}% against measured "
            line += f"(measured/predicted {self.measured_over_predicted:.3f}"
            if self.caveats:
                line += (
                    f"; outside the cost model's fitted domain: {'; '.join(self.caveats)}; no error bound)"
                )
            elif self.band is not None:
                lo, hi = self.band
                if self.within_band:
                    line += f", within the cost model's band {lo:.2f}..{hi:.2f})"
                else:
                    line += (
                        f", outside the band {lo:.2f}..{hi:.2f} the fit's own reports span; "
                        "docs/cost-model.md lists the held-out errors)"
                    )
            else:
                line += ")"
        return line

    def detail(self) -> str | None:
        """The graph sections' sums, labelled as the detail they are."""
        if self.a_sections_mib is None and self.b_sections_mib is None:
            return None

        def mib(x: float | None) -> str:
            return "-" if x is None else f"{x:,.0f} MiB"

        return (
            f"  detail, graph sections only (warmups excluded, not comparable with the line above): "
            f"A {mib(self.a_sections_mib)} → B {mib(self.b_sections_mib)}"
        )


def compare_memory(a: Side, b: Side) -> MemoryComparison:
    """A's against B's graph memory."""
    ratio = band = within = None
    caveats: tuple[str, ...] = ()
    pred, meas = (a, b) if a.pool_source == "predicted" else (b, a)
    if (
        pred.pool_source == "predicted"
        and meas.pool_source == "measured"
        and pred.pool_bytes
        and meas.pool_bytes
    ):
        ratio = meas.pool_bytes / pred.pool_bytes
        caveats = pred.pool_caveats
        if pred.pool_band_bytes is not None:
            lo, hi = pred.pool_band_bytes
            band = (lo / pred.pool_bytes, hi / pred.pool_bytes)
            # the band's ratios are stored to 4 decimals: allow that rounding
            tol = 5e-5 * pred.pool_bytes
            within = None if caveats else lo - tol <= meas.pool_bytes <= hi + tol
    return MemoryComparison(
        a_mib=None if a.pool_bytes is None else a.pool_bytes / MIB,
        b_mib=None if b.pool_bytes is None else b.pool_bytes / MIB,
        a_source=a.pool_source,
        b_source=b.pool_source,
        measured_over_predicted=ratio,
        band=band,
        within_band=within,
        caveats=caveats,
        a_sections_mib=None if a.graph_sections_bytes is None else a.graph_sections_bytes / MIB,
        b_sections_mib=None if b.graph_sections_bytes is None else b.graph_sections_bytes / MIB,
        kv_tokens=pred.pool_bytes // pred.kv_bytes_per_token
        if pred.pool_source == "predicted" and pred.pool_bytes and pred.kv_bytes_per_token
        else None,
        vllm_kv_cache_tokens=meas.vllm_kv_cache_tokens if meas.pool_source == "measured" else None,
        a_withheld=a.pool_withheld,
        b_withheld=b.pool_withheld,
    )
