"""`cgplan logs`: vLLM startup logs parsed, held against the plan, and bad input refused.

Real logs: tests/data/logs/<name>-vllm.log.gz, the console output of `cgplan capture` on the
lent H200 (vLLM 0.26.0): vLLM's log lines plus cgplan's own summary. Their tqdm progress bars
went to stderr and are not in them, and no run had `--cudagraph-metrics` on. So the bars and
the metrics tables are tested on the SYNTHETIC fixtures tests/data/logs/synthetic-*.log (each
says in its header how it was made): bars written by tqdm itself with vLLM's own bar
descriptions, metrics tables by vLLM 0.26.0's `CUDAGraphLogging.generate_metric_table()`,
engine lines by `str(VllmConfig)` of that release (../shared/oracle), the rest either a real
log's lines or vLLM's format strings.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from cgplan.api.logs import compare_with_config
from cgplan.core.logs.parse import LogError, MetricsRow, MetricsTable, ProgressBar, parse_log
from cgplan.core.vllm.log_formats import log_format_for
from cgplan.core.vllm.releases import LATEST_VERSION, SUPPORTED_VERSIONS
from cgplan.io.logs import parse_file, read_log
from cgplan.io.schema.logs import FIGURE_FIELDS
from tests.cli_helpers import run, unwrap
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
LOGS = ROOT / "tests" / "data" / "logs"
REPORTS = ROOT / "benchmarks" / "results" / "h200"
CONFIGS = ROOT / "configs" / "gpu"
CORPUS = ROOT / "tests" / "data" / "corpus"

REAL = sorted(p.name.removesuffix("-vllm.log.gz") for p in LOGS.glob("*-vllm.log.gz"))
"""Every recorded vLLM run (the -vllm-timing* and -torch logs are of other runs)."""
CAPTURED_AS = {"med-llama-mns256-optimized": "med-llama-mns256-optimized-captured"}
"""Configs regenerated since their capture (issue 13 item 6): the log holds the ladder captured then."""
REFUSED = "tiny-eagle-dyn-v2"
"""Its engine crashed during capture; the planner refuses the config for 0.26.0."""


def report(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((REPORTS / f"{name}-vllm.json").read_text())
    return doc


def test_real_logs_found() -> None:
    assert len(REAL) >= 9 and REFUSED in REAL
    assert all((CONFIGS / f"{n}.yaml").exists() and (REPORTS / f"{n}-vllm.json").exists() for n in REAL)


# --------------------------------------------------------------------------- real logs


@pytest.mark.parametrize("name", REAL)
def test_real_log_figures_match_capture_report(name: str) -> None:
    parsed = parse_file(LOGS / f"{name}-vllm.log.gz")
    rep = report(name)
    measured = rep["measured"]
    figures = {k: getattr(parsed, k) for k in FIGURE_FIELDS}
    assert parsed.vllm_version == rep["environment"]["vllm"] == "0.26.0"
    assert parsed.log_format == "0.26.0"
    if rep["status"] == "complete":
        assert figures == {k: measured["vllm"][k] for k in FIGURE_FIELDS}
        assert parsed.model_runner == measured["model_runner"]
        assert parsed.final_cudagraph_mode == measured["cudagraph_mode"]
        assert parsed.capture_status == "finished" and parsed.engine_ready
    else:
        # The engine failed: the report kept none of vLLM's figures; the log has the KV sizing.
        assert all(v is None for v in measured["vllm"].values())
        assert parsed.capture_took_gib is None and parsed.capture_status == "incomplete"
        assert parsed.kv_cache_tokens == 7_283_104
    assert parsed.bars == () and parsed.metrics == ()
    plan = rep["plan"]
    assert parsed.num_speculative_tokens == (plan["uniform_decode_query_len"] - 1 or None)
    if parsed.profiling is not None:  # V1 only
        assert plan["model_runner"] == "v1"
        counts = plan["graph_counts"]["target"]
        assert {m: n for m, n, _ in parsed.profiling} == {m: n for m, n in counts.items() if n}


@pytest.mark.parametrize("name", REAL)
def test_real_log_figures_match_capture_backend(name: str) -> None:
    """The same figures as the capture backend's own parser reads from the same lines."""
    from cgplan.gpu.vllm_backend import vllm_figures

    text = read_log(LOGS / f"{name}-vllm.log.gz")
    theirs = vllm_figures(text.splitlines(), None)
    parsed = parse_log(text)
    assert {k: getattr(parsed, k) for k in FIGURE_FIELDS} == {k: getattr(theirs, k) for k in FIGURE_FIELDS}


