"""`cgplan env` as text: one line per component, then what is missing and why."""

from __future__ import annotations

from cgplan.core.model.env import EnvProbe


def env_text(e: EnvProbe) -> str:
    """The probe as the lines `cgplan env` prints."""
    lines = [
        f"cgplan {e.cgplan} · Python {e.python} · vLLM rules {', '.join(e.vllm_rules)}",
        f"torch: {e.torch or 'not installed'} (CUDA {e.cuda or '-'})",
        f"vLLM: {e.vllm or 'not installed'}",
        f"NVIDIA driver: {e.driver or '-'}",
    ]
    lines += [
        f"GPU {g.index}: {g.name} (sm{g.capability[0]}{g.capability[1]}, "
        f"{g.total_memory_bytes / (1 << 30):.0f} GiB)"
        for g in e.gpus
    ] or ["GPUs: none visible"]
    lines += [f"missing {k}: {v}" for k, v in e.missing]
    lines.append("can plan: yes · can capture: " + ("yes" if e.can_capture else "no"))
    return "\n".join(lines) + "\n"
