"""Capture sizes: vLLM's `VllmConfig._set_cudagraph_sizes`, as a function with notes.

Every adjustment vLLM logs becomes a `Note` in the result instead of a log line, so
`plan` can show it and `diff`/`gate` can compare it. vLLM's own code mutates the
config in place (vllm/config/vllm.py); here inputs stay frozen.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgplan.core.model.spec import PlanInput
from cgplan.core.model.types import Note, Rejected
from cgplan.core.vllm.dynamic_sd import ScheduleError, lookup_ranges, widest_per_query_len
from cgplan.core.vllm.releases import DecodeSizes, VllmRules


@dataclass(frozen=True)
class Ladder:
    """The capture-size list vLLM settles on before the attention backend is known."""

    sizes_tokens: tuple[int, ...]
    """Sorted, unique capture sizes in tokens."""
    max_size_tokens: int
    """`max_cudagraph_capture_size` after truncation (0 without graphs)."""
    inferred_max_tokens: int | None
    """The inferred maximum min(S·q·2, ceiling) before the B cap, or None when the user set it."""
    ceiling_tokens: int
    """The platform's default ceiling (512, or 1024 on SM10x from 0.28.0)."""
    uniform_decode_sizes_tokens: tuple[int, ...]
    """Request-count decode sizes appended to the grid (0.29.0+)."""
    notes: tuple[Note, ...] = ()
    """Adjustments vLLM would log."""


def request_counts(max_reqs: int, ceiling: int) -> list[int]:
    """vLLM 0.29+'s request-count grid for one decode tier.

    >>> request_counts(20, 512)
    [1, 2, 4, 8, 16, 20]
    """
    max_reqs = min(max_reqs, ceiling)
    # vLLM's default token grid (1, 2, 4, multiples of 8 below 256, of 16 above) over request
    # counts, with the widest count itself
    return sorted({*token_grid(max_reqs, interactivity=False), max_reqs})


def token_grid(max_size: int, interactivity: bool) -> list[int]:
    """The default token grid: 1, 2, 4 (or 1..32), multiples of 8 below 256, then of 16.

    >>> token_grid(40, interactivity=False)
    [1, 2, 4, 8, 16, 24, 32, 40]
    """
    if interactivity:
        sizes = list(range(1, min(max_size, 32) + 1))
    else:
        sizes = [i for i in (1, 2, 4) if i <= max_size]
    # no guards on max_size: a range whose start is past max_size is empty
    sizes += list(range(8, min(max_size + 1, 256), 8))
    sizes += list(range(256, max_size + 1, 16))
    return sizes


def decode_tiers(inp: PlanInput) -> list[tuple[int, int]]:
    """(query_len, widest batch) per dynamic-SD tier; one tier without a schedule.

    An invalid schedule keeps the single default tier silently, as vLLM does here.
    """
    q = inp.uniform_decode_query_len
    tiers = [(q, inp.max_num_seqs)]
    spec = inp.speculative
    if spec is not None and spec.num_speculative_tokens_per_batch_size:
        try:
            runs = lookup_ranges(
                spec.num_speculative_tokens_per_batch_size,
                inp.max_num_seqs,
                spec.num_speculative_tokens,
            )
        except ScheduleError:
            return tiers
        tiers = list(widest_per_query_len(runs).items())
    return tiers


def capture_ladder(inp: PlanInput, rules: VllmRules, graphs_enabled: bool, sp_on: bool) -> Ladder:
    """The capture sizes of `inp` under `rules` (vLLM's `_set_cudagraph_sizes`).

    Args:
        inp: the resolved config.
        rules: the release's rules.
        graphs_enabled: False when enforce_eager or cudagraph_mode NONE (no sizes at all).
        sp_on: sequence parallelism is effective (TP-divisibility filter applies).

    Raises:
        Rejected: the release refuses the config (inconsistent explicit max and list; with graphs
            on, a maximum below 1 or an empty list: vLLM's assertions). With graphs off vLLM takes
            any of them and sets no sizes.
    """
    ceiling = 1024 if (rules.sm100_ceiling_1024 and inp.platform.is_sm100_family) else 512
    if not graphs_enabled:
        return Ladder((), 0, None, ceiling, ())
    notes: list[Note] = []
    q = inp.uniform_decode_query_len
    s = inp.max_num_seqs
    b = inp.max_num_batched_tokens
    max_size = inp.max_cudagraph_capture_size
    inferred: int | None = None
    decode_sizes: list[int] = []
    if max_size is None or (rules.decode_sizes_with_explicit_max and inp.cudagraph_capture_sizes is None):
        if max_size is None:
            max_size = inferred = min(s * q * 2, ceiling)
        cap = max_size if rules.decode_sizes_capped else None
        if rules.decode_sizes is not DecodeSizes.NONE and q > 1:
            decode_sizes = sorted(
                {
                    n * ql
                    for ql, widest in decode_tiers(inp)
                    for n in request_counts(widest, ceiling)
                    if cap is None or n * ql <= cap
                }
            )
        elif rules.decode_sizes is DecodeSizes.SPEC_AND_MAX_NUM_SEQS and q == 1 and s <= max_size:
            decode_sizes = [s]
    max_size = min(b, max_size)
    if max_size < 1:
        raise Rejected(
            "compilation_config.max_cudagraph_capture_size",
            "Maximum cudagraph size should be greater than or equal to 1 when using cuda graph.",
        )

    explicit = inp.cudagraph_capture_sizes
    if explicit is not None and not explicit:
        raise Rejected(
            "compilation_config.cudagraph_capture_sizes",
            "cudagraph_capture_sizes should contain at least one element when using cuda graph.",
        )
    if explicit is not None:
        sizes = sorted({x for x in explicit if x <= b})
    else:
        sizes = token_grid(max_size, inp.performance_mode == "interactivity")
        if b <= max_size and b not in sizes:
            sizes.append(b)
        sizes += [x for x in decode_sizes if x <= b]
        sizes = sorted(set(sizes))

    if sp_on:  # (at TP 1 every size is a multiple: nothing to remove)
        tp = inp.tensor_parallel_size
        removed = [x for x in sizes if x % tp]
        if removed:
            notes.append(
                Note(
                    "sp_filter",
                    f"Batch sizes {removed} are removed because they are not multiple of "
                    f"tp_size {tp} when sequence parallelism is enabled",
                )
            )
        sizes = [x for x in sizes if x % tp == 0]

    valid_max = sizes[-1] if sizes else 0
    user_max = inp.max_cudagraph_capture_size
    if user_max is not None and user_max != valid_max:
        if explicit is not None:
            raise Rejected(
                "compilation_config.max_cudagraph_capture_size",
                f"customized max_cudagraph_capture_size(={user_max}) should be consistent "
                f"with the max value of cudagraph_capture_sizes(={valid_max})",
            )
        notes.append(Note("truncated_max", f"Truncating max_cudagraph_capture_size to {valid_max}"))
    if explicit is not None and len(sizes) < len(explicit):
        notes.append(
            Note(
                "explicit_sizes_overridden",
                f"cudagraph_capture_sizes specified in compilation_config {list(explicit)} "
                f"is overridden by config {sizes}",
            )
        )
    return Ladder(tuple(sizes), valid_max, inferred, ceiling, tuple(decode_sizes), tuple(notes))
