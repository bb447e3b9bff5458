"""The issue 16 device tooling, on the CPU: the turn-taking suite and the fatbin pruner.

scripts/device/moe_suite.py runs several `cgplan capture` processes at once on the one GPU, but
lets only one of them hold GPU memory at a time (NVML's figures are device-wide, and the cost
model is fitted on them); scripts/device/turn_capture.py makes vLLM's worker wait for its turn;
scripts/device/prune_fatbins.py cuts the Marlin kernels out of vLLM's MoE library so that the
MoE/MLA payload fits into one device call.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import struct
import subprocess
import sys
import tarfile
import threading
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
SUITE = ROOT / "scripts" / "device" / "moe_suite.py"

# A stand-in for `turn_capture.py capture --gpu CONFIG ... -o REPORT`: announces itself ready
# after a per-config delay, waits for its turn, "captures" for a while, writes the report.
STUB = """
import json, os, sys, time
i = int(os.environ["CGPLAN_TURN"]); d = os.environ["CGPLAN_TURN_DIR"]
name = os.path.basename(sys.argv[sys.argv.index("--gpu") + 1])
time.sleep({delays}[i])
if name.startswith("bad"):
    sys.exit(2)
open(os.path.join(d, f"ready.{{i}}"), "w").close()
while not os.path.exists(os.path.join(d, f"go.{{i}}")):
    time.sleep(0.01)
