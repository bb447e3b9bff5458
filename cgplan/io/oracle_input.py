"""A cgplan config YAML as the config dict of vLLM's own code on a CPU (cgplan/gpu/vllm_oracle.py).

One translation for `cgplan verify` and for the golden data (scripts/record_golden.py): the keys
of a `vllm serve` config go to EngineArgs under vLLM's own names, `speculative_config` and
`compilation_config` as they are, and the `cgplan:` section to the oracle's fake platform and its
forced choices. Model folders become absolute paths (the oracle runs in another interpreter, in
another folder); vLLM reads their config.json only, offline, so a hub model id needs its
config.json (`cgplan.model_config` or `--model-config`) and a draft model a local folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cgplan.errors import ConfigError
from cgplan.io.config import NO_OVERRIDES, STDIN, Overrides, _snake_keys, parse_platform
from cgplan.io.files import ReadError, read_yaml

ORACLE_SCALAR_KEYS = frozenset(
    {
        "max_model_len",
        "max_num_seqs",
        "max_num_batched_tokens",
        "tensor_parallel_size",
        "enforce_eager",
        "performance_mode",
        "optimization_level",
        "async_scheduling",
    }
)
"""Top-level keys the oracle reads itself; any other scalar goes through its `engine_args` dict
(the EngineArgs field of the same name; the oracle drops, and lists, names EngineArgs lacks)."""

CGPLAN_KEY_MAP = {
    "platform": "platform",
    "model_runner": "model_runner",
    "attention_backend": "attention_backend",
    "attention_cudagraph_support": "attn_cg_support",
    "env": "env",  # vLLM's environment variables: the oracle sets them in its child process
}
"""`cgplan:` keys → the oracle's keys (the fake device, V1/V2, a forced attention backend, the
environment)."""

CGPLAN_NOT_FOR_VLLM = frozenset({"vllm_version", "model_config"})
"""`cgplan:` keys that are no input of vLLM's code (the rules release; the model's config.json,
which becomes `model_dir`)."""

SCHEDULER_KEYS = ("max_model_len", "max_num_seqs")
"""Given as null when the config leaves them out: vLLM derives them (the oracle's own defaults,
4096 and 256, are not `vllm serve`'s)."""


def _model_folder(value: object, base: Path, path: str) -> str:
    """An absolute folder holding a config.json (a config.json file names its folder)."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(path, "must be a path (a folder with the model's config.json)")
    p = Path(value).expanduser()
    if not p.is_absolute():
        p = base / p
    p = p.resolve()
    if p.is_file() and p.name == "config.json":
        p = p.parent
    if not (p / "config.json").is_file():
        raise ConfigError(
            path,
            f"{value!r} is not a local folder with a config.json: vLLM's code runs offline here and "
            "reads the model's config.json only (for a hub model id give cgplan.model_config or "
            "--model-config)",
        )
    return str(p)


def translate(doc: dict[str, Any], base: Path, overrides: Overrides = NO_OVERRIDES) -> dict[str, Any]:
    """The oracle's config dict for a parsed (already validated) cgplan config document.

    Raises:
        ConfigError: located at the key that cannot be handed to vLLM's code.
    """
    doc = _snake_keys(doc, "")
    cg = _snake_keys(doc.get("cgplan") or {}, "cgplan")
    out: dict[str, Any] = {}
    engine_args: dict[str, Any] = {}
    model_config = overrides.model_config or cg.get("model_config")
    for key, val in doc.items():
        if key == "model":
            if model_config is not None:
                where = "--model-config" if overrides.model_config else "cgplan.model_config"
                out["model_dir"] = _model_folder(str(model_config), base, where)
            else:
                out["model_dir"] = _model_folder(val, base, "model")
        elif key == "speculative_config":
            sc = _snake_keys(dict(val), "speculative_config")
            if sc.get("model"):
                sc["model"] = _model_folder(sc["model"], base, "speculative_config.model")
            out["speculative"] = sc
        elif key == "compilation_config":
            out["compilation_config"] = dict(val)
        elif key == "cgplan":
            for ck, cv in cg.items():
                if ck in CGPLAN_NOT_FOR_VLLM:
                    continue
                if ck not in CGPLAN_KEY_MAP:
                    raise ConfigError(f"cgplan.{ck}", "is no input of vLLM's code (cannot translate it)")
                out[CGPLAN_KEY_MAP[ck]] = cv
        elif key == "kv_transfer_config":  # an EngineArgs field that takes the mapping as it is
            engine_args[key] = dict(val)
        elif key in ORACLE_SCALAR_KEYS:
            out[key] = val
        elif isinstance(val, str | int | float | bool) or val is None:
            engine_args[key] = val
        else:
            raise ConfigError(key, "cannot hand this key to vLLM's EngineArgs (expected a scalar)")
    if "model_dir" not in out:
        raise ConfigError("model", "must be given")
    for key in SCHEDULER_KEYS:
        out.setdefault(key, None)
    if overrides.platform is not None or "platform" in out:
        where = "--platform" if overrides.platform else "cgplan.platform"
        out["platform"] = parse_platform(overrides.platform or out["platform"], where).value
    if overrides.model_runner is not None:
        out["model_runner"] = overrides.model_runner
    if engine_args:
        out["engine_args"] = engine_args
    return out


def oracle_config(
    path: str | Path, overrides: Overrides = NO_OVERRIDES, base_dir: Path | None = None
) -> dict[str, Any]:
    """The oracle's config dict for the cgplan config file at `path` (relative paths in it start
    at `base_dir`, default the working directory, as `load_config` reads them).

    Raises:
        ConfigError: with the file name in front.
    """
    source = STDIN if str(path) == "-" else str(path)
    try:
        raw = read_yaml(Path(path), what="config file", source=source)
    except ReadError as e:
        raise e.as_config_error() from None
    if not isinstance(raw, dict):
        raise ConfigError("<root>", "must be a mapping", source=source)
    try:
        return translate(raw, Path.cwd() if base_dir is None else base_dir, overrides)
    except ConfigError as e:
        raise e.located(source) from None
