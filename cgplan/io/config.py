"""Config loading: a `vllm serve --config` YAML plus a `cgplan:` section → PlanInput.

The only YAML reader. Every rejection is a ConfigError located as
`file:dotted.path: problem (got X; expected Y)`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from cgplan.core.model.modes import CGSupport, Mode, Platform
from cgplan.core.model.spec import (
    COMPILATION_MODES,
    KV_ROLES,
    MODEL_RUNNERS,
    PERFORMANCE_MODES,
    SPEC_METHODS,
    KvConnector,
    ModelShape,
    ParallelDraft,
    PlanInput,
    SpeculativeSpec,
)
from cgplan.core.vllm.attention import BACKEND_NAMES
from cgplan.core.vllm.defaults import serve_defaults
from cgplan.core.vllm.models import refusal, suffix_runner
from cgplan.core.vllm.releases import (
    LATEST_VERSION,
    SUPPORTED_VERSIONS,
    numeric_release,
    release_for,
    rules_for,
)
from cgplan.errors import ConfigError, preview
from cgplan.io.files import ReadError, another_document, parse_yaml, parse_yaml_stream, read_json, read_text
from cgplan.io.numbers import human_readable_int

# vLLM serve keys cgplan reads.
_TOP_KEYS = (
    "model",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "tensor_parallel_size",
    "enforce_eager",
    "performance_mode",
    "optimization_level",
    "speculative_config",
    "compilation_config",
    "cgplan",
    # parallelism, LoRA, microbatching (issue 16)
    "pipeline_parallel_size",
    "data_parallel_size",
    "decode_context_parallel_size",
    "enable_expert_parallel",
    "enable_lora",
    "max_loras",
    "specialize_active_lora",
    "enable_dbo",
    "ubatch_size",
    "dbo_decode_token_threshold",
    "dbo_prefill_token_threshold",
    "async_scheduling",
    "all2all_backend",
    "runner",
    "kv_transfer_config",
    "kv_cache_dtype",
    "dtype",
    "quantization",
)
_INT_KEYS = frozenset(
    (
        "max_model_len",
        "max_num_seqs",
        "max_num_batched_tokens",
        "tensor_parallel_size",
        "optimization_level",
        "pipeline_parallel_size",
        "data_parallel_size",
        "decode_context_parallel_size",
        "max_loras",
        "ubatch_size",
        "dbo_decode_token_threshold",
        "dbo_prefill_token_threshold",
    )
)
_FALSE_IS_DEFAULT = frozenset(
    ("enforce_eager", "enable_expert_parallel", "enable_lora", "specialize_active_lora", "enable_dbo")
)
"""Booleans whose vLLM default is false: a `key: false` that vLLM's --config reader drops (or turns
into --no-key) leaves them false alike."""
_NULL_IS_DEFAULT = frozenset(("max_num_seqs", "max_num_batched_tokens", "speculative_config"))
"""Keys of `int | None` / `dict | None` EngineArgs fields: `key: null` becomes `--key None`, which
vLLM's optional_type reads as None, its default."""
_TEXT_KEYS = frozenset(
    ("model", "performance_mode", "all2all_backend", "runner", "kv_cache_dtype", "dtype", "quantization")
)
_MAPPING_KEYS = frozenset(("speculative_config", "compilation_config", "cgplan", "kv_transfer_config"))


def _read_as_written(doc: Mapping[Any, Any]) -> bool:
    """Whether a document reads the same key by key, as written, as `vllm serve --config` reads it:
    every key one of `_TOP_KEYS` in vLLM's snake_case and each value of the type it is read as.
    Any other document (another flag, dash-case, a string for a number, `async_scheduling: false`)
    is read through vLLM's --config rules (`cgplan.io.vllm_args.read_config_document`), which also
    imports vLLM's whole flag table: the common config needs neither."""
    for key, value in doc.items():
        if key in _INT_KEYS:
            ok = (type(value) is int) or (value is None and key in _NULL_IS_DEFAULT)
        elif key in _FALSE_IS_DEFAULT:
            ok = type(value) is bool
        elif key == "async_scheduling":
            ok = value is True  # false: vLLM's reader drops `async_scheduling: false` (a note says so)
        elif key in _TEXT_KEYS:
            ok = type(value) is str
        elif key in _MAPPING_KEYS:
            ok = isinstance(value, dict) or (value is None and key in _NULL_IS_DEFAULT)
        else:
            ok = False
        if not ok:
            return False
    return True


_SPEC_KEYS = (
    "method",
    "num_speculative_tokens",
    "num_speculative_tokens_per_batch_size",
    "model",
    "enforce_eager",
    "prompt_lookup_max",
    "prompt_lookup_min",
    "draft_tensor_parallel_size",
    "enable_adaptive_verification",
    "suffix_decoding_max_tree_depth",
    "suffix_decoding_max_cached_requests",
    "suffix_decoding_max_spec_factor",
    "suffix_decoding_min_token_prob",
)
_CC_KEYS = (
    "cudagraph_mode",
    "max_cudagraph_capture_size",
    "cudagraph_capture_sizes",
    "pass_config",
    "mode",
    "cudagraph_specialize_lora",
)
_CC_UNMODELLED = (
    "splitting_ops",
    "use_inductor_graph_partition",
    "compile_sizes",
    # the multimodal encoder's CUDA graphs (token budgets as powers of two; V2 from vLLM PR 49852)
    "encoder_cudagraph_token_budgets",
    "encoder_cudagraph_max_vision_items_per_batch",
    "encoder_cudagraph_max_frames_per_batch",
    # YOCO decoder-replay graphs (DeepSeek-V4.1, vLLM 0.32+: a family of their own)
    "cudagraph_decoder_replay",
    "decoder_replay_cudagraph_capture_sizes",
    "decoder_replay_trim_threshold",
)
_CC_DEFAULT_OFF = ("cudagraph_mm_encoder",)
"""Graph families cgplan does not model, accepted at vLLM's default (off: a text model captures no
encoder graphs) and refused by name when turned on."""
_PASS_KEYS = ("enable_sp", "sp_min_token_num", "fuse_gemm_comms")
_CGPLAN_KEYS = (
    "vllm_version",
    "platform",
    "model_runner",
    "attention_backend",
    "attention_cudagraph_support",
    "model_config",
    "env",
)

MODELLED_ENV = ("TORCH_COMPILE_DISABLE", "VLLM_USE_BREAKABLE_CUDAGRAPH", "VLLM_USE_V2_MODEL_RUNNER")
"""vLLM environment variables cgplan reads (`cgplan.env`, or `NAME=value` before a `vllm serve`
line): VLLM_USE_V2_MODEL_RUNNER is the model runner, the others go to the core as set."""
UNMODELLED_ENV = ("VLLM_BATCH_INVARIANT", "VLLM_MLA_DISABLE", "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS")
"""vLLM environment variables that change capture or its memory but that cgplan does not model:
refused by name (VLLM_BATCH_INVARIANT can switch breakable CUDA graphs on in 0.33; VLLM_MLA_DISABLE
turns MLA off; the profiler estimate decides whether graph memory is taken from the KV cache)."""


STDIN = "<stdin>"
"""How a config read from `-` is named in messages and reports."""

MAX_REASONABLE = 10**7
"""Upper bound on any count or size; larger values are refused before planning."""
MAX_LIST = 10_000
"""Upper bound on the entries of a list (capture sizes)."""
MAX_SCHEDULE = 1_000
"""Upper bound on the ranges of a dynamic-SD schedule: the gap and fix search walks
(ranges × dispatch rows) per gap, so 1,000 one-batch ranges plan in about 2 s and
10,000 in about 40 s (benchmarks/results/bounds.json)."""

MAX_LADDER_SIZES = 100_000
"""Upper bound on the capture sizes a config's own ladder would hold: vLLM's default ladder has
one size per 16 tokens above 256, so max_cudagraph_capture_size = max_num_batched_tokens = 10^7
meant 625,000 sizes, 17 s and 2.6 GiB to plan; 62,500 (10^6 tokens) plan in 5 s and 320 MB
(benchmarks/results/bounds.json). No GPU captures that many graphs."""
MAX_LADDER_TOKENS = 256 + 16 * (MAX_LADDER_SIZES - 64)
"""The largest max capture size (tokens) whose default ladder stays within MAX_LADDER_SIZES."""


