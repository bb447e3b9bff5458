"""On a GPU host: a real capture of the smallest config, checked against the plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgplan.api.capture import run_capture
from cgplan.io.config import Overrides

ROOT = Path(__file__).parent.parent.parent


@pytest.mark.gpu
def test_capture_tiny_matches_plan(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    outcome = run_capture(ROOT / "configs/gpu/tiny-nospec.yaml", Overrides(), output=out)
    assert outcome.failure is None
    doc = outcome.report
    assert doc.status == "complete"
    assert doc.comparison is not None and doc.comparison.matches, doc.comparison
    assert all(g.capture_time_ms > 0 for g in doc.measured.graphs)
