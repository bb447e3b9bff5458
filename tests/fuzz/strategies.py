"""Hypothesis strategies for every input a user hands cgplan: configs, reports, policies, --set.

Each strategy draws an `Input`: the files to write (name → bytes) and the command line to
run with them, `{name}` standing for a written file's path.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
from dataclasses import dataclass
from typing import Any

import yaml
from hypothesis import strategies as st

from cgplan.core.compare.sweep import SETTERS
from cgplan.core.model.modes import CGSupport, Mode, Platform
from cgplan.core.model.spec import MODEL_RUNNERS, PERFORMANCE_MODES, SPEC_METHODS
from cgplan.core.vllm.attention import KNOWN_BACKENDS
from cgplan.core.vllm.releases import SUPPORTED_VERSIONS
from cgplan.core.vllm.serve_flags import READ, serve_flags_for
from cgplan.io import config as cfg
from cgplan.io.policies import KEYS as POLICY_KEYS
from tests.fuzz.harness import EXAMPLES, H200, MODELS

Files = dict[str, bytes]


@dataclass(frozen=True)
class Input:
    """Files to write and the arguments to run (`{name}` → that file's path)."""

    kind: str
    files: tuple[tuple[str, bytes], ...]
    args: tuple[str, ...]
    options: tuple[str, ...] = ()
    """Options a refusal may name instead of a file."""

    def sample(self) -> str:
        """A short, readable copy of the input for a failure record."""
        parts = [" ".join(self.args)]
        for name, data in self.files:
            parts.append(f"--- {name} ---\n{data[:1500].decode('utf-8', 'backslashreplace')}")
        return "\n".join(parts)


# ---------------------------------------------------------------- scalars and values


def coin(draw: st.DrawFn, p: float) -> bool:
    """True with probability `p`. (Hypothesis leans small integers to their bounds, so
    `integers(0, 30) == 0` holds far more often than 1 in 31; a seeded Random does not.)"""
    return random.Random(draw(st.integers(0, 2**63))).random() < p


def pick(draw: st.DrawFn, weights: tuple[float, ...]) -> int:
    """An index into `weights`, drawn with those relative weights."""
    return random.Random(draw(st.integers(0, 2**63))).choices(range(len(weights)), weights)[0]


TRICKY_STRINGS = (
    "",
    " ",
    "\n",
    "\t",
    "\x00",
    "\ud800",
    "\u2028",
    "\x1c",
    "[/]",
    "[bold]x[/bold]",
    "[link=x]",
    "8k",
    "8K",
    "1M",
    "2_048",
    "1.5k",
    "1e400k",
    "infk",
    "nank",
    "-inf",
    "9" * 5000,
    "O2",
    "O²",
    "O٣",
    "٣",
    "²",
    "0x10",
    "-0",
    "+5",
    " 12 ",
    "~nosuchuser-cgplan/x",
    "~",
    "/",
    "/dev/null",
    "/proc/self/mem",
    "a" * 5000,
    "${HOME}",
    "__import__('os').system('true')",
    "!!python/object/apply:os.system ['true']",
    "FULL",
    "full_and_piecewise",
    "FULL_DECODE_ONLY",
    "NONE",
    "H200",
    "nvidia h100",
    "B200",
    "rtx-blackwell",
    "tpu",
    "v2",
    "V1",
    "auto",
    "0.26.0",
    "0.33.0",
    "0.99.0",
    "eagle",
    "ngram",
    "mtp",
    "FLASH_ATTN",
    "flashinfer",
    "NEVER",
    "always",
    "throughput",
    "Ω≈ç√∫",
    "😀" * 3,
    "none",
)

HUGE_INTS = (
    0,
    -1,
    1,
    10**7,
    10**7 + 1,
    2**31,
    2**63,
    -(2**63),
    10**30,
    10**400,
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5000),
    st.sampled_from(HUGE_INTS),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(TRICKY_STRINGS),
    st.text(max_size=20),
)
keys = st.one_of(st.text(max_size=12), st.sampled_from(TRICKY_STRINGS[:12]))
values = st.recursive(
    scalars,
    lambda ch: st.one_of(st.lists(ch, max_size=5), st.dictionaries(keys, ch, max_size=4)),
    max_leaves=12,
)


def nested(depth: int) -> Any:
    """A list nested `depth` levels deep."""
    out: Any = []
    for _ in range(depth):
        out = [out]
    return out


