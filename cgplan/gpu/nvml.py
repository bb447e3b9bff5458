"""The only module that imports pynvml (from nvidia-ml-py). "Not available" is None, not an exception."""

from __future__ import annotations

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


@contextmanager
def nvml_session(device_indices: Sequence[int]) -> Iterator[NvmlSession | None]:
    """Initialise NVML for `device_indices`; yields None (and never raises) when NVML is unavailable."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        yield None
        return
    try:
        handles = tuple(pynvml.nvmlDeviceGetHandleByIndex(i) for i in device_indices)
        try:
            drv = pynvml.nvmlSystemGetDriverVersion()
            driver = drv.decode() if isinstance(drv, bytes) else str(drv)
        except pynvml.NVMLError:
            driver = None
        yield NvmlSession(handles, driver)
    finally:
        with suppress(Exception):
            pynvml.nvmlShutdown()
