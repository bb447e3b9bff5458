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
project's own `scripts/oracle/oracle.py` (adapted from the shared one; it also
builds data/pipeline/decode-context/expert parallel, LoRA and DBO configs).
`--versions` defaults to every release in `cgplan/core/vllm/releases.py`; `--only STEM`
re-records the corpus files whose name contains STEM. The corpus of the parallel,
LoRA, DBO and validation rules is written by `scripts/oracle/make_corpus.py`.

For every version it:

1. translates each cgplan config (tests/data/corpus/<stem>.yaml) into the
   oracle's config dict (see `translate()`), written as JSON to a temp dir;
2. runs the oracle in batch mode with that version's venv python, through this
   same file re-invoked with `--_oracle-child`: the child loads oracle.py by path
   and patches `EngineArgs.create_engine_config` so that, like `vllm serve`
   (vllm/entrypoints/cli/serve.py and openai/api_server.py call
   `engine_args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)`),
   the usage context is OPENAI_API_SERVER instead of None (it decides the
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
ORACLE = REPO / "scripts" / "oracle" / "oracle.py"
USAGE_CONTEXT = "OPENAI_API_SERVER"

# Top-level cgplan keys that the oracle reads itself; any other scalar goes
# through the oracle's `engine_args` dict (EngineArgs field of the same name).
ORACLE_SCALAR_KEYS = {
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "tensor_parallel_size",
    "enforce_eager",
    "performance_mode",
    "optimization_level",
    "async_scheduling",
}
CGPLAN_KEY_MAP = {
    "platform": "platform",
    "model_runner": "model_runner",
    "attention_backend": "attention_backend",
    "attention_cudagraph_support": "attn_cg_support",
    "env": "env",  # vLLM's environment (cgplan.env): set in the oracle's child process
}
CGPLAN_IGNORED = {"vllm_version"}


# --------------------------------------------------------------------------
# translation cgplan YAML -> oracle config dict
# --------------------------------------------------------------------------
def _abs_model(path: str, base: Path) -> str:
    p = Path(path)
    if not p.is_absolute():
        p = (base / p).resolve()
    if not (p / "config.json").is_file():
        raise ValueError(f"model folder {p} has no config.json")
    return str(p)


def translate(yaml_path: Path) -> dict:
    import yaml

    src = yaml.safe_load(yaml_path.read_text()) or {}
    base = Path.cwd()  # relative model paths start from the working directory, as in vLLM
    out: dict = {}
    engine_args: dict = {}
    for key, val in src.items():
        if key == "model":
            out["model_dir"] = _abs_model(val, base)
        elif key == "speculative_config":
            sc = dict(val)
            if sc.get("model"):
                sc["model"] = _abs_model(sc["model"], base)
            out["speculative"] = sc
        elif key == "compilation_config":
            out["compilation_config"] = dict(val)
        elif key == "cgplan":
            for ck, cv in (val or {}).items():
                if ck in CGPLAN_IGNORED:
                    continue
                if ck not in CGPLAN_KEY_MAP:
                    raise ValueError(f"{yaml_path.name}: unknown cgplan key {ck!r}")
                out[CGPLAN_KEY_MAP[ck]] = cv
        elif key == "kv_transfer_config":  # an EngineArgs field that takes the mapping as it is
            engine_args[key] = dict(val)
        elif key in ORACLE_SCALAR_KEYS:
            out[key] = val
        elif isinstance(val, (str, int, float, bool)) or val is None:
            engine_args[key] = val
        else:
            raise ValueError(f"{yaml_path.name}: cannot translate top-level key {key!r}")
    if engine_args:
        out["engine_args"] = engine_args
    for required in ("max_model_len", "max_num_seqs"):
        if required not in out:
            raise ValueError(f"{yaml_path.name}: {required} must be given")
    if "model_dir" not in out:
        raise ValueError(f"{yaml_path.name}: model must be given")
    return out


# --------------------------------------------------------------------------
# child: runs inside a vLLM venv
# --------------------------------------------------------------------------
def oracle_child(argv: list[str]) -> int:
    import importlib.util

    oracle_path = os.environ["CGPLAN_ORACLE_PATH"]
    spec = importlib.util.spec_from_file_location("cgplan_oracle", oracle_path)
    oracle = importlib.util.module_from_spec(spec)
    sys.modules["cgplan_oracle"] = oracle
    spec.loader.exec_module(oracle)

    orig_setup = oracle.setup_process

    def setup_process_serve() -> None:
        orig_setup()
        from vllm.engine.arg_utils import EngineArgs
        from vllm.usage.usage_lib import UsageContext

        if getattr(EngineArgs.create_engine_config, "_cgplan_serve", False):
            return
        orig_create = EngineArgs.create_engine_config

        def create_engine_config(self, *args, **kwargs):
            # `vllm serve` passes usage_context=UsageContext.OPENAI_API_SERVER.
            if not args and kwargs.get("usage_context") is None:
                kwargs["usage_context"] = UsageContext[USAGE_CONTEXT]
            return orig_create(self, *args, **kwargs)

        create_engine_config._cgplan_serve = True  # type: ignore[attr-defined]
        EngineArgs.create_engine_config = create_engine_config

    oracle.setup_process = setup_process_serve
    sys.argv = [oracle_path, *argv]
    return int(oracle.main() or 0)


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
        env["CGPLAN_ORACLE_PATH"] = str(oracle_path)
        env.setdefault("ORACLE_CACHE_DIR", str(venv_root / "vllm-oracle-cache"))
        cmd = [
            str(py),
            str(Path(__file__).resolve()),
            "--_oracle-child",
            "--out-dir",
            str(res_dir),
            "--compact",
            *files,
        ]
        proc = subprocess.run(cmd, env=env, text=True, capture_output=True)
        status: dict[str, tuple[str, Path]] = {}
        for line in proc.stdout.splitlines():
            if ": " in line and " -> " in line:
                stem, rest = line.split(": ", 1)
                word, target = rest.split(" -> ", 1)
                status[stem] = (word, Path(target.strip()))
            elif line.strip():
                print(f"  [{version}] {line}")
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
    if len(sys.argv) > 1 and sys.argv[1] == "--_oracle-child":
        return oracle_child(sys.argv[2:])
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
    ap.add_argument("--oracle", type=Path, help="path to oracle.py")
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
