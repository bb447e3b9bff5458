"""What `cgplan env --json` prints: the probe as JSON."""

from __future__ import annotations

from typing import Any

from cgplan.core.model.env import EnvProbe


def env_to_dict(e: EnvProbe) -> dict[str, Any]:
    """The probe as JSON: `torch` and `cuda` only when torch imports, `vllm` only when vLLM does."""
    doc: dict[str, Any] = {
        "cgplan": e.cgplan,
        "python": e.python,
        "vllm_rules": list(e.vllm_rules),
        "missing": dict(e.missing),
        "driver": e.driver,
        "gpus": [
            {
                "index": g.index,
                "name": g.name,
                "capability": list(g.capability),
                "total_memory_bytes": g.total_memory_bytes,
            }
            for g in e.gpus
        ],
    }
    if e.torch is not None:
        doc["torch"], doc["cuda"] = e.torch, e.cuda
    if e.vllm is not None:
        doc["vllm"] = e.vllm
    return doc
