"""The README's examples run (issue 30: its own sweep example exited 2).

Every `cgplan ...` and `scripts/cgplan-gate ...` command of its bash blocks runs from the checkout's
root, with the README's placeholder files (serve.yaml, old.yaml, ...) played by bundled ones in a
temporary folder (PLACEHOLDERS), where the files a command writes go too. A command may pass or fail
its gate (exit 0 or 1: a plan with a gap, a gate that finds it), never refuse its input (exit 2)
or crash. Only the commands that need a GPU or the user's own vLLM builds, or that change the user's shell,
are left out (an interpreter with vLLM 0.33.0 is played by recorded answers). A
`$ cgplan ...` text block shows that command's real output.
"""

from __future__ import annotations

import gzip
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.api.fake_vllm import tool
from tests.paths import ROOT_DIR

README = (ROOT_DIR / "README.md").read_text()
PLACEHOLDERS = {
    "serve.yaml": "configs/gpu/tiny-eagle-k16.yaml",
    "main.yaml": "configs/gpu/tiny-eagle-k16-max544.yaml",
    "old.yaml": "configs/gpu/tiny-eagle-k16.yaml",
    "new.yaml": "configs/gpu/tiny-eagle-k16-max544.yaml",
    "llama-8b/config.json": "configs/models/llama-3.1-8b/config.json",
}
"""README placeholder → the bundled file that plays it (vllm-startup.log: a recorded engine log)."""
NEEDS_GPU_OR_SHELL = ("cgplan capture --gpu", "cgplan calibrate r/", "cgplan --install-completion")
"""Commands left out: a GPU capture (and the fit of its reports), a change to the user's shell."""
VLLM_PYTHON = "~/venvs/vllm-0.33.0/bin/python"
"""The README's interpreter with vLLM 0.33.0: played by tests/api/fake_vllm.py answering with vLLM
0.33.0's recorded answer for the example (tests/data/oracle-verify/, what `cgplan verify` compares)."""
NEEDS_VLLM_BUILDS = ("cgplan verify configs/ ",)
"""Commands left out: `verify` over a folder of configs in the user's own vLLM builds (a release and
a branch); tests/api/test_verify.py runs that path (--against) on recorded answers."""


def _commands() -> list[str]:
    out = []
    for body in re.findall(r"```bash\n(.*?)```", README, re.S):
        joined = re.sub(r"\\\n\s*", " ", body)  # continuation lines
        for line in joined.splitlines():
            line = line.strip()
            if not line.startswith(("cgplan ", "scripts/cgplan-gate ")):
                continue
            if line.startswith(NEEDS_GPU_OR_SHELL + NEEDS_VLLM_BUILDS):
                continue
            out.append(line)
    return out


COMMANDS = _commands()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("readme")
    for name, source in PLACEHOLDERS.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_bytes((ROOT_DIR / source).read_bytes())
    log = gzip.decompress((ROOT_DIR / "tests/data/logs/tiny-eagle-k16-vllm.log.gz").read_bytes()).decode()
    (d / "vllm-startup.log").write_text(log.replace("/work/main/", f"{ROOT_DIR}/"))
    answer = ROOT_DIR / "tests/data/oracle-verify/pr50488-eagle-k16.0.33.0.json.gz"
    (d / "vllm-0.33.0").mkdir()
    tool(d / "vllm-0.33.0", FAKE_VLLM_ANSWERS=str(answer), FAKE_VLLM_VERSION="0.33.0")
    return d


_BARE_FILE = re.compile(
    r"(?<![\w/.-])(?:\./)?((?:llama-8b/)?[\w.-]+\.(?:yaml|log|html|json|md|xml))(?![\w/-])"
)
"""A file the README names without a folder (serve.yaml, plan.html, ./llama-8b/config.json): a
placeholder, or a file the command writes; both live in the temporary folder."""


def _run(command: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    command = command.replace(VLLM_PYTHON, str(workdir / "vllm-0.33.0" / "fake-python"))
    command = _BARE_FILE.sub(lambda m: str(workdir / m.group(1)), command)
    words = shlex.split(command, comments=True)
    if words[0] == "cgplan":
        words = [sys.executable, "-m", "cgplan", *words[1:]]
    # a glob in the README (fit-*.json) is the shell's to expand
    line = " ".join(shlex.quote(w) if "*" not in w else w for w in words)
    env = {**os.environ, "PYTHON": sys.executable, "NO_COLOR": "1", "PYTHONPATH": str(ROOT_DIR)}
    return subprocess.run(
        ["bash", "-c", line], cwd=ROOT_DIR, capture_output=True, text=True, check=False, env=env, timeout=300
    )


def test_the_readme_has_examples() -> None:
    assert len(COMMANDS) >= 12
    assert any(c.startswith("cgplan sweep ") for c in COMMANDS)
    assert any(c.startswith("cgplan optimize ") for c in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=[c[:60] for c in COMMANDS])
def test_readme_command_runs(command: str, workdir: Path) -> None:
    r = _run(command, workdir)
    assert r.returncode in (0, 1), f"exit {r.returncode}: {r.stderr[-2000:]}"
    assert "Traceback" not in r.stderr and "error:" not in r.stderr, r.stderr[-2000:]


def test_readme_output_is_the_real_output(workdir: Path) -> None:
    blocks = re.findall(r"```text\n\$ (cgplan [^\n]*)\n(.*?)```", README, re.S)
    assert blocks
    for command, shown in blocks:
        r = _run(command, workdir)
        assert r.stdout == shown, f"README's output of `{command}` is stale: regenerate it"
