"""A config vLLM refuses is refused with vLLM's whole reason, in vLLM's words, release by release.

The golden tests compare the first clause of a refusal (`REASON_CHARS`, what `cgplan verify` checks);
here every recorded refusal (tests/data/oracle*/, vLLM's own exception text) must appear whole in
cgplan's message, numbers included, so a rule that refuses with the wrong count, limit or release's
wording fails. Only pydantic's wrapping is taken off ("1 validation error for X", "field Value
error, ", the final period). The few refusals cgplan words on purpose otherwise are listed below,
each with why.
"""

from __future__ import annotations

import gzip
import json
import re

import pytest

from cgplan.core.compare.oracle import vllm_answer, vllm_reason
from cgplan.core.plan.build import build_plan
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides, load_config
from tests.paths import TESTS_DIR

DATA = TESTS_DIR / "data"
CORPUS_OF = {"oracle": "corpus", "oracle-deploy": "corpus-deploy", "oracle-boundaries": "corpus-boundaries"}

OWN_WORDS = {
    # pydantic's extra-forbidden error has no sentence of vLLM's: cgplan says which key and why
    "level Unexpected keyword argument": "compilation_config.level, the old name of mode",
    "pass_config.enable_sp Unexpected keyword argument": "the SP pass removed in 0.32.0",
    # the oracle forces the support level through a stand-in backend it names "forced:<LEVEL>";
    # cgplan names the backend a GPU host picks, as vLLM does there
    "CUDAGraphMode.FULL is not supported with forced:": "the oracle's stand-in backend",
    # not vLLM's text: vllm_answer's own refusal of a case the oracle cannot run
    "dspark on model runner V1 (not modelled)": "cgplan does not model it",
}


def _reason(error: str) -> str:
    text = re.sub(r"^[\w.]+ Value error, ", "", vllm_reason(error))
    return text.rstrip(".")


def _refusals(folder: str) -> list[tuple[str, str, str]]:
    """(record, vLLM's reason, cgplan's refusal or "") for every recorded refusal in one folder."""
    out = []
    for path in sorted((DATA / folder).glob("*.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        exp = vllm_answer(doc)
        if "error" not in exp or exp.get("error_source") == "gpu-run":
            continue
        rec = doc["_recorded"]
        corpus = DATA / rec.get("corpus_dir", CORPUS_OF[folder]) / rec["corpus_file"]
        try:
            build_plan(
                load_config(corpus, Overrides(vllm_version=rec["vllm_version"])).input, with_fixes=False
            )
            got = ""
        except ConfigError as e:
            got = " ".join(e.message.split())
        out.append((path.name, _reason(exp["error"]), got))
    return out


@pytest.mark.parametrize("folder", sorted(CORPUS_OF))
def test_every_refusal_carries_vllms_whole_reason(folder: str) -> None:
    refusals = _refusals(folder)
    assert refusals, folder
    whole = 0
    for name, reason, got in refusals:
        assert got, f"{name}: vLLM refuses ({reason[:200]}), cgplan planned it"
        if any(reason.startswith(start) for start in OWN_WORDS):
            continue
        assert reason in got, (name, reason, got)
        whole += 1
    assert whole or all(r.startswith(tuple(OWN_WORDS)) for _, r, _ in refusals), folder
