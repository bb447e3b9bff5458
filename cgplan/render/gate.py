"""Gate verdicts as text, markdown (a PR comment) and JUnit XML (`cgplan gate`)."""

from __future__ import annotations

import io
from xml.sax.saxutils import escape, quoteattr

from cgplan.core.compare.gate import GateResult
from cgplan.core.model.types import Fix
from cgplan.render._console import buffer_console, print_wrapped


def _flags(fix: Fix) -> str:
    """A fix's flags, a long value list shortened (the details carry it whole)."""
    words = fix.command_line.split()
    return fix.command_line if len(words) <= 8 else " ".join(words[:5]) + f" ... {words[-1]}"


def gate_verdict(results: list[GateResult]) -> str:
    """The verdict in one line: how many targets pass, and for the first that fails, its failed
    checks, what its gaps cost and the flag that fixes them."""
    ok = all(r.passed for r in results)
    line = (
        f"gate {'passed' if ok else 'failed'}: {sum(r.passed for r in results)}/{len(results)} targets pass"
    )
    failing = [r for r in results if not r.passed]
    if not failing:
        return line
    r = failing[0]
    names = [c.name for c in r.checks if not c.passed and not c.skipped]
    line += f" · {r.target}: {len(names)} check{'s' * (len(names) != 1)} fail ({', '.join(names)})"
    if r.gap_share is not None:
        line += f" · its gaps cost {r.gap_share:.1%} of the expected step"
    if r.fix is not None:
        line += f" · fix: {_flags(r.fix)}"
    if len(failing) > 1:
        line += f" · {len(failing) - 1} more target{'s' * (len(failing) > 2)} fail"
    return line


def render_gate(
    results: list[GateResult], *, width: int = 100, color: bool = False, brief: bool = False
) -> str:
    """Human verdict: one line first, then each target and its checks (`brief`: one line each).
    Lines wrap at spaces, never inside a word or a flag."""
    buf = io.StringIO()
    c = buffer_console(buf, width, color)
    ok = all(r.passed for r in results)
    print_wrapped(c, gate_verdict(results), "bold green" if ok else "bold red")
    for r in results:
        failed = [ch.name for ch in r.checks if not ch.passed and not ch.skipped]
        head = f"{'PASS' if r.passed else 'FAIL'} {r.target}"
        if brief:
            print_wrapped(c, head + (f": {', '.join(failed)}" if failed else ""), "" if r.passed else "red")
            continue
        print_wrapped(c, head, "green" if r.passed else "bold red")
        for ch in r.checks:
            mark = (
                ("info" if ch.value is not None else "skip")
                if ch.skipped
                else ("ok  " if ch.passed else "FAIL")
            )
            print_wrapped(c, f"  {mark} {ch.name}: {ch.detail}", "" if ch.passed or ch.skipped else "red")
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
