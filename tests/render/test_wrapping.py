"""Text output at 80 columns (issue 30): the verdict first; prose wraps at spaces, never inside a
word or a flag; a fix's flags stay one line, to paste whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgplan.api.gate import gate_targets
from cgplan.api.plan import plan_file
from cgplan.render.gate import render_gate
from cgplan.render.plan import render_brief, render_table
from tests.cli_helpers import run, unwrap
from tests.paths import ROOT_DIR

EXAMPLES = sorted((ROOT_DIR / "configs/examples").glob("*.yaml"))
WIDTH = 80
FIX_LINES = ("fix: ", "or: ", "partial fix: ")


def _check_wrapped(narrow: str, wide: str) -> None:
    """`narrow` holds the same words as `wide` (nothing cut in two) in lines of at most WIDTH
    columns, but a fix's flags and a word longer than WIDTH."""
    assert sorted(narrow.split()) == sorted(wide.split())
    in_yaml = False  # a fix's YAML lines (issue 28) also stay whole, to paste
    for line in narrow.splitlines():
        if line.startswith("  in the YAML, set"):
            in_yaml = True
            continue
        in_yaml = in_yaml and line.startswith("    ")
        if len(line) > WIDTH and not in_yaml:
            assert line.startswith(FIX_LINES) or len(line.split()) == 1 or " " not in line.strip(), line


@pytest.mark.parametrize("config", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_plan_at_80_columns_breaks_no_word(config: Path) -> None:
    _, plan = plan_file(config)
    narrow = render_table(plan, width=WIDTH)
    _check_wrapped(narrow, render_table(plan, width=10_000))
    assert narrow.startswith("verdict: ")
    brief = render_brief(plan, width=WIDTH)
    _check_wrapped(brief, render_brief(plan, width=10_000))
    assert narrow.startswith(brief.split("\nfix: ")[0])  # --brief is the verdict of the full report
    if plan.fixes:  # the fix's whole flags, on one line
        assert f"\nfix: {plan.fixes[0].command_line}\n" in "\n" + brief


def test_gate_at_80_columns_breaks_no_word() -> None:
    results, _ = gate_targets([*EXAMPLES, ROOT_DIR / "configs/gpu/tiny-nospec.yaml"], None, None, None)
    narrow = render_gate(results, width=WIDTH)
    _check_wrapped(narrow, render_gate(results, width=10_000))
    assert narrow.startswith(f"gate failed: {sum(r.passed for r in results)}/5 targets pass ·")
    assert "fix: " in narrow.split("\nFAIL")[0]  # the first failure's fix is in the verdict


def test_brief_on_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    example = ROOT_DIR / "configs/examples/pr50488-eagle-k16.yaml"
    _, plan = plan_file(example)
    code, out, _ = run(monkeypatch, capsys, "plan", example, "--brief")
    assert code == 0 and out == render_brief(plan)
    code, out, err = run(monkeypatch, capsys, "plan", example, "--brief", "--json")
    assert (code, out) == (2, "") and "--brief is the text verdict; it has no json form" in err
    code, out, _ = run(
        monkeypatch, capsys, "gate", example, ROOT_DIR / "configs/gpu/tiny-nospec.yaml", "--brief"
    )
    lines = unwrap(out)
    assert code == 1 and len(lines) == 3 and lines[0].startswith("gate failed: 1/2 targets pass · ")
    assert lines[1:] == [
        f"FAIL {example}: no_eager_uniform_decode, widest_decode_full",
        f"PASS {ROOT_DIR / 'configs/gpu/tiny-nospec.yaml'}",
    ]