deep_values = st.integers(min_value=10, max_value=600).map(nested)
any_value = st.one_of(values, values, values, deep_values)


@functools.cache
def maybe(valid: st.SearchStrategy[Any], p_bad: int = 4) -> st.SearchStrategy[Any]:
    """Mostly a valid value, one time in `p_bad` anything at all.

    Cached, like `typo` and the nested `sections`: a strategy built afresh for every draw is
    validated afresh (its recursive properties walked again), which cost two thirds of the
    fuzz run's time; strategies are immutable, so one per argument is enough."""
    return st.one_of(*([valid] * (p_bad - 1)), any_value)


@functools.cache
def typo(key: str) -> st.SearchStrategy[str]:
    """A near miss of a known key."""
    return st.sampled_from(
        (key.replace("_", "-"), key.upper(), key + "s", key[:-1], " " + key, key + "\n", key + ".x")
    )


# ---------------------------------------------------------------- config documents

small = st.integers(min_value=1, max_value=4096)
human = st.sampled_from(("8k", "4K", "2_048", "16", "1.5k", "1M"))
count = st.one_of(small, small, small, human)
model_dirs = sorted(p for p in MODELS.iterdir() if (p / "config.json").is_file())
schedule_entry = st.lists(st.integers(min_value=-2, max_value=2100), min_size=3, max_size=3)
schedule = st.one_of(
    # a well-formed schedule: ascending ranges from 1 (vLLM may still refuse a K)
    st.lists(st.tuples(st.integers(1, 300), st.integers(0, 20)), min_size=1, max_size=12).map(
        lambda rows: [
            [1 + sum(w for w, _ in rows[:i]), sum(w for w, _ in rows[: i + 1]), k]
            for i, (_, k) in enumerate(rows)
        ]
    ),
    st.lists(schedule_entry, min_size=1, max_size=8),
)
bad_schedule = st.lists(st.one_of(schedule_entry, any_value), max_size=5)


@dataclass(frozen=True)
class Section:
    """A nested config section: drawn by `sections` with its parent's noise level."""

    spec: dict[str, Any]
    extra: tuple[str, ...] = ()


@st.composite
def sections(draw: st.DrawFn, spec: dict[str, Any], extra: tuple[str, ...] = (), noise: int = 2) -> Any:
    """A mapping of some of `spec`'s keys: all valid (noise 0), or with wrong values,
    near-miss keys and extra keys (noise 2)."""
    out: dict[Any, Any] = {}
    for key, strategy in spec.items():
        if coin(draw, 0.3 if key not in ("method", "num_speculative_tokens") else 0.05):
            continue
        if isinstance(strategy, Section):
            strategy = _section_strategy(strategy, noise)
        if noise and coin(draw, 0.03):
            out[draw(typo(key))] = draw(maybe(strategy))
        else:
            out[key] = draw(maybe(strategy) if noise else strategy)
    if noise:
        for key in extra:
            if coin(draw, 0.02):
                out[key] = draw(values)
        if coin(draw, 0.1):
            out[draw(keys)] = draw(values)
        if coin(draw, 0.03):
            out[draw(st.one_of(st.integers(), st.booleans(), st.none()))] = 1
    return out


_SECTIONS: dict[tuple[int, int], st.SearchStrategy[Any]] = {}


def _section_strategy(section: Section, noise: int) -> st.SearchStrategy[Any]:
    """One `sections` strategy per (module-level Section, noise) (see `maybe`)."""
    key = (id(section), noise)
    if key not in _SECTIONS:
        _SECTIONS[key] = sections(section.spec, section.extra, noise)
    return _SECTIONS[key]


