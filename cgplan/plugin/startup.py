"""The start-up block: the engine's captured set and dispatcher held against cgplan's plan of the
engine's own config, its gaps with the fix, and the graph pool measured, as lines."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from cgplan import __version__
from cgplan.core.compare.measure import Comparison, MeasuredCapture, compare
from cgplan.core.logs.plugin import MARK, STARTUP_TAG
from cgplan.core.model.types import DispatchRange, Plan
from cgplan.errors import CgplanError
from cgplan.gpu.vllm_plugin import MemoryWindow, engine_doc, measured_capture
from cgplan.render.summary import gap_groups, gap_title, padding_line

REPORT_URL = "https://github.com/cgplan/cgplan/issues"
SOURCE = "the engine's resolved config"
_MIB = 1 << 20


def _sizes_text(sizes: list[int]) -> str:
    return f"{min(sizes)}..{max(sizes)}" if sizes else "none"


def captured_line(measured: MeasuredCapture) -> str:
    parts = []
    for mode in ("PIECEWISE", "FULL"):
        sizes = [g.num_tokens for g in measured.graphs if g.mode == mode]
        parts.append(f"{mode} {len(sizes)}" + (f" ({_sizes_text(sizes)} tokens)" if sizes else ""))
    return f"captured (target model): {', '.join(parts)}"


def _eager_runs(ranges: tuple[DispatchRange, ...]) -> list[tuple[int, int]]:
    return [(r.first, r.last) for r in ranges if r.mode == "NONE"]


def measured_gap_lines(measured: MeasuredCapture) -> list[str]:
    """The engine's own dispatcher's eager runs (what runs without a graph), by name."""
    lines = [
        f"engine: uniform decode, requests {_span(a, b)} × {ql} tokens → EAGER ({b - a + 1} request counts)"
        for ql, ranges in sorted(measured.uniform_decode.items())
        for a, b in _eager_runs(ranges)
    ]
    lines += [
        f"engine: mixed steps of {_span(a, b)} tokens → EAGER ({b - a + 1} token counts probed)"
        for a, b in _eager_runs(measured.mixed)
    ]
    return lines


def _span(a: int, b: int) -> str:
    return f"{a}" if a == b else f"{a}-{b}"


def difference_lines(c: Comparison) -> list[str]:
    lines = []
    for d in c.graphs:
        for graphs, what in ((d.missing, "planned, not captured"), (d.unexpected, "captured, not planned")):
            lines += [
                f"{d.family} {g.mode} {g.num_tokens} tokens (reqs {g.num_reqs}): {what}" for g in graphs
            ]
    lines += [
        f"{x.family} {x.first}-{x.last} {'tokens' if x.family == 'mixed' else 'requests'}"
        f"{f' × {x.query_len}' if x.query_len is not None else ''}: engine {x.measured}, "
        f"cgplan planned {x.predicted}"
        for x in c.dispatch
    ]
    return lines


def plan_engine(doc: dict[str, Any], vllm_config: Any) -> Plan:
    """cgplan's plan of the document (a hub model: its config.json as vLLM loaded it, written to a
    temporary folder for the config reader).

    Raises:
        CgplanError: the config cannot be planned (named by the message).
    """
    from cgplan.api.plan import plan_doc

    model = Path(str(doc["model"]))
    if (model / "config.json").is_file():
        return plan_doc(doc, SOURCE)[1]
    hf = getattr(vllm_config.model_config, "hf_config", None)
    if hf is None or not hasattr(hf, "to_dict"):
        raise CgplanError(f"the model {doc['model']!r} is no local folder with a config.json")
    with tempfile.TemporaryDirectory(prefix="cgplan-plugin-") as tmp:
        (Path(tmp) / "config.json").write_text(json.dumps(hf.to_dict(), default=str))
        doc = {**doc, "cgplan": {**doc["cgplan"], "model_config": tmp}}
        return plan_doc(doc, SOURCE)[1]


def startup_lines(
    runner: Any, vllm_config: Any, window: MemoryWindow | None, platform: str | None, counting: str
) -> list[str]:
    """The block's lines (without the mark)."""
    measured = measured_capture(runner, vllm_config)
    cc = vllm_config.compilation_config
    sizes = [int(s) for s in (cc.cudagraph_capture_sizes or ())]
    runner_name = "V2" if measured is not None and measured.model_runner == "v2" else "V1"
    doc, _ = engine_doc(vllm_config, runner, platform)
    lines = [
        f"cgplan {__version__} checked this engine: vLLM {doc['cgplan']['vllm_version']}, model runner "
        f"{runner_name}, GPU {platform or 'unknown'}, cudagraph_mode "
        f"{getattr(cc.cudagraph_mode, 'name', cc.cudagraph_mode)}, {len(sizes)} capture sizes "
        f"{_sizes_text(sizes)}, max_num_seqs {vllm_config.scheduler_config.max_num_seqs}"
    ]
    plan: Plan | None = None
    why_not: str | None = None
    try:
        plan = plan_engine(doc, vllm_config)
    except CgplanError as e:
        why_not = str(e)
    if measured is None:
        lines.append(
            f"not checked: this runner ({type(runner).__module__}.{type(runner).__name__}) holds no "
            "CUDA-graph dispatcher cgplan knows (V1 CudagraphDispatcher.cudagraph_keys, "
            "V2 CudaGraphManager._capture_descs)"
        )
    else:
        lines.append(captured_line(measured))
    comparison: Comparison | None = None
    if plan is not None and measured is not None:
        others = sorted(f for f in plan.graphs if f != "target")
        target_only = replace(plan, graphs={"target": plan.graphs.get("target", ())})
        comparison = compare(target_only, measured)
        if others:
            lines.append(
                f"not checked by the plugin: the {', '.join(others)} graphs (the target model's only)"
            )
    if plan is not None and (comparison is None or comparison.matches):
        groups = gap_groups(plan)
        if not groups:
            lines.append("gaps: none: every uniform-decode batch of every tier replays a decode-mode graph")
        lines += [f"gap: {gap_title(g)} ({g.batches} request counts): {g.reason}" for g in groups]
        lines += [
            f"gap: mixed steps of {g.first}-{g.last} tokens → {g.mode}: {g.reason}"
            for g in plan.gaps
            if g.family == "mixed"
        ]
        if plan.fixes:
            f = plan.fixes[0]
            more = f" ({len(plan.fixes) - 1} more: cgplan plan)" if len(plan.fixes) > 1 else ""
            lines.append(f"fix: {' '.join(f.flags)} · {f.summary}{more}")
        elif plan.gaps:
            lines.append(
                "fix: none found within the default gate's budgets (cgplan plan --allow-over-budget)"
            )
        lines.append(padding_line(plan))
    elif measured is not None:
        lines += measured_gap_lines(measured)
    if comparison is not None:
        if comparison.matches:
            n = sum(d.matched for d in comparison.graphs)
            lines.append(
                f"cgplan's plan agrees with the engine: {n} graphs and {comparison.dispatch_checked} "
                "dispatch decisions checked"
            )
        else:
            diffs = difference_lines(comparison)
            shown = diffs[:8] + ([f"... {len(diffs) - 8} more"] if len(diffs) > 8 else [])
            lines.append(
                "DIFFERENCE between the engine and cgplan's plan: this is a cgplan bug, please report it "
                f"({REPORT_URL}, with these lines): " + "; ".join(shown)
            )
    elif why_not is not None:
        lines.append(f"not planned: {why_not}")
    lines.append(pool_line(window, len(measured.graphs) if measured is not None else None))
    lines.append(counting)
    return lines


def pool_line(window: MemoryWindow | None, graphs: int | None) -> str:
    if window is None or window.capture_s is None:
        why = "no graphs" if graphs == 0 else "capture_model did not run under the plugin"
        return f"graph pool: not measured ({why})"
    if window.pool_bytes is None:
        return "graph pool: not measured (torch.cuda memory unreadable)"
    words = (
        f"graph pool: {window.pool_bytes / _MIB:,.1f} MiB measured (device free memory over capture_model, "
        f"{window.capture_s:.2f} s)"
    )
    if window.reserved_delta_bytes is not None:
        words += f"; PyTorch reserved {window.reserved_delta_bytes / _MIB:+,.1f} MiB"
    if window.returned is not None:
        words += f"; capture_model returned {window.returned / _MIB:,.1f} MiB"
    return words


def block(lines: list[str]) -> str:
    """One log record: every line marked, so a reader finds each."""
    return "\n".join(f"{MARK} {STARTUP_TAG}: {line}" for line in lines)
