"""HTML reports render in a real headless browser (Debian's chromium) with their SVG charts."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cgplan.api.plan import plan_file
from cgplan.api.sides import load_side
from cgplan.core.compare.diff import diff_sides
from cgplan.io.reports import read_capture_report
from cgplan.io.schema.diff import diff_to_dict
from cgplan.io.schema.plan import plan_to_dict
from cgplan.io.schema.reports import plan_from_json
from cgplan.render.html import capture_html, diff_html, plan_html
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
H200 = ROOT / "benchmarks/results/h200"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pages(tmp_path: Path) -> dict[str, Path]:
    out = {}
    _, plan = plan_file(ROOT / "configs/examples/pr50488-eagle-k16.yaml")
    out["plan"] = plan_html(plan_from_json(plan_to_dict(plan, source="pr50488"), "pr50488"))
    _, dyn = plan_file(ROOT / "configs/examples/mns1024-eagle-k16-dyn4.yaml")
    out["dyn"] = plan_html(plan_from_json(plan_to_dict(dyn, source="dyn4"), "dyn4"))
    out["capture"] = capture_html(
        read_capture_report(ROOT / "benchmarks/results/h200/tiny-eagle-k16-vllm.json")
    )
    a = load_side(ROOT / "configs/gpu/tiny-eagle-k16.yaml")
    b = load_side(ROOT / "configs/gpu/tiny-eagle-k16-max544.yaml")
    out["diff"] = diff_html(diff_to_dict(diff_sides(a, b)))
    paths = {}
    for name, text in out.items():
        p = tmp_path / f"{name}.html"
        p.write_text(text)
        paths[name] = p
    return paths


def test_pages_are_self_contained(tmp_path: Path) -> None:
    for p in pages(tmp_path).values():
        text = p.read_text()
        assert "<script" not in text and "http://" not in text.replace(
            'xmlns="http://www.w3.org/2000/svg"', ""
        )
        assert "https://" not in text


def test_chart_marks_the_pr50488_gap(tmp_path: Path) -> None:
    text = pages(tmp_path)["plan"].read_text()
    assert text.count('class="tier-chart"') == 1
    assert 'class="band eager"' in text and "requests 31-32 × 17: EAGER" in text


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install chromium)")
def test_renders_in_headless_chromium(tmp_path: Path) -> None:
    for name, p in pages(tmp_path).items():
        profile = tmp_path / f"profile-{name}"
        dom = subprocess.run(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--dump-dom", p.as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert dom.returncode == 0, dom.stderr[-2000:]
        assert "<h1>" in dom.stdout
        if name != "diff":
            assert 'class="tier-chart"' in dom.stdout and "<rect" in dom.stdout
        shot = tmp_path / f"{name}.png"
        subprocess.run(
            [
                str(CHROMIUM),
                *FLAGS,
                f"--user-data-dir={profile}-shot",
                "--window-size=1100,1400",
                f"--screenshot={shot}",
                p.as_uri(),
            ],
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert shot.exists() and shot.stat().st_size > 10_000  # a real rendering, not a blank page


def test_plan_page_has_the_whole_picture(tmp_path: Path) -> None:
    """issue 13 item 4: the ladder, mixed/prefill dispatch (eager first), per-step padding, KV tokens,
    the defaults assumed, and fix flags on one unbroken line."""
    p = pages(tmp_path)
    dyn = p["dyn"].read_text()
    for needle in (
        "<h2>Capture sizes (54, tokens)</h2>",
        "<h2>Mixed and prefill batches</h2>",
        "per-step padding (uniform decode, graph-replayed): worst",
        "KV-cache tokens</b> at 3,072 bytes/token",
        "<h2>Assumed (not in the config)</h2>",
        "uniform decode = 2, 4, 8 or 17 tokens per request",
        "PIECEWISE at 21 of 43 request counts",
    ):
        assert needle in dyn, needle
    mixed = dyn[dyn.index("<h2>Mixed and prefill batches</h2>") :]
    assert mixed.index("EAGER") < mixed.index("PIECEWISE")  # eager ranges first
    assert '<pre class="flags">-cc.cudagraph_mode=FULL' in dyn and "85-85" not in dyn


def test_diff_page_has_coverage_charts_and_memory(tmp_path: Path) -> None:
    """issue 14 item 4: the HTML diff's coverage chart (one per side and tier) and its memory figures."""
    text = pages(tmp_path)["diff"].read_text()
    assert text.count('class="tier-chart"') == 2
    assert "<h2>Graph memory</h2>" in text and "capture phase, per rank" in text


def test_a_plan_outside_the_cost_domain_has_a_page() -> None:
    """A plan with no memory figure (outside the fitted domain: issue 16's deployment, MLA on SM120's
    TRITON_MLA, never measured): the page says so, as the table does, instead of failing on the
    missing number (it raised TypeError before)."""
    deploy = ROOT / "tests/data/corpus-deploy/deploy-mla-mtp5-tp4-dcp4-sm120.yaml"
    _, plan = plan_file(deploy)
    assert plan.cost is not None and not plan.cost.domain.figure
    page = plan_html(plan_from_json(plan_to_dict(plan, source=deploy.name), deploy.name))
    assert (
        "<h2>Predicted graph memory</h2><p>no figure · outside the validated domain: "
        "attention backend TRITON_MLA" in page
    )


def test_the_page_has_the_step_time_or_says_why_not(tmp_path: Path) -> None:
    """Issue 29: the HTML states the predicted step time, each gap's cost and each fix's gain as the
    table does, or that it is withheld and why (an H100 by name: outside the measured domain)."""
    import subprocess
    import sys

    from tests.paths import ROOT_DIR

    def page(config: str) -> str:
        out = tmp_path / "p.html"
        subprocess.run(
            [sys.executable, "-m", "cgplan", "plan", config, "--html", str(out), "-q"],
            cwd=ROOT_DIR, check=False, capture_output=True,
        )  # fmt: skip
        return out.read_text()

    shown = page("configs/examples/pr50488-eagle-k16.yaml")
    assert "<h2>Predicted step time</h2><p><b>3.02 ms</b> expected" in shown
    # the table's figures: gap 1 at 32 requests costs +2.33 ms a step, +0.146 ms on the expected
    # step; fix 1 (--max-cudagraph-capture-size 544) makes it 2.88 ms
    assert "<tr><td>1</td><td>32</td><td>5.32 (2.99)</td><td>+2.33 ms</td><td>+0.146 ms</td>" in shown
    assert "<tr><td>1</td><td>2.88 ms</td><td>2.33 ms</td></tr>" in shown
    withheld = page("configs/gpu/memory/fit-llama8b-mns1024.yaml")
    assert "<h2>Predicted step time</h2><p>not predicted: outside the measured domain (GPU H100" in withheld
