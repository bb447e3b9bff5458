"""Renderers against golden files (exact text), and every output format is handled."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgplan.api.plan import plan_file
from cgplan.core.fingerprint import fingerprint
from cgplan.io.schema import dumps
from cgplan.io.schema.plan import plan_to_dict
from cgplan.render import OutputFormat, render

ROOT = Path(__file__).parent.parent
GOLDEN = Path(__file__).parent / "golden"
CASES = {
    "pr50488": ROOT / "configs/examples/pr50488-eagle-k16.yaml",
    "mns1024-dyn4": ROOT / "configs/examples/mns1024-eagle-k16-dyn4.yaml",
    "ngram-k16-v1": ROOT / "configs/examples/ngram-k16-v1.yaml",
    "mtp-dsv3-k3": ROOT / "configs/examples/mtp-dsv3-k3.yaml",
}
SUFFIX = {OutputFormat.table: "table.txt", OutputFormat.markdown: "md"}


@pytest.mark.parametrize("fmt", list(OutputFormat))
@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_output(case: str, fmt: OutputFormat, update_golden: bool) -> None:
    _, plan = plan_file(CASES[case])
    text = render(plan, fmt, source=f"configs/examples/{CASES[case].name}", width=100)
    _check_golden(GOLDEN / f"{case}.{SUFFIX[fmt]}", text, update_golden)


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_json(case: str, update_golden: bool) -> None:
    """`cgplan plan --json`'s document (io.schema, not a renderer), byte for byte."""
    cfg, plan = plan_file(CASES[case])
    source = f"configs/examples/{CASES[case].name}"
    text = dumps(plan_to_dict(plan, source=source, fingerprint=fingerprint(cfg.input)))
    _check_golden(GOLDEN / f"{case}.json", text, update_golden)


def _check_golden(path: Path, text: str, update_golden: bool) -> None:
    if update_golden:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing {path}; run pytest --update-golden and review the diff"
    assert text == path.read_text()


def test_every_format_renders() -> None:
    _, plan = plan_file(CASES["pr50488"])
    for fmt in OutputFormat:
        assert render(plan, fmt).strip()
