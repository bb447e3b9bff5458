"""#28: the fix printed for a YAML config, pasted into that YAML, is planned and closes the gap.

One case per kind of fix (raise the maximum, extend a size list, change the mode, drop
enforce_eager, raise -O, narrow a dynamic-SD schedule) and per place the file sets the value (a
top-level flag in either spelling, a compilation_config mapping, nothing). "Pasted" is literal: the
lines appended to the file's text (a later key wins in `yaml.safe_load`, as in vLLM). The pasted
file must plan to exactly the input the command-line fix gives (`serve --config FILE FLAGS`: same
fingerprint), with the gaps the fix promised.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cgplan.api.plan import plan_file, plan_vllm_args
from cgplan.core.model.types import Fix
from cgplan.core.plan.fingerprint import fingerprint
from cgplan.core.plan.gaps import graph_count
from cgplan.io.config_fix import fix_config_lines
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
EXAMPLE = (ROOT / "configs" / "examples" / "pr50488-eagle-k16.yaml").read_text()
DYN4 = (ROOT / "configs" / "examples" / "mns1024-eagle-k16-dyn4.yaml").read_text()
NO_SPEC = "".join(
    line
    for line in EXAMPLE.splitlines(keepends=True)
    if not line.startswith(("speculative_config", "  method", "  num_speculative"))
)
SIZES = "[1, 2, 4, 8, 16, 32, 64, 128, 256, 512]"


def _has(*words: str) -> Callable[[Fix], bool]:
    return lambda f: all(any(w in c for c in f.changes) for w in words)


CASES: dict[str, tuple[str, Callable[[Fix], bool], tuple[str, ...]]] = {
    # name: (config text, which fix, the top-level keys its lines set)
    "raise-max": (EXAMPLE, _has("raise max_cudagraph_capture_size"), ("max_cudagraph_capture_size",)),
    "max-dash-flag": (  # an explicit maximum: the fix appends sizes and raises it, as flags
        EXAMPLE + "max-cudagraph-capture-size: 512\n",
        _has("exact token count"),
        ("max-cudagraph-capture-size", "cudagraph_capture_sizes"),
    ),
    "max-flag-beside-mapping": (  # the flag stays a flag: vLLM refuses it inside the mapping too
        EXAMPLE
        + "max-cudagraph-capture-size: 512\ncompilation_config: {cudagraph_mode: FULL_AND_PIECEWISE}\n",
        _has("exact token count"),
        ("max-cudagraph-capture-size", "compilation_config"),
    ),
    "raise-max-in-mapping": (
        EXAMPLE + "compilation_config:\n  cudagraph_mode: FULL_AND_PIECEWISE\n",
        _has("raise max_cudagraph_capture_size"),
        ("compilation_config",),
    ),
    "raise-max-in-dash-mapping": (
        EXAMPLE + "compilation-config: {cudagraph_mode: FULL_AND_PIECEWISE}\n",
        _has("raise max_cudagraph_capture_size"),
        ("compilation-config",),
    ),
    "size-list-flag": (
        EXAMPLE + f"cudagraph_capture_sizes: {SIZES}\n",
        _has("extend the size list"),
        ("cudagraph_capture_sizes",),
    ),
    "size-list-in-mapping": (
        EXAMPLE + f"compilation_config:\n  cudagraph_capture_sizes: {SIZES}\n",
        _has("exact token count"),
        ("compilation_config",),
    ),
    "mode": (
        EXAMPLE + "compilation_config:\n  cudagraph_mode: PIECEWISE\n",
        _has("cudagraph_mode FULL_AND_PIECEWISE"),
        ("compilation_config",),
    ),
    "mode-and-sizes": (DYN4, _has("cudagraph_mode FULL", "per-tier request grids"), ("compilation_config",)),
    "enforce-eager": (EXAMPLE + "enforce_eager: true\n", _has("drop enforce_eager"), ("enforce_eager",)),
    "enforce-eager-dash": (EXAMPLE + "enforce-eager: true\n", _has("drop enforce_eager"), ("enforce-eager",)),
    "optimization-level": (EXAMPLE + "optimization_level: 0\n", _has("-O2"), ("optimization_level",)),
    "dynamic-sd-schedule": (
        NO_SPEC
        + "speculative_config:\n  method: eagle\n  num_speculative_tokens: 16\n"
        + "  num_speculative_tokens_per_batch_size: [[1, 8, 16], [9, 32, 16]]\n"
        + "compilation_config:\n  max_cudagraph_capture_size: 256\n",
        _has("narrow the dynamic-SD schedule"),
        ("speculative_config",),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_pasted_fix_closes_the_gap(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # model: paths start from the working directory, as in vLLM
    text, which, keys = CASES[name]
    before = tmp_path / "serve.yaml"
    before.write_text(text)
    _, plan = plan_file(before)
    assert plan.gaps, name
    fix = next(f for f in plan.fixes if which(f))
    assert set(keys) <= {line.split(":", 1)[0] for line in fix.config_lines}, fix.config_lines
    pasted = tmp_path / "pasted.yaml"
    pasted.write_text(text + "".join(f"{line}\n" for line in fix.config_lines))
    loaded, after = plan_file(pasted)
    assert len(after.gaps) == fix.remaining_gaps
    assert graph_count(after) == fix.graphs_after
    assert len(after.capture_sizes) == fix.num_capture_sizes_after
    # the same input as the command-line fix on top of the file
    flags = [word for words in fix.argv for word in words]
    cli, _ = plan_vllm_args(["serve", "--config", str(before), *flags], base_dir=ROOT)
    assert fingerprint(loaded.input) == fingerprint(cli.input)


def test_lines_keep_the_files_other_keys() -> None:
    doc = {"compilation_config": {"cudagraph_mode": "FULL", "pass_config": {"enable_sp": True}}}
    change = (("compilation_config.max_cudagraph_capture_size", 544),)
    assert fix_config_lines(doc, change) == (
        'compilation_config: {"cudagraph_mode": "FULL", "pass_config": {"enable_sp": true}, '
        '"max_cudagraph_capture_size": 544}',
    )
    # a JSON string in the file (vLLM reads it as the flag's JSON) is merged too
    doc2 = {"speculative-config": '{"method": "eagle", "num_speculative_tokens": 3}'}
    assert fix_config_lines(
        doc2, (("speculative_config.num_speculative_tokens_per_batch_size", [[1, 4, 3]]),)
    ) == (
        'speculative-config: {"method": "eagle", "num_speculative_tokens": 3, '
        '"num_speculative_tokens_per_batch_size": [[1, 4, 3]]}',
    )
    # a value that is no mapping, or one JSON cannot write: no lines (the flags still apply)
    assert fix_config_lines({"compilation_config": 7}, change) == ()


def test_a_command_line_plan_has_no_config_lines() -> None:
    _, plan = plan_vllm_args(
        ["serve", "configs/models/tiny-llama", "--max-num-seqs", "32", "--speculative-config",
         '{"method": "eagle", "num_speculative_tokens": 16}'],
        base_dir=ROOT,
    )  # fmt: skip
    assert plan.fixes and all(f.config_lines == () for f in plan.fixes)
