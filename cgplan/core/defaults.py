"""`vllm serve`'s scheduler defaults (EngineArgs `_set_default_max_num_seqs_and_batched_tokens_args`).

vLLM picks them from the device's memory and name under UsageContext.OPENAI_API_SERVER;
cgplan picks them from the platform family, which stands for its usual GPU (H200, B200,
A100-80GB, RTX PRO 6000).
"""

from __future__ import annotations

from cgplan.core.modes import Platform
from cgplan.core.rules import VllmRules


def serve_defaults(
    platform: Platform,
    rules: VllmRules,
    *,
    max_model_len: int,
    max_num_seqs: int | None,
    max_num_batched_tokens: int | None,
    performance_mode: str | None,
) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) after vLLM fills what the user left unset.

    >>> from cgplan.core.rules import rules_for
    >>> serve_defaults(Platform.HOPPER, rules_for("0.33.0"), max_model_len=4096,
    ...                max_num_seqs=None, max_num_batched_tokens=None, performance_mode=None)
    (1024, 8192)
    """
    if platform is Platform.AMPERE:
        default_b, default_s = 2048, 256
    elif platform is Platform.BLACKWELL:
        default_b, default_s = rules.serve_b200_batched_tokens, 1024
    else:
        default_b, default_s = 8192, 1024
    if performance_mode == "throughput":
        default_b, default_s = default_b * 2, default_s * 2
    s = max_num_seqs if max_num_seqs is not None else default_s
    b = max_num_batched_tokens
    if b is None:
        # Chunked prefill is on for decoder models, so B is only capped by S × max_model_len.
        b = min(s * max_model_len, default_b)
    if max_num_seqs is None:
        s = min(s, b)
    return s, b
