"""Renderers against golden files (exact text), and every output format is handled."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgplan.api.plan import plan_file
from cgplan.core.plan.fingerprint import fingerprint
from cgplan.io.schema import dumps
from cgplan.io.schema.plan import plan_to_dict
from cgplan.render import OutputFormat, render
from tests.paths import ROOT_DIR, TESTS_DIR

ROOT = ROOT_DIR
GOLDEN = TESTS_DIR / "golden"
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


def test_a_file_name_with_an_emoji_code_is_printed_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # rich replaces :name: codes by default: the header read "a🔥b.yaml" for a config "a:fire:b.yaml"
    from tests.cli_helpers import run

    root = ROOT_DIR
    text = (root / "configs/examples/pr50488-eagle-k16.yaml").read_text()
    config = tmp_path / "a:fire:b.yaml"
    config.write_text(text.replace("model: configs/", f"model: {root}/configs/"))
    code, out, _ = run(monkeypatch, capsys, "plan", str(config))
    assert code == 0 and "a:fire:b.yaml" in out and "🔥" not in out
    code, out, _ = run(monkeypatch, capsys, "plan", str(config), "--format", "markdown")
    assert code == 0 and "a:fire:b.yaml" in out and "🔥" not in out


def test_latency_lines_tell_fixes_apart() -> None:
    """Fixes that share their first flag (`-cc.cudagraph_mode=FULL`) were each printed as that
    flag alone in the step-time lines: four fixes read as one."""
    from cgplan.render.summary import latency_lines

    _, plan = plan_file(CASES["mns1024-dyn4"])
    labels = [line.split("): gains")[0] for line in latency_lines(plan) if line.startswith("  fix ")]
    flags = {plan.fixes[i].flags for i in range(len(plan.fixes))}
    assert len(labels) == len(plan.fixes) == len(flags) > 1
    assert len({label.strip().split(" ", 2)[2] for label in labels}) == len(labels)


def test_mixed_rows_say_why_a_batch_within_the_ladder_is_eager() -> None:
    """V1 LoRA without cudagraph_specialize_lora captures the adapter set only: mixed batches of
    1..64 tokens without an adapter run eager, and the table said "above the largest capture
    size" for them (H200: benchmarks/results/h200/lora/tiny-lora-m3-nospec-v1-vllm.json)."""
    from cgplan.render.summary import mixed_rows

    _, plan = plan_file(ROOT / "configs/gpu/lora/tiny-lora-m3-nospec-v1.yaml")
    assert plan.max_capture_size == 64
    assert mixed_rows(plan) == [
        ("1..64", "EAGER", "no graph without a LoRA adapter (every graph is captured for adapters)"),
        ("65..8192", "EAGER", "above the largest capture size 64"),
    ]
