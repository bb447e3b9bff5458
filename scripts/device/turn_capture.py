"""`python3 -m cgplan ...` whose engine starts its GPU work only on this process's turn (issue 16).

usage (from moe_suite.py): CGPLAN_TURN_DIR=DIR CGPLAN_TURN=I python3 scripts/device/turn_capture.py \
    capture --gpu CONFIG --backend vllm -o REPORT

Several of these run at once on the one GPU so that their imports, config checks and model
inspection (30-50 s of CPU each) overlap, while everything that touches GPU memory stays
serial: vLLM's `Worker.init_device` (the CUDA context, then weights, compile, profile run, KV
cache, capture, warmups) waits until the suite creates DIR/go.I; the suite gives the next turn
only after this process has exited, so NVML's device-wide figures (the capture-phase memory the
cost model is fitted on) see one engine at a time. DIR/ready.I tells the suite it is waiting.
Without CGPLAN_TURN_DIR it is plain `python3 -m cgplan`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def wait_for_turn() -> None:
    """Announce this process as ready and block until the suite gives it the GPU."""
    d, me = os.environ.get("CGPLAN_TURN_DIR"), os.environ.get("CGPLAN_TURN")
    if not d or me is None:
        return
    open(os.path.join(d, f"ready.{me}"), "w").close()
    go = os.path.join(d, f"go.{me}")
    while not os.path.exists(go):
        time.sleep(0.05)


def install() -> None:
    """Wrap cgplan's capture hooks so that vLLM's worker waits for its turn before init_device."""
    import cgplan.gpu.vllm_backend as vb

    orig_instrument = vb.instrument

    @contextmanager
    def instrument(*a: Any, **k: Any) -> Iterator[None]:
        from vllm.v1.worker import gpu_worker

        orig = gpu_worker.Worker.init_device

        def init_device(self: Any, *aa: Any, **kk: Any) -> Any:
            wait_for_turn()
            return orig(self, *aa, **kk)

        gpu_worker.Worker.init_device = init_device  # type: ignore[method-assign]
        try:
            with orig_instrument(*a, **k):
                yield
        finally:
            gpu_worker.Worker.init_device = orig  # type: ignore[method-assign]

    vb.instrument = instrument  # type: ignore[assignment]


if __name__ == "__main__":
    install()
    from cgplan.cli import main

    sys.argv[0] = "cgplan"
    main()