def ladder_sizes_at_most(max_size_tokens: int) -> int:
    """An upper bound on the sizes of vLLM's default ladder up to `max_size_tokens`: 1..32 (or
    1, 2, 4), multiples of 8 below 256, multiples of 16 from 256 (core/vllm/ladder.py:token_grid),
    plus the decode sizes (under 64 below 256 tokens, one per 16 above)."""
    return 64 + max(0, max_size_tokens - 256) // 16


MAX_SCHEDULE_WORK = 10**8
"""Upper bound on ranges x max_num_seqs of a dynamic-SD schedule: finding its gaps walks every
request count per range (1,000 ranges at max_num_seqs 10^7 grew past 5 GiB and 5 minutes; at
the bound, gate answers in seconds; benchmarks/results/bounds.json)."""


class Overrides(NamedTuple):
    """Command-line options that win over the file's `cgplan:` section.

    A NamedTuple, not a dataclass: immutable and typed alike, and about 8x cheaper to define at
    import time (start-up is most of a `cgplan plan`, issue 18)."""

    vllm_version: str | None = None
    platform: str | None = None
    model_runner: str | None = None
    model_config: Path | None = None
    """--model-config: the model's config.json (or its folder), for a hub model id in `model:`."""
    strict: bool = False
    """--strict: refuse a flag cgplan does not model (set away from vLLM's default) by name, instead
    of planning without it with a note."""


NO_OVERRIDES = Overrides()
"""No command-line overrides (the default)."""


class LoadedConfig(NamedTuple):
    """A parsed config: the planner input plus what was read around it (a NamedTuple: see Overrides)."""

    input: PlanInput
    source: str
    ignored_keys: tuple[str, ...]
    notes: tuple[str, ...] = ()
    """How an input was read where it is not literal (a patch release, a GPU's family), and each
    flag planned without (`unmodelled`)."""
    unmodelled: tuple[str, ...] = ()
    """Flags set away from vLLM's default that cgplan does not model: the plan is as if they were at
    it (each names what it can change); --strict refuses them."""
    document: Mapping[Any, Any] | None = None
    """The YAML's top-level mapping as read (where a fix's config lines go); None for a command line."""
    given_flags: frozenset[str] = frozenset()
    """The dests of the flags a command line (or a manifest's) gave."""


def _fmt(value: object) -> str:
    """A bounded rendering of a parsed value (aliases, cycles and huge numbers included)."""
    if not isinstance(value, str):
        return preview(value)
    text = repr(value[:61])
    return text if len(text) <= 60 else text[:57] + "..."


def _key(key: str) -> str:
    """A key as it goes into a dotted path: quoted when empty or not printable, cut when long."""
    # quoted when it starts with "-": a path "--x" reads as a command-line option (ConfigError.located)
    if key and len(key) <= 80 and key.isprintable() and key.strip() == key and not key.startswith("-"):
        return key
    return repr(key) if len(key) <= 60 else repr(key[:57]) + "..."


def _err(path: str, problem: str, got: object = ..., expected: str | None = None) -> ConfigError:
    detail = []
    if got is not ...:
        detail.append(f"got {_fmt(got)}")
    if expected:
        detail.append(f"expected {expected}")
    return ConfigError(path, problem + (f" ({'; '.join(detail)})" if detail else ""))