spec_section = Section(
    {
        "method": st.sampled_from(SPEC_METHODS),
        "num_speculative_tokens": st.one_of(st.integers(1, 20), count),
        "num_speculative_tokens_per_batch_size": st.one_of(schedule, schedule, schedule, bad_schedule),
        "enforce_eager": st.booleans(),
        "model": st.one_of(
            st.text(max_size=10),
            st.sampled_from(["configs/models/tiny-dflash", "configs/models/tiny-dspark"]),
        ),
        "prompt_lookup_max": small,
        "prompt_lookup_min": small,
        "draft_tensor_parallel_size": small,
        "enable_adaptive_verification": st.booleans(),
        "suffix_decoding_max_tree_depth": st.one_of(st.integers(-2, 40), count),
        "suffix_decoding_max_cached_requests": st.one_of(st.integers(-2, 20000), count),
        "suffix_decoding_max_spec_factor": st.one_of(st.floats(-1, 4), count),
        "suffix_decoding_min_token_prob": st.one_of(st.floats(-0.5, 1.5), count),
    }
)
pass_section = Section(
    {"enable_sp": st.booleans(), "sp_min_token_num": count, "fuse_gemm_comms": st.booleans()}
)
cc_section = Section(
    {
        "cudagraph_mode": st.sampled_from([m.value for m in Mode] + [m.value.lower() for m in Mode]),
        "cudagraph_mm_encoder": st.booleans(),
        "max_cudagraph_capture_size": st.one_of(st.integers(1, 2100), count),
        "cudagraph_capture_sizes": st.lists(st.one_of(st.integers(1, 2100), count), min_size=1, max_size=24),
        "pass_config": pass_section,
        "level": st.integers(0, 3),
        "mode": st.integers(0, 3),
    },
    extra=cfg._CC_UNMODELLED,
)
cgplan_section = Section(
    {
        "vllm_version": st.sampled_from(SUPPORTED_VERSIONS),
        "platform": st.sampled_from([p.value for p in Platform] + ["H100", "H200", "B200", "A100"]),
        "model_runner": st.sampled_from((*MODEL_RUNNERS, "V2")),
        "attention_backend": st.sampled_from(KNOWN_BACKENDS),
        "attention_cudagraph_support": st.sampled_from(tuple(CGSupport.__members__)),
    }
)
top_spec: dict[str, Any] = {
    "max_model_len": count,
    "max_num_seqs": count,
    "max_num_batched_tokens": st.one_of(st.integers(2048, 20000), st.integers(2048, 20000), count),
    "tensor_parallel_size": st.one_of(st.integers(1, 8), count),
    "enforce_eager": st.booleans(),
    "performance_mode": st.sampled_from(PERFORMANCE_MODES),
    "optimization_level": st.one_of(st.integers(0, 3), st.sampled_from(("O0", "O3", "o2"))),
    "speculative_config": spec_section,
    "compilation_config": cc_section,
    "cgplan": cgplan_section,
}


OTHER_FLAG_KEYS = tuple(
    f.dest for f in serve_flags_for(None).flags if f.role != READ and f.dest not in top_spec
)
"""Every other flag of the newest release, as a top-level key (neutral or not modelled, #28)."""


@st.composite
def config_doc(draw: st.DrawFn) -> Any:
    """A config document: every known key, each mostly valid, sometimes wrong."""
    noise = pick(draw, (5, 3, 2))
    doc = draw(sections(top_spec, extra=OTHER_FLAG_KEYS, noise=noise == 2))
    if noise == 1:  # one wrong value somewhere, the rest valid
        where = doc
        path = draw(
            st.lists(st.sampled_from(("speculative_config", "compilation_config", "cgplan")), max_size=1)
        )
        for k in path:
            where = where.setdefault(k, {})
        if isinstance(where, dict):
            where[draw(st.one_of(st.sampled_from(sorted(where) or ["max_num_seqs"]), keys))] = draw(any_value)
    if noise == 2 and coin(draw, 0.05):
        doc["model"] = draw(any_value)
    else:
        doc["model"] = str(draw(st.sampled_from(model_dirs)))
    return doc


def _alias_bomb(names: str, tail: str) -> str:
    """Ten aliases per level, len(names) - 1 levels: 10^(levels) leaves if walked naively."""
    lines = [f"{names[0]}: &{names[0]} [1,1,1,1,1,1,1,1,1,1]"]
    for prev, cur in itertools.pairwise(names):
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 10) + "]")
    return "\n".join(lines) + "\n" + tail


