"""The warnings vLLM logs that a plan's notes claim to explain, in both directions (issue 35 item 1).

Every recorded config (tests/data/oracle*/: vLLM's own config code, run by
scripts/record_golden.py, with the lines it logged) is planned under its release. For each kind of
note cgplan words as vLLM does, the plan carries the note exactly where vLLM logged its line: a note
vLLM did not log is a decision cgplan invented; a line vLLM logged without the note is a decision
the plan does not explain (a rule table that switched the note off, such as
`breakable_logs_compile_off`, is then caught). Where the note is vLLM's own words, it is one of the
lines vLLM logged.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from cgplan.core.model.types import Plan
from cgplan.core.plan.build import build_plan
from cgplan.errors import CgplanError
from cgplan.io.config import Overrides, load_config
from tests.paths import TESTS_DIR

DATA = TESTS_DIR / "data"
FOLDERS = {"oracle": "corpus", "oracle-boundaries": "corpus-boundaries", "oracle-deploy": "corpus-deploy"}
"""Recorded answers → the corpus they were recorded from (one record per config and release)."""

LOGGED: dict[str, tuple[str, ...]] = {
    "truncated_max": ("Truncating max_cudagraph_capture_size to ",),
    "explicit_sizes_overridden": ("cudagraph_capture_sizes specified in compilation_config ",),
    "sp_filter": ("Batch sizes ",),
    "sp_disabled": ("Model hidden_size too small for the SP threshold", "Sequence Parallelism requires TP>"),
    "deepep_high_throughput": ("DeepEP: Disabling CUDA Graphs",),
    "dynamic_sd_override": ("Dynamic speculative decoding changes the target verification length",),
    "dynamic_sd_dp": ("Dynamic speculative decoding is not supported with data parallelism",),
    "pooling_mode": ("Pooling models do not support full cudagraphs",),
    "encoder_decoder_mode": ("Encoder-decoder models do not support ",),
    "kv_connector_mode": ("KV connector ",),
    "breakable_compile_off": ("VLLM_USE_BREAKABLE_CUDAGRAPH is set, disabling",),
    "breakable_auto": ("Auto-enabling VLLM_USE_BREAKABLE_CUDAGRAPH",),
    "torch_compile_disable": ("TORCH_COMPILE_DISABLE is set",),
    "v2_stock_compile": ("CUDA graphs are not supported with stock torch.compile",),
    "mode_downgrade": ("CUDAGraphMode.",),
    "runner_fallback": ("Model Runner V2 does not yet support",),
    "non_compile": ("Cudagraph mode ",),
    "drafter_eager": ("DFlash draft attention",),
}
"""Note kind → the start of the line vLLM logs for the same decision (vllm/config/*.py)."""

ANNOTATED = ("breakable_auto", "non_compile", "runner_fallback", "mode_downgrade", "sp_disabled")
"""Kinds whose note is vLLM's line with cgplan's reason after it, or cgplan's own words: for these
only the presence is compared."""


def _records() -> list[Path]:
    return [p for folder in FOLDERS for p in sorted((DATA / folder).glob("*.json.gz"))]


RECORDS = _records()


@cache
def _planned(record: Path) -> tuple[list[str], Plan | None]:
    doc: dict[str, Any] = json.loads(gzip.decompress(record.read_bytes()))
    rec = doc["_recorded"]
    if doc.get("error") or doc.get("runtime_error") or "log" not in doc:
        return [], None
    corpus = DATA / FOLDERS[record.parent.name] / rec["corpus_file"]
    try:
        plan = build_plan(
            load_config(corpus, Overrides(vllm_version=rec["vllm_version"])).input, with_fixes=False
        )
    except CgplanError:
        return [], None  # refusals are compared by test_golden*.py
    return [line.split(": ", 1)[1] for line in doc["log"]], plan


def test_the_records_cover_every_note_kind() -> None:
    seen = {kind for r in RECORDS if (p := _planned(r)[1]) is not None for kind in {n.kind for n in p.notes}}
    assert set(LOGGED) <= seen, sorted(set(LOGGED) - seen)


@pytest.mark.parametrize(
    "record", RECORDS, ids=[f"{p.parent.name}/{p.name.removesuffix('.json.gz')}" for p in RECORDS]
)
def test_notes_are_where_vllm_logged_their_lines(record: Path) -> None:
    logged, plan = _planned(record)
    if plan is None:
        pytest.skip("vLLM or cgplan refuses this config")
    for kind, starts in LOGGED.items():
        notes = [n.message for n in plan.notes if n.kind == kind]
        lines = [line for line in logged if line.startswith(starts)]
        assert bool(notes) == bool(lines), (kind, notes, lines)
        if kind not in ANNOTATED:
            for message in notes:
                assert message in logged, (kind, message, lines)
