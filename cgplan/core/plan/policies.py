"""What-if capture policies: named changes to a release's rules, judged before anyone writes them.

A policy is a set of `VllmRules` knob values applied on top of the chosen release; the
planner then runs unchanged. `upstream` changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from cgplan.core.vllm.releases import VllmRules


@dataclass(frozen=True)
class CapturePolicy:
    """A named what-if: knob overrides plus where it comes from."""

    name: str
    description: str
    overrides: dict[str, Any] = field(default_factory=dict)
    """VllmRules field → value (decode_sizes_capped, decode_sizes_with_explicit_max, drafter_prefill_full)."""

    def apply(self, rules: VllmRules) -> VllmRules:
        """The release's rules with this policy's knobs set."""
        return replace(rules, **self.overrides) if self.overrides else rules


POLICY_KNOBS: dict[str, tuple[type, tuple[Any, ...] | None]] = {
    "decode_sizes_capped": (bool, None),
    "decode_sizes_with_explicit_max": (bool, None),
    "drafter_prefill_full": (str, ("target", "pow2", "none")),
}
"""What a user-defined policy may set, with its type and allowed values."""

BUILTIN_POLICIES: dict[str, CapturePolicy] = {
    p.name: p
    for p in (
        CapturePolicy("upstream", "the chosen vLLM release as shipped"),
        CapturePolicy(
            "sparse-pow2-drafter-prefill",
            "a fork's policy: FULL drafter-prefill graphs only at power-of-two request counts (× 1+K "
            "tokens) up to max_num_seqs and the capture maximum, plus the widest count that fits; "
            "PIECEWISE kept for non-uniform prefill; FULL candidates restricted to what was captured",
            {"drafter_prefill_full": "pow2"},
        ),
        CapturePolicy(
            "uncapped-uniform-decode",
            "vllm#50488 before vllm#54418: uniform-decode sizes appended beyond the inferred maximum "
            "(the widest decode step always gets a graph; reverted for memory)",
            {"decode_sizes_capped": False},
        ),
        CapturePolicy(
            "explicit-max-keeps-decode",
            "vllm#54933's expected behaviour (vllm#55004): an explicit max_cudagraph_capture_size still "
            "gets the uniform-decode sizes below it",
            {"decode_sizes_with_explicit_max": True},
        ),
    )
}
"""The policies `--policy NAME` knows."""

UPSTREAM = BUILTIN_POLICIES["upstream"]
