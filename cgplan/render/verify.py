"""`cgplan verify` as text and markdown: vLLM's own code beside cgplan's rules, two builds beside each
other (a PR's before/after), and the drift per rule over a corpus."""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence

from rich.table import Table

from cgplan.core.compare.verify import (
    BuildAnswer,
    BuildComparison,
    ConfigChange,
    DecodeGap,
    Verdict,
    VerifyReport,
)
from cgplan.render._console import buffer_console


def _span(a: int, b: int) -> str:
    return str(a) if a == b else f"{a}-{b}"


def gap_text(g: DecodeGap) -> str:
    """`31-32 req × 17 eager`."""
    return f"{_span(g.from_reqs, g.to_reqs)} req × {g.query_len} {'eager' if g.mode == 'NONE' else g.mode}"


def _gaps(gaps: Sequence[DecodeGap]) -> str:
    return ", ".join(gap_text(g) for g in gaps) if gaps else "none"


def _sizes(a: BuildAnswer) -> str:
    if a.refused is not None:
        return "refused"
    if not a.capture_sizes:
        return "0"
    return f"{len(a.capture_sizes)} ({min(a.capture_sizes)}..{max(a.capture_sizes)})"


def _agree(v: Verdict) -> str:
    if v.agree is None:
        return "no answer"
    return "ok" if v.agree else "DIFFERS"


def _head(r: VerifyReport) -> list[str]:
    lines = [
        f"cgplan verify · vLLM {r.vllm_version} ({r.python}) · compared with cgplan's "
        f"{r.rules_release} rules" + (f" under policy {r.policy}" if r.policy else "")
    ]
    if r.rules_note:
        lines.append(f"note: {r.rules_note}")
    n = len(r.verdicts)
    agree = sum(v.agree is True for v in r.verdicts)
    differ = sum(v.agree is False for v in r.verdicts)
    none = n - agree - differ
    lines.append(
        f"{n} config{'s' if n != 1 else ''}: {agree} agree, {differ} differ"
        + (f", {none} without an answer" if none else "")
        + f" (vLLM imported in {r.import_s:.0f} s, {sum(r.seconds):.0f} s of its code)"
    )
    return lines


def _limits(r: VerifyReport, width: int = 100) -> list[str]:
    out = ["vLLM's code on a CPU host does not reach:"]
    for x in r.limits:
        out += textwrap.wrap(x, width, initial_indent="  - ", subsequent_indent="    ")
    return out


def _table(buf: io.StringIO, width: int, color: bool, table: Table) -> None:
    buffer_console(buf, width, color).print(table)


def render_verify(r: VerifyReport, *, width: int = 100, color: bool = False) -> str:
    """The verdicts as text: a row per config (vLLM's answer: sizes, graphs, gaps), the differing
    fields, the drift per rule over several configs, and what vLLM's code on a CPU cannot reach."""
    buf = io.StringIO()
    buf.write("\n".join(_head(r)) + "\n\n")
    t = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("config", "agree", "vLLM: sizes", "graphs", "gaps (uniform decode)"):
        t.add_column(col, overflow="fold")
    for v in r.verdicts:
        if v.no_answer is not None:
            t.add_row(v.config, _agree(v), "-", "-", v.no_answer)
            continue
        a = v.vllm
        if a.refused is not None:
            t.add_row(v.config, _agree(v), "refused", "-", a.refused)
            continue
        t.add_row(v.config, _agree(v), _sizes(a), str(a.total_graphs), _gaps(a.gaps))
    _table(buf, width, color, t)
    for v in r.verdicts:
        for d in v.differing:
            buf.write(
                f"\n{v.config}: {d.field} differs ({d.rule})\n  vLLM:   {d.vllm}\n  cgplan: {d.cgplan}\n"
            )
        for n in v.notes:
            buf.write(f"\n{v.config}: note: {n}\n")
    if len(r.verdicts) > 1:
        buf.write("\ndrift per rule\n")
        t = Table(box=None, pad_edge=False, show_edge=False)
        for col in ("field", "rule", "differ", "configs"):
            t.add_column(col, overflow="fold")
        for rd in r.drift:
            where = ", ".join(rd.configs[:3]) + (f" (+{len(rd.configs) - 3})" if len(rd.configs) > 3 else "")
            t.add_row(rd.field, rd.rule, f"{rd.differ}/{rd.compared}", where or "-")
        _table(buf, width, color, t)
    buf.write("\n" + "\n".join(_limits(r, width)) + "\n")
    return buf.getvalue()


def render_verify_markdown(r: VerifyReport) -> str:
    """The verdicts for a PR comment."""
    out = [f"### {_head(r)[0]}", "", *(f"> {x}" for x in _head(r)[1:]), ""]
    out += [
        "| config | agrees | vLLM: sizes | graphs | gaps | differing fields |",
        "|---|---|---|---|---|---|",
    ]
    for v in r.verdicts:
        a = v.vllm
        fields = ", ".join(f"`{d.field}`" for d in v.differing) or "-"
        if v.no_answer is not None:
            out.append(f"| `{v.config}` | no answer | - | - | {v.no_answer} | - |")
        elif a.refused is not None:
            out.append(f"| `{v.config}` | {_agree(v)} | refused | - | {a.refused} | {fields} |")
        else:
            gaps = _gaps(a.gaps)
            out.append(f"| `{v.config}` | {_agree(v)} | {_sizes(a)} | {a.total_graphs} | {gaps} | {fields} |")
    details = [(v, d) for v in r.verdicts for d in v.differing]
    if details:
        out += ["", "| config | field | vLLM | cgplan |", "|---|---|---|---|"]
        out += [f"| `{v.config}` | `{d.field}` | {d.vllm} | {d.cgplan} |" for v, d in details]
    if len(r.verdicts) > 1:
        out += ["", "| field | rule | differ |", "|---|---|---|"]
        out += [f"| `{d.field}` | {d.rule} | {d.differ}/{d.compared} |" for d in r.drift]
    out += ["", "<details><summary>what vLLM's code on a CPU host does not reach</summary>", ""]
    out += [f"- {x}" for x in r.limits] + ["", "</details>"]
    return "\n".join(out) + "\n"


