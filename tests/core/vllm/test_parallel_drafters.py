"""DFlash, DSpark and suffix decoding against vLLM's own speculators, field by field (#31).

tests/data/oracle/{dflash,dspark,suffix}-*.json.gz hold what vLLM's `init_speculator` built for the
corpus configs of the same names (cgplan/gpu/vllm_oracle.py `v2_parallel_speculator`, recorded by
scripts/record_golden.py for every supported release): the speculator class, its query length, the
draft attention backend and level `init_cudagraph_manager` was given, and the draft layers' level
the runner's own attention groups report. test_golden.py compares the graphs; this compares the
inputs cgplan derives them from, which the graphs alone do not always show (a SM100 draft takes
FLASH_ATTN where both backends would graph it alike).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from cgplan.core.model.modes import Mode
from cgplan.core.plan.build import build_plan
from cgplan.core.vllm import parallel_draft
from cgplan.core.vllm.releases import rules_for
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides, load_config
from tests.paths import ROOT_DIR, TESTS_DIR

DATA = TESTS_DIR / "data"
# tests/data/oracle-boundaries adds the draft configs of scripts/oracle/make_boundaries.py (a DFlash
# draft's `is_causal`, read from 0.28.0) for four releases
RECORDS = sorted(
    p
    for folder in ("oracle", "oracle-boundaries")
    for p in (DATA / folder).glob("*.json.gz")
    if p.name.startswith(("dflash-", "dspark-", "suffix-"))
)
CORPUS_OF = {"oracle": "corpus", "oracle-boundaries": "corpus-boundaries"}


def _doc(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    return doc


def test_every_method_is_recorded_on_every_release() -> None:
    from cgplan.core.vllm.releases import SUPPORTED_VERSIONS

    for prefix in ("dflash-", "dspark-", "suffix-"):
        versions = {".".join(p.name.split(".")[1:4]) for p in RECORDS if p.name.startswith(prefix)}
        assert versions == set(SUPPORTED_VERSIONS), prefix


@pytest.mark.parametrize("record", RECORDS, ids=[p.name.removesuffix(".json.gz") for p in RECORDS])
def test_speculator_inputs_match_vllm(record: Path) -> None:
    doc = _doc(record)
    rec = doc["_recorded"]
    corpus = DATA / CORPUS_OF[record.parent.name] / rec["corpus_file"]
    cfg = load_config(corpus, Overrides(vllm_version=rec["vllm_version"]))
    inp, rules = cfg.input, rules_for(rec["vllm_version"])
    speculator = ((doc.get("runtime") or {}).get("v2") or {}).get("speculator")
    if speculator is None:
        return  # refused, V1, or suffix: test_golden.py holds the outcome
    assert inp.speculative is not None
    assert parallel_draft.query_len(inp.speculative, rules) == speculator["num_query_per_req"]
    assert speculator["decode_query_len"] == speculator["num_query_per_req"]
    draft = speculator["draft_attention"]
    assert parallel_draft.draft_backend(inp, rules) == draft["backend"]
    assert parallel_draft.draft_support(inp, rules, as_speculator=True).name == draft["cg_support"]
    assert inp.speculative.parallel_draft is not None
    assert parallel_draft.non_causal(inp.speculative.parallel_draft, rules) == draft["use_non_causal"]
    layers = doc["attention"].get("draft_layers_cg_support")
    if layers is not None:
        assert parallel_draft.draft_support(inp, rules, as_speculator=False).name == layers
    expected_mode = speculator["query"]["cudagraph_mode"]
    got = build_plan(inp, with_fixes=False)
    assert (
        parallel_draft.drafter_mode(
            Mode(got.cudagraph_mode), parallel_draft.draft_support(inp, rules, as_speculator=True)
        ).value
        == expected_mode
    )


def test_suffix_plans_without_drafter_graphs_and_says_what_it_assumed() -> None:
    cfg = load_config(DATA / "corpus" / "suffix-default-k.yaml")
    plan = build_plan(cfg.input, with_fixes=False)
    assert cfg.input.num_speculative_tokens == 24  # suffix_decoding_max_tree_depth's default
    assert plan.model_runner == "v1" and set(plan.graphs) == {"target"}
    kinds = {n.kind for n in plan.notes}
    assert {"suffix_arctic_inference", "runner_fallback"} <= kinds


def test_dynamic_sd_with_a_parallel_drafter_is_refused_by_name(tmp_path: Path) -> None:
    src = (DATA / "corpus" / "dflash-k3-mns64.yaml").read_text()
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        src.replace(
            "  num_speculative_tokens: 3\n",
            "  num_speculative_tokens: 3\n  num_speculative_tokens_per_batch_size: [[1, 8, 3], [9, 64, 1]]\n",
        ).replace("configs/models/", str(ROOT_DIR / "configs" / "models") + "/")
    )
    with pytest.raises(ConfigError, match="dynamic speculative decoding with method dflash: cgplan does not"):
        build_plan(load_config(cfg).input, with_fixes=False)


NEW_CORPUS = ("dflash-", "dspark-", "suffix-", "gb10-", "rtx5090-", "b12x-")
REFUSED = sorted(
    p
    for p in (DATA / "oracle").glob("*.json.gz")
    if p.name.startswith(NEW_CORPUS) and (lambda d: d.get("error") or d.get("runtime_error"))(_doc(p))
)


@pytest.mark.parametrize("record", REFUSED, ids=[p.name.removesuffix(".json.gz") for p in REFUSED])
def test_refusals_are_in_vllms_words(record: Path) -> None:
    """Where vLLM refuses one of these configs, cgplan refuses it with vLLM's own sentence (the
    pydantic wrapper and the exception class aside)."""
    doc = _doc(record)
    said = str(doc.get("error") or doc.get("runtime_error"))
    rec = doc["_recorded"]
    cfg = load_config(DATA / "corpus" / rec["corpus_file"], Overrides(vllm_version=rec["vllm_version"]))
    with pytest.raises(ConfigError) as info:
        build_plan(cfg.input, with_fixes=False)
    problem = info.value.problem
    assert problem in said, (problem, said)
