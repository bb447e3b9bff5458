"""`vllm serve`'s scheduler defaults (EngineArgs `_set_default_max_num_seqs_and_batched_tokens_args`).

vLLM picks them from the device's memory and name under UsageContext.OPENAI_API_SERVER;
cgplan picks them from the platform family, which stands for its usual GPU (H200, B200, GB10,
A100-80GB, RTX PRO 6000, RTX 5090).
"""

from __future__ import annotations

from cgplan.core.model.modes import Platform
from cgplan.core.model.spec import PlanInput
from cgplan.core.model.types import Assumed
from cgplan.core.vllm.releases import VllmRules
from cgplan.core.vllm.resolve import LEVEL_DEFAULT_MODE, compilation, compile_off_cause


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

    >>> from cgplan.core.vllm.releases import rules_for
    >>> serve_defaults(Platform.HOPPER, rules_for("0.33.0"), max_model_len=4096,
    ...                max_num_seqs=None, max_num_batched_tokens=None, performance_mode=None)
    (1024, 8192)
    """
    # get_batch_defaults: >= 160 GiB the large tier; >= 70 GiB, not an A100 and (0.33+) not a GB10
    # (`is_gb10`: the memory but not the compute of a large GPU) the H100 tier; else the small one
    small = platform in (Platform.AMPERE, Platform.RTX_5090) or (
        platform is Platform.GB10 and rules.gb10_small_tier
    )
    if small:
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


def assumed_defaults(inp: PlanInput, rules: VllmRules, mode: str, runner: str) -> tuple[Assumed, ...]:
    """The values the plan assumed because the config left them unset, each with its origin."""
    out: list[Assumed] = []
    names = set(inp.defaulted)
    usual = _USUAL_GPU.get(inp.platform, inp.platform.value)
    if "vllm_version" in names:
        out.append(Assumed("vllm_version", inp.vllm_version, "cgplan's newest supported release"))
    if "platform" in names:
        out.append(Assumed("platform", inp.platform.value, "cgplan's default platform"))
    if "max_model_len" in names:
        out.append(
            Assumed(
                "max_model_len",
                str(inp.max_model_len),
                "the model's max_position_embeddings (vLLM's default)",
            )
        )
    if "max_num_seqs" in names:
        out.append(
            Assumed(
                "max_num_seqs",
                str(inp.max_num_seqs),
                f"vllm serve's default on {inp.platform.value} (as on {usual}; vLLM {rules.version} "
                "EngineArgs._set_default_max_num_seqs_and_batched_tokens_args)"
                + (
                    ", doubled by performance_mode throughput" if inp.performance_mode == "throughput" else ""
                ),
            )
        )
    if "max_num_batched_tokens" in names:
        out.append(
            Assumed(
                "max_num_batched_tokens",
                str(inp.max_num_batched_tokens),
                f"vllm serve's default on {inp.platform.value} (as on {usual}), at most "
                "max_num_seqs × max_model_len",
            )
        )
    if "cudagraph_mode" in names and not inp.enforce_eager:
        comp = compilation(inp, rules, [])
        level_mode = LEVEL_DEFAULT_MODE[inp.optimization_level].value
        if mode == level_mode:
            after = ""
        elif comp.mode != 3 and not comp.breakable and inp.optimization_level > 0:
            after = (
                f" {level_mode}, overridden because {compile_off_cause(inp)} compiles nothing (see the notes)"
            )
        else:
            after = " (after the attention backend's downgrade)"
        out.append(
            Assumed(
                "cudagraph_mode",
                mode,
                f"the -O{inp.optimization_level} default of vLLM {rules.version}{after}",
            )
        )
    if inp.model_runner == "auto":
        out.append(
            Assumed("model_runner", runner, f"vLLM {rules.version}'s choice (VLLM_USE_V2_MODEL_RUNNER unset)")
        )
    return tuple(out)


_USUAL_GPU = {
    Platform.HOPPER: "an H200",
    Platform.BLACKWELL: "a B200",
    Platform.AMPERE: "an A100-80GB",
    Platform.RTX_BLACKWELL: "an RTX PRO 6000",
    Platform.RTX_5090: "an RTX 5090",
    Platform.GB10: "a GB10 (DGX Spark)",
}
