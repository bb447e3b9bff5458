"""`cgplan logs LOG` without --config (issue 30): the log's own engine arguments planned under its
release, the gaps and fixes printed where that plan agrees with every figure the log states;
negative graph-memory figures kept and flagged (vLLM #44740); "runner unknown" where the log
does not show the runner.

The logs are the recorded ones in tests/data/logs (a real vLLM 0.26.0 engine on the H200); the
recorded model path (/work/main/configs/models/...) is pointed at this checkout's copy of the same
folder, so the tests run wherever the tree is.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from cgplan.api.logs import check_log
from tests.cli_helpers import run, unwrap
from tests.paths import ROOT_DIR

LOGS = ROOT_DIR / "tests/data/logs"
RECORDED_ROOT = "/work/main/"


def _log(tmp_path: Path, name: str, edit: str = "", keep: tuple[str, ...] = ()) -> Path:
    """A recorded log with its model paths in this checkout (and `edit` appended, or only its
    lines that hold one of `keep`)."""
    text = gzip.decompress((LOGS / name).read_bytes()).decode()
    text = text.replace(RECORDED_ROOT, f"{ROOT_DIR}/")
    if keep:
        text = "".join(x for x in text.splitlines(keepends=True) if any(k in x for k in keep))
    path = tmp_path / name.removesuffix(".gz")
    path.write_text(text + edit)
    return path


def test_the_pr50488_gap_from_its_log_alone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """EAGLE K=16, 32 requests, vLLM 0.26.0: the log's own arguments plan to vLLM's own figures
    (every check agrees), and the 31-32 request gap (544 tokens > 512) with its fix is printed."""
    log = _log(tmp_path, "tiny-eagle-k16-vllm.log.gz")
    code, out, _ = run(monkeypatch, capsys, "logs", log)
    lines = unwrap(out)
    assert code == 0
    assert "  all 13 figures of the log agree with this plan" in lines
    assert "  requests 31-32 × 17 tokens → EAGER" in lines
    assert any(line.startswith("verdict: 1 gap (31-32 requests × 17 EAGER) cost ") for line in lines)
    assert any(line.startswith("fix: --cudagraph-capture-sizes ") and line.endswith(" 544") for line in lines)
    assert any("assumed: the GPU: a vLLM log does not name it; planned as hopper" in x for x in lines)
    code, out, _ = run(monkeypatch, capsys, "logs", log, "--json")
    own = json.loads(out)["own_plan"]
    assert own["agrees_with_log"] and own["vllm_version"] == "0.26.0"
    (gap,) = own["plan"]["gaps"]
    assert (gap["from_reqs"], gap["to_reqs"], gap["query_len"], gap["mode"]) == (31, 32, 17, "NONE")
    assert own["plan"]["fixes"][0]["config_change"]["compilation_config.cudagraph_capture_sizes"][-1] == 544


def test_the_fixed_log_has_no_gap(tmp_path: Path) -> None:
    """The same engine with max_cudagraph_capture_size 544 (its recorded log): no gap."""
    own = check_log(_log(tmp_path, "tiny-eagle-k16-max544-vllm.log.gz")).own
    assert own is not None and own.trusted and own.plan is not None and not own.plan.gaps


def test_a_model_that_is_not_here_is_named_with_the_option_that_gives_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = gzip.decompress((LOGS / "tiny-eagle-k16-vllm.log.gz").read_bytes()).decode()
    log = tmp_path / "elsewhere.log"
    log.write_text(text.replace(RECORDED_ROOT, "/nonexistent/"))
    code, out, _ = run(monkeypatch, capsys, "logs", log)
    assert code == 0
    assert (
        "  not planned: the log's model '/nonexistent/configs/models/tiny-llama-v512' is no folder with a "
        "config.json here: give --model-config (the model's config.json or its folder) to plan it"
    ) in unwrap(out)
    code, out, _ = run(
        monkeypatch, capsys, "logs", log, "--model-config", ROOT_DIR / "configs/models/tiny-llama-v512"
    )
    assert code == 0 and "  requests 31-32 × 17 tokens → EAGER" in unwrap(out)


def test_a_plan_that_disagrees_with_the_log_withholds_its_gaps(tmp_path: Path) -> None:
    """Planned under 0.33.0's rules, the 0.26.0 engine's capture sizes are not the plan's (0.29.0+
    append uniform-decode sizes): the plan is not the engine's, so no gap of it is reported."""
    from cgplan.render.logs import render_logs

    log = _log(tmp_path, "tiny-eagle-k16-vllm.log.gz")
    parsed = check_log(log, vllm_version="0.33.0")
    own = parsed.own
    assert own is not None and own.plan is not None and own.comparison is not None
    assert not own.trusted and "capture sizes (engine)" in {c.name for c in own.comparison.disagreements}
    text = render_logs(parsed.parsed, own=parsed.own)
    assert "its gaps are withheld" in text and "EAGER" not in text.split("plan of ")[1]


def test_negative_graph_memory_is_kept_and_flagged(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """vLLM #44740's lines (0.26.0, MTP on a GB10): "Estimated CUDA graph memory: -20.50 GiB total"
    was dropped (the reader took only positive numbers)."""
    edit = (
        "INFO 11-30 05:06:20 [gpu_model_runner.py:5512] Profiling CUDA graph memory: "
        "PIECEWISE=7 (largest=32)\n"
        "INFO 11-30 05:06:20 [gpu_model_runner.py:5580] Estimated CUDA graph memory: -20.50 GiB total\n"
    )
    log = _log(tmp_path, "tiny-eagle-k16-vllm.log.gz", edit)
    code, out, _ = run(monkeypatch, capsys, "logs", log, "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["figures"]["estimated_cudagraph_gib"] == -20.5
    (neg,) = doc["negative_memory"]
    assert neg.startswith("estimated CUDA graph memory -20.50 GiB is negative") and "#44740" in neg
    _, out, _ = run(monkeypatch, capsys, "logs", log)
    assert "  negative graph memory: estimated CUDA graph memory -20.50 GiB is negative" in "\n".join(
        unwrap(out)
    )


def test_a_log_without_a_runner_line_says_runner_unknown(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The args and engine lines only: nothing shows the runner (it was labelled model runner V1)."""
    log = _log(tmp_path, "tiny-eagle-k16-vllm.log.gz", keep=("non-default args", "Initializing a V1 LLM"))
    code, out, _ = run(monkeypatch, capsys, "logs", log)
    lines = unwrap(out)
    assert code == 0 and lines[0].endswith("· vLLM 0.26.0 · runner unknown")
    assert "V1" not in lines[0] and "V2" not in lines[0]
    assert any("assumed: the model runner: the log does not show it (runner unknown)" in x for x in lines)
