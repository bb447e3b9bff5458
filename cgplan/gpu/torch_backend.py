"""Reference backend: the model's shape as a plain PyTorch decoder, captured like vLLM captures it.

No vLLM needed. The decoder has the config.json's hidden size, layers, heads, KV heads,
head size, MLP width, vocabulary and dtype (dense MLP even for MoE models; attention
over a static per-token KV window). It captures exactly the plan's target descriptors, in
vLLM's order (PIECEWISE then FULL, largest first) into one shared graph pool:
a FULL descriptor is one graph of the whole forward; a PIECEWISE descriptor is
num_layers + 1 graphs split at attention, with attention run eagerly between them, as
vLLM's piecewise backend does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cgplan.core.compare.measure import MeasuredCapture
from cgplan.core.model.spec import ModelShape
from cgplan.core.model.types import Plan
from cgplan.gpu.nvml import nvml_session
from cgplan.gpu.recorder import GraphRecorder, ProgressSink, hook_torch_graph_capture

KV_WINDOW_TOKENS = 64
"""Context each token attends to in the reference decoder (static, pre-filled)."""


def _build(shape: ModelShape, max_tokens: int) -> tuple[Any, Callable[[Any, int], Any], Callable[..., Any]]:
    import torch
    import torch.nn.functional as F

    dev = "cuda"
    dtype = {"float16": torch.float16, "float32": torch.float32}.get(shape.dtype, torch.bfloat16)
    h, nh, kvh, hd = shape.hidden_size, shape.num_attention_heads, shape.num_key_value_heads, shape.head_dim
    inter, layers, vocab = shape.intermediate_size, shape.num_hidden_layers, shape.vocab_size

    def w(*dims: int) -> Any:
        return (torch.randn(*dims, device=dev, dtype=dtype) * 0.02).contiguous()

    params = [
        {
            "ln1": torch.ones(h, device=dev, dtype=dtype),
            "ln2": torch.ones(h, device=dev, dtype=dtype),
            "qkv": w((nh + 2 * kvh) * hd, h),
            "o": w(h, nh * hd),
            "gu": w(2 * inter, h),
            "down": w(h, inter),
            "k": w(max_tokens, kvh, KV_WINDOW_TOKENS, hd),
            "v": w(max_tokens, kvh, KV_WINDOW_TOKENS, hd),
        }
        for _ in range(layers)
    ]
    emb, head, norm = w(vocab, h), w(vocab, h), torch.ones(h, device=dev, dtype=dtype)
    ids = torch.randint(0, vocab, (max_tokens,), device=dev)
    # Buffers crossing the piece boundaries (static, like vLLM's piecewise backend).
    resid = torch.zeros(max_tokens, h, device=dev, dtype=dtype)
    q_buf = torch.zeros(max_tokens, nh, hd, device=dev, dtype=dtype)
    k_buf = torch.zeros(max_tokens, kvh, hd, device=dev, dtype=dtype)
    v_buf = torch.zeros(max_tokens, kvh, hd, device=dev, dtype=dtype)
    attn_out = torch.zeros(max_tokens, nh * hd, device=dev, dtype=dtype)
    logits = torch.zeros(max_tokens, vocab, device=dev, dtype=dtype)

    def rms(x: Any, weight: Any) -> Any:
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * weight

    def pre(i: int, t: int) -> None:
        p = params[i]
        x = rms(resid[:t], p["ln1"])
        qkv = F.linear(x, p["qkv"])
        q, k, v = qkv.split([nh * hd, kvh * hd, kvh * hd], dim=-1)
        q_buf[:t].copy_(q.view(t, nh, hd))
        k_buf[:t].copy_(k.view(t, kvh, hd))
        v_buf[:t].copy_(v.view(t, kvh, hd))

    def attention(i: int, t: int) -> None:
        p = params[i]
        kc = torch.cat([p["k"][:t], k_buf[:t].unsqueeze(2)], dim=2)
        vc = torch.cat([p["v"][:t], v_buf[:t].unsqueeze(2)], dim=2)
        rep = nh // kvh
        kc = kc.repeat_interleave(rep, dim=1)
        vc = vc.repeat_interleave(rep, dim=1)
        out = F.scaled_dot_product_attention(q_buf[:t].unsqueeze(2), kc, vc)
        attn_out[:t].copy_(out.reshape(t, nh * hd))

    def post(i: int, t: int) -> None:
        p = params[i]
        x = resid[:t] + F.linear(attn_out[:t], p["o"])
        y = rms(x, p["ln2"])
        g, u = F.linear(y, p["gu"]).chunk(2, dim=-1)
        resid[:t].copy_(x + F.linear(F.silu(g) * u, p["down"]))

    def embed(t: int) -> None:
        resid[:t].copy_(F.embedding(ids[:t], emb))

    def final(t: int) -> None:
        logits[:t].copy_(F.linear(rms(resid[:t], norm), head))

    def pieces(t: int) -> list[Callable[[], None]]:
        """Piece j runs between attention j-1 and attention j (layers + 1 pieces)."""
        out: list[Callable[[], None]] = []
        for j in range(layers + 1):

            def piece(j: int = j) -> None:
                if j == 0:
                    embed(t)
                else:
                    post(j - 1, t)
                if j < layers:
                    pre(j, t)
                else:
                    final(t)

            out.append(piece)
        return out

    def forward(t: int) -> None:
        for j, piece in enumerate(pieces(t)):
            piece()
            if j < layers:
                attention(j, t)

    return forward, lambda _unused, t: pieces(t), attention


def capture_plan_torch(
    plan: Plan,
    shape: ModelShape,
    progress: ProgressSink,
    device_index: int = 0,
    recorder: GraphRecorder | None = None,
) -> tuple[MeasuredCapture, GraphRecorder]:
    """Capture the plan's target descriptors with the reference decoder; measure each."""
    import torch

    torch.cuda.set_device(device_index)
    torch.manual_seed(0)
    descriptors = [g for g in plan.graphs.get("target", ()) if g.mode in ("FULL", "PIECEWISE")]
    max_tokens = max((g.num_tokens for g in descriptors), default=1)
    with nvml_session([device_index]) as nvml:
        if recorder is None:
            recorder = GraphRecorder(nvml, progress)
            progress.start(len(descriptors))
        status, failure = "complete", None
        t_start = time.perf_counter()
        used0: int | None = None
        try:
            with torch.inference_mode():
                forward, pieces_of, attention = _build(shape, max_tokens)
                torch.cuda.synchronize()
                t_start = time.perf_counter()
                used0 = nvml.memory_used_bytes() if nvml else None
                pool = torch.cuda.graph_pool_handle()
                graphs: list[Any] = []
                side = torch.cuda.Stream()
                for g in descriptors:
                    recorder.begin("target", g.mode, g.num_tokens, g.num_reqs, g.query_len)
                    side.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(side):
                        forward(g.num_tokens)  # one warmup, as vLLM (cudagraph_num_of_warmups=1)
                    torch.cuda.current_stream().wait_stream(side)
                    torch.cuda.synchronize()
                    with hook_torch_graph_capture(recorder):
                        if g.mode == "FULL":
                            graph = torch.cuda.CUDAGraph()
                            with torch.cuda.graph(graph, pool=pool):
                                forward(g.num_tokens)
                            graphs.append(graph)
                        else:
                            for j, piece in enumerate(pieces_of(None, g.num_tokens)):
                                graph = torch.cuda.CUDAGraph()
                                with torch.cuda.graph(graph, pool=pool):
                                    piece()
                                graphs.append(graph)
                                if j < shape.num_hidden_layers:
                                    attention(j, g.num_tokens)
                    recorder.end()
        except torch.cuda.OutOfMemoryError as e:
            from cgplan.gpu.probe import short_reason

            status, failure = "partial", f"out of memory during capture: {short_reason(e)}"
        except KeyboardInterrupt:
            status, failure = "partial", "interrupted (SIGINT)"
        recorder.end()
        used1 = nvml.memory_used_bytes() if nvml else None
    measured = MeasuredCapture(
        backend="torch",
        status=status if recorder.measurements() or status == "complete" else "failed",
        failure=failure,
        model_runner=None,
        cudagraph_mode=plan.cudagraph_mode,
        capture_sizes=plan.capture_sizes,
        max_capture_size=plan.max_capture_size,
        graphs=recorder.measurements(),
        capture_wall_s=round(time.perf_counter() - t_start, 3),
        capture_nvml_delta_bytes=(used1 - used0) if used0 is not None and used1 is not None else None,
    )
    return measured, recorder
