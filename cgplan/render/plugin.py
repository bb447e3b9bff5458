"""What cgplan's vLLM plugin logged and counted, as text (`cgplan logs` of a log with its lines,
of its lines alone, or of a metrics text)."""

from __future__ import annotations

from cgplan.core.logs.plugin import KINDS, MODES, PluginLog, StepCounts


def _runs(sizes: list[int]) -> str:
    out: list[list[int]] = []
    for n in sorted(sizes):
        if out and out[-1][1] == n - 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)


def counts_lines(counts: StepCounts) -> list[str]:
    """Per kind and outcome: the steps, their share, and the sizes they ran at."""
    lines = [f"steps counted: {counts.steps:,}"]
    for kind in KINDS:
        total = counts.total(kind)
        table = counts.decode if kind == "decode" else counts.mixed
        unit = "requests" if kind == "decode" else ("tokens" if counts.mixed_exact else "tokens (bucket ≤)")
        lines.append(f"  {kind}: {total:,} steps")
        for mode in MODES:
            n = counts.total(kind, mode)
            if not n:
                continue
            word = "eager (NONE)" if mode == "NONE" else mode
            sizes = sorted(table.get(mode, {}))
            lines.append(f"    {word:<12} {n:>10,} steps ({n / total:.1%}) at {_runs(sizes)} {unit}")
    eager = counts.total("decode", "NONE")
    if eager:
        lines.append(
            f"{eager:,} decode steps ran eager: these request counts are a gap of the running engine "
            "(its start-up block names the fix; `cgplan optimize CONFIG --traffic` this file plans one "
            "for this traffic)"
        )
    return lines


def plugin_text(plugin: PluginLog) -> str:
    """The plugin's start-up block as logged, then its last counters."""
    lines = ["cgplan plugin (lines logged inside the engine):"]
    lines += [f"  {line}" for line in plugin.startup] or ["  no start-up block in this log"]
    if plugin.counts is None:
        lines.append("  no counters line in this log")
    else:
        lines.append(
            f"  counters: the last of {plugin.counters_lines} line(s) (line {plugin.counts_line}; cumulative)"
        )
        lines += [f"  {line}" for line in counts_lines(plugin.counts)]
    return "\n".join(lines) + "\n"


def metrics_text(source: str, counts: StepCounts) -> str:
    """A metrics text's plugin counter."""
    return (
        "\n".join([f"cgplan logs {source} · the plugin's Prometheus counter", *counts_lines(counts)]) + "\n"
    )
