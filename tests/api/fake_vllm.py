"""A stand-in for an interpreter with vLLM installed, for `cgplan verify`'s tests (CI has no vLLM).

It is run as the engine runner runs a real one (`PY -c BOOT ENGINE ARGS...`, see
cgplan/gpu/vllm_cpu.py) and runs cgplan's real engine file (cgplan/gpu/vllm_oracle.py: its batch
loop, forked children, per-config timeouts and protocol lines), with two functions replaced: the
import of vLLM reports FAKE_VLLM_VERSION, and `run(cfg)` gives a recorded answer of vLLM's own code
(FAKE_VLLM_ANSWERS: the files, one per config, gzip JSON as scripts/record_golden.py writes them).

FAKE_VLLM_MODE picks a failure: `ok` (default), `no-vllm` (vLLM does not import), `die` (the
interpreter dies at once, as a segfault), `silent` (exits 0 printing nothing, as /bin/true),
`crash:I` / `hang:I` (the config at index I raises / never returns).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def tool(tmp: Path, **env: str) -> Path:
    """An executable `python` in `tmp` that runs this file with `env` set (what `--python` names)."""
    py = tmp / "fake-python"
    lines = ["#!/bin/sh", *(f"export {k}='{v}'" for k, v in env.items())]
    lines.append(f'exec "{sys.executable}" "{Path(__file__).resolve()}" "$@"')
    py.write_text("\n".join(lines) + "\n")
    py.chmod(0o755)
    return py


def _recorded(path: str, version: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(gzip.decompress(Path(path).read_bytes()))
    doc.pop("_recorded", None)
    doc["vllm_version"] = version  # what the engine prints for the build it runs in
    return doc


def main() -> int:
    argv = sys.argv[1:]
    if len(argv) < 3 or argv[0] != "-c":
        sys.stderr.write("fake_vllm: expected -c BOOT ENGINE ARGS...\n")
        return 2
    engine_path, args = argv[2], argv[3:]
    mode, _, at = os.environ.get("FAKE_VLLM_MODE", "ok").partition(":")
    if mode == "die":
        sys.stderr.write("Fatal Python error: Segmentation fault\n")
        os._exit(139)
    if mode == "silent":
        return 0
    version = os.environ.get("FAKE_VLLM_VERSION", "0.33.0")
    answers = [a for a in os.environ.get("FAKE_VLLM_ANSWERS", "").split(os.pathsep) if a]
    spec = importlib.util.spec_from_file_location("cgplan_oracle", engine_path)
    assert spec is not None and spec.loader is not None
    engine = importlib.util.module_from_spec(spec)
    sys.modules["cgplan_oracle"] = engine
    spec.loader.exec_module(engine)
    configs = [json.loads(Path(a).read_text()) for a in args if a.endswith(".json")]

    def fake_import() -> str:
        if mode == "no-vllm":
            raise ModuleNotFoundError("No module named 'vllm'")
        return version

    def fake_run(cfg: dict[str, Any]) -> dict[str, Any]:
        index = configs.index(cfg)
        if mode == "crash" and index == int(at):
            raise RuntimeError("the fake engine broke on this config")
        if mode == "hang" and index == int(at):
            time.sleep(3600)
        return _recorded(answers[index], version)

    setattr(engine, "_import_vllm", fake_import)  # noqa: B010 (a module loaded by path: no attributes typed)
    setattr(engine, "run", fake_run)  # noqa: B010
    return int(engine.main(args))


if __name__ == "__main__":
    sys.exit(main())
