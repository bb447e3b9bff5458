"""Each bad input → one located message and exit 2, never a traceback (one fixture per message)."""

from __future__ import annotations

import re
import sys

import pytest

from cgplan.api.plan import plan_file
from cgplan.cli import main
from cgplan.core.vllm.releases import SUPPORTED_VERSIONS
from cgplan.errors import ConfigError, ConfigRejected
from cgplan.io.config import Overrides
from tests.paths import TESTS_DIR

BAD = TESTS_DIR / "data" / "bad"
OLDEST = SUPPORTED_VERSIONS[0]

# fixture → (exception class, regex the whole message must match)
CASES: dict[str, tuple[type[ConfigError], str]] = {
    "unknown-key": (
        ConfigError,
        r"unknown-key\.yaml:max_num_seq: unknown key; did you mean 'max_num_seqs'\? "
        r"\(expected a flag of vLLM 0\.33\.0's vllm serve\)",
    ),
    "wrong-type-max-num-seqs": (
        ConfigError,
        r":max_num_seqs: must be an integer \(got 'lots'; expected an integer such as 32\)",
    ),
    "zero-max-num-seqs": (ConfigError, r":max_num_seqs: out of range \(got 0; expected an integer >= 1\)"),
    "negative-mbt": (
        ConfigError,
        r":max_num_batched_tokens: out of range \(got -5; expected an integer >= 1\)",
    ),
    "bool-as-int": (ConfigError, r":max_num_seqs: expects a value, not true \(vLLM.s --config reader"),
    "unknown-mode": (
        ConfigError,
        r":compilation_config\.cudagraph_mode: unknown value; did you mean 'FULL_AND_PIECEWISE'\?",
    ),
    "unknown-platform": (
        ConfigError,
        r":cgplan\.platform: unknown platform \(got 'tpu-v5'; expected one of hopper, blackwell, ampere",
    ),
    "unknown-version": (  # 0.25.0: older than every release (the choices are the release table's)
        ConfigError,
        rf":cgplan\.vllm_version: no rules for vLLM 0\.25\.0; did you mean '{re.escape(OLDEST)}'\? "
        rf"\(got '0\.25\.0'; expected one of {re.escape(', '.join(SUPPORTED_VERSIONS))} "
        r"\(or a patch release of one\)\)",
    ),
    "unknown-runner": (ConfigError, r":cgplan\.model_runner: unknown value.*expected one of auto, v1, v2\)"),
    "unknown-method": (
        ConfigError,
        r":speculative_config\.method: unknown value.*expected one of eagle, eagle3, mtp, ngram, draft_model",
    ),
    "missing-k": (ConfigError, r":speculative_config\.num_speculative_tokens: missing"),
    # with graphs on, vLLM's own assertion (with cudagraph_mode NONE vLLM takes [] and plans no graphs)
    "empty-sizes": (
        ConfigRejected,
        r":compilation_config\.cudagraph_capture_sizes: cudagraph_capture_sizes should contain at least one "
        r"element when using cuda graph\.",
    ),
    "bad-size-entry": (
        ConfigError,
        r":compilation_config\.cudagraph_capture_sizes\[2\]: out of range \(got -4",
    ),
    "schedule-not-list": (
        ConfigError,
        r":speculative_config\.num_speculative_tokens_per_batch_size: must be a non-empty list",
    ),
    "schedule-bad-entry": (
        ConfigError,
        r"num_speculative_tokens_per_batch_size\[0\]: must be three integers",
    ),
    "schedule-not-from-1": (
        ConfigRejected,
        r"num_speculative_tokens_per_batch_size: The first batch-size range must start at 1",
    ),
    "schedule-overlap": (
        ConfigRejected,
        r"num_speculative_tokens_per_batch_size: Batch-size ranges must be non-overlapping",
    ),
    "missing-model": (ConfigError, r"missing-model\.yaml:model: missing"),
    "model-no-config": (ConfigError, r":model: model folder has no config\.json"),
    "not-a-mapping": (ConfigError, r":<root>: must be a mapping"),
    "empty": (ConfigError, r"empty\.yaml: the config is empty"),
    "invalid-yaml": (ConfigError, r"invalid-yaml\.yaml: invalid YAML: line \d+, column \d+"),
    "compilation-not-mapping": (ConfigError, r":compilation_config: must be a JSON object \(got 7"),
    "unmodelled-key": (
        ConfigError,
        r":prefill_context_parallel_size: can change what vLLM captures or how batches dispatch, which "
        r"cgplan does not model; --strict refuses it \(got '2'; expected 1 \(vLLM's default\)\)",
    ),
    # vLLM normalises top-level and speculative_config keys, not compilation_config's (pydantic)
    "dash-key": (
        ConfigError,
        r":compilation_config\.cudagraph-mode: use vLLM's snake_case key 'cudagraph_mode'",
    ),
    "inconsistent-max": (
        ConfigRejected,
        r"customized max_cudagraph_capture_size\(=64\) should be consistent with the max value of "
        r"cudagraph_capture_sizes\(=32\)",
    ),
    "mbt-below-seqs": (
        ConfigRejected,
        r"max_num_batched_tokens \(64\) must be greater than or equal to max_num_seqs \(256\)",
    ),
    "sp-removed": (ConfigRejected, r"enable_sp: vLLM 0\.33\.0 has no sequence-parallelism pass"),
    "v2-ngram-forced": (ConfigRejected, r"cgplan\.model_runner: Model Runner V2 does not yet support: ngram"),
    "level-out-of-range": (
        ConfigError,
        r":optimization_level: out of range \(got 7; expected 0, 1, 2 or 3\)",
    ),
    "huge-number": (ConfigError, r":max_num_seqs: too large to plan"),
    "unknown-backend": (
        ConfigError,
        r":cgplan\.attention_backend: unknown value; did you mean 'FLASH_ATTN'\?",
    ),
    # compilation (#27): vLLM's CompilationConfig has no `level` in any release
    "compile-level": (
        ConfigError,
        r":compilation_config\.level: vLLM's CompilationConfig has no 'level' \(the old name of 'mode'\); "
        r"it refuses it as an unexpected keyword argument \(got 3; expected compilation_config\.mode",
    ),
    "compile-mode-unknown": (
        ConfigError,
        r":compilation_config\.mode: Invalid compilation mode: inductor\. Valid modes are: NONE, "
        r"STOCK_TORCH_COMPILE, DYNAMO_TRACE_ONCE, VLLM_COMPILE",
    ),
    "compile-mode-out-of-range": (
        ConfigError,
        r":compilation_config\.mode: not a CompilationMode \(got 4; expected 0, 1, 2, 3 or one of",
    ),
    "env-unmodelled": (
        ConfigError,
        r":cgplan\.env\.VLLM_BATCH_INVARIANT: VLLM_BATCH_INVARIANT changes what vLLM captures, but "
        r"cgplan does not model it yet",
    ),
    "env-bad-value": (
        ConfigError,
        r":cgplan\.env\.TORCH_COMPILE_DISABLE: must be the variable's value as a string \(got true",
    ),
    "env-runner-conflict": (
        ConfigError,
        r":cgplan\.env\.VLLM_USE_V2_MODEL_RUNNER: disagrees with cgplan\.model_runner v1",
    ),
    "v2-stock-compile-forced": (
        ConfigRejected,
        r"cgplan\.model_runner: Model Runner V2 does not yet support: stock torch\.compile",
    ),
    # suffix decoding, DFlash, DSpark (#31): SpeculativeConfig's words, or what cgplan does not model
    "suffix-tree-depth-zero": (
        ConfigError,
        r":speculative_config\.suffix_decoding_max_tree_depth: "
        r"suffix_decoding_max_tree_depth=0 must be >= 1$",
    ),
    "suffix-min-token-prob": (
        ConfigError,
        r":speculative_config\.suffix_decoding_min_token_prob: suffix_decoding_min_token_prob=1\.5 must be "
        r"in \[0, 1\]$",
    ),
    "adaptive-not-dspark": (
        ConfigRejected,
        r":speculative_config\.enable_adaptive_verification: "
        r"Adaptive verification only supported with DSpark$",
    ),
    "dflash-no-draft": (
        ConfigRejected,
        r":speculative_config\.model: dflash without a local draft folder .*cgplan does not model it yet$",
    ),
    # encoder and decoder-replay graphs (#31): refused by name, never "unknown key"
    "mm-encoder-on": (
        ConfigError,
        r":compilation_config\.cudagraph_mm_encoder: encoder CUDA graphs .* cgplan does not model them yet",
    ),
    "decoder-replay": (
        ConfigError,
        r":compilation_config\.cudagraph_decoder_replay: changes what vLLM captures, "
        r"but cgplan does not model",
    ),
    "dspark-adaptive": (
        ConfigRejected,
        r":speculative_config\.enable_adaptive_verification: DSpark's adaptive verification .*"
        r"cgplan does not model it yet$",
    ),
}


STRICT = frozenset({"unmodelled-key"})
"""Refused under --strict only (planned with a note without it)."""


def test_every_fixture_has_a_case() -> None:
    assert {p.stem for p in BAD.glob("*.yaml")} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_message(name: str) -> None:
    cls, pattern = CASES[name]
    with pytest.raises(cls) as info:
        plan_file(BAD / f"{name}.yaml", Overrides(strict=name in STRICT))
    message = str(info.value)
    assert "\n" not in message
    assert re.search(pattern, message), message


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_exit_2_one_line(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    strict = ["--strict"] if name in STRICT else []
    monkeypatch.setattr(sys, "argv", ["cgplan", "plan", str(BAD / f"{name}.yaml"), *strict])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cgplan: error: "), captured.err
    assert "Traceback" not in captured.err
