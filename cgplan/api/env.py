"""`cgplan env` as a library: what this machine can capture with (the probe is gpu/probe.py)."""

from __future__ import annotations

from cgplan.core.model.env import EnvProbe


def environment() -> EnvProbe:
    """Versions of Python, torch, vLLM and CUDA, the driver, the GPUs, and why anything capture
    needs is missing (torch and vLLM are imported here, lazily, through gpu/probe.py)."""
    from cgplan.gpu.probe import probe

    return probe()
