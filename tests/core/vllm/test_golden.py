"""Every field of the JSON contract against vLLM's own code, for every recorded config.

tests/data/oracle/<config>.<version>.json hold what the oracle (vLLM's real config,
dispatcher and graph-manager code, run by scripts/record_golden.py) computed for
tests/data/corpus/<config>.yaml. Nothing here is typed by hand. The comparison is the product's
(cgplan/core/compare/oracle.py, what `cgplan verify` runs).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from cgplan.core.compare.oracle import field_agreement, vllm_answer
from cgplan.core.plan.build import build_plan
from cgplan.core.vllm.releases import SUPPORTED_VERSIONS
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides, load_config
from cgplan.io.schema.plan import plan_to_dict
from tests.paths import TESTS_DIR

DATA = TESTS_DIR / "data"
RECORDS = sorted((DATA / "oracle").glob("*.json.gz"))


def _load(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    doc = json.loads(gzip.decompress(path.read_bytes()))
    exp = vllm_answer(doc)
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
    for key, ok in field_agreement(exp, got).items():
        assert ok, (key, exp.get(key), got.get(key))
