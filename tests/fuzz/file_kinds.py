"""Fuzz inputs for every side-file kind the one reader (cgplan/io/files.py) reads: capture-policy
files, cost coefficients, traffic histograms, calibrate's report inputs, logs (plain and gzip),
`--config` files given through `--vllm-args`, and a model's config.json.

Each kind starts from a real file of its kind and mutates it: a value swapped for a hostile one
(huge integers, 1e400, NaN, deep nesting, alias bombs, tags, wrong types), bytes cut or pasted,
non-UTF-8 bytes, truncation, gzip around it (sometimes corrupt).
"""

from __future__ import annotations

import copy
import gzip
import json
import random
from typing import Any

import yaml
from hypothesis import strategies as st

from tests.fuzz.harness import EXAMPLES, H200, MODELS, ROOT
from tests.fuzz.strategies import Input, coin, config_text, model_config, pick

LOGS = ROOT / "tests" / "data" / "logs"
TINY = MODELS / "tiny-llama"
PR = EXAMPLES / "pr50488-eagle-k16.yaml"

HOSTILE: tuple[Any, ...] = (
    0,
    -1,
    10**18,
    10**30,
    2**63,
    1e300,
    -1e300,
    float("inf"),
    float("nan"),
    "",
    "x[/]",
    "\n",
    "9" * 5000,
    "1.5K",
    "8k",
    None,
    True,
    [],
    {},
    [[[[[]]]]],
    {"a": {"b": {"c": [1, 2]}}},
    [1] * 50,
    "\x1b[31m",
)
RAW_VALUES = (
    "9" * 5000,
    "1" + "0" * 400,
    "1.0e+400",
    ".nan",
    "-.inf",
    "!!python/object/apply:os.system ['true']",
    "!!binary aGk=",
    "!!set {a}",
    "&r [*r]",
    "[" * 2000 + "]" * 2000,
    "2001-13-45",
    "0x" + "f" * 300,
    "1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18:19:20:21:22:23:24:25:26:27:28:29:30:31:32:33:34:35",
)
BOMB = (
    "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
)


def _rng(draw: st.DrawFn) -> random.Random:
    return random.Random(draw(st.integers(0, 2**63)))


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if len(prefix) >= 8:
        return out
    if isinstance(doc, dict):
        for k, v in list(doc.items())[:60]:
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:8]):
            out += _paths(v, (*prefix, i))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = value
    return doc


def mutate_doc(draw: st.DrawFn, doc: Any, *, as_json: bool) -> bytes:
    """A copy of `doc` with values swapped for hostile ones, serialised as JSON or YAML, then
    perhaps damaged at the text or byte level."""
    rng = _rng(draw)
    doc = json.loads(json.dumps(doc))
    raw_marker: str | None = None
    raw_value = ""
    for _ in range(rng.randint(0, 3)):
        paths = _paths(doc)
        path = rng.choice(paths)
        if rng.random() < 0.2:
            raw_marker = f"@@RAW{rng.randrange(10**6)}@@"
            doc = _set(doc, path, raw_marker)
            raw_value = rng.choice(RAW_VALUES)
        elif rng.random() < 0.15 and isinstance(doc, dict):
            doc[rng.choice(("", "x", "--x", "\u2028", 5))] = copy.deepcopy(rng.choice(HOSTILE))
        else:  # a copy: the shared HOSTILE values must never be edited in place (cycles)
            doc = _set(doc, path, copy.deepcopy(rng.choice(HOSTILE)))
    try:
        if as_json:
            text = json.dumps(doc, allow_nan=True, default=str)
        else:
            text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    except (ValueError, TypeError, yaml.YAMLError, RecursionError):
        text = "{}"
    if raw_marker is not None:
        text = text.replace(json.dumps(raw_marker) if as_json else raw_marker, raw_value)
    return damage(draw, text.encode("utf-8", "surrogatepass"), yaml_bomb=not as_json)


def damage(draw: st.DrawFn, data: bytes, *, yaml_bomb: bool = False) -> bytes:
    """Byte-level damage: cut, paste, non-UTF-8, NULs, truncation, an alias bomb in front."""
    form = pick(draw, (10, 2, 1, 1, 1, 1))
    rng = _rng(draw)
    if form == 1:
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(max(1, len(data)))
            data = (
                data[:at]
                + rng.choice((b"", b":", b"[", b"{", b"'", b'"', b"&a", b"*a", b"\t", b"!!", b"\n  "))
                + data[at + 1 :]
            )
    elif form == 2:
        at = rng.randrange(max(1, len(data)))
        data = data[:at] + rng.choice((b"\xff\xfe", b"\xc3", b"\x00", b"\xed\xa0\x80")) + data[at:]
    elif form == 3:
        data = data[: rng.randrange(max(1, len(data)))]
    elif form == 4 and yaml_bomb:
        data = BOMB.encode() + data
    elif form == 5:
        data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 80)))
    return data


