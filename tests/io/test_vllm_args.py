"""`cgplan plan --vllm-args "serve ..."` and `cgplan plan -- serve ...`: a command line read as vLLM reads it.

Expected values follow vLLM 0.33.0's own FlexibleArgumentParser (vllm/utils/argparse_utils.py) and
EngineArgs (vllm/engine/arg_utils.py); each convention was checked against that parser.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cgplan.api.plan import plan_vllm_args
from cgplan.errors import ConfigError, ConfigRejected
from cgplan.io.numbers import human_readable_int
from cgplan.io.vllm_args import (
    parse_vllm_args,
    read_vllm_args,
    split_vllm_args,
)
from tests.cli_helpers import run
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
MODEL = "configs/models/tiny-llama"
EXAMPLE = ROOT / "configs" / "examples" / "pr50488-eagle-k16.yaml"
EAGLE16 = '{"method": "eagle", "num_speculative_tokens": 16}'


def parse(
    line: str, *, model_config: Path | None = None, base: Path = ROOT
) -> tuple[dict[str, Any], list[str]]:
    return parse_vllm_args(shlex.split(line), model_config=model_config, base_dir=base)


def refused(
    line: str, *, base: Path = ROOT, model_config: Path | None = None, version: str | None = None
) -> str:
    with pytest.raises(ConfigError) as info:
        read_vllm_args(shlex.split(line), model_config=model_config, base_dir=base, vllm_version=version)
    assert "\n" not in info.value.message
    return info.value.message


def comparable(text: str) -> dict[str, Any]:
    doc = json.loads(text)
    doc.pop("source")
    doc.pop("ignored_keys")
    for fix in doc["fixes"]:
        fix.pop("config_lines", None)  # the same fix as lines of the YAML: a YAML target only
    return dict(doc)


# --------------------------------------------------------------------------- the "done when" case


def test_pr50488_command_line_plans_like_its_yaml(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """vllm#50488 (EAGLE K=16, 32 requests): the bundled YAML and its command line, same JSON."""
    monkeypatch.chdir(ROOT)
    code, from_yaml, _ = run(monkeypatch, capsys, "plan", str(EXAMPLE), "--json")
    assert code == 0
    line = (
        f"vllm serve {MODEL} --max-num-seqs 32 --max-num-batched-tokens 8K --max-model-len 4096 "
        f"--speculative-config '{EAGLE16}' --port 8000"
    )
    pinned = ("--vllm-version", "0.33.0", "--platform", "hopper")
    code, from_string, _ = run(monkeypatch, capsys, "plan", "--vllm-args", line, *pinned, "--json")
    assert code == 0
    code, from_dashdash, _ = run(monkeypatch, capsys, "plan", *pinned, "--json", "--", *shlex.split(line))
    assert code == 0
    assert comparable(from_string) == comparable(from_yaml)
    assert comparable(from_dashdash) == comparable(from_yaml)
    doc = json.loads(from_string)
    assert doc["source"] == "vllm-args" and doc["ignored_keys"] == ["--port"]
    assert doc["max_num_batched_tokens"] == 8192  # 8K is binary: 8 × 1024
    assert doc["gaps"] and doc["fixes"][0]["flags"] == ["--max-cudagraph-capture-size 544"]


