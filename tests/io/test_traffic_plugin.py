"""`optimize --traffic` takes what cgplan's vLLM plugin measured: its counters line in a log (exact
sizes, every outcome) or its Prometheus counter (mixed steps at their bucket's upper bound)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgplan.core.logs.plugin import StepCounts, counters_line
from cgplan.errors import ConfigError
from cgplan.io.traffic import load_traffic
from tests.core.logs.test_plugin_lines import METRICS


def test_a_log_with_counters_lines_is_traffic(tmp_path: Path) -> None:
    counts = StepCounts({"FULL": {16: 63}, "NONE": {48: 63, 16: 1}}, {"NONE": {768: 1}}, 1)
    log = tmp_path / "server.log"
    log.write_text(
        "INFO vLLM started\n"
        + f"INFO {counters_line(StepCounts({'FULL': {2: 1}}, {}, 1))}\n"
        + f"INFO {counters_line(counts)}\n"
    )
    t = load_traffic(log)
    assert t.uniform_decode == ((16, 64.0), (48, 63.0)), "outcomes merged, the last line's counts"
    assert t.mixed == ((768, 1.0),)
    assert "cgplan plugin's counters, line 3" in t.source


def test_a_metrics_text_is_traffic(tmp_path: Path) -> None:
    path = tmp_path / "metrics.txt"
    path.write_text(METRICS)
    t = load_traffic(path)
    assert t.uniform_decode == ((16, 63.0), (48, 63.0))
    assert t.mixed == ((1024, 1.0),)
    assert "bucket's upper bound" in t.source


def test_a_broken_counters_line_is_located(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text('x\n[cgplan] counters: 1 steps · json={"schema_version": 9}\n')
    with pytest.raises(ConfigError) as e:
        load_traffic(path)
    assert e.value.message == f"{path}:2: schema_version 9, expected 1"
