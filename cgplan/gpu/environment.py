"""What this machine can capture with: GPUs, driver, CUDA, torch, vLLM."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
from typing import Any

from cgplan import __version__
from cgplan.gpu.nvml import driver_version


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def collect_environment(device_indices: list[int] | None = None) -> dict[str, Any]:
    """GPU names, driver, CUDA, torch and vLLM versions (None where unknown)."""
    env: dict[str, Any] = {
        "cgplan": __version__,
        "python": platform.python_version(),
        "platform": sys.platform,
        "torch": _dist_version("torch"),
        "vllm": _dist_version("vllm"),
        "nvidia_ml_py": _dist_version("nvidia-ml-py"),
        "cuda": None,
        "gpus": [],
        "driver": None,
        # Which of the host's GPUs this process was given (a multi-config run pins each child).
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    try:
        import torch

        env["cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            idx = device_indices if device_indices is not None else list(range(torch.cuda.device_count()))
            env["gpus"] = [
                {
                    "index": i,
                    "name": torch.cuda.get_device_name(i),
                    "capability": list(torch.cuda.get_device_capability(i)),
                    "total_memory_bytes": torch.cuda.get_device_properties(i).total_memory,
                }
                for i in idx
            ]
    except ImportError:
        pass
    try:
        import vllm

        env["vllm"] = getattr(vllm, "__version__", env["vllm"])
    except Exception:
        pass
    env["driver"] = driver_version()  # through gpu/nvml.py, the one pynvml importer
    return env