YAML_TEMPLATES = (
    # billion laughs: aliases expand to 10^8 leaves if anything walks them naively
    _alias_bomb("abcdefgh", "{key}: *h\n"),
    _alias_bomb("xyzwvu", "model: {model}\n{key}: *u\n"),
    # the same under a key the config accepts and ignores, so the value reaches the checks
    "tokenizer:\n"
    + "".join("  " + line + "\n" for line in _alias_bomb("abcdefgh", "").splitlines())
    + "model: {model}\n{key}: *h\n",
    # self-referencing structures
    "model: {model}\n{key}: &r [*r]\n",
    "model: {model}\n{key}: &r {{a: *r}}\n",
    "&r {{model: {model}, {key}: *r}}\n",
    # tags safe_load must refuse, and tags it accepts
    "model: {model}\n{key}: !!python/object/apply:os.system ['true']\n",
    "model: !!python/name:os.system\n",
    "!!python/object:cgplan.io.config.Overrides {{}}\n",
    "model: {model}\n{key}: !!binary aGVsbG8=\n",
    "model: {model}\n{key}: !!set {{a, b}}\n",
    "model: {model}\n{key}: !!omap [a: 1, b: 2]\n",
    "model: {model}\n{key}: !!pairs [[1, 16, 3]]\n",
    "model: {model}\n{key}: 2001-12-14\n",
    "model: {model}\n{key}: 2001-12-14t21:59:43.10-05:00\n",
    "model: {model}\n{key}: !!float 1e999\n",
    "model: {model}\n{key}: !!int 0x7fffffffffffffffffff\n",
    "model: {model}\n{key}: !custom x\n",
    "model: {model}\nbase: &b {{max_num_seqs: 8}}\n<<: *b\n",
    # structure and encoding
    "model: {model}\n---\nmodel: {model}\n",
    "model: {model}\n{key}: [1, 2\n",
    "model: {model}\n\t{key}: 1\n",
    "\ufeffmodel: {model}\n",
    'model: {model}\n{key}: "\\ud800"\n',
    'model: {model}\n{key}: "a\\nb"\n',
    'model: {model}\n"{key}\\nx": 1\n',
    "model: {model}\n? [a, b]\n: 1\n",
    "model: {model}\n{key}: " + "[" * 5000 + "]" * 5000 + "\n",
    "model: {model}\n{key}: " + "{{a: " * 2000 + "1" + "}}" * 2000 + "\n",
    "model: {model}\n{key}: " + "- " * 800 + "1\n",
    "model: {model}\n{key}: *undefined\n",
    "{key}",
    "- 1\n- 2\n",
    "42\n",
    "null\n",
    "",
    "model: {model}\n{key}: \x00\n",
    "model: {model}\n{key}: \x85\n",
)
known_keys = st.sampled_from(
    (
        *cfg._TOP_KEYS,
        "speculative_config",
        "max_num_seqs",
        "compilation_config",
        "unknown_key",
    )
)


@st.composite
def config_text(draw: st.DrawFn) -> bytes:
    """The bytes of a config file."""
    form = pick(draw, (12, 4, 1, 1, 2))
    model = str(draw(st.sampled_from(model_dirs)))
    if form == 0:
        doc = draw(config_doc())
        try:
            return yaml.safe_dump(doc, allow_unicode=draw(st.booleans()), sort_keys=False).encode(
                "utf-8", "surrogatepass"
            )
        except (yaml.YAMLError, RecursionError, UnicodeEncodeError):
            return b"model: " + model.encode() + b"\n"
    if form == 1:
        template = draw(st.sampled_from(YAML_TEMPLATES))
        return template.format(model=model, key=draw(known_keys)).encode("utf-8", "surrogatepass")
    if form == 2:
        # random bytes after a valid start: encodings, NULs, broken UTF-8
        tail = draw(st.binary(max_size=40))
        return b"model: " + model.encode() + b"\n" + tail
    if form == 3:
        return draw(st.text(max_size=200)).encode("utf-8", "surrogatepass")
    # a valid document with characters cut out or pasted in
    text = yaml.safe_dump(draw(config_doc()), sort_keys=False)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(0, len(text) - 1)))
        text = (
            text[:at]
            + draw(st.sampled_from(("", ":", "-", "[", "{", "'", '"', "&a", "*a", "\t", "!!", "\n  ")))
            + text[at + 1 :]
        )
    return text.encode("utf-8", "surrogatepass")


MODEL_JSON = json.loads((MODELS / "tiny-llama" / "config.json").read_text())


