"""Adding a vLLM release is one entry in cgplan/core/vllm/ plus one recording run (issues 15, 26).

A copy of the package gets exactly one new line in its core/vllm/releases.py, as a contributor
would write it (the next minor: the newest release's facts with one change), and nothing else.
Planning a YAML and a `vllm serve` command line, reading and comparing a log, and the release
list then accept it, where the untouched tree refuses it. The log formats and serve flags need no
entry: they are keyed by the same release list and reach the new release by `since`. Of the tests,
only those that need the release's recording run fail (`test_only_the_recording_tests_fail`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cgplan.core.vllm import log_formats, serve_flags
from cgplan.core.vllm.releases import (
    LATEST_VERSION,
    RELEASES,
    SUPPORTED_VERSIONS,
    closest_release,
    release_for,
    rules_for,
    since_entry,
)
from tests.cli_helpers import run
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
MODEL = ROOT / "configs" / "models" / "tiny-llama"
LOG = ROOT / "tests" / "data" / "logs" / "synthetic-v0.33.0-nospec-profiling.log"
LOG_CONFIG = ROOT / "configs" / "gpu" / "tiny-nospec.yaml"

_major, _minor, _ = (int(x) for x in LATEST_VERSION.split("."))
FAKE = f"{_major}.{_minor + 1}.0"
"""The next minor release: unknown to the tree under test whatever it knows."""
CHANGE = f"sm100_ceiling_1024={not rules_for(LATEST_VERSION).sm100_ceiling_1024}"
"""The one fact that differs from the newest release: the default capture ceiling on SM10x."""
ENTRY = f'_r = _release(replace(_r, version="{FAKE}", {CHANGE}))\n'
ANCHOR = "SUPPORTED_VERSIONS: tuple[str, ...] = tuple(RELEASES)"

RUN = """
import sys
sys.path.insert(0, sys.argv.pop(1))  # the package copy, ahead of the installed tree
from cgplan.cli import main
sys.argv[0] = "cgplan"
main()
"""


def _add_entry(root: Path) -> None:
    """The one new line in the copy's releases.py, and no other change."""
    releases = root / "cgplan" / "core" / "vllm" / "releases.py"
    text = releases.read_text()
    assert text.count(ANCHOR) == 1
    releases.write_text(text.replace(ANCHOR, ENTRY + "\n" + ANCHOR))


@pytest.fixture(scope="module")
def with_entry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package whose releases.py has the one new entry, and no other change."""
    root = tmp_path_factory.mktemp("new-release")
    shutil.copytree(ROOT / "cgplan", root / "cgplan", ignore=shutil.ignore_patterns("__pycache__"))
    _add_entry(root)
    return root


def cgplan(tree: Path | None, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """`cgplan ARGS` with the package copy `tree` (None: the tree under test)."""
    argv = [sys.executable, "-c", RUN, str(tree or ROOT), *map(str, args)]
    return subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)


def config(tmp_path: Path) -> Path:
    """A config on an SM10x GPU that names no release: it plans with the newest."""
    path = tmp_path / "b200.yaml"
    path.write_text(
        f"model: {MODEL}\nmax_model_len: 4096\nmax_num_seqs: 1024\nmax_num_batched_tokens: 8192\n"
        "cgplan:\n  platform: B200\n"
    )
    return path


def test_the_untouched_tree_refuses_the_release(tmp_path: Path) -> None:
    """The proof below needs a release cgplan does not know."""
    assert FAKE not in SUPPORTED_VERSIONS
    proc = cgplan(None, "plan", config(tmp_path), "--vllm-version", FAKE, "--json")
    assert proc.returncode == 2 and f"no rules for vLLM {FAKE}" in proc.stderr


def test_plan_accepts_the_release(with_entry: Path, tmp_path: Path) -> None:
    """It is the newest release (the default) and its one change shows in the plan."""
    newest = json.loads(cgplan(with_entry, "plan", config(tmp_path), "--json").stdout)
    before = cgplan(with_entry, "plan", config(tmp_path), "--json", "--vllm-version", LATEST_VERSION)
    assert newest["vllm_version"] == FAKE
    assert {newest["max_capture_size"], json.loads(before.stdout)["max_capture_size"]} == {512, 1024}


def test_serve_flags_accept_the_release(with_entry: Path, tmp_path: Path) -> None:
    """A `vllm serve` command line reads with the release's flags: the plan is the YAML's."""
    argv: list[str | Path] = ["plan", "--vllm-version", FAKE, "--platform", "B200", "--json"]
    serve: list[str | Path] = ["--", "serve", MODEL, "--max-model-len", "4096", "--max-num-seqs", "1024"]
    proc = cgplan(with_entry, *argv, *serve, "--max-num-batched-tokens", "8192")
    assert proc.returncode == 0, proc.stderr
    from_yaml = json.loads(cgplan(with_entry, "plan", config(tmp_path), "--json").stdout)
    got = json.loads(proc.stdout)
    assert (got["vllm_version"], got["max_capture_size"]) == (FAKE, from_yaml["max_capture_size"])
    assert cgplan(None, *argv, *serve).returncode == 2


def test_logs_accept_the_release(with_entry: Path, tmp_path: Path) -> None:
    """A log whose engine line names the release is read and compared under its rules."""
    log = tmp_path / "new.log"
    log.write_text(LOG.read_text().replace("(v0.33.0)", f"(v{FAKE})"))
    proc = cgplan(with_entry, "logs", log, "--config", LOG_CONFIG, "--json")
    assert proc.returncode == 0, proc.stderr
    cmp = json.loads(proc.stdout)["comparison"]
    assert (cmp["vllm_version"], cmp["agrees"]) == (FAKE, True), cmp["disagreements"]
    refused = cgplan(None, "logs", log, "--config", LOG_CONFIG)
    assert refused.returncode == 2 and f"the log is from vLLM {FAKE}" in refused.stderr


# ------------------------------------------------------------------ the rest of the suite

RELEASE_LIST_TESTS = (
    "tests/project/test_packaging.py::test_gpu_extra_is_bounded_to_the_recorded_releases",
    "tests/io/test_config_errors.py::test_message",
    "tests/project/test_conventions.py::test_completion_values",
    "tests/core/vllm/test_new_release.py::test_every_table_is_keyed_by_the_release_list",
    "tests/core/vllm/test_new_release.py::test_one_lookup_rule",
)
"""Tests that read the release list (each once spelled it out, so a new entry broke them)."""
RECORDING_TESTS = (
    "tests/core/vllm/test_golden.py::test_corpus_is_large_enough",
    "tests/core/vllm/test_golden_deploy.py::test_every_config_is_recorded_for_every_release",
    "tests/core/vllm/test_serve_flags_recorded.py::test_every_release_is_recorded",
    "tests/core/vllm/test_serve_flags_recorded.py::test_flags_match_vllms_parser",
)
"""Tests that need the new release's recording run (CONTRIBUTING.md, "Add a vLLM release", step 4)."""


