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


def _gaps(gaps: Sequence[DecodeGap], limit: int = 3) -> str:
    """The gaps, the first `limit` of them by name and the rest counted."""
    if not gaps:
        return "none"
    shown = ", ".join(gap_text(g) for g in gaps[:limit])
    return shown + (f" (+{len(gaps) - limit} more)" if len(gaps) > limit else "")


def _gap_reqs(a: BuildAnswer) -> int:
    """How many (query length, request count) decode steps are a gap."""
    return sum(g.to_reqs - g.from_reqs + 1 for g in a.gaps)


def _common(names: Sequence[str]) -> tuple[str, list[str]]:
    """("in DIR/", the names without DIR/) when every config sits in one folder DIR, else ("", names)."""
    parents = {n.rpartition("/")[0] for n in names}
    if len(parents) != 1 or not next(iter(parents)) or len(names) < 2:
        return "", list(names)
    folder = next(iter(parents))
    return f" in {folder}/", [n.rpartition("/")[2] for n in names]


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


def _head(r: VerifyReport, folder: str = "") -> list[str]:
    lines = [
        f"cgplan verify · vLLM {r.vllm_version} ({r.python}) · compared with cgplan's "
        f"{r.rules_release} rules" + (f" under policy {r.policy}" if r.policy else "")
    ]
    if r.vllm_location:
        lines.append(f"vLLM's code from {r.vllm_location}")
    if r.rules_note:
        lines.append(f"note: {r.rules_note}")
    n = len(r.verdicts)
    agree = sum(v.agree is True for v in r.verdicts)
    differ = sum(v.agree is False for v in r.verdicts)
    none = n - agree - differ
    lines.append(
        f"{n} config{'s' if n != 1 else ''}{folder}: {agree} agree, {differ} differ"
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
    folder, names = _common([v.config for v in r.verdicts])
    buf.write("\n".join(_head(r, folder)) + "\n\n")
    t = Table(box=None, pad_edge=False, show_edge=False)
    t.add_column("config", no_wrap=True)
    for col in ("agree", "vLLM: sizes", "graphs", "gaps (uniform decode)"):
        t.add_column(col, overflow="fold")
    for name, v in zip(names, r.verdicts, strict=True):
        if v.no_answer is not None:
            t.add_row(name, _agree(v), "-", "-", "-")
            continue
        a = v.vllm
        if a.refused is not None:
            t.add_row(name, _agree(v), "refused", "-", a.refused)
            continue
        t.add_row(name, _agree(v), _sizes(a), str(a.total_graphs), _gaps(a.gaps))
    _table(buf, width, color, t)
    for name, v in zip(names, r.verdicts, strict=True):
        if v.no_answer is not None:
            buf.write(f"\n{name}: no answer from vLLM's code: {v.no_answer}\n")
        for d in v.differing:
            buf.write(f"\n{name}: {d.field} differs ({d.rule})\n  vLLM:   {d.vllm}\n  cgplan: {d.cgplan}\n")
        for n in v.notes:
            buf.write(f"\n{name}: note: {n}\n")
    if len(r.verdicts) > 1:
        buf.write("\ndrift per rule\n")
        t = Table(box=None, pad_edge=False, show_edge=False)
        for col in ("field", "rule", "differ", "configs"):
            t.add_column(col, overflow="fold")
        short = dict(zip([v.config for v in r.verdicts], names, strict=True))
        for rd in r.drift:
            where = ", ".join(short[c] for c in rd.configs[:3]) + (
                f" (+{len(rd.configs) - 3})" if len(rd.configs) > 3 else ""
            )
            t.add_row(rd.field, rd.rule, f"{rd.differ}/{rd.compared}", where or "-")
        _table(buf, width, color, t)
    buf.write("\n" + "\n".join(_limits(r, width)) + "\n")
    return buf.getvalue()


def render_verify_markdown(r: VerifyReport) -> str:
    """The verdicts for a PR comment."""
    folder, names = _common([v.config for v in r.verdicts])
    head = _head(r, folder)
    out = [f"### {head[0]}", "", *(f"> {x}" for x in head[1:]), ""]
    out += [
        "| config | agrees | vLLM: sizes | graphs | gaps | differing fields |",
        "|---|---|---|---|---|---|",
    ]
    for name, v in zip(names, r.verdicts, strict=True):
        a = v.vllm
        fields = ", ".join(f"`{d.field}`" for d in v.differing) or "-"
        if v.no_answer is not None:
            out.append(f"| `{name}` | no answer | - | - | {v.no_answer} | - |")
        elif a.refused is not None:
            out.append(f"| `{name}` | {_agree(v)} | refused | - | {a.refused} | {fields} |")
        else:
            gaps = _gaps(a.gaps)
            out.append(f"| `{name}` | {_agree(v)} | {_sizes(a)} | {a.total_graphs} | {gaps} | {fields} |")
    details = [(n, d) for n, v in zip(names, r.verdicts, strict=True) for d in v.differing]
    if details:
        out += ["", "| config | field | vLLM | cgplan |", "|---|---|---|---|"]
        out += [f"| `{n}` | `{d.field}` | {d.vllm} | {d.cgplan} |" for n, d in details]
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


def _against_head(c: BuildComparison, folder: str = "") -> list[str]:
    changed = sum(x.changed for x in c.changes)
    n = len(c.changes)
    lines = [
        f"cgplan verify · before: vLLM {c.before.vllm_version} ({c.before.python}) · after: vLLM "
        f"{c.after.vllm_version} ({c.after.python})",
        f"{n} config{'s' if n != 1 else ''}{folder}, {changed} changed",
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


def _row(x: ConfigChange) -> list[str]:
    """runner, sizes, max size, graphs, gap steps: before → after where they differ."""
    a, b = x.before, x.after
    if a.refused is not None or b.refused is not None:
        refused = _arrow("refused" if a.refused else "starts", "refused" if b.refused else "starts")
        return [refused, "-", "-", "-", "-"]
    return [
        _arrow(a.model_runner or "-", b.model_runner or "-"),
        _arrow(str(len(a.capture_sizes)), str(len(b.capture_sizes))),
        _arrow(str(a.max_capture_size), str(b.max_capture_size)),
        _arrow(str(a.total_graphs), str(b.total_graphs)),
        _arrow(str(_gap_reqs(a)), str(_gap_reqs(b))),
    ]


def _detail_lines(x: ConfigChange) -> list[str]:
    out = []
    a, b = x.before, x.after
    if a.refused != b.refused:
        out.append(f"refused: {a.refused or 'no'} → {b.refused or 'no'}")
    for what, u, v in (
        ("model runner", a.model_runner, b.model_runner),
        ("cudagraph_mode", a.cudagraph_mode, b.cudagraph_mode),
    ):
        if u != v and a.refused is None and b.refused is None:
            out.append(f"{what}: {u} → {v}")
    if a.capture_sizes != b.capture_sizes and a.refused is None and b.refused is None:
        added = sorted(set(b.capture_sizes) - set(a.capture_sizes))
        gone = sorted(set(a.capture_sizes) - set(b.capture_sizes))
        out.append(
            "capture sizes:"
            + (f" +{_short_list(added)}" if added else "")
            + (f" -{_short_list(gone)}" if gone else "")
        )
    fam = _family_lines(x)
    if fam:
        out.append(f"graphs: {', '.join(fam)}")
    if x.gaps_opened:
        out.append(f"gaps opened: {_gaps(x.gaps_opened, limit=4)}")
    if x.gaps_closed:
        out.append(f"gaps closed: {_gaps(x.gaps_closed, limit=4)}")
    if x.dispatch_changes:
        out.append(f"decode dispatch: {_decode_changes(x, limit=4)}")
    return out


def _short_list(values: Sequence[int], limit: int = 8) -> str:
    shown = ", ".join(map(str, values[:limit]))
    return f"[{shown}{f', ... {len(values) - limit} more' if len(values) > limit else ''}]"


AGAINST_COLUMNS = ("runner", "sizes", "max size", "graphs", "gap steps")


def render_against(c: BuildComparison, *, width: int = 100, color: bool = False) -> str:
    """Two builds on the same configs as text: a row per config (model runner, capture sizes, the
    largest, graphs and uniform-decode gap steps, before → after), then what changed per config:
    sizes added and removed, graphs per family and mode, gaps opened and closed, and the decode
    dispatch per request count."""
    buf = io.StringIO()
    folder, names = _common([x.config for x in c.changes])
    buf.write("\n".join(_against_head(c, folder)) + "\n\n")
    t = Table(box=None, pad_edge=False, show_edge=False)
    t.add_column("config", no_wrap=True)
    for col in AGAINST_COLUMNS:
        t.add_column(col, overflow="fold")
    for name, x in zip(names, c.changes, strict=True):
        t.add_row(name, *([x.no_answer, "", "", "", ""] if x.no_answer is not None else _row(x)))
    _table(buf, width, color, t)
    for name, x in zip(names, c.changes, strict=True):
        if not x.changed or x.no_answer is not None:
            continue
        buf.write(f"\n{name}\n")
        for line in _detail_lines(x):
            buf.write(
                "\n".join(textwrap.wrap(line, width, initial_indent="  ", subsequent_indent="    ")) + "\n"
            )
    buf.write("\n" + "\n".join(_limits(c.after, width)) + "\n")
    return buf.getvalue()


def _graphs(a: BuildAnswer) -> str:
    return "refused" if a.refused is not None else str(a.total_graphs)


def render_against_markdown(c: BuildComparison) -> str:
    """The before/after for a PR comment: the table, then what changed per config."""
    folder, names = _common([x.config for x in c.changes])
    head = _against_head(c, folder)
    out = [f"### {head[0]}", "", *(f"> {x}" for x in head[1:]), ""]
    out += ["| config | " + " | ".join(AGAINST_COLUMNS) + " |", "|---" * (len(AGAINST_COLUMNS) + 1) + "|"]
    for name, x in zip(names, c.changes, strict=True):
        cells = [x.no_answer, "", "", "", ""] if x.no_answer is not None else _row(x)
        out.append(f"| `{name}` | " + " | ".join(cells) + " |")
    for name, x in zip(names, c.changes, strict=True):
        if x.changed and x.no_answer is None:
            out += ["", f"**`{name}`**", "", *(f"- {line}" for line in _detail_lines(x))]
    out += ["", "<details><summary>what vLLM's code on a CPU host does not reach</summary>", ""]
    out += [f"- {x}" for x in c.after.limits] + ["", "</details>"]
    return "\n".join(out) + "\n"
