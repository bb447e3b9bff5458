"""Parallelism, LoRA, DBO and validation configs against vLLM's own code, release by release (issue 16).

tests/data/oracle-deploy/<config>.<version>.json.gz hold what the project's oracle
(cgplan/gpu/vllm_oracle.py: vLLM's config, dispatcher and graph-manager code on the CPU) computed
for tests/data/corpus-deploy/<config>.yaml, written by scripts/oracle/make_corpus.py and recorded
with:

    python3 scripts/record_golden.py --venv-root .cache --out-dir tests/data/oracle-deploy \\
        tests/data/corpus-deploy/*.yaml

Field by field as tests/core/vllm/test_golden.py (cgplan/core/compare/oracle.py, what `cgplan verify`
runs), plus: a config vLLM refuses is refused with vLLM's reason.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from cgplan.core.compare.oracle import field_agreement, vllm_answer, vllm_reason
from cgplan.core.plan.build import build_plan
from cgplan.core.vllm.releases import SUPPORTED_VERSIONS
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides, load_config
from cgplan.io.schema.plan import plan_to_dict
from tests.paths import TESTS_DIR

DATA = TESTS_DIR / "data"
RECORDS = sorted((DATA / "oracle-deploy").glob("*.json.gz"))


def load(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(what vLLM computed, what cgplan plans) for one record."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    exp = vllm_answer(doc)
    rec = doc["_recorded"]
    corpus = DATA / rec.get("corpus_dir", "corpus-deploy") / rec["corpus_file"]
    cfg = load_config(corpus, Overrides(vllm_version=rec["vllm_version"]))
    try:
        got = plan_to_dict(build_plan(cfg.input, with_fixes=False))
    except ConfigError as e:
        got = {"error": e.message}
    return exp, got


def test_every_config_is_recorded_for_every_release() -> None:
    corpus = {p.stem for p in (DATA / "corpus-deploy").glob("*.yaml")}
    recorded: dict[str, set[str]] = {}
    for p in RECORDS:
        name, version = p.name.removesuffix(".json.gz").split(".", 1)
        recorded.setdefault(name, set()).add(version)
    assert len(corpus) >= 40
    assert recorded == {name: set(SUPPORTED_VERSIONS) for name in corpus}


@pytest.mark.parametrize("record", RECORDS, ids=[p.name.removesuffix(".json.gz") for p in RECORDS])
def test_plan_matches_vllm(record: Path) -> None:
    exp, got = load(record)
    if "error" in exp:
        assert "error" in got, (
            f"vLLM refuses this config ({vllm_reason(exp['error'])[:200]}), cgplan planned it"
        )
        # vLLM's reason, in vLLM's words (its first clause)
        assert field_agreement(exp, got, reason=True).get("reason", True), (
            vllm_reason(exp["error"]),
            got["error"],
        )
        return
    assert "error" not in got, f"vLLM accepts this config, cgplan refused: {got.get('error')}"
    for key, ok in field_agreement(exp, got).items():
        assert ok, (key, exp.get(key), got.get(key))
