"""What a machine can capture with, as `cgplan env` reports it (the probe is `cgplan.gpu.probe`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuInfo:
    """One GPU torch sees."""

    index: int
    name: str
    capability: tuple[int, int]
    """(major, minor) SM version."""
    total_memory_bytes: int


@dataclass(frozen=True)
class EnvProbe:
    """Versions, GPUs and, for each piece capture needs that is missing, why."""

    cgplan: str
    python: str
    vllm_rules: tuple[str, ...]
    """The releases cgplan has rules for."""
    torch: str | None
    """None: torch is not installed (then `cuda` is not known either)."""
    cuda: str | None
    """The CUDA version torch was built with (None: a CPU build)."""
    vllm: str | None
    """None: vLLM is not installed or failed to import (see `missing`)."""
    driver: str | None
    gpus: tuple[GpuInfo, ...]
    missing: tuple[tuple[str, str], ...]
    """(what, why) in the order found: torch, gpu, vllm, vllm_rules, nvml."""

    @property
    def can_capture(self) -> bool:
        """torch, a GPU and NVML are there (vLLM is optional: `--backend torch`)."""
        return not ({"torch", "gpu", "nvml"} & {k for k, _ in self.missing})
