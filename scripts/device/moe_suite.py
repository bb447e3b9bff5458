"""On the lent H200 (issue 16): capture MoE/MLA configs with `cgplan capture --gpu`, their GPU work in
turn, everything else at once, within one device call; results packed into $OUT/moe16.tgz.

usage: python3 scripts/device/moe_suite.py CONFIG...      (from the repository root; configs in
       priority order: when time runs out, the last ones are not run)
env:   OUT (results), LIMIT (seconds for the whole suite, default 170), RESERVE (seconds a turn
       needs at least, default 25), PER_RUN (seconds one turn may take, default 100), DEVX
       (folder with payload.tar.xz and scripts/dev.sh; default .devx), MOE_EXTRA (the MoE/MLA
       kernels' archive, default DEVX/payload-moe-extra.tar.xz), MAX_AHEAD (processes waiting
       for a turn at once, default 6), MOE_WORK (where the raw files are written before packing,
       default /tmp/moe16-r), PACK (the archive's name under $OUT, default moe16.tgz), MOE_CHILD
       (the child command, default "python3 scripts/device/turn_capture.py"; tests use a stub)

Every config's process starts at once (imports, planning, vLLM's config checks and model
inspection overlap); each waits at vLLM's `Worker.init_device` (turn_capture.py) until the suite
gives it the turn, and the next turn is given only after it has exited, so the GPU holds one
engine at a time and NVML's device-wide figures are that engine's alone. The lowest-numbered
ready process goes first. Per process: the report (NAME-vllm.json, as capture_suite.sh names
it), console output (NAME.out), engine log (NAME.err.gz); the suite's timeline (timeline.json:
ready/go/exit times, rc, NVML used memory at each turn's start and end) and log (suite.log).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path


def nvml_used_mib() -> float | None:
    """Device memory in use (all processes), or None without nvidia-smi."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.split()
        return float(out[0]) if out else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def setup(devx: Path, log) -> None:
    """Unpack the vLLM payload and the MoE/MLA kernels into /tmp/site (skipped when warm)."""
    site = Path("/tmp/site")
    if not (site / ".ok").exists() and (devx / "payload.tar.xz").exists():
        subprocess.run(
            ["bash", str(devx / "scripts" / "dev.sh"), "setup"],
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    extra = Path(os.environ.get("MOE_EXTRA", str(devx / "payload-moe-extra.tar.xz")))
    if extra.exists() and not (site / ".moe").exists() and site.is_dir():
        subprocess.run(["tar", "-xJf", str(extra), "-C", str(site)], check=False)
        (site / ".moe").touch()
    log(
        f"site: {'ok' if (site / '.ok').exists() else 'missing'}, moe kernels: "
        f"{'ok' if (site / '.moe').exists() else 'missing'}"
    )


def pack(out: Path, r: Path) -> None:
    name = os.environ.get("PACK", "moe16.tgz")
    tmp = out / f"{name}.tmp"
    with tarfile.open(tmp, "w:gz") as t:
        t.add(r, arcname="r")
    tmp.replace(out / name)


def main(argv: list[str]) -> int:
    t0 = time.monotonic()
    root = Path(__file__).resolve().parents[2]
    out = Path(os.environ.get("OUT", "/tmp/cgplan-out"))
    # Raw files live outside $OUT: only the packed moe16.tgz comes back (the device returns at most
    # 8 files, and one killed at its limit could leave many behind).
    r = Path(os.environ.get("MOE_WORK", "/tmp/moe16-r"))
    shutil.rmtree(r, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    turns = r / "turns"
    turns.mkdir(parents=True, exist_ok=True)
    limit = float(os.environ.get("LIMIT", "170"))
    reserve = float(os.environ.get("RESERVE", "25"))
    per_run = float(os.environ.get("PER_RUN", "100"))
    devx = Path(os.environ.get("DEVX", str(root / ".devx")))
    child = shlex.split(os.environ.get("MOE_CHILD", "python3 scripts/device/turn_capture.py"))
    logf = open(r / "suite.log", "a")  # noqa: SIM115 (written until the suite ends)

    def el() -> float:
        return time.monotonic() - t0

    def log(msg: str) -> None:
        line = f"[+{el():6.1f}s] {msg}"
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    setup(devx, log)
    env = dict(os.environ)
    env.update(
        PYTHONPATH=f"{root}:/tmp/site",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
        VLLM_USE_FLASHINFER_SAMPLER="0",
        PYTHONUNBUFFERED="1",
        VLLM_ENABLE_V1_MULTIPROCESSING="0",
        CUDA_MODULE_LOADING="LAZY",
        CGPLAN_TURN_DIR=str(turns),
    )
    subprocess.run(
        "nvidia-smi > " + shlex.quote(str(r / "nvidia-smi.txt")) + " 2>&1", shell=True, check=False
    )
    ahead = int(os.environ.get("MAX_AHEAD", "6"))
    jobs = []
    for i, cfg in enumerate(argv):
        name = Path(cfg).stem
        cmd = [*child, "capture", "--gpu", cfg, "--backend", "vllm", "-o", str(r / f"{name}-vllm.json")]
        jobs.append(
            {
                "i": i,
                "name": name,
                "config": cfg,
                "cmd": cmd,
                "p": None,
                "start_s": None,
                "ready_s": None,
                "go_s": None,
                "exit_s": None,
                "rc": None,
                "used_mib_at_go": None,
                "used_mib_at_exit": None,
                "status": "queued",
            }
        )

    def launch() -> None:
        # at most MAX_AHEAD processes wait for a turn at once (more would only slow their imports)
        alive = sum(1 for j in jobs if j["p"] is not None and j["rc"] is None and j["go_s"] is None)
        for j in jobs:
            if alive >= ahead:
                break
            if j["p"] is None:
                # the child writes them until it exits; the suite never reads them before that
                so = open(r / f"{j['name']}.out", "w")  # noqa: SIM115
                se = open(r / f"{j['name']}.err", "w")  # noqa: SIM115
                j["p"] = subprocess.Popen(
                    j["cmd"],
                    cwd=root,
                    env={**env, "CGPLAN_TURN": str(j["i"])},
                    stdout=so,
                    stderr=se,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
                j["start_s"], j["status"] = round(el(), 1), "started"
                alive += 1

    launch()
    log(f"{sum(j['p'] is not None for j in jobs)} of {len(jobs)} processes started")
    timeline = r / "timeline.json"

    def save() -> None:
        rows = [{k: v for k, v in j.items() if k != "p"} for j in jobs]
        timeline.write_text(
            json.dumps({"limit_s": limit, "elapsed_s": round(el(), 1), "runs": rows}, indent=1)
        )

    def reap() -> None:
        for j in jobs:
            if j["p"] is not None and j["rc"] is None and j["p"].poll() is not None:
                j["rc"], j["exit_s"] = j["p"].returncode, round(el(), 1)
                if j["status"] == "started":
                    j["status"] = "exited before its turn"

    try:
        while True:
            reap()
            launch()
            for j in jobs:
                if j["ready_s"] is None and (turns / f"ready.{j['i']}").exists():
                    j["ready_s"] = round(el(), 1)
            waiting = [j for j in jobs if j["rc"] is None and j["go_s"] is None]  # queued ones too
            if not waiting:
                break
            ready = [j for j in waiting if j["p"] is not None and j["ready_s"] is not None]
            if not ready:
                if el() > limit - reserve:
                    break
                time.sleep(0.1)
                continue
            if limit - el() < reserve:
                log(f"{limit - el():.0f} s left, under the {reserve:.0f} s a turn needs: stopping")
                break
            j = ready[0]
            j["used_mib_at_go"] = nvml_used_mib()
            j["go_s"] = round(el(), 1)
            j["status"] = "running"
            (turns / f"go.{j['i']}").touch()
            log(
                f"turn {j['i']} {j['name']} (ready at +{j['ready_s']}s; GPU in use {j['used_mib_at_go']} MiB)"
            )
            while j["p"].poll() is None:
                if el() > limit - 5 or el() - j["go_s"] > per_run:
                    log(f"time is up during {j['name']}: SIGINT")
                    os.killpg(j["p"].pid, signal.SIGINT)
                    try:
                        j["p"].wait(8)
                    except subprocess.TimeoutExpired:
                        os.killpg(j["p"].pid, signal.SIGKILL)
                    break
                time.sleep(0.1)
            j["p"].wait()
            j["rc"], j["exit_s"] = j["p"].returncode, round(el(), 1)
            j["used_mib_at_exit"] = nvml_used_mib()
            j["status"] = "done"
            log(f"  {j['name']} rc={j['rc']} in {j['exit_s'] - j['go_s']:.1f}s")
            with contextlib.suppress(OSError):
                print(
                    "    " + "\n    ".join((r / f"{j['name']}.out").read_text().splitlines()[-14:]),
                    flush=True,
                )
            save()
            pack(out, r)
    finally:
        for j in jobs:
            if j["p"] is None:
                j["status"] = "not run (time)"
            elif j["p"].poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(j["p"].pid, signal.SIGKILL)
                j["p"].wait()
                j["rc"], j["exit_s"], j["status"] = j["p"].returncode, round(el(), 1), "not run (time)"
        reap()
        save()
        for j in jobs:
            err = r / f"{j['name']}.err"
            if err.exists():
                with open(err, "rb") as src, gzip.open(str(err) + ".gz", "wb") as dst:
                    shutil.copyfileobj(src, dst)
                err.unlink()
        shutil.rmtree(turns, ignore_errors=True)
        log("suite done: " + ", ".join(f"{j['name']} {j['status']} rc={j['rc']}" for j in jobs))
        logf.close()
        pack(out, r)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