def _arrow(a: str, b: str) -> str:
    return a if a == b else f"{a} → {b}"


def _decode_changes(c: ConfigChange, limit: int = 3) -> str:
    rows = [
        f"{_span(d.from_reqs, d.to_reqs)} req × {d.query_len}: {d.before} → {d.after}"
        for d in c.dispatch_changes
    ]
    if len(rows) > limit:
        rows = [*rows[:limit], f"(+{len(rows) - limit} more runs)"]
    return "; ".join(rows) or "none"


def _family_lines(c: ConfigChange) -> list[str]:
    out = []
    families = list(dict.fromkeys([*c.before.graph_counts, *c.after.graph_counts]))
    for f in families:
        a, b = c.before.graph_counts.get(f, {}), c.after.graph_counts.get(f, {})
        for mode in ("PIECEWISE", "FULL"):
            x, y = a.get(mode, 0), b.get(mode, 0)
            if x != y:
                out.append(f"{f} {mode} {x} → {y}")
    return out


def _against_head(c: BuildComparison) -> list[str]:
    changed = sum(x.changed for x in c.changes)
    lines = [
        f"cgplan verify · before: vLLM {c.before.vllm_version} ({c.before.python}) · after: vLLM "
        f"{c.after.vllm_version} ({c.after.python})",
        f"{len(c.changes)} configs, {changed} changed",
    ]
    for name, r in (("before", c.before), ("after", c.after)):
        agree = sum(v.agree is True for v in r.verdicts)
        drifting = [d.field for d in r.drift if d.differ]
        lines.append(
            f"cgplan's {r.rules_release} rules vs {name}: {agree}/{len(r.verdicts)} configs agree"
            + (f" (drift: {', '.join(drifting)})" if drifting else "")
        )
        if r.rules_note:
            lines.append(f"  note: {r.rules_note}")
    return lines


def render_against(c: BuildComparison, *, width: int = 100, color: bool = False) -> str:
    """Two builds on the same configs as text: sizes, graphs, gaps and decode dispatch per config."""
    buf = io.StringIO()
    buf.write("\n".join(_against_head(c)) + "\n\n")
    t = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("config", "sizes", "graphs", "gaps opened", "gaps closed"):
        t.add_column(col, overflow="fold")
    for x in c.changes:
        if x.no_answer is not None:
            t.add_row(x.config, "-", "-", x.no_answer, "-")
            continue
        t.add_row(
            x.config,
            _arrow(_sizes(x.before), _sizes(x.after)),
            _arrow(_graphs(x.before), _graphs(x.after)),
            _gaps(x.gaps_opened),
            _gaps(x.gaps_closed),
        )
    _table(buf, width, color, t)
    for x in c.changes:
        if not x.changed or x.no_answer is not None:
            continue
        buf.write(f"\n{x.config}\n")
        fam = _family_lines(x)
        if fam:
            buf.write(f"  graphs: {', '.join(fam)}\n")
        if x.before.refused != x.after.refused:
            buf.write(f"  refused: {x.before.refused or 'no'} → {x.after.refused or 'no'}\n")
        if x.dispatch_changes:
            buf.write(f"  decode dispatch: {_decode_changes(x, limit=6)}\n")
    buf.write("\n" + "\n".join(_limits(c.after, width)) + "\n")
    return buf.getvalue()


def _graphs(a: BuildAnswer) -> str:
    return "refused" if a.refused is not None else str(a.total_graphs)


def render_against_markdown(c: BuildComparison) -> str:
    """The before/after for a PR comment."""
    head = _against_head(c)
    out = [f"### {head[0]}", "", *(f"> {x}" for x in head[1:]), ""]
    out += [
        "| config | sizes | graphs | graphs per family | gaps opened | gaps closed | decode dispatch |",
        "|---|---|---|---|---|---|---|",
    ]
    for x in c.changes:
        if x.no_answer is not None:
            out.append(f"| `{x.config}` | - | - | - | {x.no_answer} | - | - |")
            continue
        out.append(
            f"| `{x.config}` | {_arrow(_sizes(x.before), _sizes(x.after))} | "
            f"{_arrow(_graphs(x.before), _graphs(x.after))} | {', '.join(_family_lines(x)) or '-'} | "
            f"{_gaps(x.gaps_opened)} | {_gaps(x.gaps_closed)} | {_decode_changes(x)} |"
        )
    out += ["", "<details><summary>what vLLM's code on a CPU host does not reach</summary>", ""]
    out += [f"- {x}" for x in c.after.limits] + ["", "</details>"]
    return "\n".join(out) + "\n"
