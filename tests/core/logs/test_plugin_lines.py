"""The plugin's counters line and Prometheus text, both ways (cgplan.core.logs.plugin): what the
plugin writes is what `cgplan logs` and `optimize --traffic` read back, and a malformed line is one
located error."""

from __future__ import annotations

import pytest

from cgplan.core.logs.plugin import (
    PluginLogError,
    StepCounts,
    bucket_of,
    counters_line,
    mixed_bucket_bounds,
    parse_metrics_text,
    parse_plugin_lines,
)

COUNTS = StepCounts({"FULL": {4: 10, 16: 2}, "NONE": {48: 63}}, {"PIECEWISE": {100: 2}, "NONE": {768: 1}}, 1)

# As prometheus_client 0.x writes a Counter with these labels (generate_latest), vLLM's metrics beside it.
METRICS = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 0.0
# HELP cgplan_dispatch_steps_total Engine steps counted by cgplan's vLLM plugin
# TYPE cgplan_dispatch_steps_total counter
cgplan_dispatch_steps_total{kind="decode",mode="NONE",num_reqs="48",num_tokens_le=""} 63.0
cgplan_dispatch_steps_total{kind="decode",mode="FULL",num_reqs="16",num_tokens_le=""} 63.0
cgplan_dispatch_steps_total{kind="mixed",mode="NONE",num_reqs="",num_tokens_le="1024"} 1.0
# HELP cgplan_dispatch_steps_created Engine steps counted by cgplan's vLLM plugin
# TYPE cgplan_dispatch_steps_created gauge
cgplan_dispatch_steps_created{kind="decode",mode="NONE",num_reqs="48",num_tokens_le=""} 1.79e+09
"""


def test_counters_line_round_trips_behind_any_prefix() -> None:
    line = "INFO 12-06 03:10:00 [core.py:42] " + counters_line(COUNTS, 12.0)
    assert "78 steps in 12 s · decode FULL 12, PIECEWISE 0, eager 63 (eager at 48 requests)" in line
    log = parse_plugin_lines(["unrelated", line, "INFO [cgplan] start-up: gap: x"], "server.log")
    assert log.counts == COUNTS and log.counters_lines == 1 and log.counts_line == 2
    assert log.startup == ("start-up: gap: x",)


def test_the_last_counters_line_wins() -> None:
    first = counters_line(StepCounts({"FULL": {4: 1}}, {}, 1))
    log = parse_plugin_lines([first, counters_line(COUNTS)], "-")
    assert log.counts == COUNTS and log.counters_lines == 2


@pytest.mark.parametrize(
    ("tail", "problem"),
    [
        ('{"schema_version": 2}', "schema_version 2, expected 1"),
        ('{"schema_version": 1, "decode": {"EAGER": {}}}', "expected one of FULL, PIECEWISE, NONE"),
        ('{"schema_version": 1, "decode": {"FULL": {"-3": 1}}}', "size '-3' is not a positive integer"),
        ('{"schema_version": 1, "decode": {"FULL": {"3": -1}}}', "count -1 is not a count"),
        ('{"schema_version": 1, "decode": {"FULL": {"3": 1}', "is not JSON"),
    ],
)
def test_a_malformed_counters_line_is_one_located_error(tail: str, problem: str) -> None:
    with pytest.raises(PluginLogError, match=r"^log:2: ") as e:
        parse_plugin_lines(["x", f"[cgplan] counters: 1 steps · json={tail}"], "log")
    assert problem in e.value.message


def test_metrics_text_beside_vllms_own() -> None:
    c = parse_metrics_text(METRICS, "metrics.txt")
    assert c.decode == {"NONE": {48: 63}, "FULL": {16: 63}}
    assert c.mixed == {"NONE": {1024: 1}} and not c.mixed_exact


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            'cgplan_dispatch_steps_total{kind="prefill",mode="FULL",num_reqs="4"} 1.0',
            "expected kind decode|mixed",
        ),
        ('cgplan_dispatch_steps_total{kind="decode",mode="FULL",num_reqs="4"} 1.5', "is not a count"),
        ('cgplan_dispatch_steps_total{kind="decode",mode="FULL",num_reqs="4"} nan', "is not a count"),
        ("cgplan_dispatch_steps_total{broken", "not a Prometheus sample line"),
    ],
)
def test_a_malformed_sample_is_one_located_error(line: str, problem: str) -> None:
    with pytest.raises(PluginLogError, match=r"^m:2: ") as e:
        parse_metrics_text(f"# TYPE x counter\n{line}\n", "m")
    assert problem in e.value.message


def test_a_text_without_the_counter_says_so() -> None:
    with pytest.raises(PluginLogError, match="no cgplan_dispatch_steps_total samples"):
        parse_metrics_text("vllm:num_requests_running 0.0\n", "m")


def test_mixed_buckets_are_the_capture_sizes_then_powers_of_two() -> None:
    bounds = mixed_bucket_bounds([1, 2, 4, 8, 16, 24, 32], 8192)
    assert bounds == (1, 2, 4, 8, 16, 24, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
    assert [bucket_of(n, bounds) for n in (1, 3, 17, 24, 33, 8192, 10**6)] == [1, 4, 24, 24, 64, 8192, 8192]
