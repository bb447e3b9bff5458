"""Each bad input → one located message and exit 2, never a traceback (one fixture per message)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from cgplan.api.plan import plan_file
from cgplan.cli import main
from cgplan.errors import ConfigError, ConfigRejected
from cgplan.io.config import Overrides

BAD = Path(__file__).parent / "data" / "bad"

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
    "unknown-version": (
        ConfigError,
        r":cgplan\.vllm_version: no rules for vLLM 0\.25\.0; did you mean '0\.26\.0'\? "
        r"\(got '0\.25\.0'; expected one of 0\.26\.0, .*0\.33\.0 \(or a patch release of one\)\)",
    ),
    "unknown-runner": (ConfigError, r":cgplan\.model_runner: unknown value.*expected one of auto, v1, v2\)"),
    "unknown-method": (
        ConfigError,
        r":speculative_config\.method: unknown value.*expected one of eagle, eagle3, mtp, ngram, draft_model",
    ),
    "missing-k": (ConfigError, r":speculative_config\.num_speculative_tokens: missing"),
    "empty-sizes": (ConfigError, r":compilation_config\.cudagraph_capture_sizes: must be a non-empty list"),
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
