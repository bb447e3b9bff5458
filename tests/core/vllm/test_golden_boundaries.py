"""Capture sizes on both sides of every boundary, against vLLM's own code (issue 35).

tests/data/corpus-boundaries/<config>.yaml sit one below, at and one above each boundary of
`VllmConfig._set_cudagraph_sizes` (multiples of 8 and 16, the 256 / 512 / 1024 ceilings, the
request-count grid of each decode tier, dynamic-SD tier widths, max_num_batched_tokens as the
maximum, sequence parallelism's multiples of TP and its size heuristic per platform, V1's round-down
to one multiple, V2's microbatched twins of FULL mixed graphs under DBO), written by
scripts/oracle/make_boundaries.py.
tests/data/oracle-boundaries/<config>.<version>.json.gz hold what the oracle (vLLM's config,
dispatcher and graph-manager code on a CPU) computed for them, recorded with

    python3 scripts/record_golden.py --venv-root /work/oracle-venvs --versions 0.26.0 0.29.0 0.31.0 0.33.0 \\
        --out-dir tests/data/oracle-boundaries tests/data/corpus-boundaries/*.yaml

Field by field as tests/core/vllm/test_golden.py, and cgplan's sequence-parallelism note is the
warning vLLM logged.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from cgplan.core.compare.oracle import field_agreement, vllm_answer, vllm_reason
from cgplan.core.plan.build import build_plan
from cgplan.core.vllm.releases import rules_for
from cgplan.core.vllm.resolve import sequence_parallel_on
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides, load_config
from cgplan.io.schema.plan import plan_to_dict
from tests.paths import TESTS_DIR

DATA = TESTS_DIR / "data"
RECORDS = sorted((DATA / "oracle-boundaries").glob("*.json.gz"))


def _load(path: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(the oracle's document, vLLM's answer, cgplan's plan or {"error": ...}) for one record."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    rec = doc["_recorded"]
    cfg = load_config(
        DATA / "corpus-boundaries" / rec["corpus_file"], Overrides(vllm_version=rec["vllm_version"])
    )
    try:
        got = plan_to_dict(build_plan(cfg.input, with_fixes=False))
    except ConfigError as e:
        got = {"error": e.message}
    return doc, vllm_answer(doc), got


def test_every_config_is_recorded() -> None:
    corpus = {p.stem for p in (DATA / "corpus-boundaries").glob("*.yaml")}
    recorded = {p.name.split(".", 1)[0] for p in RECORDS}
    assert len(corpus) >= 60
    assert recorded == corpus


@pytest.mark.parametrize("record", RECORDS, ids=[p.name.removesuffix(".json.gz") for p in RECORDS])
def test_plan_matches_vllm(record: Path) -> None:
    doc, exp, got = _load(record)
    v1_graphs = "error" not in exp and exp["model_runner"] == "v1" and exp["cudagraph_mode"] != "NONE"
    if v1_graphs and doc["config"].get("compilation_mode") in (1, "STOCK_TORCH_COMPILE"):
        # a decision the oracle cannot see (docs/planner.md): V1's load_model compiles with
        # model.compile(fullgraph=True) and returns before any CUDA-graph wrapper, so the mode
        # vLLM keeps in its config (the oracle's answer, which cgplan's note quotes) captures nothing
        rec = doc["_recorded"]
        inp = load_config(
            DATA / "corpus-boundaries" / rec["corpus_file"], Overrides(vllm_version=rec["vllm_version"])
        ).input
        note = next(
            n.message for n in build_plan(inp, with_fixes=False).notes if n.kind == "v1_stock_compile"
        )
        assert f"vLLM keeps cudagraph_mode {exp['cudagraph_mode']} in its config" in note
        assert (got["cudagraph_mode"], got["graphs"]) == ("NONE", {"target": []})
        return
    if "error" in exp:
        assert "error" in got, (
            f"vLLM refuses this config ({vllm_reason(exp['error'])[:200]}), cgplan planned it"
        )
        return
    assert "error" not in got, f"vLLM accepts this config, cgplan refused: {got.get('error')}"
    for key, ok in field_agreement(exp, got).items():
        assert ok, (key, exp.get(key), got.get(key))


SP_WARNING = "are removed because they are not multiple of tp_size"


@pytest.mark.parametrize("folder", ["oracle", "oracle-boundaries"])
def test_sequence_parallel_note_is_vllms_warning(folder: str) -> None:
    """Where the oracle captured vLLM's log (0.26.0-0.30.0 in tests/data/oracle, every release here),
    cgplan notes the sizes sequence parallelism removes exactly when vLLM warns, in its words."""
    corpus_dir = {"oracle": "corpus", "oracle-boundaries": "corpus-boundaries"}[folder]
    compared = 0
    for path in sorted((DATA / folder).glob("sp-*.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        if "error" in vllm_answer(doc) or not doc.get("log"):
            continue
        rec = doc["_recorded"]
        cfg = load_config(DATA / corpus_dir / rec["corpus_file"], Overrides(vllm_version=rec["vllm_version"]))
        notes = [n.message for n in build_plan(cfg.input, with_fixes=False).notes if n.kind == "sp_filter"]
        logged = [line.split(": ", 1)[1] for line in doc["log"] if SP_WARNING in line]
        assert notes == logged, path.name
        compared += 1
    assert compared >= 5, compared


SP_HEURISTIC_WARNING = "Model hidden_size too small for the SP threshold heuristic, disabling."


def test_sequence_parallel_heuristic_is_vllms() -> None:
    """`pass_config.enable_sp` without `sp_min_token_num` (<= 0.31): whether SP stays on is vLLM's
    `get_sequence_parallelism_threshold` (SM 9.0 and the SM10x family, hidden_size at least 8192), as
    the oracle recorded it after vLLM's checks (`config.enable_sp`), on four platforms at hidden sizes
    8128 and 8192; cgplan notes vLLM's warning exactly where vLLM logged it."""
    seen: dict[str, set[bool]] = {}
    for path in sorted((DATA / "oracle-boundaries").glob("sp-heur-*.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        if "error" in vllm_answer(doc):
            continue  # 0.32.0+: no enable_sp (test_plan_matches_vllm holds the refusal)
        rec = doc["_recorded"]
        inp = load_config(
            DATA / "corpus-boundaries" / rec["corpus_file"], Overrides(vllm_version=rec["vllm_version"])
        ).input
        notes: list[Any] = []
        on = sequence_parallel_on(inp, rules_for(rec["vllm_version"]), notes)
        assert on is doc["config"]["enable_sp"], path.name
        logged = any(SP_HEURISTIC_WARNING in line for line in doc["log"])
        assert logged == any(SP_HEURISTIC_WARNING in n.message for n in notes), path.name
        platform = rec["corpus_file"].rsplit("-h", 1)[0].removeprefix("sp-heur-")
        seen.setdefault(platform, set()).add(on)
    # the corpus reaches both sides on the platforms with a threshold, and the others
    assert seen["hopper"] == seen["blackwell"] == {True, False}, seen
    assert {"ampere", "rtx-blackwell"} <= seen.keys(), seen


@pytest.mark.parametrize("folder", ["oracle", "oracle-boundaries"])
def test_v1_rounding_note_is_vllms_sizes(folder: str) -> None:
    """cgplan's note of V1's rounding (`adjust_cudagraph_sizes_for_spec_decode`) gives the number of
    sizes and the maximum vLLM's runtime ended with (`runtime.cudagraph_capture_sizes`,
    `runtime.max_cudagraph_capture_size`), wherever cgplan notes it for a config vLLM runs on model
    runner V1."""
    corpus_dir = {"oracle": "corpus", "oracle-boundaries": "corpus-boundaries"}[folder]
    compared = 0
    for path in sorted((DATA / folder).glob("*.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        if "error" in vllm_answer(doc) or "v1" not in doc.get("runtime", {}):
            continue
        rec = doc["_recorded"]
        inp = load_config(
            DATA / corpus_dir / rec["corpus_file"], Overrides(vllm_version=rec["vllm_version"])
        ).input
        notes = [n.message for n in build_plan(inp, with_fixes=False).notes if n.kind == "v1_rounding"]
        for note in notes:
            runtime = doc["runtime"]
            sizes, top = runtime["cudagraph_capture_sizes"], runtime["max_cudagraph_capture_size"]
            assert note.endswith(
                f" sizes → {len(sizes)}, max {note.split(', max ')[1].split(' ')[0]} → {top}"
            ), (
                path.name,
                note,
            )
            compared += 1
    assert compared >= 4, compared