t0 = time.time(); time.sleep({hold})
json.dump({{"t0": t0, "t1": time.time()}}, open(sys.argv[sys.argv.index("-o") + 1], "w"))
"""


def _suite(
    tmp_path: Path, configs: list[str], delays: list[float], hold: float, limit: float, reserve: float = 0.5
) -> dict[str, Any]:
    stub = tmp_path / "stub.py"
    stub.write_text(STUB.format(delays=delays, hold=hold))
    out, work = tmp_path / "out", tmp_path / "work"
    env = {
        **os.environ,
        "OUT": str(out),
        "MOE_WORK": str(work),
        "LIMIT": str(limit),
        "RESERVE": str(reserve),
        "DEVX": str(tmp_path / "no-devx"),
        "MAX_AHEAD": "3",
        "MOE_CHILD": f"{sys.executable} {stub}",
    }
    subprocess.run(
        [sys.executable, str(SUITE), *configs], env=env, check=True, capture_output=True, timeout=60
    )
    assert sorted(p.name for p in out.iterdir()) == ["moe16.tgz"]  # one file comes back
    with tarfile.open(out / "moe16.tgz") as t:
        names = set(t.getnames())
    timeline = json.loads((work / "timeline.json").read_text())
    reports = {}
    for p in work.glob("*.json"):
        if p.name != "timeline.json":
            reports[p.stem.removesuffix("-vllm")] = json.loads(p.read_text())
            assert f"r/{p.name}" in names
    return {"runs": {r["name"]: r for r in timeline["runs"]}, "reports": reports}


def test_suite_gives_the_gpu_to_one_process_at_a_time(tmp_path: Path) -> None:
    # c is ready first, then a; b exits before its turn (as a refused config would); d and e
    # start only when a waiting slot frees (MAX_AHEAD 3)
    got = _suite(
        tmp_path,
        ["a.yaml", "bad-b.yaml", "c.yaml", "d.yaml", "e.yaml"],
        delays=[0.4, 0.1, 0.1, 0.1, 0.1],
        hold=0.3,
        limit=30,
    )
    runs, reports = got["runs"], got["reports"]
    assert runs["bad-b"]["status"] == "exited before its turn" and runs["bad-b"]["rc"] == 2
    assert set(reports) == {"a", "c", "d", "e"}
    windows = sorted((r["t0"], r["t1"]) for r in reports.values())
    for (_, end), (start, _) in itertools.pairwise(windows):
        assert start >= end  # no two "captures" overlap
    assert runs["c"]["go_s"] < runs["a"]["go_s"]  # the first ready goes first
    assert all(runs[n]["status"] == "done" and runs[n]["rc"] == 0 for n in "acde")


def test_suite_stops_giving_turns_when_time_runs_out(tmp_path: Path) -> None:
    # a turn needs 9.5 s of the 12: the first (ready within ~2.5 s) gets one, and after its 3 s
    # hold no other does
    got = _suite(
        tmp_path, ["a.yaml", "b.yaml", "c.yaml"], delays=[0.0, 0.1, 0.1], hold=3.0, limit=12, reserve=9.5
    )
    runs = got["runs"]
    assert runs["a"]["status"] == "done" and "a" in got["reports"]
    assert any(r["status"] == "not run (time)" for r in runs.values())


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    class Worker:
        def init_device(self) -> str:
            return "context created"

    mods = {name: types.ModuleType(name) for name in ("vllm", "vllm.v1", "vllm.v1.worker")}
    gw = types.ModuleType("vllm.v1.worker.gpu_worker")
    gw.Worker = Worker  # type: ignore[attr-defined]
    for name, mod in {**mods, "vllm.v1.worker.gpu_worker": gw}.items():
        monkeypatch.setitem(sys.modules, name, mod)
    mods["vllm.v1.worker"].gpu_worker = gw  # type: ignore[attr-defined]
    yield Worker


def test_turn_capture_holds_vllm_before_the_cuda_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_vllm: Any
) -> None:
    import cgplan.gpu.vllm_backend as vb

    entered: list[tuple[Any, ...]] = []

    @contextmanager
    def instrument(*a: Any, **k: Any) -> Iterator[None]:
        entered.append(a)
        yield

    monkeypatch.setattr(vb, "instrument", instrument)
    spec = importlib.util.spec_from_file_location("turn_capture", ROOT / "scripts/device/turn_capture.py")
    assert spec is not None and spec.loader is not None
    turn_capture: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(turn_capture)

    monkeypatch.setenv("CGPLAN_TURN_DIR", str(tmp_path))
    monkeypatch.setenv("CGPLAN_TURN", "4")
    original = fake_vllm.init_device
    turn_capture.install()
    result: list[str] = []

    def engine() -> None:
        hooks: Any = vb.instrument  # the wrapped stand-in: any arguments pass through
        with hooks("recorder"):
            result.append(fake_vllm().init_device())

    t = threading.Thread(target=engine)
    t.start()
    deadline = time.monotonic() + 5
    while not (tmp_path / "ready.4").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert (tmp_path / "ready.4").exists() and result == []  # waiting for its turn
    (tmp_path / "go.4").touch()
    t.join(5)
    assert result == ["context created"] and entered == [("recorder",)]
    assert fake_vllm.init_device is original  # unpatched afterwards


# ---- prune_fatbins.py ---------------------------------------------------------------------------

MAGIC = 0xBA55ED50


def _entry(arch: int, payload: bytes) -> bytes:
    # fatbin entry: kind 2 (cubin), header size 64, payload size; arch at offset 28
    hdr = bytearray(64)
    struct.pack_into("<HHIQ", hdr, 0, 2, 0x101, 64, len(payload))
    struct.pack_into("<I", hdr, 28, arch)
    return bytes(hdr) + payload


def _fatbin(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", MAGIC, 1, 16, len(body)) + body


def _elf_with_fatbin(section: bytes) -> bytes:
    # a minimal ELF64: header, the .nv_fatbin bytes, a section-name table, three section headers
    names = b"\0.nv_fatbin\0.shstrtab\0"
    data_off = 64
    names_off = data_off + len(section)
    shoff = (names_off + len(names) + 7) & ~7
    elf = bytearray(shoff + 3 * 64)
    elf[:4] = b"\x7fELF"
    struct.pack_into("<Q", elf, 0x28, shoff)
    struct.pack_into("<HHH", elf, 0x3A, 64, 3, 2)
    elf[data_off:names_off] = section
    elf[names_off : names_off + len(names)] = names
    struct.pack_into("<IIQQQQIIQQ", elf, shoff + 64, 1, 1, 0, 0, data_off, len(section), 0, 0, 8, 0)
    struct.pack_into("<IIQQQQIIQQ", elf, shoff + 128, 12, 3, 0, 0, names_off, len(names), 0, 0, 1, 0)
    return bytes(elf)


def test_prune_fatbins_replaces_only_the_named_kernels(tmp_path: Path) -> None:
    keep = _fatbin(_entry(90, b"_Z16moe_align_kernel" + b"\1" * 40))
    tiny = _fatbin(_entry(90, b"_Z6router" + b"\2" * 7))
    marlin = _fatbin(_entry(80, b"_Z12Marlin_moe_kernel" + b"\3" * 4000))
    section = b"".join(fb + b"\0" * (-len(fb) % 8) for fb in (keep, marlin, tiny))
    src, dst = tmp_path / "lib.so", tmp_path / "out.so"
    src.write_bytes(_elf_with_fatbin(section))
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts/device/prune_fatbins.py"),
            str(src),
            str(dst),
            "marlin",
            "Marlin",
        ],
        check=True,
        capture_output=True,
    )
    out = dst.read_bytes()
    assert len(out) == len(src.read_bytes())  # the ELF layout is unchanged
    assert b"moe_align_kernel" in out and b"Marlin" not in out
    pos = 64 + len(keep) + (-len(keep) % 8)  # the Marlin fatbin's header
    magic, _, hsz, fsz = struct.unpack_from("<IHHQ", out, pos)
    placeholder = tiny[16:]  # the smallest sm_90 cubin entry of the library
    assert magic == MAGIC and fsz == len(placeholder)
    assert out[pos + hsz : pos + hsz + fsz] == placeholder
    assert set(out[pos + hsz + fsz : pos + hsz + len(marlin) - 16]) == {0}
