"""Every serve flag cgplan says it reads (role READ) changes what it plans, in every release.

A flag marked READ but dropped on the way (the serve-command reader once listed --dtype and
--quantization as read and then lost them) would plan the config at vLLM's default while saying the
flag was read: a confident wrong answer. Each READ flag of each release's table is given on a
command line with a value away from vLLM's default; the plan's input must differ from the same line
without it. A new READ flag without an example value below fails here until it has one.
"""

from __future__ import annotations

import shlex

import pytest

from cgplan.core.vllm.releases import SUPPORTED_VERSIONS
from cgplan.core.vllm.serve_flags import READ, serve_flags_for
from cgplan.io.config import Overrides, parse_config
from cgplan.io.vllm_args import read_vllm_args
from tests.paths import ROOT_DIR

MODEL = "configs/models/tiny-llama"
BASE = "serve configs/models/tiny-llama --max-num-seqs 32"
"""The line every flag is added to: a dense model on the default platform."""

DBO = "--enable-dbo --data-parallel-size 2 --enable-expert-parallel"
KV_CONNECTOR = '{"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}'

EXAMPLES: dict[str, str] = {
    # dest -> the flag's value (inputs, not expected answers: what the plan input becomes is the
    # product's and is only required to differ from the line without the flag)
    "max_num_seqs": "--max-num-seqs 48",
    "max_num_batched_tokens": "--max-num-batched-tokens 4096",
    "max_model_len": "--max-model-len 1024",
    "tensor_parallel_size": "--tensor-parallel-size 2",
    "enforce_eager": "--enforce-eager",
    "performance_mode": "--performance-mode throughput",
    "optimization_level": "--optimization-level 1",
    "speculative_config": """--speculative-config '{"method": "ngram", "num_speculative_tokens": 3}'""",
    "spec_method": "--spec-method ngram --spec-tokens 3",
    "spec_model": "--spec-model configs/models/tiny-eagle --spec-method eagle --spec-tokens 2",
    "spec_tokens": "--spec-method ngram --spec-tokens 4",
    "compilation_config": """--compilation-config '{"cudagraph_mode": "PIECEWISE"}'""",
    "cudagraph_capture_sizes": "--cudagraph-capture-sizes 1 2 4 8",
    "max_cudagraph_capture_size": "--max-cudagraph-capture-size 16",
    "attention_backend": "--attention-backend FLASHINFER",
    "attention_config": """--attention-config '{"backend": "FLASHINFER"}'""",
    "runner": "--runner pooling",
    "kv_transfer_config": f"--kv-transfer-config '{KV_CONNECTOR}'",
    "pipeline_parallel_size": "--pipeline-parallel-size 2",
    "data_parallel_size": "--data-parallel-size 2",
    "decode_context_parallel_size": "--tensor-parallel-size 2 --decode-context-parallel-size 2",
    "enable_expert_parallel": "--enable-expert-parallel --tensor-parallel-size 2",
    "enable_lora": "--enable-lora",
    "max_loras": "--enable-lora --max-loras 3",
    "specialize_active_lora": "--enable-lora --max-loras 3 --specialize-active-lora",
    "enable_dbo": DBO,
    "ubatch_size": "--ubatch-size 2",
    "dbo_decode_token_threshold": f"{DBO} --dbo-decode-token-threshold 8",
    "dbo_prefill_token_threshold": f"{DBO} --dbo-prefill-token-threshold 256",
    "async_scheduling": "--async-scheduling",  # False plans as the default does (no rule reads it)
    "all2all_backend": "--all2all-backend naive --data-parallel-size 2 --enable-expert-parallel",
    "kv_cache_dtype": "--kv-cache-dtype fp8",
    "dtype": "--dtype float16",
    "quantization": "--quantization fp8",
    "hf_config_path": "--hf-config-path configs/models/med-llama",
}
"""Flags whose effect needs a second flag carry it (a LoRA count needs --enable-lora)."""

BESIDE_THE_MODEL = {"model"}
"""Read in every line: the positional MODEL is the flag (`--model` is its long form)."""


def _input(line: str, version: str):  # type: ignore[no-untyped-def]
    parsed = read_vllm_args(shlex.split(line), model_config=None, base_dir=ROOT_DIR, vllm_version=version)
    notes: list[str] = []
    inp, _ = parse_config(parsed.doc, ROOT_DIR, Overrides(vllm_version=version), notes)
    return parsed, inp


def _cases() -> list[tuple[str, str]]:
    return [
        (version, flag.dest)
        for version in SUPPORTED_VERSIONS
        for flag in serve_flags_for(version).flags
        if flag.role == READ and flag.dest not in BESIDE_THE_MODEL
    ]


@pytest.mark.parametrize(("version", "dest"), _cases())
def test_every_read_flag_changes_the_plan_input(version: str, dest: str) -> None:
    assert dest in EXAMPLES, f"READ flag {dest} of {version} has no example value here"
    _, base = _input(BASE, version)
    parsed, inp = _input(f"{BASE} {EXAMPLES[dest]}", version)  # each example is one vLLM accepts
    assert dest in parsed.given
    long = "--" + dest.replace("_", "-")
    assert not any(long in u for u in parsed.unmodelled), (dest, parsed.unmodelled)
    assert inp != base, f"{dest} ({EXAMPLES[dest]}) read and dropped in {version}"
