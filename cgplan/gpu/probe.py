"""What this machine can capture with: `cgplan env`'s probe, the reason capture cannot run here,
the backend `auto` picks, and the short form of a GPU failure.

torch and vLLM are imported inside the functions only (cgplan/gpu/ is their only importer)."""

from __future__ import annotations

import platform

from cgplan import __version__
from cgplan.core.model.env import EnvProbe, GpuInfo


def probe() -> EnvProbe:
    """What this machine has for capturing: versions of Python, torch, vLLM and CUDA, the driver,
    the GPUs, and for each missing piece why (what `cgplan env` shows)."""
    from cgplan.core.vllm.releases import SUPPORTED_VERSIONS
    from cgplan.gpu.environment import collect_environment

    missing: dict[str, str] = {}
    torch_version = cuda = vllm_version = None
    try:
        import torch

        torch_version, cuda = str(torch.__version__), torch.version.cuda
        if not torch.cuda.is_available():
            missing["gpu"] = "torch sees no CUDA GPU (CUDA_VISIBLE_DEVICES, driver, or a CPU build of torch)"
    except ImportError:
        missing["torch"] = (
            "not installed: pip install 'cgplan[gpu]' (plan, diff, sweep and gate need no torch)"
        )
    try:
        import vllm

        vllm_version = str(getattr(vllm, "__version__", "unknown"))
        if vllm_version not in SUPPORTED_VERSIONS:
            missing["vllm_rules"] = (
                f"vLLM {vllm_version} is installed; cgplan has rules for {', '.join(SUPPORTED_VERSIONS)}"
            )
    except ImportError:
        missing["vllm"] = "not installed: capture can use --backend torch; plan needs no vLLM"
    except Exception as e:  # a broken vLLM install should not break `cgplan env`
        missing["vllm"] = f"import failed: {type(e).__name__}: {e}"
    from cgplan.gpu.nvml import nvml_unavailable_reason

    reason = nvml_unavailable_reason()
    if reason:
        missing["nvml"] = reason
    env = collect_environment()
    gpus = tuple(
        GpuInfo(g["index"], g["name"], (g["capability"][0], g["capability"][1]), g["total_memory_bytes"])
        for g in env.get("gpus", [])
    )
    return EnvProbe(
        cgplan=__version__,
        python=platform.python_version(),
        vllm_rules=tuple(SUPPORTED_VERSIONS),
        torch=torch_version,
        cuda=cuda,
        vllm=vllm_version,
        driver=env.get("driver"),
        gpus=gpus,
        missing=tuple(missing.items()),
    )


def short_reason(e: BaseException) -> str:
    """The first sentence of an exception (PyTorch's OOM text runs to a paragraph)."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    for cut in (". GPU ", ". Including", ". Of the allocated"):
        if cut in text:
            text = text.split(cut)[0] + "."
    return text[:300]


def gpu_unavailable_reason() -> str | None:
    """Why this machine cannot capture, or None."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed (pip install 'cgplan[gpu]')"
    if not torch.cuda.is_available():
        return "no CUDA GPU is visible to PyTorch (check nvidia-smi and CUDA_VISIBLE_DEVICES)"
    from cgplan.gpu.nvml import nvml_unavailable_reason

    return nvml_unavailable_reason()


def choose_backend(requested: str) -> str:
    """`auto` → vllm when importable, else torch."""
    if requested != "auto":
        return requested
    try:
        import vllm  # noqa: F401
    except ImportError:
        return "torch"
    return "vllm"
