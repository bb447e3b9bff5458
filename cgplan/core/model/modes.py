"""CUDA-graph modes and attention support levels, with vLLM's member names and semantics.

Mirrors `CUDAGraphMode` (vllm/config/compilation.py) and `AttentionCGSupport`
(vllm/v1/attention/backend.py). A mode is a pair (decode mode, mixed mode); the
three runtime modes NONE / PIECEWISE / FULL are pairs of equal halves.
"""

from __future__ import annotations

from enum import Enum, IntEnum


class Mode(str, Enum):
    """vLLM's `CUDAGraphMode`, by name.

    >>> Mode.FULL_AND_PIECEWISE.decode_mode(), Mode.FULL_AND_PIECEWISE.mixed_mode()
    (<Mode.FULL: 'FULL'>, <Mode.PIECEWISE: 'PIECEWISE'>)
    """

    NONE = "NONE"
    PIECEWISE = "PIECEWISE"
    FULL = "FULL"
    FULL_DECODE_ONLY = "FULL_DECODE_ONLY"
    FULL_AND_PIECEWISE = "FULL_AND_PIECEWISE"

    def decode_mode(self) -> Mode:
        """Runtime mode used for uniform-decode batches."""
        return _HALVES[self][0]

    def mixed_mode(self) -> Mode:
        """Runtime mode used for every other batch."""
        return _HALVES[self][1]

    def separate_routine(self) -> bool:
        """True for the pair modes that treat uniform decode separately."""
        return self in (Mode.FULL_DECODE_ONLY, Mode.FULL_AND_PIECEWISE)

    def has_full(self) -> bool:
        """True when any FULL graph may be captured."""
        return Mode.FULL in _HALVES[self]

    def has_piecewise(self) -> bool:
        """True when any PIECEWISE graph may be captured."""
        return Mode.PIECEWISE in _HALVES[self]

    def without_piecewise(self) -> Mode:
        """vLLM 0.30+'s `without_piecewise()`: PIECEWISE → NONE, F&P → FULL_DECODE_ONLY."""
        return {Mode.PIECEWISE: Mode.NONE, Mode.FULL_AND_PIECEWISE: Mode.FULL_DECODE_ONLY}.get(self, self)


_HALVES: dict[Mode, tuple[Mode, Mode]] = {
    Mode.NONE: (Mode.NONE, Mode.NONE),
    Mode.PIECEWISE: (Mode.PIECEWISE, Mode.PIECEWISE),
    Mode.FULL: (Mode.FULL, Mode.FULL),
    Mode.FULL_DECODE_ONLY: (Mode.FULL, Mode.NONE),
    Mode.FULL_AND_PIECEWISE: (Mode.FULL, Mode.PIECEWISE),
}


class CGSupport(IntEnum):
    """vLLM's `AttentionCGSupport`: how much of a batch an attention backend can graph."""

    NEVER = 0
    UNIFORM_SINGLE_TOKEN_DECODE = 1
    UNIFORM_BATCH = 2
    ALWAYS = 3


class Platform(str, Enum):
    """GPU families whose capture rules differ."""

    HOPPER = "hopper"
    BLACKWELL = "blackwell"
    AMPERE = "ampere"
    RTX_BLACKWELL = "rtx-blackwell"
    RTX_5090 = "rtx-5090"
    """Consumer SM120 (RTX 5090, 32 GiB): vLLM's small-GPU serve defaults."""
    GB10 = "gb10"
    """SM121 (DGX Spark, 128 GiB unified): the H100 serve tier until vLLM 0.33 keeps it small."""

    @property
    def compute_capability(self) -> tuple[int, int]:
        """The (major, minor) SM version vLLM reads from the device."""
        return _CAPABILITY[self]

    @property
    def is_sm100_family(self) -> bool:
        """vLLM's `is_device_capability_family(100)`: B200/B300, not SM12x."""
        return self.compute_capability[0] == 10


_CAPABILITY: dict[Platform, tuple[int, int]] = {
    Platform.HOPPER: (9, 0),
    Platform.BLACKWELL: (10, 0),
    Platform.AMPERE: (8, 0),
    Platform.RTX_BLACKWELL: (12, 0),
    Platform.RTX_5090: (12, 0),
    Platform.GB10: (12, 1),
}


# The families by the names of the GPUs their shipped data was measured on (the cost model's
# coefficients say "H200"); the full GPU table, with SM versions and refusals, is core/vllm/gpus.py.
GPU_NAME_TO_PLATFORM: dict[str, Platform] = {
    "h100": Platform.HOPPER,
    "h200": Platform.HOPPER,
    "h800": Platform.HOPPER,
    "h20": Platform.HOPPER,
    "gh200": Platform.HOPPER,
    "b200": Platform.BLACKWELL,
    "b300": Platform.BLACKWELL,
    "gb200": Platform.BLACKWELL,
    "gb300": Platform.BLACKWELL,
    "a100": Platform.AMPERE,
}
