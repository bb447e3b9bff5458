"""Parallelism, LoRA, DBO and validation configs against vLLM's own code, release by release (issue 16).

tests/data/oracle-deploy/<config>.<version>.json.gz hold what the project's oracle
(scripts/oracle/oracle.py: vLLM's config, dispatcher and graph-manager code on the CPU) computed
for tests/data/corpus-deploy/<config>.yaml, written by scripts/oracle/make_corpus.py and recorded
with:

    python3 scripts/record_golden.py --venv-root .cache --out-dir tests/data/oracle-deploy \\
        tests/data/corpus-deploy/*.yaml

Field by field as tests/core/vllm/test_golden.py, plus: a config vLLM refuses is refused with vLLM's reason.
"""

from __future__ import annotations

import gzip
import json
import re
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
RECORDS = sorted((DATA / "oracle-deploy").glob("*.json.gz"))
FIELDS = (
    "vllm_version",
    "model_runner",
    "cudagraph_mode",
    "capture_sizes",
    "max_capture_size",
    "dynamic_sd",
    "attention_backend",
    "attention_cudagraph_support",
    "graphs",
    "uniform_decode",
    "mixed",
    "uniform_decode_lora1",
)


def vllm_reason(error: str) -> str:
    """The sentence vLLM raised, without pydantic's wrapping ("1 validation error for X ...")."""
    text = " ".join(error.split())
    text = re.sub(r"^\w+Error: \d+ validation errors? for \w+ ", "", text)
    text = re.sub(r"^(Value error|Assertion failed), ", "", text)
    text = re.sub(r"^\w+Error: ", "", text)
    return text.split(" [type=")[0].strip()


def load(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(what vLLM computed, what cgplan plans) for one record."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    exp = expected(doc)
    dyn = doc.get("dynamic_sd") or {}
    if dyn.get("error"):
        exp = {"error": dyn["error"]}
    rec = doc["_recorded"]
    corpus = DATA / rec.get("corpus_dir", "corpus-deploy") / rec["corpus_file"]
    cfg = load_config(corpus, Overrides(vllm_version=rec["vllm_version"]))
    try:
        got = plan_to_dict(build_plan(cfg.input, with_fixes=False))
    except ConfigError as e:
        got = {"error": e.message}
    return exp, got


def field_agreement(exp: dict[str, Any], got: dict[str, Any]) -> dict[str, bool]:
    """Each compared field → agrees; "accept" for whether both accept (or both refuse)."""
    if "error" in exp or "error" in got:
        return {"accept": ("error" in exp) == ("error" in got)}
    out = {"accept": True}
    for key in FIELDS:
        if key not in exp:
            continue
        if key.startswith("attention") and exp[key] is None:
            continue
        out[key] = got.get(key) == exp[key]
    return out


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
        reason = vllm_reason(exp["error"])[:60]
        assert reason in " ".join(got["error"].split()), (reason, got["error"])
        return
    assert "error" not in got, f"vLLM accepts this config, cgplan refused: {got.get('error')}"
    for key, ok in field_agreement(exp, got).items():
        assert ok, (key, exp.get(key), got.get(key))
