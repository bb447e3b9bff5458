"""#28: `cgplan plan FILE` reads exactly what `vllm serve --config FILE` reads.

The top level of a YAML is every flag of the release's `vllm serve` parser, in either spelling,
read the way vLLM's `FlexibleArgumentParser.load_config_file` turns it into flags (plus cgplan's own
`cgplan:` section). A document of cgplan's own keys as written is read directly (the start-up fast
path); every other one through `read_config_document`: both readings are held equal here over every
config of the repository.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cgplan.api.plan import plan_file, plan_vllm_args
from cgplan.core.model.spec import PlanInput
from cgplan.core.plan.fingerprint import fingerprint
from cgplan.errors import ConfigError
from cgplan.io import config as cfg
from cgplan.io.config import Overrides, parse_config
from cgplan.io.files import read_yaml
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
MODEL = "configs/models/tiny-llama"
CONFIGS = sorted(
    [
        *(ROOT / "configs" / "examples").glob("*.yaml"),
        *(ROOT / "tests" / "data" / "corpus").glob("*.yaml"),
        *(ROOT / "tests" / "data" / "corpus-deploy").glob("*.yaml"),
    ]
)


Reading = tuple[tuple[PlanInput, list[str]], list[str]]


def _both(doc: dict[str, object]) -> tuple[Reading, Reading]:
    """parse_config of `doc` read directly, and read through vLLM's --config rules."""
    notes_a: list[str] = []
    direct = parse_config(doc, ROOT, Overrides(), notes_a)
    notes_b: list[str] = []
    import cgplan.io.config as module

    saved = module._read_as_written
    module._read_as_written = lambda _doc: False  # type: ignore[assignment]
    try:
        through = parse_config(doc, ROOT, Overrides(), notes_b)
    finally:
        module._read_as_written = saved
    return (direct, notes_a), (through, notes_b)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_the_fast_reading_is_vllms(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    doc = read_yaml(path)
    try:
        direct, through = _both(doc)
    except ConfigError as refused:
        # a config vLLM refuses (issue 27's corpus): both readings refuse it in the same words
        saved = cfg._read_as_written
        cfg._read_as_written = lambda _doc: False  # type: ignore[assignment]
        try:
            with pytest.raises(ConfigError) as through_refused:
                parse_config(doc, ROOT, Overrides())
        finally:
            cfg._read_as_written = saved
        assert str(through_refused.value) == str(refused)
        return
    assert direct == through
    # every top-level key in dash-case reads the same (through vLLM's rules: a different document)
    dashed = {k.replace("_", "-") if k != "cgplan" else k: v for k, v in doc.items()}
    inp, ignored = parse_config(dashed, ROOT, Overrides())
    assert inp == direct[0][0]
    assert len(ignored) == len(direct[0][1])


def test_the_fast_reading_covers_the_examples() -> None:
    """The example configs are read without vLLM's flag table (#18's start-up)."""
    for path in (ROOT / "configs" / "examples").glob("*.yaml"):
        assert cfg._read_as_written(read_yaml(path)), path


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "serve.yaml"
    path.write_text(f"model: {MODEL}\nmax_num_seqs: 32\n{text}")
    return path


def test_the_keys_of_issue_28_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    path = _write(
        tmp_path,
        "max-cudagraph-capture-size: 1024\nattention_backend: FLASHINFER\nscheduling_policy: priority\n"
        "log-level: debug\nport: 8000\n",
    )
    loaded, _ = plan_file(path)
    assert loaded.input.max_cudagraph_capture_size == 1024
    assert loaded.input.attention_backend == "FLASHINFER"
    assert loaded.ignored_keys == ("scheduling_policy", "log-level", "port")
    # exactly what `vllm serve --config FILE` reads
    cli, _ = plan_vllm_args(["serve", "--config", str(path)], base_dir=ROOT)
    assert fingerprint(cli.input) == fingerprint(loaded.input)
    path = _write(tmp_path, "cudagraph_capture_sizes: [1, 2, 4, 8]\n")
    assert plan_file(path)[0].input.cudagraph_capture_sizes == (1, 2, 4, 8)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (  # vLLM refuses the flag beside the same key of its JSON config
            "max_cudagraph_capture_size: 64\ncompilation_config: {max_cudagraph_capture_size: 32}\n",
            "serve.yaml:max_cudagraph_capture_size: mutually exclusive with the compilation config's "
            "'max_cudagraph_capture_size' (vLLM refuses both)",
        ),
        (
            "max-num-seq: 4\n",
            "serve.yaml:max-num-seq: unknown key; did you mean 'max_num_seqs'?",
        ),
        (  # both spellings: which one wins is only the file's order
            "max-num-seqs: 64\n",
            "serve.yaml:max_num_seqs: given twice (got 'max_num_seqs and max-num-seqs'",
        ),
        (  # a float where vLLM's int() refuses it
            "max_model_len: 4096.0\n",
            "serve.yaml:max_model_len: must be an integer (got '4096.0'",
        ),
        (  # `true` is the bare flag, which takes a value
            "tensor_parallel_size: true\n",
            "serve.yaml:tensor_parallel_size: expects a value, not true",
        ),
        (
            "attention_backend: FLASHMLB\n",
            "serve.yaml:attention_backend: unknown value; did you mean 'FLASHMLA'?",
        ),
        (  # vLLM's json.dumps of the mapping fails on a date
            "compilation-config: {cudagraph_mode: FULL, when: 2001-12-14}\n",
            "serve.yaml:compilation-config: cannot be passed as a flag value",
        ),
    ],
)
def test_errors_point_at_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    monkeypatch.chdir(ROOT)
    with pytest.raises(ConfigError) as info:
        plan_file(_write(tmp_path, text))
    assert info.value.message.split(": ", 1)[0].endswith(message.split(": ", 1)[0])
    assert message.split(": ", 1)[1] in info.value.message, info.value.message


def test_false_is_read_as_vllm_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """load_config_file: `key: false` becomes `--no-key` only where that exact option exists (0.28+)."""
    monkeypatch.chdir(ROOT)
    loaded, _ = plan_file(_write(tmp_path, "async-scheduling: false\n"))
    assert loaded.input.async_scheduling is False
    loaded, _ = plan_file(_write(tmp_path, "async_scheduling: false\n"))
    assert loaded.input.async_scheduling is None  # dropped: vLLM's default (it decides)
    assert loaded.notes == (
        "async_scheduling: false is dropped by vLLM's --config reader (it looks for "
        "--no-async_scheduling, which is not an option: write async-scheduling: false), so vLLM keeps "
        "--async-scheduling's default",
    )
    loaded, _ = plan_file(_write(tmp_path, "async-scheduling: false\ncgplan: {vllm_version: 0.27.1}\n"))
    assert loaded.input.async_scheduling is None  # 0.27.1 drops every false


def test_unmodelled_keys_are_noted_or_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    path = _write(tmp_path, "mamba-cache-dtype: float32\nscheduling-policy: fcfs\ndtype: auto\n")
    loaded, _ = plan_file(path)
    assert loaded.ignored_keys == ("scheduling-policy",)  # neutral; dtype is read (issue 29)
    assert loaded.unmodelled == (
        "mamba-cache-dtype float32: can change the KV cache's bytes per token, which cgplan does not "
        "model; planned as if it were auto (vLLM's default) (--strict refuses it)",
    )
    assert loaded.notes == tuple(f"not modelled: {u}" for u in loaded.unmodelled)
    with pytest.raises(
        ConfigError, match=r"serve\.yaml:mamba-cache-dtype: can change .* --strict refuses it"
    ):
        plan_file(path, Overrides(strict=True))