def test_only_the_recording_tests_fail(tmp_path: Path) -> None:
    """With the one entry and no recording, the tests that read the release list pass under the
    new release, and what fails is the tests that need its recording run, each naming it (the rest
    of the suite passed with such an entry when this test was written: its commit says so). The package
    and the tests are copied, the rest of the tree linked: a test's own subprocesses, started in
    its tree's root, then run the copy too."""
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "cgplan", tmp_path / "cgplan", ignore=skip)
    shutil.copytree(ROOT / "tests", tmp_path / "tests", ignore=shutil.ignore_patterns("__pycache__", "data"))
    (tmp_path / "tests" / "data").symlink_to(ROOT / "tests" / "data")
    for entry in ROOT.iterdir():
        if not (tmp_path / entry.name).exists() and entry.name not in (".git", ".venv", ".cache"):
            (tmp_path / entry.name).symlink_to(entry)
    _add_entry(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the copy, from its folder
    args = ["-p", "no:cacheprovider", "-rfE", "--tb=no", "-o", "addopts="]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args, *RELEASE_LIST_TESTS, *RECORDING_TESTS],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    lines = proc.stdout.splitlines()
    failed = sorted(line.split()[1] for line in lines if line.startswith(("FAILED", "ERROR")))
    assert failed == sorted([*RECORDING_TESTS[:3], f"{RECORDING_TESTS[3]}[{FAKE}]"]), proc.stdout[-3000:]
    assert re.search(r"\b\d{2,} passed", proc.stdout), proc.stdout[-3000:]


# ------------------------------------------------------------------ the tables and their one key


def test_every_table_is_keyed_by_the_release_list() -> None:
    """Each `since` is a supported release, oldest entry first at the oldest release."""
    assert tuple(RELEASES) == SUPPORTED_VERSIONS and SUPPORTED_VERSIONS[-1] == LATEST_VERSION
    for table in (log_formats.LOG_FORMATS, serve_flags.SERVE_FLAGS):
        sinces = [entry.since for entry in table]
        assert sinces[0] == SUPPORTED_VERSIONS[0]
        assert all(s in SUPPORTED_VERSIONS for s in sinces)
        assert sinces == sorted(sinces, key=SUPPORTED_VERSIONS.index) and len(set(sinces)) == len(sinces)


@pytest.mark.parametrize("release", SUPPORTED_VERSIONS)
def test_one_lookup_rule(release: str) -> None:
    """A release, its patch releases, and what its builds print, reach the same entries (a later
    patch release: the newest entry of its minor, 0.27.1's for 0.27.7 although 0.27.0 has one)."""
    major, minor, patch = release.split(".")
    patch_release = f"{major}.{minor}.{int(patch) + 7}"
    newest = [v for v in SUPPORTED_VERSIONS if v.split(".")[:2] == [major, minor]][-1]
    assert release_for(release) == release
    assert release_for(patch_release) == newest == closest_release(patch_release)
    assert release_for(patch_release + ".dev3+gabc") is None  # main on its way to the next minor
    for table in (log_formats.LOG_FORMATS, serve_flags.SERVE_FLAGS):
        entry = since_entry(table, release)
        at = SUPPORTED_VERSIONS.index(release)
        assert entry is [e for e in table if SUPPORTED_VERSIONS.index(e.since) <= at][-1]
    assert log_formats.log_format_for(patch_release) is since_entry(log_formats.LOG_FORMATS, newest)
    assert serve_flags.serve_flags_for(release) is since_entry(serve_flags.SERVE_FLAGS, release)


def test_plan_and_sweep_read_a_patch_release_alike(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """sweep refused `--vllm-version 0.33.1` (its own exact-match rule) where plan read it as 0.33.0."""
    patch = f"{_major}.{_minor}.{int(LATEST_VERSION.split('.')[2]) + 9}"
    example = ROOT / "configs" / "examples" / "pr50488-eagle-k16.yaml"
    code, out, err = run(monkeypatch, capsys, "plan", example, "--vllm-version", patch, "--json")
    assert (code, json.loads(out)["vllm_version"]) == (0, LATEST_VERSION), err
    sweep = ("sweep", example, "--set", "max_num_seqs=30..31", "--vllm-version", patch, "--json")
    code, out, err = run(monkeypatch, capsys, *sweep)
    assert code == 0, err
    assert {tuple(r["detail_varies"]) for r in json.loads(out)["ranges"]} == {(LATEST_VERSION,)}