def test_pr50488_yaml_through_vllm_config_flag(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`serve --config FILE`: the same YAML read as vLLM would (paths from the working directory,
    for `plan FILE` as for `--config FILE`)."""
    monkeypatch.chdir(ROOT)
    rel = str(EXAMPLE.relative_to(ROOT))
    code, from_yaml, _ = run(monkeypatch, capsys, "plan", rel, "--json")
    assert code == 0
    code, from_args, _ = run(monkeypatch, capsys, "plan", "--json", "--", "serve", "--config", rel)
    assert code == 0
    assert comparable(from_args) == comparable(from_yaml)


# ------------------------------------------------------------------------------------ conventions


def test_json_valued_flags() -> None:
    doc, ignored = parse(
        f"serve {MODEL} --speculative-config '{EAGLE16}' -cc '{{\"cudagraph_mode\": \"FULL\"}}'"
    )
    assert doc["speculative_config"] == {"method": "eagle", "num_speculative_tokens": 16}
    assert doc["compilation_config"] == {"cudagraph_mode": "FULL"}
    assert doc["model"] == str(ROOT / MODEL) and ignored == []
    # -sc is --speculative-config; dashed keys are normalised by vLLM's create_speculative_config
    doc, _ = parse(f'serve {MODEL} -sc \'{{"method": "mtp", "num-speculative-tokens": 1}}\'')
    assert doc["speculative_config"] == {"method": "mtp", "num_speculative_tokens": 1}
    # bare human-readable numbers inside --compilation-config JSON (not inside strings)
    doc, _ = parse(f'serve {MODEL} -cc \'{{"max_cudagraph_capture_size": 1K, "mode": "3k"}}\'')
    assert doc["compilation_config"] == {"max_cudagraph_capture_size": 1024, "mode": "3k"}


def test_dotted_short_form() -> None:
    doc, _ = parse(f"serve {MODEL} -cc.cudagraph_mode=FULL_DECODE_ONLY -cc.max_cudagraph_capture_size 2k")
    assert doc["compilation_config"] == {
        "cudagraph_mode": "FULL_DECODE_ONLY",
        "max_cudagraph_capture_size": 2000,
    }


def test_dotted_long_form_and_list_append() -> None:
    doc, _ = parse(
        f"serve {MODEL} --compilation-config.cudagraph_mode FULL "
        "--compilation-config.pass_config.enable_sp true "
        "--compilation-config.cudagraph_capture_sizes+ 1 --compilation-config.cudagraph_capture_sizes+=2,4"
    )
    assert doc["compilation_config"] == {
        "cudagraph_mode": "FULL",
        "pass_config": {"enable_sp": True},
        "cudagraph_capture_sizes": ["1", "2", "4"],  # `+` lists are strings in vLLM too (pydantic casts)
    }
    doc, _ = parse(
        f"serve {MODEL} --speculative-config.method eagle --speculative-config.num_speculative_tokens=3"
    )
    assert doc["speculative_config"] == {"method": "eagle", "num_speculative_tokens": 3}


def test_dotted_forms_replace_a_whole_json_value_as_vllm_does() -> None:
    """vLLM appends the merged dotted value after every flag, so it replaces a JSON given earlier."""
    doc, ignored = parse(
        f'serve {MODEL} -cc \'{{"cudagraph_mode": "FULL"}}\' -cc.max_cudagraph_capture_size=8'
    )
    assert doc["compilation_config"] == {"max_cudagraph_capture_size": 8}
    assert ignored == ["-cc (replaced by the later -cc.key=value, as vLLM does)"]
    # two spellings are two flags: the later one wins whole
    doc, _ = parse(f"serve {MODEL} -cc.max_cudagraph_capture_size=1 --compilation-config.cudagraph_mode FULL")
    assert doc["compilation_config"] == {"cudagraph_mode": "FULL"}


def test_config_file_with_command_line_precedence(tmp_path: Path) -> None:
    (tmp_path / "serve.yaml").write_text(
        f"model: {ROOT / MODEL}\n"
        "max_num_seqs: 64\n"
        "max-num-batched-tokens: 8k\n"
        "enforce_eager: true\n"
        "port: 9000\n"
        "speculative_config: {method: eagle, num_speculative_tokens: 3}\n"
        "compilation_config: {cudagraph_mode: FULL}\n"
        "cgplan: {vllm_version: 0.30.0, platform: H200}\n"
    )
    doc, ignored = parse("serve --config serve.yaml --max-num-seqs 16 --no-enforce-eager", base=tmp_path)
    assert doc == {
        "model": str(ROOT / MODEL),
        "max_num_seqs": 16,  # the command line wins over the file
        "max_num_batched_tokens": 8000,
        "enforce_eager": False,
        "speculative_config": {"method": "eagle", "num_speculative_tokens": 3},
        "compilation_config": {"cudagraph_mode": "FULL"},
        "cgplan": {"vllm_version": "0.30.0", "platform": "H200"},
    }
    assert ignored == ["--port"]
    # a positional MODEL wins over the file's model; `enforce-eager: false` becomes
    # --no-enforce-eager (0.28+), but `async_scheduling: false` looks for --no-async_scheduling, no
    # option string, and is dropped (vllm/utils/argparse_utils.py load_config_file): a note says so
    (tmp_path / "b.yml").write_text("model: elsewhere\nenforce-eager: false\nasync_scheduling: false\n")
    parsed = read_vllm_args(
        shlex.split(f"serve {ROOT / MODEL} --config b.yml"), model_config=None, base_dir=tmp_path
    )
    assert parsed.doc == {"model": str(ROOT / MODEL), "enforce_eager": False}
    assert parsed.notes == [
        "b.yml:async_scheduling: false is dropped by vLLM's --config reader (it looks for "
        "--no-async_scheduling, which is not an option: write async-scheduling: false), so vLLM keeps "
        "--async-scheduling's default"
    ]
    # before 0.28 every `key: false` is dropped
    (tmp_path / "c.yml").write_text(
        "model: elsewhere\nasync-scheduling: false\ncgplan: {vllm_version: 0.26.0}\n"
    )
    parsed = read_vllm_args(
        shlex.split(f"serve {ROOT / MODEL} --config c.yml"), model_config=None, base_dir=tmp_path
    )
    assert "async_scheduling" not in parsed.doc
    assert "this release drops every `key: false`" in parsed.notes[0]


def test_config_file_errors_point_into_the_file(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("max_num_seq: 4\n")
    assert refused(f"serve {ROOT / MODEL} --config s.yaml", base=tmp_path).startswith(
        "--vllm-args:s.yaml:max_num_seq: unknown flag; did you mean 'max_num_seqs'?"
    )
    (tmp_path / "t.yaml").write_text("max_num_seqs: 0\n")
    with pytest.raises(ConfigError, match=r"^--vllm-args:t\.yaml:max_num_seqs: out of range \(got 0;"):
        plan_vllm_args(["serve", str(ROOT / MODEL), "--config", "t.yaml"], base_dir=tmp_path)
    (tmp_path / "v.yaml").write_text("cgplan: {platform: tpu-v5}\n")
    with pytest.raises(ConfigError, match=r"^--vllm-args:v\.yaml:cgplan\.platform: unknown platform"):
        plan_vllm_args(["serve", str(ROOT / MODEL), "--config", "v.yaml"], base_dir=tmp_path)
    assert "must be YAML" in refused(f"serve {MODEL} --config serve.json")
    assert "no such file" in refused(f"serve {MODEL} --config missing.yaml")
    assert "--config FILE" in refused(f"serve {MODEL} --config=serve.yaml")  # vLLM would skip the file
    (tmp_path / "u.yaml").write_text("max_num_seqs: 4\n")
    assert refused("serve --config u.yaml", base=tmp_path).startswith("--vllm-args:MODEL: missing")


def test_enforce_eager_forms() -> None:
    assert parse(f"serve {MODEL} --enforce-eager")[0]["enforce_eager"] is True
    assert parse(f"serve {MODEL} --enforce_eager --no-enforce-eager")[0]["enforce_eager"] is False
    assert "enforce_eager" not in parse(f"serve {MODEL}")[0]
    assert refused(f"serve {MODEL} --enforce-eager=true").startswith(
        "--vllm-args:--enforce-eager: takes no value; use --no-enforce-eager for false (got 'true';"
    )
    assert refused(f"serve {MODEL} --enforce-eager false").startswith(
        "--vllm-args:--enforce-eager: takes no value"
    )


def test_human_readable_integers() -> None:
    assert [human_readable_int(t) for t in ("8k", "8K", "1.5k", "2M", "8_192", " 32 ")] == [
        8000,
        8192,
        1500,
        2 << 20,
        8192,
        32,
    ]
    doc, _ = parse(f"serve {MODEL} --max-num-batched-tokens 8k --max-model-len 4K")
    assert (doc["max_num_batched_tokens"], doc["max_model_len"]) == (8000, 4096)
    assert "max_model_len" not in parse(f"serve {MODEL} --max-model-len auto")[0]  # auto-fit: the model's own
    assert "max_model_len" not in parse(f"serve {MODEL} --max-model-len -1")[0]
    assert "decimals are not allowed with binary suffixes" in refused(
        f"serve {MODEL} --max-num-batched-tokens 1.5K"
    )
    # --max-num-seqs is a plain int in vLLM: no suffixes
    assert refused(f"serve {MODEL} --max-num-seqs 1k") == (
        "--vllm-args:--max-num-seqs: must be an integer (got '1k'; expected an integer such as 32)"
    )


def test_dashes_and_underscores() -> None:
    a, _ = parse(
        f"serve {MODEL} --max_num_seqs 8 --tensor_parallel_size=2 --compilation_config.cudagraph_mode FULL"
    )
    b, _ = parse(f"serve {MODEL} --max-num-seqs 8 -tp 2 -cc.cudagraph_mode FULL")
    assert (
        a
        == b
        == {
            "model": str(ROOT / MODEL),
            "max_num_seqs": 8,
            "tensor_parallel_size": 2,
            "compilation_config": {"cudagraph_mode": "FULL"},
        }
    )
    # only the flag name is normalised, never a key after the first dot (vLLM refuses cudagraph-mode)
    with pytest.raises(ConfigError, match=r"^--vllm-args:-cc\.cudagraph-mode: use vLLM's snake_case key"):
        plan_vllm_args(shlex.split(f"serve {MODEL} -cc.cudagraph-mode FULL"), base_dir=ROOT)


def test_optimization_level_forms() -> None:
    for line in ("-O3", "-O 3", "-O=3", "--optimization-level 3", "--optimization_level=3", "-O1 -O3"):
        assert parse(f"serve {MODEL} {line}")[0]["optimization_level"] == 3, line
    # -O.key=value is not a vLLM 0.26-0.33 form: the rest becomes the level
    assert refused(f"serve {MODEL} -O.cudagraph_mode=FULL").startswith(
        "--vllm-args:-O: out of range; -O.key=value is not a vLLM form: use -cc.key=value"
    )
    assert refused(f"serve {MODEL} -Odecode").startswith("--vllm-args:-O: out of range (got 'decode';")


def test_model_folder_flag_and_hub_name(tmp_path: Path) -> None:
    assert parse(f"serve --max-num-seqs 4 --model {MODEL}")[0]["model"] == str(ROOT / MODEL)
    assert parse(f"serve --model={MODEL}")[0]["model"] == str(ROOT / MODEL)
    assert parse(f"--model {MODEL} --max-num-seqs 4")[0]["model"] == str(ROOT / MODEL)  # api_server style
    hub = "serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 4"
    assert refused(hub) == (
        "--vllm-args:MODEL: not a local folder; a hub model needs --model-config PATH "
        "(got 'meta-llama/Llama-3.1-8B-Instruct'; "
        "expected a local folder with config.json, or --model-config PATH)"
    )
    for shape in (ROOT / MODEL, ROOT / MODEL / "config.json"):
        doc, _ = parse(hub, model_config=shape)
        assert doc["model"] == str(shape)
    assert refused(hub, model_config=tmp_path / "nope").startswith("--model-config: no such file or folder")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=r"^--vllm-args:MODEL: model folder has no config\.json"):
        plan_vllm_args(["serve", str(empty)], base_dir=ROOT)
    assert refused("serve --max-num-seqs 4").startswith("--vllm-args:MODEL: missing")
    assert "not a `vllm serve` command line" in refused(f"chat {MODEL}")


def test_capture_neutral_flags_are_listed() -> None:
    line = (
        f"serve {MODEL} --port 8000 --host 0.0.0.0 --gpu-memory-utilization 0.9 --served-model-name a b "
        "--dtype auto --trust-remote-code --kv-cache-dtype auto --enable-prefix-caching --api-key k "
        "--seed 1 --disable-log-requests --port 9000 --no-enable-prefix-caching --log-level debug "
        "--scheduling-policy priority --limit-mm-per-prompt.image 0 --hf-overrides '{}'"
    )
    parsed = read_vllm_args(shlex.split(line), model_config=None, base_dir=ROOT)
    # issue 29: --kv-cache-dtype is read (KV bytes per token follow it)
    assert parsed.doc == {"model": str(ROOT / MODEL), "kv_cache_dtype": "auto", "dtype": "auto"}
    assert parsed.ignored == [
        "--port",
        "--host",
        "--gpu-memory-utilization",
        "--served-model-name",
        "--trust-remote-code",
        "--enable-prefix-caching",
        "--api-key",
        "--seed",
        "--enable-log-requests",  # vLLM's flag; --disable-log-requests is its 0.33 inverse
        "--log-level",  # #28: it was "unknown flag; did you mean '--uvicorn-log-level'?"
        "--scheduling-policy",
    ]
    # not modelled and set: planned as if left at vLLM's default, each with a note
    assert parsed.unmodelled == [
        "--hf-overrides {}: can change the model's shape (cgplan reads config.json as it is), which "
        "cgplan does not model; planned as if it were left out (vLLM's default) (--strict refuses it)",
        '--limit-mm-per-prompt.key=value {"image": 0}: can change what vLLM captures or how batches '
        "dispatch, which cgplan does not model; planned as if it were left out (vLLM's default) "
        "(--strict refuses it)",
    ]


def test_unmodelled_flags_are_noted_or_refused_under_strict() -> None:
    for flag, shown in (
        ("-pcp 2", "-pcp"),
        ("--prefill-context-parallel-size 2", "--prefill-context-parallel-size"),
    ):
        parsed = read_vllm_args(shlex.split(f"serve {MODEL} {flag}"), model_config=None, base_dir=ROOT)
        assert parsed.doc == {"model": str(ROOT / MODEL)}
        assert parsed.unmodelled == [
            f"{shown} 2: can change what vLLM captures or how batches dispatch, which cgplan does not "
            "model; planned as if it were 1 (vLLM's default) (--strict refuses it)"
        ]
        with pytest.raises(ConfigError) as info:
            read_vllm_args(
                shlex.split(f"serve {MODEL} {flag}"), model_config=None, base_dir=ROOT, strict=True
            )
        assert info.value.message == (
            f"--vllm-args:{shown}: can change what vLLM captures or how batches dispatch, which cgplan "
            "does not model; --strict refuses it (got '2'; expected 1 (vLLM's default))"
        )
    # left at vLLM's default it changes nothing: accepted and listed, also under --strict
    parsed = read_vllm_args(
        shlex.split(f"serve {MODEL} -pcp 1 --no-enable-eplb"), model_config=None, base_dir=ROOT, strict=True
    )
    assert parsed.ignored == ["--prefill-context-parallel-size", "--enable-eplb"] and parsed.unmodelled == []
    # a boolean set: --mamba-cache-dtype and a true --enable-eplb name what they change
    # (issue 29: --kv-cache-dtype is read now, the example of a KV flag cgplan does not model moved)
    parsed = read_vllm_args(
        shlex.split(f"serve {MODEL} --enable-eplb --mamba-cache-dtype float32"),
        model_config=None,
        base_dir=ROOT,
    )
    assert parsed.unmodelled == [
        "--enable-eplb: can change the capture phase's memory and time, which cgplan does not model; "
        "planned as if it were false (vLLM's default) (--strict refuses it)",
        "--mamba-cache-dtype float32: can change the KV cache's bytes per token, which cgplan does not "
        "model; planned as if it were auto (vLLM's default) (--strict refuses it)",
    ]


def test_parallel_lora_and_dbo_flags_are_read() -> None:
    # issue 16: these were refused by name; they are vLLM's own EngineArgs fields
    doc, ignored = parse(
        f"serve {MODEL} -pp 2 -dp 4 -dcp 2 -ep --enable-lora --max-loras 3 --enable-dbo "
        "--all2all-backend deepep_low_latency --no-async-scheduling --lora-modules a=b"
    )
    assert {k: v for k, v in doc.items() if k != "model"} == {
        "pipeline_parallel_size": 2,
        "data_parallel_size": 4,
        "decode_context_parallel_size": 2,
        "max_loras": 3,
        "all2all_backend": "deepep_low_latency",
        "enable_expert_parallel": True,
        "enable_lora": True,
        "enable_dbo": True,
        "async_scheduling": False,
    }
    assert ignored == ["--lora-modules"]


def test_unknown_flag_did_you_mean() -> None:
    assert refused(f"serve {MODEL} --max-num-seq 32") == (
        "--vllm-args:--max-num-seq: unknown flag; did you mean '--max-num-seqs'? "
        "(expected a flag of vLLM 0.33.0's vllm serve)"
    )
    assert "did you mean '--speculative-config'?" in refused(f"serve {MODEL} --speculativ-config {{}}")
    assert refused(f"serve {MODEL} --json").startswith(
        "--vllm-args:--json: unknown flag; --json is a cgplan option: give it before `--`"
    )
    assert refused(f"serve {MODEL} extra").startswith("--vllm-args:extra: unexpected argument")
    assert refused(f"serve {MODEL} --port 1 2").startswith("--vllm-args:--port: unexpected extra argument")
    # a flag of another release is named as such, not "unknown"
    assert refused(f"serve {MODEL} --log-level debug", version="0.26.0") == (
        "--vllm-args:--log-level: not a flag of vLLM 0.26.0's vllm serve (it is one of vLLM 0.31.0 to "
        "0.33.0) (expected a flag of vLLM 0.26.0, or that release: --vllm-version or cgplan.vllm_version)"
    )
    assert refused(f"serve {MODEL} --help").startswith(
        "--vllm-args:--help: vllm serve prints its help and exits: there is nothing to plan"
    )


def test_bad_json_is_located() -> None:
    assert refused(f"serve {MODEL} --speculative-config '{{\"method\": eagle}}'").startswith(
        "--vllm-args:--speculative-config: invalid JSON: Expecting value: line 1 column 12"
    )
    assert refused(f'serve {MODEL} -cc \'{{"cudagraph_mode": "FULL"\'').startswith(
        "--vllm-args:-cc: invalid JSON"
    )
    assert refused(f"serve {MODEL} -cc 3").startswith("--vllm-args:-cc: must be a JSON object (got 3;")
    # vLLM expands 1k only in dataclass configs (-cc), not in the plain-JSON --speculative-config
    assert "invalid JSON" in refused(
        f'serve {MODEL} -sc \'{{"method": "eagle", "num_speculative_tokens": 1k}}\''
    )
    with pytest.raises(
        ConfigError, match=r"^--vllm-args: cannot split the command line: No closing quotation"
    ):
        split_vllm_args("serve 'unbalanced")


def test_engine_flags_that_fill_json_configs() -> None:
    doc, _ = parse(f"serve {MODEL} --spec-method eagle --spec-tokens 3 --max-cudagraph-capture-size 64")
    assert doc["speculative_config"] == {"method": "eagle", "num_speculative_tokens": 3}
    assert doc["compilation_config"] == {"max_cudagraph_capture_size": 64}
    doc, _ = parse(f"serve {MODEL} --cudagraph-capture-sizes 1 2 4 -cc.cudagraph_mode FULL")
    assert doc["compilation_config"] == {"cudagraph_mode": "FULL", "cudagraph_capture_sizes": [1, 2, 4]}
    assert "mutually exclusive" in refused(f"serve {MODEL} --spec-tokens 3 -sc '{EAGLE16}'")
    assert refused(
        f"serve {MODEL} -cc.max_cudagraph_capture_size=32 --max-cudagraph-capture-size 64"
    ).startswith("--vllm-args:--max-cudagraph-capture-size: mutually exclusive")
    assert parse(f"serve {MODEL} --attention-backend FLASHINFER")[0]["cgplan"] == {
        "attention_backend": "FLASHINFER"
    }
    assert parse(f"serve {MODEL} -ac.backend=TRITON_ATTN")[0]["cgplan"] == {
        "attention_backend": "TRITON_ATTN"
    }
    assert "cgplan" not in parse(f"serve {MODEL} --attention-backend auto")[0]


def test_errors_after_parsing_point_at_the_flag() -> None:
    def located(line: str) -> ConfigError:
        with pytest.raises(ConfigError) as info:
            plan_vllm_args(shlex.split(line), base_dir=ROOT)
        return info.value

    err = located(f"serve {MODEL} -cc.cudagraph_mode=FULL_DECODE")
    assert err.message.startswith(
        "--vllm-args:-cc.cudagraph_mode: unknown value; did you mean 'FULL_DECODE_ONLY'?"
    )
    err = located(f"serve {MODEL} --spec-tokens 3 --spec-method medusa")
    assert err.message.startswith("--vllm-args:--spec-method: unknown value")
    err = located(f"serve {MODEL} --attention-backend FLASHMLB")
    assert err.message.startswith("--vllm-args:--attention-backend: unknown value; did you mean 'FLASHMLA'?")
    err = located(f"serve {MODEL} --spec-tokens 3")
    assert err.message.startswith(
        "--vllm-args:--speculative-config.method: not given: vLLM infers the method"
    )
    err = located(f"serve {MODEL} --max-cudagraph-capture-size -1")
    assert err.message.startswith("--vllm-args:--max-cudagraph-capture-size: out of range (got -1;")
    # 0 is vLLM's own "no graphs" value: with graphs on vLLM's assertion refuses it, at the flag
    err = located(f"serve {MODEL} --max-cudagraph-capture-size 0")
    assert isinstance(err, ConfigRejected)
    assert err.message.startswith(
        "--vllm-args:--max-cudagraph-capture-size: Maximum cudagraph size should be greater than or "
        "equal to 1 when using cuda graph."
    )
    err = located(f"serve {MODEL} --performance-mode fast")
    assert err.message.startswith("--vllm-args:--performance-mode: unknown value")
    # vLLM's own refusal (ConfigRejected) keeps its class and points at the flag
    err = located(f"serve {MODEL} --max-num-seqs 64 --max-num-batched-tokens 32")
    assert isinstance(err, ConfigRejected)
    assert err.message.startswith("--vllm-args:--max-num-batched-tokens: max_num_batched_tokens (32) must be")


# --------------------------------------------------------------------------------------------- CLI


def test_cli_needs_exactly_one_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    for args in (
        ("plan",),
        ("plan", str(EXAMPLE), "--vllm-args", f"serve {MODEL}"),
        ("plan", "--vllm-args", f"serve {MODEL}", "--", "serve", MODEL),
    ):
        code, out, err = run(monkeypatch, capsys, *args)
        assert code == 2 and out == "" and "give exactly one of CONFIG, --vllm-args" in err, args


def test_cli_errors_are_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    code, out, err = run(monkeypatch, capsys, "plan", "--strict", "--", "serve", MODEL, "-pcp", "2")
    assert code == 2 and out == ""
    assert err == (
        "cgplan: error: --vllm-args:-pcp: can change what vLLM captures or how batches dispatch, which "
        "cgplan does not model; --strict refuses it (got '2'; expected 1 (vLLM's default))\n"
    )
    # without --strict: planned, the note on stderr and in the JSON
    code, out, err = run(monkeypatch, capsys, "plan", "--json", "--", "serve", MODEL, "-pcp", "2")
    assert code == 0
    assert "cgplan: note: not modelled: -pcp 2: can change what vLLM captures" in err
    assert json.loads(out)["unmodelled"] == [
        "-pcp 2: can change what vLLM captures or how batches dispatch, which cgplan does not model; "
        "planned as if it were 1 (vLLM's default) (--strict refuses it)"
    ]
    # vLLM's own refusal of a parallel config, located at the flag
    code, out, err = run(monkeypatch, capsys, "plan", "--", "serve", MODEL, "-tp", "2", "-dcp", "4")
    assert code == 2 and out == ""
    assert err == "cgplan: error: --vllm-args:-dcp: tp_size=2 must be divisible by dcp_size=4.\n"
    code, _, err = run(monkeypatch, capsys, "plan", "--vllm-args", "serve meta-llama/Llama-3.1-8B")
    assert code == 2 and err.startswith("cgplan: error: --vllm-args:MODEL: not a local folder")
    code, out, err = run(
        monkeypatch, capsys, "plan", "--vllm-args", "serve meta-llama/Llama-3.1-8B", "--model-config", MODEL
    )
    assert code == 0 and "cgplan" in out


def test_cli_table_notes_ignored_flags(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    code, out, err = run(
        monkeypatch,
        capsys,
        "plan",
        "--",
        "serve",
        MODEL,
        "--max-num-seqs",
        "32",
        f"--speculative-config={EAGLE16}",
        "-cc.cudagraph_mode=FULL_DECODE_ONLY",
        "--port",
        "8000",
        "--gpu-memory-utilization",
        "0.9",
    )
    assert code == 0 and "vllm-args" in out and "FULL_DECODE_ONLY" in out
    assert err == "cgplan: note: keys that do not change capture, ignored: --port, --gpu-memory-utilization\n"


_TOKENS = st.sampled_from(
    [
        "serve",
        "vllm",
        MODEL,
        "meta-llama/x",
        "--model",
        "--config",
        "-O",
        "-O3",
        "-O.x=1",
        "-cc",
        "-cc.cudagraph_mode",
        "-cc.cudagraph_capture_sizes+",
        "--compilation-config.a.b",
        "-sc",
        "--spec-tokens",
        "--max-num-seqs",
        "--max_num_batched_tokens",
        "--max-model-len",
        "--enforce-eager",
        "--no-enforce-eager",
        "--cudagraph-capture-sizes",
        "-tp",
        "-pp",
        "--port",
        "--served-model-name",
        "--hf-token",
        "--bogus",
        "=",
        "-",
        "--",
        "-1",
        "1.5K",
        "8k",
        "auto",
        "{}",
        "[1, 2]",
        '{"method": "eagle", "num_speculative_tokens": 3}',
        '{"cudagraph_mode": 9e999999}',
        "null",
        "x.yaml",
        "9" * 500 + "k",
        "\x00",
        "a\nb",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_TOKENS, max_size=12))
def test_any_token_sequence_parses_or_is_one_located_line(tokens: list[str]) -> None:
    try:
        doc, ignored = parse_vllm_args(tokens, model_config=None, base_dir=ROOT)
    except ConfigError as e:
        assert e.message.startswith(("--vllm-args", "--model-config")), e.message
        return
    assert isinstance(doc["model"], str) and all(isinstance(i, str) for i in ignored)