@pytest.mark.parametrize("name", REAL)
def test_report_log_lines_parse_too(name: str) -> None:
    """The capture report's `vllm_log` ("LEVEL logger: message" lines) gives the same mode and runner."""
    rep = report(name)
    parsed = parse_log("\n".join(rep["vllm_log"]))
    full = parse_file(LOGS / f"{name}-vllm.log.gz")
    assert parsed.vllm_version == "0.26.0"
    assert (parsed.cudagraph_mode, parsed.capture_sizes) == (full.cudagraph_mode, full.capture_sizes)
    if full.model_runner == "v1":  # the fallback warning is among the kept lines
        assert parsed.model_runner == "v1"


@pytest.mark.parametrize("name", [n for n in REAL if n != REFUSED])
def test_real_log_agrees_with_plan(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        monkeypatch,
        capsys,
        "logs",
        LOGS / f"{name}-vllm.log.gz",
        "--config",
        CONFIGS / f"{CAPTURED_AS.get(name, name)}.yaml",
        "--json",
    )
    doc = json.loads(out)
    cmp = doc["comparison"]
    assert (code, cmp["disagreements"], err) == (0, [], "")
    assert cmp["agrees"] and cmp["plan_refused"] is None and cmp["vllm_version"] == "0.26.0"
    names = {c["name"] for c in cmp["checks"]}
    assert {
        "model runner",
        "cudagraph_mode (engine)",
        "cudagraph_mode (final)",
        "capture sizes (engine)",
        "max capture size (engine)",
        "capture finished",
    } <= names
    assert all(c["agrees"] for c in cmp["checks"])


def test_v1_rounding_is_applied_to_engine_line_sizes() -> None:
    """The engine line shows V1's sizes before rounding to multiples of 1 + K (51 → 30 for K=16)."""
    parsed = parse_file(LOGS / "tiny-ngram-k16-vllm.log.gz")
    assert parsed.capture_sizes is not None and len(parsed.capture_sizes) == 51
    assert parsed.profiling == (("PIECEWISE", 30, 510), ("FULL", 30, 510))
    cmp = compare_with_config(parsed, CONFIGS / "tiny-ngram-k16.yaml")
    sizes = next(c for c in cmp.checks if c.name == "capture sizes (engine)")
    assert sizes.agrees and len(sizes.plan) == 30 and "rounds them to multiples of 17" in sizes.detail


def test_dynamic_sd_log() -> None:
    parsed = parse_file(LOGS / "tiny-ngram-dyn-vllm.log.gz")
    assert parsed.dynamic_sd_schedule == ((1, 8, 8), (9, 32, 4), (33, 64, 2))
    assert [e.kind for e in parsed.events] == ["runner_fallback", "dynamic_sd_override"]
    assert parsed.events[1].value("from") == "FULL_AND_PIECEWISE"
    assert parsed.cudagraph_mode == parsed.final_cudagraph_mode == "PIECEWISE"
    assert parsed.actual_vs_estimated == (
        "CUDA graph pool memory: 0.08 GiB (actual), 0.15 GiB (estimated), difference: 0.07 GiB (83.7%)."
    )
    assert (parsed.pool_actual_gib, parsed.pool_estimated_gib, parsed.pool_difference_pct) == (
        0.08,
        0.15,
        83.7,
    )
    cmp = compare_with_config(parsed, CONFIGS / "tiny-ngram-dyn.yaml")
    assert cmp.agrees
    lookup = next(c for c in cmp.checks if c.name == "dynamic-SD lookup")
    assert lookup.log == lookup.plan == [[1, 8, 8], [9, 32, 4], [33, 64, 2]]


