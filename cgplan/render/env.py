"""`cgplan env` as text: one line per component, then what is missing and why."""

from __future__ import annotations

from typing import Any


def env_text(info: dict[str, Any]) -> str:
    """The `gpu.probe.probe()` document as the lines `cgplan env` prints."""
    lines = [
        f"cgplan {info['cgplan']} · Python {info['python']} · vLLM rules {', '.join(info['vllm_rules'])}",
        f"torch: {info.get('torch') or 'not installed'} (CUDA {info.get('cuda') or '-'})",
        f"vLLM: {info.get('vllm') or 'not installed'}",
        f"NVIDIA driver: {info.get('driver') or '-'}",
    ]
    lines += [
        f"GPU {g['index']}: {g['name']} (sm{g['capability'][0]}{g['capability'][1]}, "
        f"{g['total_memory_bytes'] / (1 << 30):.0f} GiB)"
        for g in info["gpus"]
    ] or ["GPUs: none visible"]
    lines += [f"missing {k}: {v}" for k, v in info["missing"].items()]
    lines.append(
        "can plan: yes · can capture: "
        + ("yes" if not ({"torch", "gpu", "nvml"} & set(info["missing"])) else "no")
    )
    return "\n".join(lines) + "\n"
