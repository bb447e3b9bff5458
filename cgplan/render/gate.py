"""Gate verdicts as text, markdown (a PR comment) and JUnit XML (`cgplan gate`)."""

from __future__ import annotations

import io
from xml.sax.saxutils import escape, quoteattr

from cgplan.core.compare.gate import GateResult
from cgplan.render._console import buffer_console


def render_gate(results: list[GateResult], *, width: int = 100, color: bool = False) -> str:
    """Human verdict."""
    buf = io.StringIO()
    c = buffer_console(buf, width, color)
    for r in results:
        c.print(
            f"{'PASS' if r.passed else 'FAIL'} {r.target}",
            style="green" if r.passed else "bold red",
            soft_wrap=True,
        )
        for ch in r.checks:
            mark = (
                ("info" if ch.value is not None else "skip")
                if ch.skipped
                else ("ok  " if ch.passed else "FAIL")
            )
            c.print(
                f"  {mark} {ch.name}: {ch.detail}",
                style="" if ch.passed or ch.skipped else "red",
                soft_wrap=True,
            )
    ok = all(r.passed for r in results)
    c.print(
        f"gate {'passed' if ok else 'failed'}: {sum(r.passed for r in results)}/{len(results)} targets pass"
    )
    return buf.getvalue()


def render_gate_markdown(results: list[GateResult]) -> str:
    """Verdict for a PR comment."""
    ok = all(r.passed for r in results)
    out = [
        f"### cgplan gate: {'passed ✅' if ok else 'failed ❌'}",
        "",
        "| target | check | result | detail |",
        "|---|---|---|---|",
    ]
    for r in results:
        for ch in r.checks:
            res = "skipped" if ch.skipped else ("pass" if ch.passed else "**FAIL**")
            out.append(f"| `{r.target}` | {ch.name} | {res} | {ch.detail} |")
    return "\n".join(out) + "\n"


def render_junit(results: list[GateResult]) -> str:
    """JUnit XML: one test suite, one test case per (target, check)."""
    cases = []
    failures = skipped = 0
    for r in results:
        for ch in r.checks:
            body = ""
            if ch.skipped:
                skipped += 1
                body = f"<skipped message={quoteattr(ch.detail)}/>"
            elif not ch.passed:
                failures += 1
                body = f"<failure message={quoteattr(ch.detail)}>{escape(ch.detail)}</failure>"
            cases.append(
                f"  <testcase classname={quoteattr(r.target)} name={quoteattr(ch.name)}>{body}</testcase>"
            )
    head = (
        f'<testsuite name="cgplan gate" tests="{len(cases)}" failures="{failures}" errors="0" '
        f'skipped="{skipped}">'
    )
    return '<?xml version="1.0" encoding="utf-8"?>\n' + head + "\n" + "\n".join(cases) + "\n</testsuite>\n"
