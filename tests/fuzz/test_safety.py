"""Failure leaves files alone; newer reports are refused; reading input never executes it."""

from __future__ import annotations

import builtins
import json
import marshal
import pickle
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fuzz.harness import EXAMPLES, H200, problems, run_cli

PR = EXAMPLES / "pr50488-eagle-k16.yaml"
OLD = '{"keep": "this content"}\n'


@pytest.mark.parametrize(
    "case",
    ["plan-bad-config", "plan-rejected-config", "diff-bad-report", "sweep-bad-set", "plan-missing-file"],
)
def test_output_is_never_truncated_on_failure(tmp_path: Path, case: str) -> None:
    existing = tmp_path / "existing.json"
    existing.write_text(OLD)
    bad = tmp_path / "bad.yaml"
    bad.write_text("max_num_seqs: lots\n")
    rejected = tmp_path / "rejected.yaml"
    rejected.write_text(PR.read_text().replace("../models", str(EXAMPLES.parent / "models")))
    rejected.write_text(rejected.read_text() + "max_num_batched_tokens: 8\n")
    report = tmp_path / "r.json"
    report.write_text('{"schema_version": 1, "kind": "plan", "max_num_seqs": "x"}')
    args = {
        "plan-bad-config": ["plan", str(bad), "--json", "-o", str(existing)],
        "plan-rejected-config": ["plan", str(rejected), "-o", str(existing)],
        "diff-bad-report": ["diff", str(report), str(report), "-o", str(existing)],
        "sweep-bad-set": ["sweep", str(PR), "--set", "max_num_seqs=0..4", "-o", str(existing)],
        "plan-missing-file": ["plan", str(tmp_path / "nope.yaml"), "-o", str(existing)],
    }[case]
    run = run_cli(args)
    assert run.code == 2 and problems(run, where=[str(tmp_path), "--set"]) == [], run.err
    assert existing.read_text() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["existing.json", "bad.yaml", "rejected.yaml", "r.json"]
    ), "a temporary file was left behind"


def test_output_replaced_whole_on_success(tmp_path: Path) -> None:
    existing = tmp_path / "existing.json"
    existing.write_text(OLD)
    run = run_cli(["plan", str(PR), "--json", "-o", str(existing)])
    assert run.code == 0 and run.out == ""
    assert json.loads(existing.read_text())["schema_version"] == 1


@pytest.mark.parametrize("kind", ["plan", "capture"])
@pytest.mark.parametrize("command", ["diff", "gate"])
def test_newer_schema_is_refused(tmp_path: Path, kind: str, command: str) -> None:
    base = (
        json.loads(run_cli(["plan", str(PR), "--json"]).out)
        if kind == "plan"
        else json.loads((H200 / "tiny-nospec-vllm.json").read_text())
    )
    base["schema_version"] = 2
    path = tmp_path / "new.json"
    path.write_text(json.dumps(base))
    run = run_cli([command, str(path)] + ([str(path)] if command == "diff" else []))
    assert run.code == 2 and problems(run, where=[str(path)]) == []
    assert run.err == (
        f"cgplan: error: {path}:schema_version: 2 is newer than this cgplan reads (supports 1..1); "
        "upgrade cgplan\n"
    )


@pytest.fixture
def nothing_executes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """Deserialisers that run code fail the test when called at all; eval and exec (which
    typer uses on annotations) fail it when handed anything from the input; a marker file
    shows whether a shell ran."""

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"executed input: {args!r:.200}")

    for target, name in [
        (pickle, "loads"),
        (pickle, "load"),
        (marshal, "loads"),
        (yaml, "unsafe_load"),
        (yaml, "full_load"),
    ]:
        monkeypatch.setattr(target, name, forbidden)
    real_load = yaml.load

    def safe_only(stream: Any, Loader: Any) -> Any:
        if not issubclass(Loader, (yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader))):
            forbidden(stream, Loader)
        return real_load(stream, Loader)

    monkeypatch.setattr(yaml, "load", safe_only)
    for name in ("eval", "exec"):
        real = getattr(builtins, name)

        def guarded(source: object, *args: object, _real: Any = real, **kwargs: object) -> object:
            if "os.system" in str(source) or "__import__" in str(source):
                forbidden(source)
            return _real(source, *args, **kwargs)

        monkeypatch.setattr(builtins, name, guarded)
    marker = tmp_path / "EXECUTED"
    yield marker
    assert not marker.exists(), "input was executed"


def test_reading_a_report_executes_nothing(tmp_path: Path, nothing_executes: Path) -> None:
    payload = f"__import__('os').system('touch {nothing_executes}')"
    doc = json.loads((H200 / "tiny-nospec-vllm.json").read_text())

    def poison(x: object) -> object:
        if isinstance(x, dict):
            return {k: poison(v) for k, v in x.items()}
        if isinstance(x, list):
            return [poison(v) for v in x]
        return payload if isinstance(x, str) and x not in ("capture", "plan", "FULL", "PIECEWISE") else x

    doc = poison(doc)
    assert isinstance(doc, dict)
    doc["environment"] = {"!!python/object/apply:os.system": [f"touch {nothing_executes}"], "x": payload}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    for args in (["diff", str(path), str(path)], ["gate", str(path)]):
        run = run_cli(args)
        assert problems(run, where=[str(path)]) == [], run.err
        assert run.code == 2 and "expected a name" in run.err  # the payload is refused as a name


@pytest.mark.parametrize(
    "tagged",
    [
        "max_num_seqs: !!python/object/apply:os.system ['touch {marker}']\n",
        "model: !!python/object/new:os.system ['touch {marker}']\n",
        "!!python/object:cgplan.io.config.Overrides {{vllm_version: 0.26.0}}\n",
        "max_num_seqs: !!python/name:os.system\n",
        "cgplan: !!python/module:os\n",
    ],
)
def test_yaml_tags_are_refused_with_a_location(tmp_path: Path, nothing_executes: Path, tagged: str) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text(tagged.format(marker=nothing_executes))
    run = run_cli(["plan", str(path)])
    assert run.code == 2 and problems(run, where=[str(path)]) == [], run.err
    assert run.err.startswith(f"cgplan: error: {path}")
    assert re.search(r"YAML tags are not accepted, at line 1, column \d+ \(got \"!!python/", run.err)


def test_yaml_tags_in_a_policy_are_refused(tmp_path: Path, nothing_executes: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(f"max_pool_gib: !!python/object/apply:os.system ['touch {nothing_executes}']\n")
    run = run_cli(["gate", str(PR), "--policy", str(path)])
    assert run.code == 2 and problems(run, where=[str(path)]) == [], run.err
    assert f"{path}:max_pool_gib: YAML tags are not accepted, at line 1, column 15" in run.err