@st.composite
def model_config(draw: st.DrawFn) -> bytes:
    """A Hugging Face config.json with fields wrong, missing or absurd."""
    form = pick(draw, (1, 1, 1, 1, 6))
    if form == 0:
        return draw(st.binary(max_size=60))
    if form == 1:
        return ("[" * 3000 + "]" * 3000).encode()
    if form == 2:
        return json.dumps(draw(values), allow_nan=True).encode("utf-8", "surrogatepass")
    doc: dict[str, Any] = dict(MODEL_JSON)
    fields = (
        "architectures",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "intermediate_size",
        "vocab_size",
        "torch_dtype",
        "dtype",
        "n_routed_experts",
        "num_local_experts",
        "num_experts",
        "kv_lora_rank",
        "first_k_dense_replace",
        "mlp_only_layers",
        "n_shared_experts",
        "shared_expert_intermediate_size",
        "num_nextn_predict_layers",
        "max_position_embeddings",
        "text_config",
    )
    for _ in range(draw(st.integers(1, 5))):
        key = draw(st.sampled_from(fields))
        if draw(st.booleans()):
            doc.pop(key, None)
        else:
            doc[key] = draw(any_value)
    text = json.dumps(doc, allow_nan=True, default=str)
    if form == 3:
        text = text.replace('"hidden_size": 256', '"hidden_size": ' + "9" * 5000)
    return text.encode("utf-8", "surrogatepass")


OVERRIDES = st.one_of(
    st.just(()),
    st.just(()),
    st.tuples(
        st.sampled_from(("--vllm-version", "--platform", "--model-runner")),
        st.one_of(
            st.sampled_from(TRICKY_STRINGS).filter(lambda s: s and not s.startswith("-")),
            st.text(
                alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00-"),
                min_size=1,
                max_size=8,
            ),
        ),
    ),
)
PLAN_FLAGS = st.sampled_from(((), ("--json",), ("--markdown",), ("--full",), ("--json", "--fail-on-gap")))


@st.composite
def plan_inputs(draw: st.DrawFn) -> Input:
    """`cgplan plan` on a drawn config (sometimes with a drawn model folder)."""
    text = draw(config_text())
    files: list[tuple[str, bytes]] = [("serve.yaml", text)]
    if coin(draw, 0.08):
        files = [
            ("model/config.json", draw(model_config())),
            ("serve.yaml", b"model: model\nmax_num_seqs: 64\nspeculative_config: {method: mtp}\n"),
        ]
    extra = draw(OVERRIDES)
    return Input(
        "config",
        tuple(files),
        ("plan", "{serve.yaml}", *draw(PLAN_FLAGS), *extra),
        options=tuple(a for a in extra if a.startswith("--")),
    )


# ---------------------------------------------------------------- reports


def _base_reports() -> dict[str, str]:
    """Real reports to mutate: plan JSON of the examples and H200 capture reports."""
    from cgplan.api.plan import plan_file
    from cgplan.core.plan.fingerprint import fingerprint
    from cgplan.io.schema.plan import plan_to_dict

    out: dict[str, str] = {}
    for path in sorted(EXAMPLES.glob("*.yaml")):
        loaded, plan = plan_file(path)
        doc = plan_to_dict(plan, source=str(path), fingerprint=fingerprint(loaded.input))
        out[path.stem] = json.dumps(doc)
    for name in ("tiny-nospec-vllm", "tiny-ngram-dyn-vllm", "tiny-eagle-dyn-v2-vllm"):
        doc = json.loads((H200 / f"{name}.json").read_text())
        doc["environment"] = {}
        doc["vllm_log"] = []
        out[name] = json.dumps(doc)
    return out


BASE_REPORTS = _base_reports()


def _paths(doc: Any, prefix: tuple[Any, ...] = (), limit: int = 400) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    stack = [(doc, prefix)]
    while stack and len(out) < limit:
        node, at = stack.pop()
        items: list[tuple[Any, Any]] = []
        if isinstance(node, dict):
            items = list(node.items())
        elif isinstance(node, list):
            items = list(enumerate(node))[:6]
        for k, v in items:
            out.append((*at, k))
            stack.append((v, (*at, k)))
    return out


report_values = st.one_of(
    values,
    st.sampled_from((10**18, -(10**18), 10**7, 10**7 + 1, 2**63, 0, -1, "NaN", "FULL", "NONE", "x[/]")),
    st.just(float("inf")),
    st.just(float("nan")),
    st.lists(st.lists(st.integers(-3, 10**9), min_size=3, max_size=3), max_size=6),
    st.lists(
        st.fixed_dictionaries(
            {
                "from_reqs": st.integers(-2, 10**9),
                "to_reqs": st.integers(-2, 10**9),
                "mode": st.sampled_from(("FULL", "PIECEWISE", "NONE", "x")),
                "padded_tokens": st.one_of(st.none(), st.integers(-2, 10**9)),
            }
        ),
        max_size=4,
    ),
    deep_values,
)


