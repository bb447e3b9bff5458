"""`cgplan env`: what cgplan can see on this machine (Python, torch, vLLM, CUDA, NVML, GPUs)."""

from __future__ import annotations

import json
import platform
from typing import Annotated, Any

import typer

from cgplan import __version__
from cgplan.cli._options import FormatOpt, NoColorOpt


def _probe() -> dict[str, Any]:
    from cgplan.core.rules import SUPPORTED_VERSIONS
    from cgplan.gpu.environment import collect_environment

    info: dict[str, Any] = {
        "cgplan": __version__,
        "python": platform.python_version(),
        "vllm_rules": list(SUPPORTED_VERSIONS),
        "missing": {},
    }
    try:
        import torch

        info["torch"] = torch.__version__
        info["cuda"] = torch.version.cuda
        if not torch.cuda.is_available():
            info["missing"]["gpu"] = (
                "torch sees no CUDA GPU (CUDA_VISIBLE_DEVICES, driver, or a CPU build of torch)"
            )
    except ImportError:
        info["missing"]["torch"] = (
            "not installed: pip install 'cgplan[gpu]' (plan, diff, sweep and gate need no torch)"
        )
    try:
        import vllm

        info["vllm"] = getattr(vllm, "__version__", "unknown")
        if info["vllm"] not in SUPPORTED_VERSIONS:
            info["missing"]["vllm_rules"] = (
                f"vLLM {info['vllm']} is installed; cgplan has rules for {', '.join(SUPPORTED_VERSIONS)}"
            )
    except ImportError:
        info["missing"]["vllm"] = "not installed: capture can use --backend torch; plan needs no vLLM"
    except Exception as e:  # a broken vLLM install should not break `cgplan env`
        info["missing"]["vllm"] = f"import failed: {type(e).__name__}: {e}"
    from cgplan.gpu.nvml import nvml_unavailable_reason

    reason = nvml_unavailable_reason()
    if reason:
        info["missing"]["nvml"] = reason
    env = collect_environment()
    info["driver"] = env.get("driver")
    info["gpus"] = env.get("gpus", [])
    return info


def env(
    fmt: FormatOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON; = --format json.")] = False,
    no_color: NoColorOpt = False,
) -> None:
    """Show what cgplan can see: Python, torch, vLLM, CUDA, NVML and GPUs, and why anything is missing."""
    from cgplan.cli._console import colorize, output_format, use_color
    from cgplan.io.output import write_stdout

    chosen = output_format(fmt, ("table", "json"), json_flag=json_out)
    info = _probe()
    if chosen == "json":
        write_stdout(json.dumps(info, indent=2, sort_keys=True) + "\n")
        return
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
    write_stdout(colorize("\n".join(lines) + "\n", use_color(no_color)))
