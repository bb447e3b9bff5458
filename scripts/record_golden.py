#!/usr/bin/env python3
"""Record vLLM's own answers for the cgplan golden corpus.

The committed data under tests/data/oracle/ is regenerated, from a clone's root, with:

    make golden            # = make oracle-venvs, then:
    python3 scripts/record_golden.py --venv-root .cache tests/data/corpus/*.yaml
    python3 scripts/record_golden.py --venv-root .cache --out-dir tests/data/oracle-deploy \\
        tests/data/corpus-deploy/*.yaml

`make oracle-venvs` builds one CPU-only venv per supported release,
`.cache/venv-X` (git-ignored), with `scripts/oracle/setup-venv.sh X .cache/venv-X`;
`ORACLE_VENVS=DIR make golden` uses venvs built elsewhere. The oracle is the
product's engine, cgplan/gpu/vllm_oracle.py (adapted from the shared one; it also
builds data/pipeline/decode-context/expert parallel, LoRA and DBO configs;
scripts/oracle/oracle.py is its command line for people).
`--versions` defaults to every release in `cgplan/core/vllm/releases.py`; `--only STEM`
re-records the corpus files whose name contains STEM. The corpus of the parallel,
LoRA, DBO and validation rules is written by `scripts/oracle/make_corpus.py`.

For every version it:

1. translates each cgplan config (tests/data/corpus/<stem>.yaml) into the
   oracle's config dict (see `translate()`), written as JSON to a temp dir;
2. runs the product's engine, cgplan/gpu/vllm_oracle.py (what `cgplan verify` runs),
   in batch mode with that version's venv python. Like `vllm serve`
   (vllm/entrypoints/cli/serve.py and openai/api_server.py call
   `engine_args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)`),
   it builds the config with the usage context OPENAI_API_SERVER (it decides the
   default max_num_batched_tokens / max_num_seqs);
3. writes tests/data/oracle/<stem>.<version>.json.gz: the oracle's output plus
   `"_recorded": {"vllm_version", "corpus_file", "usage_context"}`. Two
   normalisations keep the data machine-independent and diff-stable: absolute
   paths in any string become "<repo>", "<site-packages>", "<venv>" or
   "<oracle>", and the oracle's wall-clock `elapsed_s` is dropped.

Configs vLLM rejects are recorded with an `error` field (wanted test data). A
config on which the oracle process itself crashes is reported as FAILED and
makes the script exit non-zero.

This is a data-generation tool: tests must only read the JSON, never import it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "tests" / "data" / "oracle"
ORACLE = REPO / "cgplan" / "gpu" / "vllm_oracle.py"
USAGE_CONTEXT = "OPENAI_API_SERVER"  # the engine's default, as `vllm serve`
EVENT = "@cgplan-oracle "


def translate(yaml_path: Path) -> dict:
    """The oracle's config dict for a corpus YAML: the product's translation
    (cgplan/io/oracle_input.py, the one `cgplan verify` uses); relative model paths start
    from the working directory, as in vLLM."""
    sys.path.insert(0, str(REPO))
    from cgplan.io.oracle_input import oracle_config

    return oracle_config(yaml_path)


# --------------------------------------------------------------------------
# parent
# --------------------------------------------------------------------------
def _normalise(obj, prefixes: list[tuple[str, str]]):
    if isinstance(obj, str):
        for prefix, placeholder in prefixes:
            obj = obj.replace(prefix, placeholder)
        return obj
    if isinstance(obj, list):
        return [_normalise(x, prefixes) for x in obj]
    if isinstance(obj, dict):
        return {k: _normalise(v, prefixes) for k, v in obj.items()}
    return obj


def _depth(o) -> int:
    if isinstance(o, dict):
        return 1 + max((_depth(v) for v in o.values()), default=0)
    if isinstance(o, list):
        return 1 + max((_depth(v) for v in o), default=0)
    return 0


def dumps(o, ind: int = 0) -> str:
    """JSON with one line per leaf container (a list of scalars, a dict of
    scalars, or a list of lists of scalars): readable diffs, half the size."""
    d = _depth(o)
    if d <= 1 or (isinstance(o, list) and d == 2 and all(isinstance(x, list) for x in o)):
        return json.dumps(o, default=str)
    pad = " " * (ind + 1)
    if isinstance(o, dict):
        body = ",\n".join(f"{pad}{json.dumps(k)}: {dumps(v, ind + 1)}" for k, v in o.items())
        return "{\n" + body + "\n" + " " * ind + "}"
    body = ",\n".join(f"{pad}{dumps(v, ind + 1)}" for v in o)
    return "[\n" + body + "\n" + " " * ind + "]"


def record_version(
    version: str,
    venv_root: Path,
    oracle_path: Path,
    corpus: list[Path],
    translated: dict[str, dict],
    out_dir: Path,
) -> tuple[int, int, float]:
    py = venv_root / f"venv-{version}" / "bin" / "python"
    if not py.exists():
        raise SystemExit(f"no venv python for {version}: {py}")
    t0 = time.perf_counter()
    failed = 0
    with tempfile.TemporaryDirectory(prefix=f"cgplan-golden-{version}-") as tmp:
        tmp_p = Path(tmp)
        cfg_dir = tmp_p / "configs"
        res_dir = tmp_p / "out"
        cfg_dir.mkdir()
        files = []
        for p in corpus:
            f = cfg_dir / f"{p.stem}.json"
            f.write_text(json.dumps(translated[p.stem], indent=1))
            files.append(str(f))
        env = dict(os.environ)
        env.setdefault("ORACLE_CACHE_DIR", str(venv_root / "vllm-oracle-cache"))
        cmd = [str(py), str(oracle_path), "--out-dir", str(res_dir), "--compact", *files]
        proc = subprocess.run(cmd, env=env, text=True, capture_output=True)
        status: dict[str, tuple[str, Path]] = {}
        for line in proc.stdout.splitlines():
            if not line.startswith(EVENT):
                continue
            event = json.loads(line[len(EVENT) :])
            if event["event"] == "done":
                stem = Path(event["config"]).stem
                status[stem] = (event["status"], Path(event.get("path") or "-"))
                if event.get("error"):
                    print(f"  [{version}] {stem}: {event['error'][-2000:]}", file=sys.stderr)
            else:
                print(f"  [{version}] {event}")
        if proc.returncode != 0:
            print(proc.stderr[-4000:], file=sys.stderr)
            raise SystemExit(f"oracle batch for {version} exited {proc.returncode}")
        # machine-specific paths (in `input`, log lines, trace tails)
        prefixes = [
            (str(p), "<site-packages>")
            for p in sorted((venv_root / f"venv-{version}").resolve().glob("lib/python*/site-packages"))
        ]
        prefixes += [
            (str(venv_root / f"venv-{version}"), "<venv>"),
            (str(oracle_path.parent), "<oracle>"),
            (str(REPO), "<repo>"),
        ]
        n_ok = 0
        for p in corpus:
            word, res = status.get(p.stem, ("missing", res_dir / "-"))
            if word != "ok" or not res.exists():
                failed += 1
                print(f"  [{version}] FAILED (oracle crashed): {p.stem}")
                continue
            data = json.loads(res.read_text())
            got = data.get("vllm_version")
            if got is not None and got != version:
                raise SystemExit(f"venv-{version} runs vLLM {got}")
            data.pop("elapsed_s", None)
            data = _normalise(data, prefixes)
            data["_recorded"] = {
                "vllm_version": version,
                "corpus_file": f"{p.stem}.yaml",
                "corpus_dir": p.parent.name,
                "usage_context": USAGE_CONTEXT,
            }
            # gzip (mtime 0, so re-recording the same answers gives the same bytes):
            # 18 MB of JSON becomes ~1.5 MB, small enough to travel with the tree.
            target = out_dir / f"{p.stem}.{version}.json.gz"
            text = dumps(data) + "\n"
            assert json.loads(text) == json.loads(json.dumps(data, default=str))
            target.write_bytes(gzip.compress(text.encode(), mtime=0))
            n_ok += 1
        if failed:
            # the oracle's tracebacks for crashed children go to stderr
            print(proc.stderr[-6000:], file=sys.stderr)
    return n_ok, failed, time.perf_counter() - t0


def _supported_versions() -> tuple[str, ...]:
    # cgplan.core is stdlib-only: importable from the clone without installing anything
    sys.path.insert(0, str(REPO))
    from cgplan.core.vllm.releases import SUPPORTED_VERSIONS

    return SUPPORTED_VERSIONS


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", nargs="*", type=Path, help="cgplan config YAMLs")
    ap.add_argument(
        "--venv-root",
        type=Path,
        default=REPO / ".cache",
        help="folder holding venv-<version>/ for every version (default: .cache)",
    )
    ap.add_argument("--versions", nargs="+", default=list(_supported_versions()))
    ap.add_argument("--only", help="only corpus files whose stem contains this")
    ap.add_argument("--out-dir", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--oracle", type=Path, help="the engine (default: cgplan/gpu/vllm_oracle.py)")
    args = ap.parse_args()
    # `--versions A B x.yaml y.yaml`: the greedy --versions list also swallows
    # the corpus files given after it; move them back.
    versions = [v for v in args.versions if not v.endswith((".yaml", ".yml"))]
    args.corpus += [Path(v) for v in args.versions if v.endswith((".yaml", ".yml"))]
    args.versions = versions
    if not args.corpus or not args.versions:
        ap.error("need --versions and at least one corpus YAML")

    args.venv_root = args.venv_root.absolute()
    oracle_path = (args.oracle or ORACLE).resolve()

    corpus = sorted({p.resolve() for p in args.corpus if not args.only or args.only in p.stem})
    if not corpus:
        raise SystemExit("no corpus files selected")
    stems = [p.stem for p in corpus]
    if len(set(stems)) != len(stems):
        raise SystemExit("duplicate corpus stems")
    translated = {p.stem: translate(p) for p in corpus}
    args.out_dir.mkdir(parents=True, exist_ok=True)

    total_failed = 0
    for version in args.versions:
        print(f"vLLM {version}: {len(corpus)} configs ...", flush=True)
        n_ok, failed, secs = record_version(
            version, args.venv_root, oracle_path, corpus, translated, args.out_dir
        )
        total_failed += failed
        print(f"vLLM {version}: wrote {n_ok}, oracle crashes {failed}, {secs:.0f}s", flush=True)
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main())