# ---------------------------------------------------------------- capture policies


def _capture_policy_base() -> dict[str, Any]:
    from cgplan.core.plan.policies import POLICY_KNOBS

    doc: dict[str, Any] = {"name": "fuzz", "description": "drawn"}
    for key, (kind, allowed) in POLICY_KNOBS.items():
        doc[key] = sorted(allowed, key=str)[0] if allowed else kind()
    return doc


@st.composite
def capture_policy_inputs(draw: st.DrawFn) -> Input:
    """`cgplan plan CONFIG --policy FILE.yaml` with a drawn capture-policy file."""
    data = mutate_doc(draw, _capture_policy_base(), as_json=False)
    return Input("capture_policy", (("p.yaml", data),), ("plan", str(PR), "--policy", "{p.yaml}"))


# ---------------------------------------------------------------- cost coefficients

COEFFICIENTS = json.loads((ROOT / "cgplan" / "data" / "cost-h200.json").read_text())


@st.composite
def coefficient_inputs(draw: st.DrawFn) -> Input:
    """`cgplan plan CONFIG --coefficients FILE` (JSON or YAML)."""
    as_json = draw(st.booleans())
    data = mutate_doc(draw, COEFFICIENTS, as_json=as_json)
    name = "c.json" if as_json else "c.yaml"
    return Input("coefficients", ((name, data),), ("plan", str(PR), "--coefficients", "{" + name + "}"))


# ---------------------------------------------------------------- traffic

TRAFFIC_YAML = {
    "uniform_decode": [{"num_reqs": n, "count": 10 * n} for n in (1, 2, 4, 8, 16, 32)],
    "mixed": [{"num_tokens": n, "count": 5} for n in (17, 100, 512)],
}
METRICS = "Unpadded Tokens\n" + "".join(f"| {n} | {n} | 1 | FULL | {n * 3} |\n" for n in (1, 2, 4, 8, 16))
PROMETHEUS = "".join(
    f'vllm:iteration_tokens_total_bucket{{engine="0",le="{le}"}} {c}\n'
    for le, c in (("1.0", 3), ("8.0", 10), ("16.0", 40), ("512.0", 90), ("+Inf", 91))
)
TEXT_VALUES = ("9" * 5000, "1e400", "nan", "inf", "-1", "1.2.3", "", "0", "10000001", "1" * 30)


@st.composite
def traffic_inputs(draw: st.DrawFn) -> Input:
    """`cgplan optimize CONFIG --traffic FILE`: a YAML histogram, a metrics log or a dump, maybe gzipped."""
    form = pick(draw, (3, 2, 2))
    rng = _rng(draw)
    if form == 0:
        data = mutate_doc(draw, TRAFFIC_YAML, as_json=False)
    else:
        text = METRICS if form == 1 else PROMETHEUS
        words = text.split(" ")
        for _ in range(rng.randint(0, 3)):
            i = rng.randrange(len(words))
            words[i] = rng.choice(TEXT_VALUES) + ("\n" if words[i].endswith("\n") else "")
        data = damage(draw, " ".join(words).encode())
    if coin(draw, 0.25):
        data = gzip.compress(data)
        if coin(draw, 0.3):
            data = data[: rng.randrange(1, len(data))]
    # Both objectives read the file the same way; the default one (time) under its default
    # budgets. Not `--max-graphs 40` under it: no ladder fits 40 graphs in the default ladder's
    # memory for the base histograms, and finding that out walks every cap (1-1.9 s of CPU, at
    # the per-input bound), which made this kind fail or pass with the machine's load.
    budget = draw(st.sampled_from(((), ("--objective", "padding", "--max-graphs", "40"))))
    return Input(
        "traffic",
        (("t.txt", data),),
        ("optimize", str(PR), "--traffic", "{t.txt}", *budget),
        options=("--max-graphs", "--max-graph-memory-mib", "--max-sizes"),
    )


# ---------------------------------------------------------------- calibrate's reports

CAPTURES = sorted(p for p in H200.glob("*-vllm.json"))[:4]


