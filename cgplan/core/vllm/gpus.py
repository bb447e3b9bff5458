"""GPUs by name: their SM version and memory, and the platform family whose rules they follow.

Only read when a platform is given as a GPU name (`--platform L40S`), so `plan` with a family name
does not build the table.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgplan.core.model.modes import Platform

# GPU product names people type, mapped to the family whose rules apply. What vLLM reads from the
# device for capture is its compute capability (attention backend, FA2/FA3/FA4, SP thresholds, the
# SM10x ceiling: all by major version, vllm/platforms/cuda.py `_get_backend_priorities`) and, for the
# serve defaults, its memory and name (vllm/engine/arg_utils.py `get_batch_defaults`: >= 160 GiB the
# large tier, >= 70 GiB and not an A100 the H100 tier, else 2048 tokens / 256 requests). A family
# stands for one (major, memory tier); a GPU maps to it only where both are the same.


@dataclass(frozen=True)
class Gpu:
    """A GPU by name: its SM version and memory, and the family whose rules it follows (or why none)."""

    name: str
    capability: tuple[int, int]
    memory_gib: int
    platform: Platform | None
    refusal: str | None = None


GPUS: tuple[Gpu, ...] = (
    Gpu("H100", (9, 0), 80, Platform.HOPPER),
    Gpu("H100 NVL", (9, 0), 94, Platform.HOPPER),
    Gpu("H200", (9, 0), 141, Platform.HOPPER),
    Gpu("H800", (9, 0), 80, Platform.HOPPER),
    Gpu("H20", (9, 0), 96, Platform.HOPPER),
    Gpu("GH200", (9, 0), 96, Platform.HOPPER),
    Gpu("B200", (10, 0), 180, Platform.BLACKWELL),
    Gpu("B300", (10, 3), 288, Platform.BLACKWELL),
    Gpu("GB200", (10, 0), 186, Platform.BLACKWELL),
    Gpu("GB300", (10, 3), 288, Platform.BLACKWELL),
    Gpu("A100", (8, 0), 80, Platform.AMPERE),
    Gpu("A30", (8, 0), 24, Platform.AMPERE),
    # SM86/SM89: the same major version as A100 (FA2, the same backend list) and the same small
    # tier; vLLM's SM89-only paths are FP8 kernels, which do not change what is captured.
    Gpu("A10G", (8, 6), 24, Platform.AMPERE),
    Gpu("A10", (8, 6), 24, Platform.AMPERE),
    Gpu("A40", (8, 6), 48, Platform.AMPERE),
    Gpu("RTX A6000", (8, 6), 48, Platform.AMPERE),
    Gpu("L4", (8, 9), 24, Platform.AMPERE),
    Gpu("L40", (8, 9), 48, Platform.AMPERE),
    Gpu("L40S", (8, 9), 48, Platform.AMPERE),
    Gpu("RTX 6000 Ada", (8, 9), 48, Platform.AMPERE),
    Gpu("RTX 4090", (8, 9), 24, Platform.AMPERE),
    Gpu("RTX PRO 6000", (12, 0), 96, Platform.RTX_BLACKWELL),
    Gpu(
        "A800",
        (8, 0),
        80,
        None,
        "the 80 GB A800 gets vLLM's H100-tier serve defaults (its name is not an A100's) and the "
        "40 GB one the small tier; no family models SM80 with the H100 tier: use --platform ampere "
        "with max_num_seqs and max_num_batched_tokens set",
    ),
    Gpu("RTX 5090", (12, 0), 32, Platform.RTX_5090),
    Gpu("RTX 5080", (12, 0), 16, Platform.RTX_5090),
    Gpu("GB10", (12, 1), 128, Platform.GB10),
    Gpu("DGX Spark", (12, 1), 128, Platform.GB10),
    Gpu("T4", (7, 5), 16, None, "SM75: no FlashAttention 2; not modelled"),
    Gpu("V100", (7, 0), 32, None, "SM70: no FlashAttention 2; not modelled"),
)

PLATFORM_ALIASES: dict[str, Platform] = {
    "sm90": Platform.HOPPER,
    "sm100": Platform.BLACKWELL,
    "sm80": Platform.AMPERE,
    "sm120": Platform.RTX_BLACKWELL,
    "sm121": Platform.GB10,
}


_GPU_KEYS = sorted(
    (("".join(c for c in g.name.lower() if c.isalnum()), g) for g in GPUS), key=lambda kv: -len(kv[0])
)


def find_gpu(text: str) -> Gpu | None:
    """The GPU `text` names, as people and nvidia-smi write it ('H100 80GB HBM3', 'NVIDIA L40S',
    'A100-SXM4-80GB', 'RTX PRO 6000 Blackwell Server Edition'); the longest known name that starts
    it and is not followed by a digit wins ('H20' is not 'H200', 'L4' is not 'L40S').

    >>> find_gpu("NVIDIA L40S").name, find_gpu("h20").name, find_gpu("H200 141GB").name
    ('L40S', 'H20', 'H200')
    >>> find_gpu("A100-SXM4-80GB").platform, find_gpu("tpu") is None
    (<Platform.AMPERE: 'ampere'>, True)
    """
    words = "".join(c if c.isalnum() else " " for c in text.lower()).split()
    while words and words[0] in ("nvidia", "geforce", "tesla"):
        words = words[1:]
    spelled = " ".join(words)
    key = spelled.replace(" ", "")
    for name, gpu in _GPU_KEYS:
        if not key.startswith(name):
            continue
        # the character after the name in `spelled`: a separator, a letter or the end, not a digit
        seen, i = 0, 0
        while seen < len(name):
            seen += spelled[i] != " "
            i += 1
        if not spelled[i : i + 1].isdigit():
            return gpu
    return None
