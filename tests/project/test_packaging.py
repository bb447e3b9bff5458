"""Packaging and CI (issues 14 and 15): LICENSE, SPDX metadata, the installed gate script, the gpu extra's
vLLM range, `make gate-examples` from a fresh clone, .ci/run = make ci on every Python found."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cgplan.core.vllm.releases import SUPPORTED_VERSIONS
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
PYPROJECT = (ROOT / "pyproject.toml").read_text()


def test_license_file_and_spdx_metadata() -> None:
    """A LICENSE file with Apache-2.0's text; `license` as an SPDX string (PEP 639), which
    setuptools >= 77 reads without its deprecation banner for the TOML-table form."""
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert re.search(r'^license = "Apache-2\.0"$', PYPROJECT, re.M)
    assert re.search(r'^license-files = \["LICENSE"\]$', PYPROJECT, re.M)
    assert re.search(r'^requires = \["setuptools>=77"\]', PYPROJECT, re.M)


def test_cgplan_gate_is_a_console_script() -> None:
    assert re.search(r'^cgplan-gate = "cgplan\.cli:gate_main"$', PYPROJECT, re.M)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from cgplan.cli import gate_main; gate_main()",
            "configs/gpu/tiny-nospec.yaml",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and "gate passed: 1/1 targets pass" in proc.stdout, proc.stderr


def test_gpu_extra_is_bounded_to_the_recorded_releases() -> None:
    """An unbounded `vllm` installed a release `capture` then refused. The extra admits the oldest
    release up to the newest one whose recording is committed (tests/data/oracle-serve-flags/: the
    recording run writes it): a release entry not yet checked against vLLM's own answers is not
    installable, and its recording run is when the bound moves (this test asks for it then)."""
    m = re.search(r'"vllm>=([\d.]+),<([\d.]+)"', PYPROJECT)
    assert m is not None
    assert m.group(1) == SUPPORTED_VERSIONS[0]
    recorded = {p.stem for p in (ROOT / "tests" / "data" / "oracle-serve-flags").glob("*.json")}
    newest = [v for v in SUPPORTED_VERSIONS if v in recorded][-1]
    major, minor, _ = (int(x) for x in newest.split("."))
    assert m.group(2) == f"{major}.{minor + 1}", f"raise the gpu extra's bound: {newest} is recorded"


def test_the_version_is_written_once() -> None:
    """pyproject.toml and cgplan/__init__.py each spelled 0.1.0: the package's metadata now reads
    cgplan.__version__ (setuptools reads the assignment without importing cgplan)."""
    import cgplan

    assert not re.search(r"^version\s*=\s*\"", PYPROJECT, re.M)
    assert re.search(r'^dynamic = \["version"\]$', PYPROJECT, re.M)
    assert re.search(r'^version = \{attr = "cgplan\.__version__"\}$', PYPROJECT, re.M)
    assert re.fullmatch(r"\d+\.\d+\.\d+", cgplan.__version__)


def test_dev_tools_are_pinned_and_ray_is_its_own_extra() -> None:
    """The dev extra was unpinned and pulled in Ray (hundreds of MB) for every contributor: Ray is
    the ray extra's alone (its tests skip without it; .ci/run installs it), and every dev tool and
    Ray have one version per Python in constraints-dev.txt, which the Makefile and .ci/run use."""
    table = PYPROJECT.split("[project.optional-dependencies]")[1]
    extras = dict(re.findall(r"^(\w+) = \[(.*)\]$", table, re.M))
    names = {k: [re.split(r"[<>=!~; ]", d.strip('" '))[0] for d in v.split(",")] for k, v in extras.items()}
    assert "ray" not in names["dev"] and names["ray"] == ["ray"], names
    pins: dict[str, list[str]] = {}
    for line in (ROOT / "constraints-dev.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            m = re.fullmatch(r"([\w-]+)==[\w.]+(; python_version [<>=]+ \"3\.\d+\")?", line)
            assert m, line
            pins.setdefault(m.group(1), []).append(line)
    assert sorted(pins) == sorted([*names["dev"], "ray"]), pins
    assert "-c constraints-dev.txt" in (ROOT / "Makefile").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make ci EXTRAS=dev,ray" in ci and "'.[dev,ray]' -c constraints-dev.txt" in ci


def test_typer_pin_excludes_pydantic_releases() -> None:
    """typer 0.29 imports pydantic at start-up (issue 18); 0.26 is the first that vendors click."""
    assert '"typer>=0.26,<0.29"' in PYPROJECT


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_gate_examples_from_a_fresh_clone(tmp_path: Path) -> None:
    """`make gate-examples` wrote into .cache/, which a fresh clone does not have (.ci/run hid
    it with `mkdir -p .cache`)."""
    for name in ("Makefile", "scripts", "configs"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, tmp_path / name)
        else:
            shutil.copy(src, tmp_path / name)
    (tmp_path / "pyproject.toml").write_text("")
    bin_dir = Path(sys.executable).parent
    proc = subprocess.run(
        ["make", "-s", "gate-examples", "STAMP=", f"BIN={bin_dir}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / ".cache" / "gate-verdict.json").is_file()


def test_ci_runs_make_ci_and_every_python() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\nmake ci EXTRAS=dev,ray\n" in ci and "mkdir -p .cache" not in ci
    assert "scripts/pythons.sh" in ci
    proc = subprocess.run(
        ["bash", "scripts/pythons.sh"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0
    found = proc.stdout.split()
    assert found, "no Python >= 3.10 found"
    makefile = (ROOT / "Makefile").read_text()
    assert "mypy cgplan tests" in makefile