@st.composite
def report_text(draw: st.DrawFn) -> tuple[str, bytes]:
    """(base report name, the bytes of a report derived from it)."""
    name = draw(st.sampled_from(sorted(BASE_REPORTS)))
    form = pick(draw, (1, 2, 17))
    if form == 0:
        return name, draw(st.binary(max_size=80))
    if form == 1:
        return name, draw(
            st.sampled_from(
                (
                    b"[" * 100000,
                    b'{"schema_version": 1, "kind": "plan", "max_num_seqs": ' + b"9" * 5000 + b"}",
                    b'{"schema_version": ' + b"9" * 5000 + b"}",
                    b'{"schema_version": NaN}',
                    b'{"schema_version": 1e999}',
                    b'{"schema_version": 2}',
                    b'{"schema_version": 1, "kind": "capture"}',
                    b'{"schema_version": 1, "kind": "__import__(\'os\').system(\'true\')"}',
                    b'{"schema_version": 1, "kind": "plan", "graphs": "!!python/object:os.system"}',
                    b"\xef\xbb\xbf{}",
                    b'{"a": "\\ud800"}',
                    b"",
                    b"null",
                    b"[]",
                )
            )
        )
    doc = json.loads(BASE_REPORTS[name])
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        op = draw(st.integers(0, 3))
        if op == 0 and isinstance(parent, dict):
            del parent[path[-1]]
        elif op == 1 and isinstance(parent, dict):
            parent[draw(keys)] = draw(report_values)
        else:
            parent[path[-1]] = draw(report_values)
    try:
        text = json.dumps(doc, allow_nan=True, default=str)
    except (ValueError, RecursionError):
        text = "{}"
    return name, text.encode("utf-8", "surrogatepass")


@st.composite
def report_inputs(draw: st.DrawFn) -> Input:
    """`cgplan diff` and `cgplan gate` on a drawn report (and the real one it came from)."""
    name, text = draw(report_text())
    base = BASE_REPORTS[name].encode()
    files = (("r.json", text), ("base.json", base))
    fmt = draw(st.sampled_from(((), ("--json",), ("--markdown",))))
    args = draw(
        st.sampled_from(
            (
                ("diff", "{r.json}", "{base.json}", *fmt),
                ("diff", "{base.json}", "{r.json}", "--allow-mismatch", *fmt),
                ("diff", "{r.json}", "{r.json}", "--fail-on-change"),
                ("gate", "{r.json}"),
                ("gate", "{r.json}", "--baseline", "{base.json}", "--json", "-"),
                ("gate", "{base.json}", "--baseline", "{r.json}"),
                ("diff", str(EXAMPLES / "pr50488-eagle-k16.yaml"), "{r.json}", "--allow-mismatch"),
            )
        )
    )
    return Input("report", files, args)


# ---------------------------------------------------------------- reports' status and source

SECRET = "fuzz-secret-7f3a9c-never-printed"
"""Planted in a file beside (outside) the case folder: no output may ever contain it."""


def _trust_bases() -> dict[str, str]:
    """Partial and failed captures (the H200 fault reports), complete ones, a cost-fit report."""
    out: dict[str, str] = {}
    names = [*(f"faults/{n}" for n in ("oom-eagle", "oom-torch-8b", "sigint-tiny")), "tiny-nospec-vllm"]
    names.append("cost/fit-llama3b-mns128-vllm")
    for name in names:
        doc = json.loads((H200 / f"{name}.json").read_text())
        doc["environment"] = {}
        doc["vllm_log"] = []
        out[name] = json.dumps(doc)
    return out


TRUST_BASES = _trust_bases()
HOSTILE_SOURCES = (
    "../secret.yaml",
    "../../secret.yaml",
    "secret.yaml",  # not in the case folder: only a search of parent folders would find it
    "/etc/passwd",
    "/etc/hostname",
    "~/.ssh/id_rsa",
    "/proc/self/environ",
    "/dev/zero",
    "inside/../../secret.yaml",
    "inside.yaml",
    "notyaml.txt",
    "",
    "a\x00b.yaml",
    "x\x1b[2J\n.yaml",
    "inside",
    ".",
    "x" * 5000 + ".yaml",
    "configs/gpu/tiny-nospec.yaml",
)