def test_refused_config_crashed_engine(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM 0.26.0 crashed capturing tiny-eagle-dyn-v2; the planner refuses it: say both, exit 1."""
    log, config = LOGS / f"{REFUSED}-vllm.log.gz", CONFIGS / f"{REFUSED}.yaml"
    code, out, _ = run(monkeypatch, capsys, "logs", log, "--config", config, "--json")
    doc = json.loads(out)
    assert code == 1
    cmp = doc["comparison"]
    assert (
        "fails an assertion (AssertionError) while capturing the drafter's decode CUDA graphs"
        in cmp["plan_refused"]
    )
    assert cmp["agrees"] is False and cmp["disagreements"] == []  # the log is consistent with the refusal
    assert doc["capture_status"] == "incomplete"
    assert doc["last_capture_activity"] == "Capturing model for speculator..."
    assert doc["figures"]["capture_took_gib"] is None
    code, out, _ = run(monkeypatch, capsys, "logs", log, "--config", config)
    assert code == 1
    assert "the plan refuses this config:" in out
    assert "capture incomplete, last capture line: 'Capturing model for speculator...'" in out
    assert "consistent with the refusal" in out


# --------------------------------------------------------------------------- synthetic fixtures

SIZES_51 = (1, 2, 4, 8, *range(16, 257, 8), *range(272, 513, 16))


def test_synthetic_v1_bars_and_metrics() -> None:
    parsed = parse_file(LOGS / "synthetic-v1-ngram-k16-bars.log")
    assert parsed.model_runner == "v1"
    assert parsed.bars == (
        ProgressBar(
            "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)",
            "target",
            "PIECEWISE",
            "v1",
            30,
            30,
            "capture",
        ),
        ProgressBar("Capturing CUDA graphs (decode, FULL)", "target", "FULL", "v1", 30, 30, "capture"),
    )
    assert parsed.graph_counts() == {"target": {"PIECEWISE": [30], "FULL": [30]}}
    assert parsed.metrics == (
        MetricsTable(
            "FULL_AND_PIECEWISE",
            SIZES_51,
            (
                MetricsRow(17, 17, 0, "FULL", 40),
                MetricsRow(51, 51, 0, "FULL", 12),
                MetricsRow(100, 102, 2, "PIECEWISE", 3),
                MetricsRow(600, 600, 0, "NONE", 1),
            ),
        ),
    )
    assert parsed.capture_took_gib == 0.11  # the bars before it do not hide the line
    cmp = compare_with_config(parsed, CONFIGS / "tiny-ngram-k16.yaml")
    assert cmp.agrees, cmp.disagreements
    assert {c.name for c in cmp.checks} >= {
        "bars: target PIECEWISE",
        "bars: target FULL",
        "metrics table 1: mode",
        "metrics table 1: capture sizes",  # the engine line's sizes: V1 rounds them later
        "metrics table 1: rows",
    }


def test_synthetic_v2_bars_and_metrics() -> None:
    parsed = parse_file(LOGS / "synthetic-v2-eagle-k16-bars.log")
    assert [(b.desc, b.manager, b.mode, b.done, b.total) for b in parsed.bars] == [
        ("Capturing CUDA graphs (PIECEWISE)", "target", "PIECEWISE", 51, 51),
        ("Capturing CUDA graphs (FULL)", "target", "FULL", 30, 30),
        ("Capturing prefill CUDA graphs (PIECEWISE)", "drafter_prefill", "PIECEWISE", 51, 51),
        ("Capturing prefill CUDA graphs (FULL)", "drafter_prefill", "FULL", 30, 30),
        ("Capturing decode CUDA graphs (FULL)", "drafter_decode", "FULL", 7, 7),
    ]
    assert {b.runner for b in parsed.bars} == {"v2"} and {b.phase for b in parsed.bars} == {"capture"}
    assert [t.rows for t in parsed.metrics] == [
        (
            MetricsRow(17, 17, 0, "FULL", 25),
            MetricsRow(170, 170, 0, "FULL", 4),
            MetricsRow(527, 527, 0, "NONE", 2),
            MetricsRow(300, 304, 4, "PIECEWISE", 1),
        ),
        (MetricsRow(34, 34, 0, "FULL", 9),),
    ]
    assert all(t.mode == "FULL_AND_PIECEWISE" and t.capture_sizes == SIZES_51 for t in parsed.metrics)
    cmp = compare_with_config(parsed, CONFIGS / "tiny-eagle-k16.yaml")
    assert cmp.agrees, cmp.disagreements
    bars = {c.name: (c.log, c.plan) for c in cmp.checks if c.name.startswith("bars:")}
    assert bars == {
        "bars: target PIECEWISE": (51, 51),
        "bars: target FULL": (30, 30),
        "bars: drafter_prefill PIECEWISE": (51, 51),
        "bars: drafter_prefill FULL": (30, 30),
        "bars: drafter_decode FULL": (7, 7),
    }


def test_synthetic_033_profiling_capture_kept_apart() -> None:
    """0.29+ V2 captures once to profile memory (FULL graphs sampled) before the real capture."""
    parsed = parse_file(LOGS / "synthetic-v0.33.0-nospec-profiling.log")
    assert (parsed.vllm_version, parsed.log_format) == ("0.33.0", "0.30.0")
    assert [(b.mode, b.total, b.phase) for b in parsed.bars] == [
        ("PIECEWISE", 11, "profiling"),
        ("FULL", 2, "profiling"),
        ("PIECEWISE", 11, "capture"),
        ("FULL", 7, "capture"),
    ]
    assert parsed.graph_counts() == {"target": {"PIECEWISE": [11], "FULL": [7]}}
    assert parsed.profiling_capture == (1.0, 0.06)
    assert (parsed.capture_finished_secs, parsed.capture_took_gib) == (1.0, 0.09)
    assert parsed.kv_cache_tokens == 9_096_496 and parsed.available_kv_cache_gib == 69.4
    cmp = compare_with_config(parsed, CONFIGS / "tiny-nospec.yaml")
    assert cmp.vllm_version == "0.33.0" and cmp.agrees, cmp.disagreements


def test_synthetic_attention_downgrade() -> None:
    parsed = parse_file(LOGS / "synthetic-v2-ampere-downgrade.log")
    assert (parsed.cudagraph_mode, parsed.final_cudagraph_mode) == ("FULL", "FULL_AND_PIECEWISE")
    (event,) = parsed.events
    assert event.kind == "mode_downgrade" and event.value("backend") == "FlashAttentionBackend"
    assert event.value("support") == "AttentionCGSupport.UNIFORM_BATCH"
    cmp = compare_with_config(parsed, CORPUS / "ampere-mode-full.yaml")
    assert cmp.vllm_version == "0.26.0" and cmp.agrees, cmp.disagreements
    check = next(c for c in cmp.checks if c.name == "warning: mode downgrade")
    assert check.log == check.plan == [{"from": "FULL", "to": "FULL_AND_PIECEWISE"}]


def test_synthetic_truncation(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    log = LOGS / "synthetic-v2-truncated-max.log"
    parsed = parse_file(log)
    assert [(e.kind, e.value("size")) for e in parsed.events] == [("truncated_max", 592)]
    assert parsed.capture_sizes is not None and len(parsed.capture_sizes) == 56
    assert parsed.bars == () and parsed.capture_status == "finished"
    assert compare_with_config(parsed, CORPUS / "maxcap600-eagle-k16-mns32.yaml").agrees
    # Against a config that truncates nothing: the warning, the sizes and the max all disagree.
    code, out, _ = run(
        monkeypatch, capsys, "logs", log, "--config", CONFIGS / "tiny-eagle-k16.yaml", "--json"
    )
    assert code == 1
    assert json.loads(out)["comparison"]["disagreements"] == [
        "capture sizes (engine)",
        "max capture size (engine)",
        "warning: truncated max",
    ]


def test_disagreement_flagged(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A log claiming capture sizes [1, 2, 4, 8, 16, 32] against a config planned with 1..64."""
    log, config = LOGS / "synthetic-disagree-sizes.log", CONFIGS / "tiny-nospec.yaml"
    code, out, err = run(monkeypatch, capsys, "logs", log, "--config", config, "--json")
    assert code == 1 and err == ""
    cmp = json.loads(out)["comparison"]
    assert cmp["disagreements"] == [
        "capture sizes (engine)",
        "max capture size (engine)",
        "bars: target PIECEWISE",
        "bars: target FULL",
    ]
    by_name = {c["name"]: c for c in cmp["checks"]}
    assert by_name["capture sizes (engine)"]["log"] == [1, 2, 4, 8, 16, 32]
    assert by_name["capture sizes (engine)"]["plan"] == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
    assert (by_name["bars: target FULL"]["log"], by_name["bars: target FULL"]["plan"]) == (6, 7)
    code, out, _ = run(monkeypatch, capsys, "logs", log, "--config", config)
    assert code == 1
    assert "4 disagreement(s) with the plan:" in out
    assert (
        "  - capture sizes (engine): log [1, 2, 4, 8, 16, 32]; plan [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]"
        in out
    )


# --------------------------------------------------------------------------- parser details

ENGINE_026 = (
    "INFO 11-30 05:00:00 [core.py:116] Initializing a V1 LLM engine (v0.26.0) with config: "
    "model='m', speculative_config=None, tensor_parallel_size=1, enforce_eager=False, "
    "compilation_config={'mode': <CompilationMode.VLLM_COMPILE: 3>, 'cache_dir': 'a{b}[c]', "
    "'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, "
    "'cudagraph_capture_sizes': [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64], "
    "'max_cudagraph_capture_size': 64, 'decoder_replay_cudagraph_capture_sizes': [7]}\n"
)


def _bar(desc: str, total: int, start: int = 0, upto: int | None = None) -> str:
    """tqdm's output for items `start..upto` of a loop over `total` (mininterval=0, miniters=1).

    A finished bar ends as tqdm's `close()` leaves it: the final state drawn again, then a newline.
    """
    last = total if upto is None else upto
    states = [
        f"\r{desc}: {100 * n // total:3d}%|{'#' * (10 * n // total):<10}| {n}/{total} [00:00<00:00]"
        for n in range(start, last + 1)
    ]
    if last == total:
        states.append(states[-1] + "\n")
    return "".join(states)


def test_engine_line_fields() -> None:
    parsed = parse_log(ENGINE_026)
    assert parsed.capture_sizes == (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64)
    assert (parsed.cudagraph_mode, parsed.max_capture_size, parsed.compilation_mode) == (
        "FULL_AND_PIECEWISE",
        64,
        "VLLM_COMPILE",
    )
    assert (parsed.speculative_method, parsed.tensor_parallel_size, parsed.enforce_eager) == (None, 1, False)
    assert parsed.capture_status == "not reached" and parsed.model_runner is None


def test_bars_redraws_repeats_and_interleaved_lines() -> None:
    text = (
        ENGINE_026
        + "INFO 11-30 05:00:01 [gpu_worker.py:378] Using V2 Model Runner\n"
        + "INFO 11-30 05:00:02 [gpu_worker.py:560] Available KV cache memory: 10.00 GiB\n"
        # a log line glued onto a bar's redraw (stdout and stderr into one file)
        + _bar("Capturing CUDA graphs (PIECEWISE)", 11, upto=4)
        + "INFO 11-30 05:00:03 [monitor.py:81] Initial profiling/warmup run took 0.01 s\n"
        + _bar("Capturing CUDA graphs (PIECEWISE)", 11, start=5)
        + _bar("Capturing CUDA graphs (FULL)", 7)
        # the same bar twice in a row (a second capture of one manager)
        + _bar("Capturing decode CUDA graphs (FULL)", 3)
        + _bar("Capturing decode CUDA graphs (FULL)", 3)
        + "\rCapturing prefill CUDA graphs (FULL):   0%|          | 0/5 [00:00<?, ?it/s]"
        + "\rCapturing prefill CUDA graphs (FULL):  40%|####      | 2/5 [00:00<00:00]"
        + "INFO 11-30 05:00:04 [model_runner.py:747] Graph capturing finished in 3 secs, took 0.25 GiB\n"
    )
    parsed = parse_log(text)
    assert [(b.desc, b.done, b.total) for b in parsed.bars] == [
        ("Capturing CUDA graphs (PIECEWISE)", 11, 11),
        ("Capturing CUDA graphs (FULL)", 7, 7),
        ("Capturing decode CUDA graphs (FULL)", 3, 3),
        ("Capturing decode CUDA graphs (FULL)", 3, 3),
        ("Capturing prefill CUDA graphs (FULL)", 2, 5),
    ]
    assert parsed.graph_counts()["drafter_decode"] == {"FULL": [3, 3]}
    assert parsed.capture_took_gib == 0.25 and parsed.model_runner == "v2"


def test_metrics_table_variants() -> None:
    """A table without vLLM's per-line prefix (e.g. a logger handler of one's own), mode enum-qualified."""
    table = (
        "**CUDAGraph Config Settings:**\n\n- Mode: CUDAGraphMode.PIECEWISE\n- Capture sizes: [1, 2, 4]\n\n"
        "**CUDAGraph Stats:**\n\n| Unpadded Tokens | Padded Tokens | Num Paddings | Runtime Mode | Count |\n"
        "|-----------------|---------------|--------------|--------------|-------|\n"
        "| 3               | 4             | 1            | PIECEWISE    | 2     |\n"
        "\nINFO 11-30 05:00:09 [loggers.py:200] Engine 000: Avg prompt throughput: 1.0 tokens/s\n"
    )
    parsed = parse_log(ENGINE_026 + table)
    assert parsed.metrics == (MetricsTable("PIECEWISE", (1, 2, 4), (MetricsRow(3, 4, 1, "PIECEWISE", 2),)),)


def test_metrics_row_without_planned_graph_disagrees() -> None:
    text = (LOGS / "synthetic-v2-eagle-k16-bars.log").read_text()
    text = text.replace("| 300             | 304           | 4 ", "| 300             | 303           | 3 ")
    cmp = compare_with_config(parse_log(text, "edited"), CONFIGS / "tiny-eagle-k16.yaml")
    (bad,) = cmp.disagreements
    assert bad.name == "metrics table 1: rows" and bad.log == ["300→303 PIECEWISE: no such graph planned"]


def test_last_engine_of_several_is_read() -> None:
    first = ENGINE_026.replace("'max_cudagraph_capture_size': 64", "'max_cudagraph_capture_size': 32")
    text = (
        first
        + "INFO 11-30 05:00:05 [core.py:340] init engine (profile, create kv cache, warmup model) took 1 s\n"
        + "WARNING 11-30 05:01:00 [vllm.py:1875] Truncating max_cudagraph_capture_size to 64\n"
        + ENGINE_026
    )
    parsed = parse_log(text)
    assert parsed.engine_starts == 2 and parsed.max_capture_size == 64
    assert [e.kind for e in parsed.events] == ["truncated_max"]


def test_log_format_table() -> None:
    assert log_format_for("0.26.0").kv_tokens.search("GPU KV cache size: 1,024 tokens")
    assert log_format_for("0.33.0").kv_tokens.search("XPU KV cache size: 1,024 tokens, Maximum concurrency")
    assert not log_format_for("0.26.0").v2_profiling_capture and log_format_for("0.29.0").v2_profiling_capture
    assert log_format_for("0.34.0.dev1+g123").since == "0.30.0"


def test_json_without_config(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(monkeypatch, capsys, "logs", LOGS / "synthetic-v2-eagle-k16-bars.log", "--json")
    doc = json.loads(out)
    assert code == 0 and (doc["schema_version"], doc["kind"], doc["comparison"]) == (1, "logs", None)
    assert doc["graphs"] == {
        "target": {"PIECEWISE": 51, "FULL": 30},
        "drafter_prefill": {"PIECEWISE": 51, "FULL": 30},
        "drafter_decode": {"FULL": 7},
    }
    assert doc["speculative"] == {
        "method": "eagle",
        "num_speculative_tokens": 16,
        "num_speculative_tokens_per_batch_size": None,
    }
    assert doc["figures"]["kv_cache_tokens"] == 7_283_104


def test_text_report_plain_and_deterministic(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("logs", LOGS / "synthetic-v1-ngram-k16-bars.log", "--config", CONFIGS / "tiny-ngram-k16.yaml")
    code, out, _ = run(monkeypatch, capsys, *args)
    assert code == 0 and "\x1b[" not in out
    assert unwrap(out)[0] == (
        f"cgplan logs {LOGS / 'synthetic-v1-ngram-k16-bars.log'} · vLLM 0.26.0 · model runner V1"
    )
    assert "Capturing CUDA graphs (decode, FULL)                      30/30  capture" in out
    assert out.rstrip().endswith("checks agree with the plan")
    assert run(monkeypatch, capsys, *args)[1] == out


def test_unknown_release(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "new.log"
    log.write_text(ENGINE_026.replace("(v0.26.0)", "(v0.40.0)"))
    assert run(monkeypatch, capsys, "logs", log)[0] == 0  # reading needs no rules
    code, out, err = run(monkeypatch, capsys, "logs", log, "--config", CONFIGS / "tiny-nospec.yaml")
    assert code == 2 and out == ""
    assert err == (
        f"cgplan: error: {log}: the log is from vLLM 0.40.0; cgplan has rules for "
        f"{', '.join(SUPPORTED_VERSIONS)} (pass --vllm-version to plan under one of them)\n"
    )
    code, out, _ = run(
        monkeypatch,
        capsys,
        "logs",
        log,
        "--config",
        CONFIGS / "tiny-nospec.yaml",
        "--vllm-version",
        LATEST_VERSION,
    )
    assert code == 0


# --------------------------------------------------------------------------- bad input


def _bad_inputs(tmp: Path) -> list[tuple[Path, str]]:
    (tmp / "empty.log").write_bytes(b"")
    (tmp / "blank.log").write_text("\n  \n")
    (tmp / "junk.bin").write_bytes(bytes(range(256)) * 16)
    (tmp / "text.log").write_text("hello\nthis is not a vLLM log\n")
    (tmp / "broken.log.gz").write_bytes(gzip.compress(b"INFO something\n" * 100)[:40])
    (tmp / "adir").mkdir()
    return [
        (tmp / "missing.log", "no such file"),
        (tmp / "empty.log", "empty file, not a vLLM log"),
        (tmp / "blank.log", "empty file, not a vLLM log"),
        (tmp / "junk.bin", "binary data, not a vLLM log"),
        (tmp / "text.log", "not a vLLM log (no engine line"),
        (tmp / "broken.log.gz", "corrupt gzip file"),
        (tmp / "adir", "is a folder, not a log file"),
        (LOGS / "med-llama-mns256-torch.log.gz", "not a vLLM log"),  # cgplan's torch-backend summary only
    ]


@pytest.mark.parametrize("case", range(8))
def test_bad_input_exits_2(
    case: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path, message = _bad_inputs(tmp_path)[case]
    code, out, err = run(monkeypatch, capsys, "logs", path, "--config", CONFIGS / "tiny-nospec.yaml")
    assert code == 2 and out == ""
    assert err.startswith(f"cgplan: error: {path}: ") and message in err
    assert err.count("\n") == 1
    with pytest.raises(LogError):
        parse_file(path)


def test_a_patch_release_log_is_planned_with_its_release_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # before: planned under 0.26.0 silently (plan prints this note; logs --config did not)
    text = gzip.decompress((LOGS / "med-llama-mns256-vllm.log.gz").read_bytes()).decode()
    patched = tmp_path / "patch.log"
    patched.write_text(text.replace("vLLM 0.26.0", "vLLM 0.26.1").replace("v0.26.0", "v0.26.1"))
    parsed = parse_file(patched)
    assert parsed.vllm_version == "0.26.1"
    cmp = compare_with_config(parsed, CONFIGS / "med-llama-mns256.yaml")
    assert cmp.vllm_version == "0.26.0" and cmp.agrees, cmp.disagreements
    assert any("0.26.1 planned with 0.26.0's rules" in n for n in cmp.notes), cmp.notes
    code, out, _ = run(
        monkeypatch, capsys, "logs", str(patched), "--config", str(CONFIGS / "med-llama-mns256.yaml")
    )
    assert code == 0 and "note: vLLM 0.26.1 planned with 0.26.0's rules" in " ".join(out.split())
    code, out, _ = run(
        monkeypatch,
        capsys,
        "logs",
        str(patched),
        "--config",
        str(CONFIGS / "med-llama-mns256.yaml"),
        "--json",
    )
    assert code == 0 and any("0.26.1" in n for n in json.loads(out)["comparison"]["notes"])


def test_platform_option_plans_the_config_for_another_gpu(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The A100 log's mode downgrade is what the plan predicts on ampere; planned for hopper
    # (--platform, as `plan --platform`), the plan keeps FULL and the check disagrees.
    log, config = LOGS / "synthetic-v2-ampere-downgrade.log", CORPUS / "ampere-mode-full.yaml"
    code, _, _ = run(monkeypatch, capsys, "logs", str(log), "--config", str(config))
    assert code == 0
    code, out, _ = run(
        monkeypatch, capsys, "logs", str(log), "--config", str(config), "--platform", "hopper", "--json"
    )
    assert code == 1
    bad = [c["name"] for c in json.loads(out)["comparison"]["checks"] if not c["agrees"]]
    assert "warning: mode downgrade" in bad, bad


def test_a_bad_platform_is_one_located_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log, config = LOGS / "synthetic-v2-ampere-downgrade.log", CORPUS / "ampere-mode-full.yaml"
    args = ("logs", str(log), "--config", str(config), "--platform", "bogus")
    code, out, err = run(monkeypatch, capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith("cgplan: error: --platform: unknown platform (got 'bogus'; expected one of hopper")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