def _snake_keys(section: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """`section` with dash-case keys in vLLM's snake_case, as `vllm serve --config` reads them
    (argparse takes `--max-num-seqs` and `--max_num_seqs` alike; speculative_config keys are
    normalised by EngineArgs). A key given in both spellings is refused: which one wins is
    only the file's order."""
    out: dict[str, Any] = {}
    spelled: dict[str, object] = {}
    for key, value in section.items():
        norm = key.replace("-", "_") if isinstance(key, str) and not key.startswith("-") else key
        if norm in out:
            path = f"{prefix}.{_key(norm)}" if prefix else _key(norm)
            raise _err(path, "given twice", f"{spelled[norm]!s} and {key!s}", "one spelling of the key")
        out[norm] = value
        spelled[norm] = key
    return out


def resolve_vllm_version(value: object, path: str) -> tuple[str, str | None]:
    """A release cgplan has rules for, from what people write: `0.33.0`, `v0.33.0`, `0.33` (its
    minor release) or a patch release cgplan has no entry for (`0.33.1`: the newest known release
    of that minor at or below it, with a note); `release_for` is the rule. Refused, with the
    nearest known release by version order, otherwise.

    >>> resolve_vllm_version("v" + LATEST_VERSION, "--vllm-version") == (LATEST_VERSION, None)
    True
    """
    text = str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
    if not isinstance(text, str):
        raise _err(path, "must be a string", value, "one of " + ", ".join(SUPPORTED_VERSIONS))
    key = text.strip().removeprefix("v").removeprefix("V")
    release = release_for(key)
    if release == key:
        return key, None
    nums = numeric_release(key)
    if release is not None and nums is not None:
        if len(nums) == 2:
            return release, f"vLLM {key} read as {release}"
        return release, (
            f"vLLM {key} planned with {release}'s rules: cgplan keeps rules per release and knows no "
            f"change of capture between {release} and {key} (a patch release)"
        )
    if nums is not None:
        known = [(tuple(int(x) for x in v.split(".")), v) for v in SUPPORTED_VERSIONS]
        order = sorted([*known, (nums + (0,) * (3 - len(nums)), "")])
        at = next(i for i, (n, v) in enumerate(order) if v == "" and n == nums + (0,) * (3 - len(nums)))
        near = order[at + 1][1] if at + 1 < len(order) else order[at - 1][1]
        raise _err(
            path,
            f"no rules for vLLM {key}; did you mean '{near}'?",
            value,
            "one of " + ", ".join(SUPPORTED_VERSIONS) + " (or a patch release of one)",
        )
    return _choice(text, path, SUPPORTED_VERSIONS), None


def _check_keys(
    section: Mapping[str, Any],
    allowed: tuple[str, ...],
    prefix: str,
    *,
    ignored: tuple[str, ...] = (),
    unmodelled: tuple[str, ...] = (),
) -> list[str]:
    seen_ignored = []
    for key in section:
        if not isinstance(key, str):
            raise _err(prefix or "<root>", "keys must be strings", key)
        path = f"{prefix}.{_key(key)}" if prefix else _key(key)
        if key in allowed:
            continue
        norm = key.replace("-", "_")
        if norm != key and norm in allowed + ignored + unmodelled:
            raise _err(path, f"use vLLM's snake_case key '{norm}'", key)
        if key in ignored:
            seen_ignored.append(path)
            continue
        if key in unmodelled:
            raise _err(
                path,
                "changes what vLLM captures, but cgplan does not model it yet; remove it to plan without it",
            )
        import difflib  # a misspelt key only

        close = difflib.get_close_matches(key[:80], allowed + ignored, n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ConfigError(path, f"unknown key{hint} (expected one of {', '.join(allowed)})")
    return seen_ignored


def _int(
    section: Mapping[str, Any], key: str, prefix: str, *, minimum: int = 1, glue: str = "."
) -> int | None:
    path = f"{prefix}{glue}{key}" if prefix else key
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str):
            value = _human_int(value, path)
        elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        else:
            raise _err(path, "must be an integer", value, f"an integer >= {minimum}")
    if value < minimum:
        raise _err(path, "out of range", value, f"an integer >= {minimum}")
    if value > MAX_REASONABLE:
        raise _err(path, "too large to plan", value, f"at most {MAX_REASONABLE:,}")
    return value


def _human_int(text: str, path: str) -> int:
    """vLLM's human-readable integers (its one parser: `1.5K` is refused, as vLLM refuses it)."""
    try:
        return human_readable_int(text)
    except ValueError:
        raise _err(path, "must be an integer", text, "an integer such as 8192 or 8k") from None


def _bool(section: Mapping[str, Any], key: str, prefix: str) -> bool | None:
    value = section.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise _err(f"{prefix}.{key}" if prefix else key, "must be true or false", value, "a boolean")


_MODEL_DTYPES = {
    "half": "float16",
    "float16": "float16",
    "float": "float32",
    "float32": "float32",
    "bfloat16": "bfloat16",
}
"""vLLM's `_STR_DTYPE_TO_TORCH_DTYPE` (vllm/config/model.py, 0.26-0.33): `--dtype` names and the
dtype each runs the model in; "auto" keeps the checkpoint's."""


def _with_weights(shape: ModelShape, doc: Mapping[str, Any]) -> ModelShape:
    """`--dtype` and `--quantization` over what config.json says: the dtype the weights and
    activations run in and the quantisation method (the figures' domain, the KV bytes)."""
    from dataclasses import replace

    dtype, quant = doc.get("dtype"), doc.get("quantization")
    if dtype is not None:
        if not isinstance(dtype, str) or (dtype.strip() != "auto" and dtype.strip() not in _MODEL_DTYPES):
            raise _err(
                "dtype", "must be one of auto, " + ", ".join(_MODEL_DTYPES), dtype, "vLLM's ModelDType"
            )
        if dtype.strip() != "auto":
            shape = replace(shape, dtype=_MODEL_DTYPES[dtype.strip()])
    if quant is not None:
        if not isinstance(quant, str) or not quant.strip():
            raise _err("quantization", "must be a quantization method's name", quant, "e.g. fp8, awq, gptq")
        shape = replace(shape, quantization=quant.strip())
    return shape


def _kv_cache_dtype(value: object) -> str:
    """`kv_cache_dtype` as given ("auto" when absent); the release's CacheDType check is the core's
    (`validate_limits`, vLLM's own message)."""
    if value is None:
        return "auto"
    if not isinstance(value, str):
        raise _err("kv_cache_dtype", "must be a string", value, "a CacheDType name, e.g. auto or fp8")
    return value.strip()


def _choice(value: object, path: str, choices: tuple[str, ...], *, fold: bool = False) -> str:
    if not isinstance(value, str):
        raise _err(path, "must be a string", value, "one of " + ", ".join(choices))
    key = value.strip()
    for c in choices:
        if key == c or (fold and key.upper() == c.upper()):
            return c
    import difflib  # a misspelt value only

    close = difflib.get_close_matches(key[:80], choices, n=1, cutoff=0.5)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise _err(path, f"unknown value{hint}", value, "one of " + ", ".join(choices))


def _mapping(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _err(path, "must be a mapping", value, "key: value pairs")
    return value


def _gpu_name(value: object) -> str:
    """The GPU's own name where the platform was given as one (`--platform H100`), "" for a family
    name: the predictors' domain reads it (a family stands for the GPU they were measured on)."""
    if not isinstance(value, str) or value.strip().lower().replace("_", "-") in {p.value for p in Platform}:
        return ""
    from cgplan.core.vllm.gpus import find_gpu

    gpu = find_gpu(value)
    return gpu.name if gpu is not None and gpu.platform is not None else ""


def parse_platform(value: object, path: str, notes: list[str] | None = None) -> Platform:
    """A platform family name or a GPU name (H100, H200, L40S, RTX PRO 6000, ...; see
    `core.modes.GPUS`); a GPU whose SM version differs from its family's adds a note."""
    names = tuple(p.value for p in Platform)
    if isinstance(value, str):
        key = value.strip().lower().replace("_", "-")
        if key in names:
            return Platform(key)
        from cgplan.core.vllm.gpus import PLATFORM_ALIASES, find_gpu  # only for a GPU name

        if key in PLATFORM_ALIASES:
            return PLATFORM_ALIASES[key]
        gpu = find_gpu(value)
        if gpu is not None and gpu.platform is None:
            raise _err(path, f"{gpu.name} is not modelled: {gpu.refusal}", value)
        if gpu is not None and gpu.platform is not None:
            if notes is not None and gpu.capability != gpu.platform.compute_capability:
                sm = f"SM{gpu.capability[0]}{gpu.capability[1]}"
                notes.append(
                    f"{gpu.name} ({sm}, {gpu.memory_gib} GiB) planned with the {gpu.platform.value} rules: "
                    "vLLM's capture rules read the major SM version and its serve defaults the memory "
                    f"tier, the same as on SM{gpu.platform.compute_capability[0]}"
                    f"{gpu.platform.compute_capability[1]}"
                )
            return gpu.platform
    from cgplan.core.vllm.gpus import GPUS

    known = ", ".join(g.name for g in GPUS if g.platform is not None)
    raise _err(path, "unknown platform", value, "one of " + ", ".join(names) + f" or a GPU name ({known})")


def _draft_shape(value: object, base_dir: Path) -> ModelShape | None:
    """The draft model's shape when `speculative_config.model` names a local folder with a
    config.json; a hub name (or anything unreadable) leaves the cost model to assume a
    one-layer head of the target's width, as EAGLE heads are."""
    if not isinstance(value, str) or not value or "\0" in value:
        return None
    try:
        folder = Path(value).expanduser()
        if not folder.is_absolute():
            folder = base_dir / folder
        if not (folder / "config.json").is_file():
            return None
    except (OSError, ValueError, RuntimeError):
        return None
    # A draft config.json that is there is read like the target's: a bad dimension is an error.
    return read_model_shape(folder, "speculative_config.model")


def _suffix_checks(sc: dict[str, Any]) -> int:
    """SpeculativeConfig._validate_suffix_decoding's value checks, in its words; the tree depth."""
    where = "speculative_config"
    depth = _int(sc, "suffix_decoding_max_tree_depth", where, minimum=-MAX_REASONABLE)
    depth = 24 if depth is None else depth
    if depth < 1:
        raise ConfigError(
            f"{where}.suffix_decoding_max_tree_depth", f"suffix_decoding_max_tree_depth={depth} must be >= 1"
        )
    cached = _int(sc, "suffix_decoding_max_cached_requests", where, minimum=-MAX_REASONABLE)
    if cached is not None and cached < 0:
        raise ConfigError(
            f"{where}.suffix_decoding_max_cached_requests",
            f"suffix_decoding_max_cached_requests={cached} must be >= 0",
        )
    for key, lo, hi, rule in (
        ("suffix_decoding_max_spec_factor", 0.0, None, "must be >= 0"),
        ("suffix_decoding_min_token_prob", 0.0, 1.0, "must be in [0, 1]"),
    ):
        value = sc.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _err(f"{where}.{key}", "must be a number", value)
        if value < lo or (hi is not None and value > hi):
            raise ConfigError(f"{where}.{key}", f"{key}={value} {rule}")
    return depth


def _parallel_draft(value: object, base_dir: Path) -> ParallelDraft | None:
    """The fields of a DFlash / DSpark draft's config.json its speculator reads; None without a
    local folder (the core says what it does not model then)."""
    if not isinstance(value, str) or not value or "\0" in value:
        return None
    try:
        folder = Path(value).expanduser()
        if not folder.is_absolute():
            folder = base_dir / folder
        cfg_file = folder / "config.json"
        if not cfg_file.is_file():
            return None
        raw = read_json(cfg_file, what="draft config.json")
    except (OSError, ValueError, RuntimeError, ReadError):
        return None
    if not isinstance(raw, dict):
        return None
    shape = read_model_shape(folder, "speculative_config.model")

    def flag(name: str, doc: dict[str, Any] = raw) -> bool | None:
        got = doc.get(name)
        return got if isinstance(got, bool) else None

    got = raw.get("dflash_config")
    dflash: dict[str, Any] = got if isinstance(got, dict) else {}
    layer_types = raw.get("layer_types")
    block = raw.get("dspark_block_size")
    return ParallelDraft(
        architecture=shape.architecture,
        model_type=str(raw.get("model_type") or ""),
        head_dim=shape.head_dim,
        num_key_value_heads=shape.num_key_value_heads,
        num_hidden_layers=shape.num_hidden_layers,
        layer_types=tuple(str(t) for t in layer_types) if isinstance(layer_types, list) else (),
        is_causal=flag("is_causal"),
        dflash_causal=flag("causal", dflash),
        dspark_bonus_anchor=flag("dspark_bonus_anchor"),
        sample_from_anchor=flag("sample_from_anchor"),
        dspark_block_size=block if isinstance(block, int) and not isinstance(block, bool) else None,
    )


def _local_path(text: str, base_dir: Path, path: str) -> Path:
    """A path from the config: `~` expanded, a relative one from `base_dir`."""
    try:
        p = Path(text).expanduser()
    except RuntimeError:  # ~user with no such user
        raise _err(path, "cannot expand the home folder", text) from None
    return p if p.is_absolute() else base_dir / p


def _quant_method(hf: Mapping[str, Any], text: Mapping[str, Any]) -> str:
    """`quantization_config.quant_method` (vLLM's `ModelConfig._verify_quantization` reads it there;
    "" where the checkpoint is not quantised)."""
    for d in (hf, text):
        q = d.get("quantization_config")
        if isinstance(q, Mapping) and isinstance(q.get("quant_method"), str):
            return str(q["quant_method"])
        if q:  # quantised, by a method cgplan cannot read: outside the domain, never "unquantised"
            return "unreadable quantization_config"
    return ""


def read_model_shape(folder: Path, path: str) -> ModelShape:
    """The model shape from a Hugging Face config.json (no weights, no hub)."""
    try:
        cfg_file = folder / "config.json" if folder.is_dir() else folder
        found = str(folder) == "-" or cfg_file.is_file()  # `-`: standard input
    except (OSError, ValueError) as e:  # a name too long, a NUL byte
        reason = getattr(e, "strerror", None) or e
        raise _err(path, f"cannot use the model path: {reason}", str(folder)) from None
    if not found:
        hint = (
            "; for a hub model id give the model's config.json as cgplan.model_config or --model-config"
            if path == "model"
            else ""
        )
        raise _err(
            path,
            f"model folder has no config.json{hint}",
            str(folder),
            "a local folder with a Hugging Face config.json",
        )
    try:
        hf = read_json(cfg_file, what="model config.json")
    except ReadError as e:
        raise _err(path, f"cannot read {e.message}") from None
    if not isinstance(hf, dict):
        raise _err(path, f"{cfg_file} is not a JSON object")
    text: dict[str, Any] = hf["text_config"] if isinstance(hf.get("text_config"), dict) else hf

    where = "text_config." if text is not hf else ""

    def num(key: str, default: int, *, minimum: int = 1, maximum: int = MAX_REASONABLE) -> int:
        # A value that is there must be usable: 0 or -1 silently became the default, and every
        # prediction from it was absurd. null is "not given" (some configs write head_dim: null).
        v = text.get(key)
        if v is None:
            return default
        if not isinstance(v, int) or isinstance(v, bool) or not minimum <= v <= maximum:
            raise _err(
                path,
                f"{cfg_file}:{where}{key}: not a usable model dimension",
                v,
                f"an integer from {minimum} to {maximum:,}",
            )
        return v

    archs = hf.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else "LlamaForCausalLM"
    all_archs = tuple(a for a in archs if isinstance(a, str)) if isinstance(archs, list) else ()
    dtype = text.get("torch_dtype") or text.get("dtype")
    kind = _layer_kinds(hf, text)
    enc_dec = bool(hf.get("is_encoder_decoder")) or bool(text.get("is_encoder_decoder"))
    if enc_dec:
        # Whisper-style configs name the decoder's dimensions (the KV cache and the decode graphs
        # are the decoder's): d_model, decoder_layers, decoder_attention_heads, decoder_ffn_dim
        for ours, theirs in (
            ("hidden_size", "d_model"),
            ("num_hidden_layers", "decoder_layers"),
            ("num_attention_heads", "decoder_attention_heads"),
            ("intermediate_size", "decoder_ffn_dim"),
        ):
            if ours not in text and theirs in text:
                text = {**text, ours: text[theirs]}
    heads = num("num_attention_heads", 32)
    hidden = num("hidden_size", 4096)
    experts = text.get("n_routed_experts") or text.get("num_local_experts") or text.get("num_experts") or 0
    is_moe = bool(isinstance(experts, int) and experts > 0)
    layers = num("num_hidden_layers", 32)
    dense_layers = shared_layers = 0
    if is_moe:
        # vLLM's DeepSeek/GLM layers: the first `first_k_dense_replace` are dense; Qwen-MoE names
        # its dense layers in `mlp_only_layers` (cost model only: never fails a config)
        first_dense = text.get("first_k_dense_replace")
        mlp_only = text.get("mlp_only_layers")
        if isinstance(first_dense, int) and not isinstance(first_dense, bool) and first_dense > 0:
            dense_layers = min(first_dense, layers)
        elif isinstance(mlp_only, list):
            dense_layers = min(len(mlp_only), layers)
        shared = text.get("n_shared_experts") or text.get("shared_expert_intermediate_size") or 0
        if isinstance(shared, int) and not isinstance(shared, bool) and shared > 0:
            shared_layers = layers - dense_layers
    max_len_key = _max_len_key(text)
    return ModelShape(
        architecture=arch,
        architectures=all_archs if len(all_archs) > 1 else (),
        model_type=str(hf["model_type"]) if isinstance(hf.get("model_type"), str) else "",
        is_encoder_decoder=enc_dec,
        other_layer_kinds=kind[0],
        sliding_window_layers=kind[1],
        layer_type_names=_layer_type_names(text),
        sparse_attention=text.get("index_topk") is not None,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=num("num_key_value_heads", heads),
        head_dim=num("head_dim", max(1, hidden // heads)),
        intermediate_size=num("intermediate_size", 4 * hidden),
        vocab_size=num("vocab_size", 32000),
        dtype=dtype if isinstance(dtype, str) and dtype else "bfloat16",
        quantization=_quant_method(hf, text),
        is_moe=is_moe,
        num_routed_experts=experts if is_moe else 0,
        moe_dense_layers=dense_layers,
        moe_shared_expert_layers=shared_layers,
        use_mla=bool(text.get("kv_lora_rank")),
        kv_lora_rank=num("kv_lora_rank", 0, minimum=0) if text.get("kv_lora_rank") else 0,
        num_nextn_predict_layers=num("num_nextn_predict_layers", 0, minimum=0),
        max_position_embeddings=num(max_len_key, 2048, maximum=1 << 31),
        derived_max_model_len=num(max_len_key, 0, maximum=1 << 31) or None
        if max_len_key in text and not text.get("rope_scaling") and "model_max_length" not in text
        else None,
    )


# vllm/transformers_utils/model_arch_config_convertor.py `derive_max_model_len_and_key` (the same
# list in 0.26-0.33): the smallest of these that the config states, model_max_length over all.
_MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)


def _max_len_key(text: Mapping[str, Any]) -> str:
    """The config key vLLM derives the default max_model_len from (max_position_embeddings when
    the config states none: cgplan's default then applies)."""
    if isinstance(text.get("model_max_length"), int):
        return "model_max_length"
    present = [(v, k) for k in _MAX_LEN_KEYS if isinstance(v := text.get(k), int) and not isinstance(v, bool)]
    return min(present)[1] if present else "max_position_embeddings"


# Hybrid and attention-free model types whose configs do not list their layers (vLLM's IsHybrid /
# IsAttentionFree classes): the kind of their non-attention layers.
_STATE_MODEL_TYPES = {
    "mamba": "mamba",
    "mamba2": "mamba",
    "falcon_mamba": "mamba",
    "jamba": "mamba",
    "zamba": "mamba",
    "zamba2": "mamba",
    "bamba": "mamba",
    "falcon_h1": "mamba",
    "nemotron_h": "mamba",
    "granitemoehybrid": "mamba",
    "plamo2": "mamba",
    "lfm2": "short_conv",
    "lfm2_moe": "short_conv",
    "qwen3_next": "linear_attention",
    "kimi_linear": "linear_attention",
    "minimax_text_01": "linear_attention",
    "minimax_m1": "linear_attention",
}
_ATTENTION_LAYERS = ("attention", "full_attention", "sliding_attention")


def _layer_type_names(text: Mapping[str, Any]) -> tuple[str, ...] | None:
    # what vLLM's ModelConfig.is_hybrid reads: `layer_types`, None when absent
    layer_types = text.get("layer_types")
    if not isinstance(layer_types, list):
        return None
    return tuple(sorted({str(t) for t in layer_types}))


def _layer_kinds(hf: Mapping[str, Any], text: Mapping[str, Any]) -> tuple[tuple[str, ...], int]:
    """(the non-attention layer kinds, the sliding-window layers) a config names, as vLLM's
    `is_hybrid` reads `layer_types` (a config whose layer_types are all attention is no hybrid)."""
    layer_types = text.get("layer_types")
    if isinstance(layer_types, list) and all(isinstance(t, str) for t in layer_types):
        other = tuple(sorted({t for t in layer_types if t not in _ATTENTION_LAYERS}))
        return other, sum(t == "sliding_attention" for t in layer_types)
    blocks = text.get("layers_block_type")
    if isinstance(blocks, list) and all(isinstance(t, str) for t in blocks):
        return tuple(sorted({t for t in blocks if t not in _ATTENTION_LAYERS})), 0
    pattern = text.get("hybrid_override_pattern")
    if isinstance(pattern, str) and "M" in pattern:
        return ("mamba",), 0
    model_type = hf.get("model_type")
    if isinstance(model_type, str) and model_type in _STATE_MODEL_TYPES:
        return (_STATE_MODEL_TYPES[model_type],), 0
    if any(k in text for k in ("linear_attn_config", "full_attention_interval", "full_attn_interval")):
        return ("linear_attention",), 0
    if any(k in text for k in ("ssm_cfg", "mamba_d_state", "mamba_d_conv", "ssm_state_size")):
        return ("mamba",), 0
    return (), 0


def _schedule(value: object, path: str) -> tuple[tuple[int, int, int], ...]:
    if not isinstance(value, list) or not value:
        raise _err(
            path,
            "must be a non-empty list of [first_batch, last_batch, K]",
            value,
            "e.g. [[1, 16, 5], [17, 64, 3]]",
        )
    if len(value) > MAX_SCHEDULE:
        raise _err(path, "too many ranges to plan", len(value), f"at most {MAX_SCHEDULE:,} entries")
    out = []
    for i, entry in enumerate(value):
        p = f"{path}[{i}]"
        if (
            not isinstance(entry, list | tuple)
            or len(entry) != 3
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in entry)
        ):
            raise _err(p, "must be three integers [first_batch, last_batch, K]", entry)
        if abs(entry[0]) > MAX_REASONABLE or abs(entry[1]) > MAX_REASONABLE or abs(entry[2]) > MAX_REASONABLE:
            raise _err(p, "too large to plan", entry, f"values at most {MAX_REASONABLE:,}")
        out.append((entry[0], entry[1], entry[2]))
    return tuple(out)


def parse_config(
    raw: object,
    base_dir: Path,
    overrides: Overrides = NO_OVERRIDES,
    notes: list[str] | None = None,
    unmodelled: list[str] | None = None,
) -> tuple[PlanInput, list[str]]:
    """Validate a parsed YAML document and build the planner input; `notes` (when given) gets how
    an input was read where it is not literal (a patch release, a GPU's family). The document's top
    level is read as `vllm serve --config FILE` reads it: every flag of the release, in either
    spelling, plus cgplan's own `cgplan:` section; `unmodelled` (when given) gets each flag cgplan
    plans without (refused under `overrides.strict`).

    Raises:
        ConfigError: located at the offending key (the caller adds the file name).
    """
    if raw is None:
        raise ConfigError("", "the config is empty (expected a mapping with at least 'model')")
    notes = notes if notes is not None else []
    top = _mapping(raw, "<root>")
    _snake_keys(top, "")  # a key given in both spellings: refused whichever way it is read
    if _read_as_written(top):
        return _parse_document(top, base_dir, overrides, notes)
    # Imported here: the common config (cgplan's own keys, as written) does not pay for the table.
    from cgplan.io.vllm_args import read_config_document

    for key in top:
        if not isinstance(key, str):
            raise _err("<root>", "keys must be strings", key)
    parsed = read_config_document(
        top, base_dir=base_dir, vllm_version=overrides.vllm_version, strict=overrides.strict
    )
    notes += parsed.notes
    if unmodelled is not None:
        unmodelled += parsed.unmodelled
    try:
        inp, ignored = _parse_document(parsed.doc, base_dir, overrides, notes)
    except ConfigError as e:
        raise parsed.locate(e) from None
    return inp, [*parsed.ignored, *ignored]


def _parse_document(
    raw: Mapping[str, Any], base_dir: Path, overrides: Overrides, notes: list[str]
) -> tuple[PlanInput, list[str]]:
    """`parse_config` of a document in cgplan's own schema (`_TOP_KEYS`, as `_read_as_written` holds
    or `read_config_document` built it)."""
    doc = _snake_keys(raw, "")
    ignored = _check_keys(doc, _TOP_KEYS, "")
    cg = _snake_keys(_mapping(doc.get("cgplan") or {}, "cgplan"), "cgplan")
    _check_keys(cg, _CGPLAN_KEYS, "cgplan")

    version, version_note = resolve_vllm_version(
        overrides.vllm_version or cg.get("vllm_version") or LATEST_VERSION,
        "cgplan.vllm_version" if not overrides.vllm_version else "--vllm-version",
    )
    if version_note:
        notes.append(version_note)
    platform = parse_platform(
        overrides.platform or cg.get("platform", "hopper"),
        "--platform" if overrides.platform else "cgplan.platform",
        notes,
    )
    gpu_name = _gpu_name(overrides.platform or cg.get("platform", "hopper"))
    runner = _choice(
        overrides.model_runner or cg.get("model_runner", "auto"),
        "--model-runner" if overrides.model_runner else "cgplan.model_runner",
        MODEL_RUNNERS,
        fold=True,
    ).lower()
    env = _env(cg.get("env"), notes)
    env_runner = dict(env).get("VLLM_USE_V2_MODEL_RUNNER")
    if env_runner is not None:
        env = tuple((k, v) for k, v in env if k != "VLLM_USE_V2_MODEL_RUNNER")
        try:
            from_env = "v2" if int(env_runner) else "v1"  # envs.py maybe_convert_bool: bool(int(x))
        except ValueError:
            raise _err(
                "cgplan.env.VLLM_USE_V2_MODEL_RUNNER", "must be an integer", env_runner, '"0" or "1"'
            ) from None
        if overrides.model_runner is None:
            if cg.get("model_runner") is not None and runner not in ("auto", from_env):
                raise _err(
                    "cgplan.env.VLLM_USE_V2_MODEL_RUNNER",
                    f"disagrees with cgplan.model_runner {runner}",
                    env_runner,
                    "one of the two",
                )
            runner = from_env
    backend = cg.get("attention_backend")
    if backend is not None:
        backend = _choice(backend, "cgplan.attention_backend", tuple(BACKEND_NAMES), fold=True)
    support_name = cg.get("attention_cudagraph_support")
    support = None
    if support_name is not None:
        support = CGSupport[
            _choice(
                support_name, "cgplan.attention_cudagraph_support", tuple(CGSupport.__members__), fold=True
            )
        ]

    if "model" not in doc:
        raise ConfigError("model", "missing (expected a local folder with a Hugging Face config.json)")
    model_value = doc["model"]
    if not isinstance(model_value, str) or not model_value.strip():
        raise _err(
            "model",
            "must be a folder path or a hub model id",
            model_value,
            "a local folder with a Hugging Face config.json",
        )
    if overrides.model_config is not None:
        given = str(overrides.model_config)
        model_path = Path("-") if given == "-" else _local_path(given, base_dir, "--model-config")
        model_key = "--model-config"
    elif cg.get("model_config") is not None:
        mc = cg["model_config"]
        if not isinstance(mc, str) or not mc.strip():
            raise _err("cgplan.model_config", "must be a path", mc, "the model's config.json or its folder")
        model_path, model_key = _local_path(mc, base_dir, "cgplan.model_config"), "cgplan.model_config"
    else:
        model_path, model_key = _local_path(model_value, base_dir, "model"), "model"
    shape = _with_weights(read_model_shape(model_path, model_key), doc)
    runner_kind = _runner(doc.get("runner"), shape, model_path, notes)
    why = refusal(shape, runner_kind, rules_for(version))
    if why is not None:
        raise _err(model_key, why)

    max_model_len = _int(doc, "max_model_len", "") or shape.max_position_embeddings
    tp = _int(doc, "tensor_parallel_size", "") or 1
    perf = doc.get("performance_mode")
    if perf is not None:
        perf = _choice(perf, "performance_mode", PERFORMANCE_MODES)
    enforce_eager = bool(_bool(doc, "enforce_eager", ""))
    level_raw = doc.get("optimization_level", 2)
    if isinstance(level_raw, str) and level_raw.strip().upper().lstrip("O") in ("0", "1", "2", "3"):
        level_raw = int(level_raw.strip().upper().lstrip("O"))
    if isinstance(level_raw, bool) or not isinstance(level_raw, int) or not 0 <= level_raw <= 3:
        raise _err("optimization_level", "out of range", level_raw, "0, 1, 2 or 3")

    max_num_seqs, mbt = serve_defaults(
        platform,
        rules_for(version),
        max_model_len=max_model_len,
        max_num_seqs=_int(doc, "max_num_seqs", ""),
        max_num_batched_tokens=_int(doc, "max_num_batched_tokens", ""),
        performance_mode=perf,
    )
    spec = None
    if doc.get("speculative_config") is not None:
        sc = _snake_keys(_mapping(doc["speculative_config"], "speculative_config"), "speculative_config")
        _check_keys(sc, _SPEC_KEYS, "speculative_config")
        if sc.get("method") is None:
            # vLLM infers it (`SpeculativeConfig.__post_init__`): ngram for model "ngram", else
            # from the draft's name and config (EAGLE, EAGLE3, DFlash, DSpark, MTP), else draft_model
            raise ConfigError(
                "speculative_config.method",
                "not given: vLLM infers the method from the draft model's name and config, which "
                "cgplan does not model; name it (one of " + ", ".join(SPEC_METHODS) + ")",
            )
        method_raw = sc["method"]
        spec_rules = rules_for(version)
        if isinstance(method_raw, str) and method_raw.strip() not in SPEC_METHODS:
            name = method_raw.strip()
            if name in spec_rules.mtp_model_types:
                notes.append(f"method `{name}` is deprecated and replaced with mtp.")
                method_raw = "mtp"
            elif name in spec_rules.unmodelled_speculative_methods:
                raise ConfigError(
                    "speculative_config.method",
                    f"{name}: a vLLM {version} speculative method cgplan does not model yet "
                    f"(it models {', '.join(SPEC_METHODS)})",
                )
        method = _choice(method_raw, "speculative_config.method", SPEC_METHODS)
        k = _int(sc, "num_speculative_tokens", "speculative_config")
        if method == "suffix":
            depth = _suffix_checks(sc)
            if k is None:
                k = depth  # _validate_suffix_decoding: the tree depth is K's limit
        if k is None:
            if method == "mtp" and shape.num_nextn_predict_layers:
                k = shape.num_nextn_predict_layers
            else:
                raise ConfigError(
                    "speculative_config.num_speculative_tokens", "missing (expected an integer >= 1)"
                )
        sched = None
        if sc.get("num_speculative_tokens_per_batch_size") is not None:
            sched = _schedule(
                sc["num_speculative_tokens_per_batch_size"],
                "speculative_config.num_speculative_tokens_per_batch_size",
            )
        spec = SpeculativeSpec(
            method,
            k,
            sched,
            bool(_bool(sc, "enforce_eager", "speculative_config")),
            draft_model=_draft_shape(sc.get("model"), base_dir),
            parallel_draft=(
                _parallel_draft(sc.get("model"), base_dir) if method in ("dflash", "dspark") else None
            ),
            enable_adaptive_verification=bool(
                _bool(sc, "enable_adaptive_verification", "speculative_config")
            ),
        )

    cc = _mapping(doc.get("compilation_config") or {}, "compilation_config")
    if "level" in cc:
        # CompilationConfig has no `level` in any release cgplan knows (0.26.0+): pydantic refuses it
        raise _err(
            "compilation_config.level",
            "vLLM's CompilationConfig has no 'level' (the old name of 'mode'); it refuses it as an "
            "unexpected keyword argument",
            cc["level"],
            "compilation_config.mode (0-3 or NONE, STOCK_TORCH_COMPILE, DYNAMO_TRACE_ONCE, VLLM_COMPILE)",
        )
    for key in _CC_DEFAULT_OFF:
        if key in cc and _bool(cc, key, "compilation_config"):
            raise _err(
                f"compilation_config.{key}",
                "encoder CUDA graphs (the multimodal encoder's own family) change what vLLM captures, "
                "but cgplan does not model them yet; remove it to plan without them",
                cc[key],
            )
    cc = {k: v for k, v in cc.items() if k not in _CC_DEFAULT_OFF}
    _check_keys(cc, _CC_KEYS, "compilation_config", unmodelled=_CC_UNMODELLED)
    compile_mode = _compilation_mode(cc.get("mode"))
    mode = None
    if cc.get("cudagraph_mode") is not None:
        mode = Mode(
            _choice(
                cc["cudagraph_mode"],
                "compilation_config.cudagraph_mode",
                tuple(m.value for m in Mode),
                fold=True,
            )
        )
    # 0 and [] are vLLM's own "no graphs" values (what enforce_eager writes back): taken here;
    # with graphs on, the release refuses them (core/vllm/ladder.py, in vLLM's words)
    max_size = _int(cc, "max_cudagraph_capture_size", "compilation_config", minimum=0)
    sizes = None
    if cc.get("cudagraph_capture_sizes") is not None:
        value = cc["cudagraph_capture_sizes"]
        path = "compilation_config.cudagraph_capture_sizes"
        if not isinstance(value, list):
            raise _err(path, "must be a list of positive integers", value)
        if len(value) > MAX_LIST:
            raise _err(path, "too many sizes to plan", len(value), f"at most {MAX_LIST:,} entries")
        checked = []
        for i, x in enumerate(value):
            size = _int({f"[{i}]": x}, f"[{i}]", path, glue="")
            if size is None:
                raise _err(f"{path}[{i}]", "must be an integer", x, "an integer >= 1")
            checked.append(size)
        sizes = tuple(checked)
    pc = _mapping(cc.get("pass_config") or {}, "compilation_config.pass_config")
    _check_keys(pc, _PASS_KEYS, "compilation_config.pass_config")
    enable_sp = bool(_bool(pc, "enable_sp", "compilation_config.pass_config")) or bool(
        _bool(pc, "fuse_gemm_comms", "compilation_config.pass_config")
    )
    sp_min = _int(pc, "sp_min_token_num", "compilation_config.pass_config")
    specialize_lora = _bool(cc, "cudagraph_specialize_lora", "compilation_config")
    parallel = {
        key: _int(doc, key, "", minimum=minimum)
        for key, minimum in (
            ("pipeline_parallel_size", 1),
            ("data_parallel_size", 1),
            ("decode_context_parallel_size", 1),
            ("max_loras", 1),
            ("ubatch_size", 0),
            ("dbo_decode_token_threshold", 0),
            ("dbo_prefill_token_threshold", 0),
        )
    }
    switches = {
        key: _bool(doc, key, "")
        for key in (
            "enable_expert_parallel",
            "enable_lora",
            "specialize_active_lora",
            "enable_dbo",
            "async_scheduling",
        )
    }

    ranges = len(spec.num_speculative_tokens_per_batch_size or ()) if spec is not None else 0
    if ranges and ranges * max_num_seqs > MAX_SCHEDULE_WORK:
        raise _err(
            "speculative_config.num_speculative_tokens_per_batch_size",
            f"too large to plan: {ranges:,} ranges at max_num_seqs {max_num_seqs:,}",
            ranges * max_num_seqs,
            f"ranges x max_num_seqs at most {MAX_SCHEDULE_WORK:,}",
        )
    if sizes is None and max_size is not None and not enforce_eager and mode is not Mode.NONE:
        ladder_tokens = min(max_size, mbt)
        if ladder_tokens > MAX_LADDER_TOKENS:
            raise _err(
                "compilation_config.max_cudagraph_capture_size",
                f"too large to plan: a ladder up to {ladder_tokens:,} tokens holds about "
                f"{ladder_sizes_at_most(ladder_tokens):,} capture sizes",
                max_size,
                f"at most {MAX_LADDER_TOKENS:,} tokens, about {MAX_LADDER_SIZES:,} sizes, or "
                "max_num_batched_tokens at most that",
            )
    inp = PlanInput(
        vllm_version=version,
        platform=platform,
        model=shape,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=mbt,
        max_model_len=max_model_len,
        tensor_parallel_size=tp,
        enforce_eager=enforce_eager,
        performance_mode=perf,
        optimization_level=level_raw,
        speculative=spec,
        cudagraph_mode=mode,
        max_cudagraph_capture_size=max_size,
        cudagraph_capture_sizes=sizes,
        enable_sp=enable_sp,
        sp_min_token_num=sp_min,
        model_runner=runner,
        attention_backend=backend,
        attention_cudagraph_support=support,
        cudagraph_specialize_lora=True if specialize_lora is None else specialize_lora,
        pipeline_parallel_size=parallel["pipeline_parallel_size"] or 1,
        data_parallel_size=parallel["data_parallel_size"] or 1,
        decode_context_parallel_size=parallel["decode_context_parallel_size"] or 1,
        max_loras=parallel["max_loras"] or 1,
        ubatch_size=parallel["ubatch_size"] or 0,
        dbo_decode_token_threshold=_or(parallel["dbo_decode_token_threshold"], 32),
        dbo_prefill_token_threshold=_or(parallel["dbo_prefill_token_threshold"], 512),
        enable_expert_parallel=bool(switches["enable_expert_parallel"]),
        enable_lora=bool(switches["enable_lora"]),
        specialize_active_lora=bool(switches["specialize_active_lora"]),
        enable_dbo=bool(switches["enable_dbo"]),
        async_scheduling=switches["async_scheduling"],
        all2all_backend=_all2all(doc.get("all2all_backend")),
        compilation_mode=compile_mode,
        env=env,
        runner=runner_kind,
        kv_transfer=_kv_transfer(doc.get("kv_transfer_config"), "kv_transfer_config"),
        kv_cache_dtype=_kv_cache_dtype(doc.get("kv_cache_dtype")),
        gpu_name=gpu_name,
        defaulted=tuple(
            name
            for name, given in (
                ("vllm_version", overrides.vllm_version or cg.get("vllm_version")),
                ("platform", overrides.platform or cg.get("platform")),
                ("max_num_seqs", doc.get("max_num_seqs")),
                ("max_num_batched_tokens", doc.get("max_num_batched_tokens")),
                ("max_model_len", doc.get("max_model_len")),
                ("cudagraph_mode", mode),
            )
            if given is None
        ),
    )
    return inp, ignored


def _kv_transfer(value: object, path: str) -> KvConnector | None:
    """`kv_transfer_config` as KVTransferConfig reads it (vllm/config/kv_transfer.py): the role
    checked with vLLM's words; a MultiConnector's children read the same way."""
    if value is None:
        return None
    section = _mapping(value, path)
    name = section.get("kv_connector")
    role = section.get("kv_role")
    if section.get("kv_connector_module_path") is not None:
        raise _err(
            f"{path}.kv_connector_module_path",
            "an out-of-tree KV connector changes what vLLM captures (its requires_piecewise_for_cudagraph), "
            "but cgplan does not model it yet; remove it to plan without it",
            section["kv_connector_module_path"],
        )
    if role is not None and role not in KV_ROLES:
        raise _err(f"{path}.kv_role", f"Unsupported kv_role: {role}. Supported roles are {KV_ROLES}", role)
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip():
        raise _err(f"{path}.kv_connector", "must be a connector name", name, "e.g. LMCacheConnectorV1")
    if role is None:
        raise _err(
            f"{path}.kv_role",
            f"Please specify kv_role when kv_connector is set, supported roles are {KV_ROLES}",
        )
    if name == "HiSparseConnector":
        raise _err(
            f"{path}.kv_connector",
            "HiSparseConnector changes what vLLM captures (it forces Model Runner V2 and refuses "
            "cudagraph_mode FULL), but cgplan does not model it yet; remove it to plan without it",
            name,
        )
    extra = _mapping(section.get("kv_connector_extra_config") or {}, f"{path}.kv_connector_extra_config")
    children: list[KvConnector] = []
    if name == "MultiConnector":
        listed = extra.get("connectors") or []
        if not isinstance(listed, list):
            raise _err(f"{path}.kv_connector_extra_config.connectors", "must be a list", listed)
        for i, child in enumerate(listed):
            got = _kv_transfer(child, f"{path}.kv_connector_extra_config.connectors[{i}]")
            if got is not None:
                children.append(got)
    return KvConnector(name.strip(), role, bool(extra.get("use_layerwise", False)), tuple(children))


RUNNERS = ("auto", "generate", "pooling", "draft")
"""vLLM's `--runner` values."""


def _runner(value: object, shape: ModelShape, model_path: Path, notes: list[str]) -> str:
    """vLLM's runner type: `--runner` as given, or `auto` resolved as `_get_default_runner_type`
    does: a Sentence Transformers folder (modules.json with a Pooling module) pools, then the
    architecture (cgplan's known classes generate; another by vLLM's suffix table)."""
    name = "auto" if value is None else _choice(value, "runner", RUNNERS)
    if name == "draft":
        raise _err(
            "runner",
            "changes what vLLM captures, but cgplan does not model it yet; remove it to plan without it",
            value,
            "auto, generate or pooling",
        )
    if name != "auto":
        return name
    if _sentence_transformers_pooling(model_path):
        notes.append(
            "--runner auto read as pooling: the model folder is a Sentence Transformers model (modules.json)"
        )
        return "pooling"
    return suffix_runner(shape.architecture) or "generate"


def _sentence_transformers_pooling(model_path: Path) -> bool:
    """vLLM's `get_pooling_config`: modules.json names a sentence_transformers Pooling module."""
    try:
        folder = model_path if model_path.is_dir() else model_path.parent
        modules = folder / "modules.json"
        if not modules.is_file():
            return False
        doc = read_json(modules, what="modules.json")
    except (OSError, ValueError, ReadError):
        return False
    return isinstance(doc, list) and any(
        isinstance(m, dict) and m.get("type") == "sentence_transformers.models.Pooling" for m in doc
    )


def _compilation_mode(value: object) -> int | None:
    """`compilation_config.mode` as vLLM's `validate_mode_before` reads it: a name (any case) or 0-3."""
    path = "compilation_config.mode"
    if value is None:
        return None
    expected = "0, 1, 2, 3 or one of " + ", ".join(COMPILATION_MODES)
    if isinstance(value, str):
        name = value.strip().upper()
        if name.isdigit() and len(name) == 1:
            value = int(name)
        elif name in COMPILATION_MODES:
            return COMPILATION_MODES.index(name)
        else:
            raise _err(
                path,
                f"Invalid compilation mode: {value}. Valid modes are: {', '.join(COMPILATION_MODES)}",
                value,
                expected,
            )
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(COMPILATION_MODES):
        raise _err(path, "not a CompilationMode", value, expected)
    return value


def _env(value: object, notes: list[str]) -> tuple[tuple[str, str], ...]:
    """`cgplan.env`: vLLM's environment as `NAME: value`; names cgplan does not read are noted."""
    if value is None:
        return ()
    section = _mapping(value, "cgplan.env")
    out: dict[str, str] = {}
    for name, raw in section.items():
        path = f"cgplan.env.{_key(str(name))}"
        if not isinstance(name, str) or not name.strip():
            raise _err("cgplan.env", "variable names must be strings", name)
        if isinstance(raw, bool) or raw is None or not isinstance(raw, str | int):
            raise _err(path, "must be the variable's value as a string", raw, 'a string such as "1"')
        if name in UNMODELLED_ENV:
            raise _err(
                path,
                f"{name} changes what vLLM captures, but cgplan does not model it yet; "
                "remove it to plan without it",
                raw,
            )
        if name not in MODELLED_ENV:
            notes.append(
                f"environment variable {name} is not read by cgplan (it reads {', '.join(MODELLED_ENV)})"
            )
            continue
        out[name] = str(raw)
    return tuple(sorted(out.items()))


def _all2all(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _err(
            "all2all_backend", "must be a string", value, "an all-to-all backend such as deepep_low_latency"
        )
    if value.strip() == "moonep":
        # vllm/config/vllm.py (0.31+): MoonEP's dispatch/combine are eager-only, so wherever
        # all-to-all is used vLLM sets cudagraph_mode NONE, besides its own BF16/EPLB checks
        raise ConfigError(
            "all2all_backend",
            "moonep: cgplan does not model it yet (vLLM turns CUDA graphs off wherever MoonEP's "
            "all-to-all runs)",
        )
    return value.strip()


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def load_config(
    path: str | Path, overrides: Overrides = NO_OVERRIDES, base_dir: Path | None = None
) -> LoadedConfig:
    """Read and validate a YAML config file; relative paths in it start from `base_dir` (default:
    the working directory, as in vLLM). The file may also be what is deployed (issue 28): a
    Kubernetes manifest (one document, or a Helm-rendered stream of them) whose vLLM container is
    planned as the command line it runs, or a list of that container's args.

    Raises:
        ConfigError: with the file name in front of the located message.
    """
    p = Path(path)
    source = str(path)
    base = Path.cwd() if base_dir is None else base_dir
    try:
        if source == "-":  # stdin, as `-` is for every file cgplan reads
            source = STDIN
        text = read_text(p, what="config file", source=source, keep_bom=True)
        try:
            raw = parse_yaml(text, source, exact=True)  # as vLLM's safe_load reads it
        except ReadError as e:
            if not another_document(e):
                raise
            docs = parse_yaml_stream(text, source)
            if not any(isinstance(d, Mapping) and "kind" in d and "apiVersion" in d for d in docs):
                raise e from None  # a stream of configs: vLLM's safe_load refuses it too
            return _load_deployed(docs, source, base, overrides)
    except ReadError as e:
        raise e.as_config_error() from None
    if isinstance(raw, Mapping) and "kind" in raw and "apiVersion" in raw:
        return _load_deployed([raw], source, base, overrides)
    if (
        isinstance(raw, list)
        and all(isinstance(w, str | int | float) for w in raw)
        and any(str(w).startswith("--") for w in raw)
    ):  # a container's args (one flag at least: a list of words is not an args list by chance)
        return _load_deployed(raw, source, base, overrides, args_list=True)
    notes: list[str] = []
    unmodelled: list[str] = []
    try:
        # Relative paths (model:, speculative_config.model, cgplan.model_config) start from the
        # working directory, as in vLLM, which hands them to Hugging Face's loader unchanged; the
        # same rule as for `--vllm-args "serve --config FILE"`.
        inp, ignored = parse_config(raw, base, overrides, notes, unmodelled)
    except ConfigError as e:
        raise e.located(source) from None
    return LoadedConfig(
        inp,
        source,
        tuple(ignored),
        (*notes, *(f"not modelled: {u}" for u in unmodelled)),
        tuple(unmodelled),
        raw if isinstance(raw, Mapping) else None,
    )


def _load_deployed(
    docs: list[Any], source: str, base_dir: Path, overrides: Overrides, *, args_list: bool = False
) -> LoadedConfig:
    """A manifest's vLLM container (or a list of its args) planned as the command line it runs."""
    # Imported here: a config file (the common path) needs neither.
    from cgplan.io.deploy import args_command, manifest_command
    from cgplan.io.vllm_args import read_deployed

    try:
        deployed = args_command(docs) if args_list else manifest_command(docs)
    except ConfigError as e:
        raise e.located(source) from None
    notes: list[str] = []
    try:
        parsed, (inp, ignored) = read_deployed(
            deployed,
            base_dir=base_dir,
            overrides=overrides,
            parse=lambda doc: parse_config(doc, base_dir, overrides, notes),
        )
    except ConfigError as e:
        raise e.located(source) from None
    return LoadedConfig(
        inp,
        source,
        tuple(parsed.ignored + ignored),
        (*parsed.notes, *notes, *(f"not modelled: {u}" for u in parsed.unmodelled)),
        tuple(parsed.unmodelled),
        None,
        parsed.given,
    )


def key_lines(text: str) -> dict[str, int]:
    """dotted key → its 1-based line in a `vllm serve --config` YAML (dash-case keys read as
    snake_case; a flow mapping's keys at its line), for annotations that point at a key. A line
    scan, not a parse: what it cannot place is left out, and the caller falls back to line 1.

    >>> key_lines("max-num-seqs: 32\\ncompilation_config:\\n  # why\\n  cudagraph_mode: FULL\\n")
    {'max_num_seqs': 1, 'compilation_config': 2, 'compilation_config.cudagraph_mode': 4}
    >>> sorted(key_lines("speculative_config: {method: eagle, num_speculative_tokens: 3}").values())
    [1, 1, 1]
    """
    key = re.compile(r"^( *)([A-Za-z_][\w.-]*) *:(?: |$)")
    inner = re.compile(r"[{,] *([A-Za-z_][\w-]*) *:")
    out: dict[str, int] = {}
    stack: list[tuple[int, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        m = key.match(line)
        if m is None:
            continue
        indent, name = len(m.group(1)), m.group(2).replace("-", "_")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        dotted = ".".join([*(k for _, k in stack), name])
        out.setdefault(dotted, n)
        stack.append((indent, name))
        rest = line[m.end() :]
        if rest.lstrip().startswith("{"):
            for child in inner.findall(rest):
                out.setdefault(f"{dotted}.{child.replace('-', '_')}", n)
    return out


def doc_from_engine_args(args: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A config document from vLLM's "non-default args" (what `vllm serve` was given, as its log
    prints it) and the keys left out of it, by name.

    The log prints `compilation_config` whole (every field of the CompilationConfig the flags
    built): of it the keys cgplan reads are kept where set (not None), those it refuses by name
    (`splitting_ops`, ...) where set, the rest left out. Top-level and speculative_config keys
    cgplan does not know are left out and named (the caller says so); keys it refuses stay, so
    planning refuses them by name.

    >>> doc, out = doc_from_engine_args({"model": "m", "max_num_seqs": 8, "disable_log_stats": True,
    ...     "speculative_config": {"method": "eagle", "num_speculative_tokens": 3, "foo": 1},
    ...     "compilation_config": {"max_cudagraph_capture_size": 544, "cudagraph_mode": None,
    ...                            "backend": "inductor", "pass_config": {}}, "weird_knob": 2})
    >>> doc
    {'model': 'm', 'max_num_seqs': 8, 'disable_log_stats': True, 'speculative_config': {'method': 'eagle', \
'num_speculative_tokens': 3}, 'compilation_config': {'max_cudagraph_capture_size': 544}}
    >>> out
    ['speculative_config.foo', 'weird_knob']
    """
    doc: dict[str, Any] = {}
    left_out: list[str] = []
    known = {*_TOP_KEYS, *_serve_flag_dests()}
    for key, value in args.items():
        if key == "cgplan" or key not in known:
            left_out.append(key)
        elif key == "speculative_config" and isinstance(value, Mapping):
            doc[key] = {k: v for k, v in value.items() if k in _SPEC_KEYS}
            left_out += [f"{key}.{k}" for k in value if k not in _SPEC_KEYS]
        elif key == "compilation_config" and isinstance(value, Mapping):
            cc: dict[str, Any] = {}
            for k, v in value.items():
                if k == "pass_config" and isinstance(v, Mapping):
                    kept = {pk: pv for pk, pv in v.items() if pk in _PASS_KEYS and pv is not None}
                    if kept:
                        cc[k] = kept
                elif (
                    v is not None
                    and v != []
                    and k in (*_CC_KEYS, *_CC_UNMODELLED)
                    and k not in _CC_IGNORED
                    and _CC_PRINTED_DEFAULTS.get(k, _NO_DEFAULT) != v
                ):
                    cc[k] = _enum_value(v)
            if cc:
                doc[key] = cc
        else:
            doc[key] = _enum_value(value) if key in ("optimization_level", "performance_mode") else value
    return doc, sorted(left_out)


def _serve_flag_dests() -> frozenset[str]:
    """Every `vllm serve` flag's EngineArgs field of any release: the names the log's
    "non-default args" line can print (issue 28's table)."""
    from cgplan.core.vllm.serve_flags import SERVE_FLAGS

    return frozenset(f.dest for entry in SERVE_FLAGS for f in entry.flags)


_NO_DEFAULT = object()
_CC_PRINTED_DEFAULTS: dict[str, object] = {
    "encoder_cudagraph_max_vision_items_per_batch": 0,
    "encoder_cudagraph_max_frames_per_batch": None,
    "cudagraph_mm_encoder": False,
    "cudagraph_decoder_replay": True,
    "decoder_replay_trim_threshold": 768,
}
"""CompilationConfig fields the log prints whole, at their default (vllm/config/compilation.py,
0.32-0.33): a printed default is not a setting, so it is not refused as one."""

_CC_IGNORED = ("mode", "level")
"""compilation_config keys a YAML may hold that do not change what cgplan plans."""


def _enum_value(value: object) -> object:
    """`OptimizationLevel.O3` (an enum the log printed) → `O3`; anything else unchanged."""
    if isinstance(value, str) and (m := re.fullmatch(r"[A-Z]\w*\.(\w+)", value)):
        return m.group(1)
    return value