@st.composite
def trust_inputs(draw: st.DrawFn) -> Input:
    """Capture reports with drawn statuses, failures, partial tables and hostile `source`
    fields through gate, diff and calibrate: never a pass for what a capture lacks, never a
    file read outside the folder named, never the planted secret in any output."""
    name = draw(st.sampled_from(sorted(TRUST_BASES)))
    doc = json.loads(TRUST_BASES[name])
    status = draw(
        st.sampled_from(("complete", "partial", "failed", "keep", "missing", "", "COMPLETE", 3, None))
    )
    if status == "missing":
        doc.pop("status", None)
    elif status != "keep":
        doc["status"] = status
    if coin(draw, 0.4):
        doc["failure"] = draw(
            st.one_of(st.sampled_from(TRICKY_STRINGS), st.text(max_size=40), st.none(), st.integers())
        )
    if coin(draw, 0.6):
        doc["source"] = draw(st.one_of(st.sampled_from(HOSTILE_SOURCES), st.text(max_size=30), st.none()))
    measured = doc.get("measured")
    if isinstance(measured, dict):
        graphs = measured.get("graphs") or []
        if graphs and coin(draw, 0.4):
            measured["graphs"] = graphs[: draw(st.integers(0, len(graphs)))]
        ud = measured.get("uniform_decode") or {}
        if coin(draw, 0.4):
            measured["uniform_decode"] = {
                k: v[: draw(st.integers(0, len(v)))] for k, v in ud.items() if coin(draw, 0.7)
            }
    if coin(draw, 0.1):
        doc.pop("config_fingerprint", None)
    text = json.dumps(doc, default=str).encode("utf-8", "surrogatepass")
    files = (
        ("r.json", text),
        ("base.json", TRUST_BASES["tiny-nospec-vllm"].encode()),
        ("../secret.yaml", f"{SECRET}: 1\n".encode()),
        ("inside.yaml", f"model: ../secret.yaml\n{SECRET}: 2\n".encode()),
        ("notyaml.txt", SECRET.encode()),
    )
    policy = str(EXAMPLES.parent / "gates" / "default.yaml")
    args = draw(
        st.sampled_from(
            (
                ("gate", "{r.json}"),
                ("gate", "--policy", policy, "{r.json}"),
                ("gate", "{base.json}", "--baseline", "{r.json}"),
                ("gate", "{base.json}", "--baseline", "{r.json}", "--allow-partial-baseline"),
                ("gate", "{r.json}", "--baseline", "{base.json}", "--junit", "-"),
                ("diff", "{r.json}", "{base.json}", "--allow-mismatch"),
                ("diff", "{base.json}", "{r.json}", "--markdown"),
                ("calibrate", "{r.json}", "--configs", "{folder}"),
                ("calibrate", "{r.json}"),
            )
        )
    )
    return Input("trust", files, args, options=("cannot fit the cost model", "--vllm-version"))


# ---------------------------------------------------------------- gate policies