@st.composite
def calibrate_inputs(draw: st.DrawFn) -> Input:
    """`cgplan calibrate REPORT... --gpu H200` on mutated capture reports."""
    files = []
    for i, path in enumerate(draw(st.lists(st.sampled_from(CAPTURES), min_size=1, max_size=2))):
        doc = json.loads(path.read_text())
        data = mutate_doc(draw, doc, as_json=True) if coin(draw, 0.8) else path.read_bytes()
        files.append((f"r{i}.json", data))
    return Input(
        "calibrate",
        tuple(files),
        ("calibrate", *("{" + n + "}" for n, _ in files), "--gpu", "H200", "--configs", str(ROOT)),
    )


# ---------------------------------------------------------------- logs

LOG_TEXTS = [
    (gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes())
    for p in sorted(LOGS.iterdir())
    if p.name.endswith((".log", ".log.gz"))
][:6]
LOG_NOISE = (
    b"INFO 01-01 00:00:00 [gpu_model_runner.py:1] Graph capturing finished in 9" + b"9" * 5000 + b" secs\n",
    b"Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##| 99999999999999999999/3\n",
    b"cudagraph_capture_sizes=[" + b"1, " * 3000 + b"]\n",
    b"\x00\x00\x00",
    b"\xff\xfe bad bytes\n",
    b"Initializing a V1 LLM engine (v9.9.9) with config: " + b"{" * 500 + b"\n",
    b"max_num_seqs=-1, max_num_batched_tokens=1e400\n",
)


@st.composite
def log_inputs(draw: st.DrawFn) -> Input:
    """`cgplan logs LOG [--config C]` on real logs with lines cut, swapped or hostile, plain or gzip."""
    rng = _rng(draw)
    lines = draw(st.sampled_from(LOG_TEXTS)).split(b"\n")
    for _ in range(rng.randint(0, 6)):
        op = rng.random()
        i = rng.randrange(len(lines))
        if op < 0.4:
            lines.insert(i, rng.choice(LOG_NOISE))
        elif op < 0.7:
            del lines[i]
        else:
            line = lines[i]
            at = rng.randrange(max(1, len(line)))
            lines[i] = line[:at] + rng.choice((b"9" * 40, b"-", b"", b"(", b"]")) + line[at + 3 :]
    data = b"\n".join(lines)
    name = "v.log"
    if coin(draw, 0.4):
        data, name = gzip.compress(data, compresslevel=1), "v.log.gz"
        if coin(draw, 0.2):
            data = data[: rng.randrange(1, len(data))]
    extra: tuple[str, ...] = ()
    if coin(draw, 0.3):
        extra = (
            "--config",
            str(draw(st.sampled_from(sorted((ROOT / "configs" / "gpu").glob("tiny-*.yaml"))))),
        )
    return Input("log", ((name, data),), ("logs", "{" + name + "}", *extra))


# ---------------------------------------------------------------- --config through --vllm-args


@st.composite
def vllm_args_config_inputs(draw: st.DrawFn) -> Input:
    """`cgplan plan --vllm-args "serve MODEL --config FILE.yaml"` with a drawn config file."""
    data = draw(config_text())
    if coin(draw, 0.1):
        body = "".join("  " + line + "\n" for line in BOMB.splitlines())
        data = f"compilation_config:\n{body}  cudagraph_capture_sizes: *g\n".encode()
    return Input(
        "vllm_args_config",
        (("c.yaml", data),),
        ("plan", "--vllm-args", f"serve {TINY} --config {{c.yaml}}"),
        options=("--vllm-args",),
    )


# ---------------------------------------------------------------- a model's config.json


@st.composite
def model_json_inputs(draw: st.DrawFn) -> Input:
    """`cgplan plan` on a config whose model folder holds a drawn config.json."""
    data = draw(model_config())
    if coin(draw, 0.3):
        hf = json.loads((TINY / "config.json").read_text())
        data = mutate_doc(draw, hf, as_json=True)
    body = draw(st.sampled_from((b"model: m\n", b"model: m\nspeculative_config: {method: mtp}\n")))
    # The shape through --model-config (as for a hub model id): `model: m` is read from the working
    # directory, not beside serve.yaml, so every input of the full run at FUZZ_SEED=2020 was refused
    # for a missing folder before its config.json was read.
    return Input(
        "model_json",
        (("m/config.json", data), ("serve.yaml", body)),
        ("plan", "{serve.yaml}", "--json", "--model-config", "{m/config.json}"),
        options=("--model-config",),
    )


FILE_KINDS = {
    "capture_policy": capture_policy_inputs,
    "coefficients": coefficient_inputs,
    "traffic": traffic_inputs,
    "calibrate": calibrate_inputs,
    "log": log_inputs,
    "vllm_args_config": vllm_args_config_inputs,
    "model_json": model_json_inputs,
}
