"""Every field of the JSON contract against vLLM's own code, for every recorded config.

tests/data/oracle/<config>.<version>.json hold what the oracle (vLLM's real config,
dispatcher and graph-manager code, run by scripts/record_golden.py) computed for
tests/data/corpus/<config>.yaml. Nothing here is typed by hand.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from cgplan.core.plan.build import build_plan
from cgplan.core.vllm.releases import SUPPORTED_VERSIONS
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides, load_config
from cgplan.io.schema.plan import plan_to_dict
from tests.oracle_expect import expected
from tests.paths import TESTS_DIR

DATA = TESTS_DIR / "data"
RECORDS = sorted((DATA / "oracle").glob("*.json.gz"))


def _load(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    doc = json.loads(gzip.decompress(path.read_bytes()))
    exp = expected(doc)
    # The engine's Scheduler validates the dynamic-SD schedule at start in every
    # release, so a schedule vLLM's own lookup rejects means vLLM refuses to start
    # even where the config stage (all the oracle reaches) let it through.
    dyn = doc.get("dynamic_sd") or {}
    if dyn.get("error"):
        exp = {"error": dyn["error"]}
    rec = doc["_recorded"]
    try:  # a key vLLM refuses is refused while reading the config (compilation_config.level)
        cfg = load_config(DATA / "corpus" / rec["corpus_file"], Overrides(vllm_version=rec["vllm_version"]))
        got = plan_to_dict(build_plan(cfg.input, with_fixes=False))
    except ConfigError as e:
        got = {"error": e.message}
    return exp, got


def test_corpus_is_large_enough() -> None:
    configs = {p.name.split(".")[0] for p in RECORDS}
    assert len(RECORDS) == len(configs) * len(SUPPORTED_VERSIONS)  # every config under every release
    versions = {".".join(p.name.split(".")[1:4]) for p in RECORDS}
    assert len(configs) >= 80
    assert versions == set(SUPPORTED_VERSIONS)  # a new release needs its recording run (make golden)


@pytest.mark.parametrize("record", RECORDS, ids=[p.name.removesuffix(".json.gz") for p in RECORDS])
def test_plan_matches_vllm(record: Path) -> None:
    exp, got = _load(record)
    if "error" in exp:
        assert "error" in got, f"vLLM refuses this config ({exp['error'][:200]}), cgplan planned it"
        return
    assert "error" not in got, f"vLLM accepts this config, cgplan refused: {got.get('error')}"
    for key in (
        "vllm_version",
        "model_runner",
        "cudagraph_mode",
        "capture_sizes",
        "max_capture_size",
        "dynamic_sd",
        "max_num_seqs",
        "max_num_batched_tokens",
    ):
        assert got[key] == exp[key], key
    for key in ("attention_backend", "attention_cudagraph_support"):
        if exp[key] is not None:
            assert got[key] == exp[key], key
    assert got["graphs"] == exp["graphs"]
    for query_len, rows in exp["uniform_decode"].items():
        assert got["uniform_decode"][query_len] == rows, f"uniform decode, query_len {query_len}"
    assert got["mixed"] == exp["mixed"]
    if "uniform_decode_lora1" in exp:  # a decode batch with one LoRA adapter active
        assert got.get("uniform_decode_lora1") == exp["uniform_decode_lora1"]