policy_values = st.one_of(
    values,
    st.booleans(),
    st.integers(-3, 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.dictionaries(st.one_of(st.sampled_from(("*", "target", "x[/]", "\n", "")), keys), values, max_size=3),
)


@st.composite
def policy_inputs(draw: st.DrawFn) -> Input:
    """`cgplan gate --policy` with a drawn policy file."""
    if coin(draw, 0.15):
        text = draw(st.sampled_from(YAML_TEMPLATES)).format(model="x", key=draw(st.sampled_from(POLICY_KEYS)))
        data = text.encode("utf-8", "surrogatepass")
    else:
        doc = {
            (draw(typo(k)) if coin(draw, 0.05) else k): draw(policy_values)
            for k in draw(st.lists(st.sampled_from(POLICY_KEYS), max_size=6, unique=True))
        }
        if coin(draw, 0.1):
            doc[draw(keys)] = draw(values)
        try:
            data = yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass")
        except (yaml.YAMLError, RecursionError):
            data = b"{}"
    target = draw(st.sampled_from(("pr50488-eagle-k16.yaml", "mns1024-eagle-k16-dyn4.yaml")))
    return Input(
        "policy", (("policy.yaml", data),), ("gate", str(EXAMPLES / target), "--policy", "{policy.yaml}")
    )


# ---------------------------------------------------------------- sweep --set strings

digits = st.one_of(
    st.integers(-3, 64).map(str),
    st.integers(0, 3000).map(str),
    st.sampled_from(
        (
            "0",
            "-1",
            "10000000",
            "10000001",
            "99999999999999999999",
            "9" * 5000,
            "٣",
            "1_0",
            " 8 ",
            "",
            "x",
            "1e3",
            "0x10",
            "²",
        )
    ),
)
set_values = st.one_of(
    st.builds(lambda a, b: f"{a}..{b}", digits, digits),
    st.builds(lambda a, b, c: f"{a}..{b}:{c}", digits, digits, digits),
    st.lists(digits, min_size=1, max_size=5).map(",".join),
    st.lists(
        st.sampled_from(
            (
                "none",
                "FULL",
                "piecewise",
                "FULL_DECODE_ONLY",
                "hopper",
                "blackwell",
                "H200",
                "v1",
                "v2",
                "auto",
                "throughput",
                "interactivity",
                "balanced",
                "x[/]",
                "\ud800",
            )
        ),
        min_size=1,
        max_size=4,
    ).map(",".join),
    st.text(max_size=16),
)
set_keys = st.one_of(
    st.sampled_from(sorted(SETTERS)),
    st.sampled_from(sorted(SETTERS)),
    st.sampled_from(("max-num-seqs", "MAX_NUM_SEQS", "model", "", " max_num_seqs ", "speculative_config")),
    st.text(max_size=10),
)
_STRING_KEYS = {
    "performance_mode": ("none", "throughput", "interactivity", "balanced", "THROUGHPUT"),
    "compilation_config.cudagraph_mode": (
        "FULL",
        "piecewise",
        "FULL_DECODE_ONLY",
        "NONE",
        "full_and_piecewise",
    ),
    "cgplan.platform": ("hopper", "blackwell", "ampere", "rtx-blackwell", "H200"),
    "cgplan.model_runner": ("v1", "v2", "auto", "V2"),
}
small_ints = st.integers(0, 48)
well_formed_sets = st.one_of(
    st.builds(
        lambda k, a, n, step: f"{k}={a}..{a + n}" + (f":{step}" if step else ""),
        st.sampled_from(sorted(k for k in SETTERS if k not in _STRING_KEYS)),
        small_ints,
        st.integers(0, 24),
        st.sampled_from((0, 0, 1, 3, 8)),
    ),
    st.builds(
        lambda k, vs: f"{k}=" + ",".join(map(str, vs)),
        st.sampled_from(sorted(k for k in SETTERS if k not in _STRING_KEYS)),
        st.lists(st.one_of(small_ints, st.sampled_from((512, 1024, 2048, 10**7))), min_size=1, max_size=4),
    ),
    st.sampled_from(sorted(_STRING_KEYS)).flatmap(
        lambda k: st.lists(st.sampled_from(_STRING_KEYS[k]), min_size=1, max_size=3).map(
            lambda vs: f"{k}=" + ",".join(vs)
        )
    ),
    # absurd but well-formed: huge grids must be refused, not expanded (grids that are
    # accepted but take minutes, like 199,999 points, are measured by bench_bounds.py)
    st.sampled_from(
        (
            "max_num_seqs=1..10000000",
            "max_num_seqs=1..99999999999999999999",
            "optimization_level=0..3",
            "max_model_len=1..100000000",
            "speculative_config.num_speculative_tokens=0..10000000:1000000",
        )
    ),
)
set_strings = st.one_of(
    well_formed_sets,
    well_formed_sets,
    well_formed_sets,
    st.builds(lambda k, v: f"{k}={v}", set_keys, set_values),
    st.text(max_size=20),
    st.sampled_from(("max_num_seqs", "=", "max_num_seqs=", "max_num_seqs==3", "max_num_seqs=1..2..3")),
)


@st.composite
def sweep_inputs(draw: st.DrawFn) -> Input:
    """`cgplan sweep CONFIG --set S [--set S2] [--vllm-version V]`."""
    base = draw(
        st.sampled_from(("pr50488-eagle-k16.yaml", "mns1024-eagle-k16-dyn4.yaml", "ngram-k16-v1.yaml"))
    )
    sets = draw(st.lists(set_strings, min_size=1, max_size=2))
    versions = draw(
        st.lists(
            st.one_of(st.sampled_from(SUPPORTED_VERSIONS), st.sampled_from(("0.99.0", "latest", "x[/]"))),
            max_size=2,
        ).filter(lambda vs: all(v in SUPPORTED_VERSIONS for v in vs) or len(vs) == 1)
    )
    args = ["sweep", str(EXAMPLES / base)]
    args += [f"--set={s}" for s in sets]
    for v in versions:
        args += ["--vllm-version", v]
    args += draw(st.sampled_from(((), ("--json",), ("--markdown",))))
    return Input("sweep", (), tuple(args), options=("--set", "--vllm-version"))
