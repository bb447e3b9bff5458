"""Traffic: the batch shapes a server sees, with how often (pure data; io/traffic.py reads the
three file forms into it, core/optimize/traffic_cost.py prices a plan on it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Traffic:
    """Batch shapes the server sees, with how often."""

    uniform_decode: tuple[tuple[int, float], ...]
    """(num_reqs, steps) of uniform-decode steps (tokens = num_reqs × that batch's query length)."""
    mixed: tuple[tuple[int, float], ...]
    """(num_tokens, steps) of every other step."""
    source: str
    """Where the shapes came from, in words (the file and its form), as outputs name it."""
