"""The only module that imports pynvml (from nvidia-ml-py). "Not available" is None, not an exception."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

NVML_HINT = (
    "HINT: install the NVIDIA driver and `pip install nvidia-ml-py` (the `pynvml` module), "
    "and run where the GPU is visible (nvidia-smi works)"
)


@dataclass(frozen=True)
class NvmlSession:
    """An initialised NVML with handles for the GPUs a capture uses."""

    handles: tuple[Any, ...]
    driver_version: str | None

    def memory_used_bytes(self) -> int | None:
        """NVML used memory summed over the session's GPUs (None if a query fails)."""
        import pynvml

        total = 0
        try:
            for h in self.handles:
                total += int(pynvml.nvmlDeviceGetMemoryInfo(h).used)
        except pynvml.NVMLError:
            return None
        return total

    def memory_used_bytes_per_gpu(self) -> list[int | None]:
        """Used memory of each GPU of the session."""
        import pynvml

        def used(handle: Any) -> int | None:
            try:
                return int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
            except pynvml.NVMLError:
                return None

        return [used(h) for h in self.handles]

    def names(self) -> list[str]:
        """GPU product names."""
        import pynvml

        out = []
        for h in self.handles:
            name = pynvml.nvmlDeviceGetName(h)
            out.append(name.decode() if isinstance(name, bytes) else str(name))
        return out

    def indices(self) -> list[int | None]:
        """NVML's index of each GPU of the session (None where the query fails)."""
        import pynvml

        def index(handle: Any) -> int | None:
            try:
                return int(pynvml.nvmlDeviceGetIndex(handle))
            except pynvml.NVMLError:
                return None

        return [index(h) for h in self.handles]


def nvml_unavailable_reason() -> str | None:
    """Why NVML cannot be used here, or None when it can."""
    try:
        import pynvml
    except ImportError:
        return f"pynvml is not installed. {NVML_HINT}"
    try:
        pynvml.nvmlInit()
    except Exception as e:  # pynvml.NVMLError and driver-library load failures
        return f"NVML cannot start ({e}). {NVML_HINT}"
    try:
        if pynvml.nvmlDeviceGetCount() == 0:
            return "NVML sees no GPU"
    finally:
        pynvml.nvmlShutdown()
    return None


def driver_version() -> str | None:
    """The NVIDIA driver's version as NVML reports it, or None (no pynvml, no driver)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # ImportError, pynvml.NVMLError and driver-library load failures
        return None
    drv: object = None
    with suppress(Exception):
        drv = pynvml.nvmlSystemGetDriverVersion()
    with suppress(Exception):
        pynvml.nvmlShutdown()
    if drv is None:
        return None
    return drv.decode() if isinstance(drv, bytes) else str(drv)


def _visible_device(index: int, visible: str | None) -> int | str:
    """NVML's name for CUDA device `index`: NVML numbers every GPU of the host and ignores
    CUDA_VISIBLE_DEVICES, so CUDA device 0 under CUDA_VISIBLE_DEVICES=1 is NVML device 1.
    Returns an NVML index or a UUID (when the variable lists UUIDs)."""
    if not visible or not visible.strip():
        return index
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if index >= len(entries):
        return index
    entry = entries[index]
    if entry.isdigit():
        return int(entry)
    return entry if entry.startswith(("GPU-", "MIG-")) else index


@contextmanager
def nvml_session(device_indices: Sequence[int]) -> Iterator[NvmlSession | None]:
    """Initialise NVML for the CUDA devices `device_indices` (as the CUDA runtime numbers them);
    yields None (and never raises) when NVML is unavailable."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        yield None
        return
    try:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        names = [_visible_device(i, visible) for i in device_indices]
        handles = tuple(
            pynvml.nvmlDeviceGetHandleByUUID(n)
            if isinstance(n, str)
            else pynvml.nvmlDeviceGetHandleByIndex(n)
            for n in names
        )
        try:
            drv = pynvml.nvmlSystemGetDriverVersion()
            driver = drv.decode() if isinstance(drv, bytes) else str(drv)
        except pynvml.NVMLError:
            driver = None
        yield NvmlSession(handles, driver)
    finally:
        with suppress(Exception):
            pynvml.nvmlShutdown()


def host_gpu_names_and_driver() -> tuple[list[str], str | None]:
    """Every GPU's product name as NVML numbers them, and the driver version; ([], None) when
    NVML is unavailable. Starts no CUDA context (a scheduler asks this before its children run)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return [], None
    try:
        names = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
            names.append(name.decode() if isinstance(name, bytes) else str(name))
        drv = pynvml.nvmlSystemGetDriverVersion()
        return names, drv.decode() if isinstance(drv, bytes) else str(drv)
    except Exception:
        return [], None
    finally:
        with suppress(Exception):
            pynvml.nvmlShutdown()
