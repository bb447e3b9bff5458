"""The two capture grids of `VllmConfig._set_cudagraph_sizes`, against vLLM's own lines.

Quoted from vllm/config/vllm.py (0.33.0; the same lines in 0.29.0-0.32.0 for the request-count grid
and in every release for the token grid) and run here on every size both sides of each boundary:
recorded configs show a size only where the other grid lacks it, so the grids are compared whole.
"""

from __future__ import annotations

import pytest

from cgplan.core.vllm.ladder import request_counts, token_grid


def vllm_request_counts(max_reqs: int, default_max_graph_size: int) -> list[int]:
    # vllm/config/vllm.py (0.33.0), _set_cudagraph_sizes, the nested `request_counts`:
    #     max_reqs = min(max_reqs, default_max_graph_size)
    #     counts = [n for n in (1, 2, 4) if n <= max_reqs]
    #     counts += list(range(8, min(max_reqs + 1, 256), 8))
    #     counts += list(range(256, max_reqs + 1, 16))
    #     return sorted(set(counts + [max_reqs]))
    max_reqs = min(max_reqs, default_max_graph_size)
    counts = [n for n in (1, 2, 4) if n <= max_reqs]
    counts += list(range(8, min(max_reqs + 1, 256), 8))
    counts += list(range(256, max_reqs + 1, 16))
    return sorted({*counts, max_reqs})


def vllm_token_grid(max_cudagraph_capture_size: int, interactivity: bool) -> list[int]:
    # vllm/config/vllm.py (0.33.0), _set_cudagraph_sizes without explicit sizes:
    #     if self.performance_mode == "interactivity":
    #         interactivity_max = min(max_cudagraph_capture_size, 32)
    #         cudagraph_capture_sizes = list(range(1, interactivity_max + 1))
    #     else:
    #         cudagraph_capture_sizes = [i for i in [1, 2, 4] if i <= max_cudagraph_capture_size]
    #     if max_cudagraph_capture_size >= 8:
    #         cudagraph_capture_sizes += list(range(8, min(max_cudagraph_capture_size + 1, 256), 8))
    #     if max_cudagraph_capture_size >= 256:
    #         cudagraph_capture_sizes += list(range(256, max_cudagraph_capture_size + 1, 16))
    m = max_cudagraph_capture_size
    sizes = list(range(1, min(m, 32) + 1)) if interactivity else [i for i in [1, 2, 4] if i <= m]
    if m >= 8:
        sizes += list(range(8, min(m + 1, 256), 8))
    if m >= 256:
        sizes += list(range(256, m + 1, 16))
    return sizes


EDGES = sorted(
    {e + d for e in (1, 2, 4, 8, 16, 32, 248, 256, 272, 512, 1024) for d in (-1, 0, 1) if e + d >= 1}
)


@pytest.mark.parametrize("ceiling", [512, 1024])
def test_request_counts_are_vllms(ceiling: int) -> None:
    for n in [*range(1, 300), *EDGES, 511, 513, 1023, 1025, 1100]:
        assert request_counts(n, ceiling) == vllm_request_counts(n, ceiling), n


@pytest.mark.parametrize("interactivity", [False, True])
def test_token_grid_is_vllms(interactivity: bool) -> None:
    for m in [*range(1, 300), *EDGES, 1100]:
        assert token_grid(m, interactivity) == vllm_token_grid(m, interactivity), m
