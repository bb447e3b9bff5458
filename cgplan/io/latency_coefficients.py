"""Latency coefficients as JSON files and raw latency runs as fit observations.

Reading and writing only: a plan in time is core/plan/assess.py, the lowest of a point's rounds
core/predict/calibrate.py's `least_contended`."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cgplan.core.model.spec import ModelShape
from cgplan.core.predict.latency import LatencyCoefficients, LatencyObservation, StepShape, forward_shape
from cgplan.errors import ConfigError, ReportError
from cgplan.io import files as io_files
from cgplan.io.output import write_atomically
from cgplan.io.schema import SCHEMA_VERSION

DEFAULT_LATENCY = Path(__file__).parent.parent / "data" / "latency-h200.json"
"""Fitted from the H200 runs under benchmarks/results/h200/latency (docs/latency-model.md)."""

SHIPPED_LATENCY: dict[str, Path] = {"H200": DEFAULT_LATENCY}
"""The shipped sets by the card they were timed on (`find_gpu`'s name). A plan for a GPU named here
is priced with its own set; any other (and a family name such as `hopper`, which stands for the
H200 the default set was measured on) with the default set, whose domain then withholds the step
time for a GPU it was not measured on (`latency_withheld`)."""

LATENCY_KIND = "cgplan-latency-coefficients"
_FIELDS = {f.name: f for f in dataclasses.fields(LatencyCoefficients)}


def latency_to_dict(c: LatencyCoefficients) -> dict[str, Any]:
    """The JSON document of a coefficient set."""
    doc: dict[str, Any] = {"kind": LATENCY_KIND, "schema_version": SCHEMA_VERSION}
    for name in _FIELDS:
        v = getattr(c, name)
        if name == "eager_layer_factor":
            doc[name] = {a: round(f, 6) for a, f in v}
        elif isinstance(v, tuple):
            doc[name] = list(v)
        elif isinstance(v, float):
            doc[name] = float(f"{v:.6g}")
        else:
            doc[name] = v
    return doc


def save_latency(c: LatencyCoefficients, path: Path) -> None:
    """Write a coefficient set (atomically) as JSON."""
    write_atomically(path, json.dumps(latency_to_dict(c), indent=1) + "\n")


def load_latency(path: str | Path) -> LatencyCoefficients:
    """Read a coefficient set (written by scripts/latency/fit.py or by hand).

    Raises:
        ConfigError: located at the file and key that is wrong.
    """
    source = str(path)
    try:
        doc = io_files.read_json(path, what="latency coefficient file", source=source)
    except io_files.ReadError as e:  # a FIFO, undecodable bytes, a 5,000-digit number: one located line
        raise e.as_config_error() from None
    if not isinstance(doc, dict) or doc.get("kind") != LATENCY_KIND:
        raise ConfigError(
            "kind", f"not a latency-coefficient file (expected kind: {LATENCY_KIND})", source=source
        )
    values: dict[str, Any] = {}
    for name, f in _FIELDS.items():
        if name not in doc:
            if f.default is dataclasses.MISSING:
                raise ConfigError(name, "missing", source=source)
            continue
        v = doc[name]
        kind = str(f.type)
        if name == "eager_layer_factor":
            if not isinstance(v, dict) or not all(
                isinstance(k, str) and isinstance(x, int | float) and not isinstance(x, bool) and 0 < x < 100
                for k, x in v.items()
            ):
                raise ConfigError(name, f"expected {{architecture: factor > 0}}, got {v!r}", source=source)
            values[name] = tuple((k, float(x)) for k, x in v.items())
        elif kind == "float":
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or abs(v) > 1e9:
                raise ConfigError(name, f"expected a number, got {v!r}", source=source)
            if v < 0:
                raise ConfigError(name, f"must be >= 0 (got {v!r})", source=source)
            values[name] = float(v)
        elif kind == "int":
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 10_000_000:
                raise ConfigError(name, f"expected an integer >= 0, got {v!r}", source=source)
            values[name] = v
        elif kind == "str":
            if not isinstance(v, str):
                raise ConfigError(name, f"expected text, got {v!r}", source=source)
            values[name] = v
        else:  # tuples
            if not isinstance(v, list):
                raise ConfigError(name, f"expected a list, got {v!r}", source=source)
            values[name] = tuple(v)
    unknown = sorted(set(doc) - set(_FIELDS) - {"kind", "schema_version"})
    if "step_ms_per_request" in unknown:
        # the model of 2026-12-01 (before call 4) added it outside the forward, as host time
        raise ConfigError(
            "step_ms_per_request",
            "a coefficient of an earlier latency model (now gpu_ms_per_request, GPU time of the forward): "
            "refit the file with cgplan calibrate --latency",
            source=source,
        )
    if unknown:
        raise ConfigError(unknown[0], "unknown key", source=source)
    for rng in ("hidden_size_range", "layers_range"):
        r = values.get(rng, (0, 1))
        if len(r) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in r) or r[0] > r[1]:
            raise ConfigError(rng, f"expected [lowest, highest] integers (got {list(r)!r})", source=source)
    return LatencyCoefficients(**values)


@functools.lru_cache(maxsize=1)
def shipped_latency() -> LatencyCoefficients:
    """The H200 set shipped with cgplan (read once)."""
    return load_latency(DEFAULT_LATENCY)


@functools.lru_cache(maxsize=4)
def _shipped_set(gpu: str) -> LatencyCoefficients:
    return load_latency(SHIPPED_LATENCY[gpu])


def shipped_latency_for(gpu_name: str) -> LatencyCoefficients:
    """The shipped set timed on `gpu_name` (a PlanInput's `gpu_name`: "" for a family name), else the
    default H200 set (read once each)."""
    if gpu_name in SHIPPED_LATENCY and SHIPPED_LATENCY[gpu_name] != DEFAULT_LATENCY:
        return _shipped_set(gpu_name)
    return shipped_latency()


def _shape_from_hf(hf: dict[str, Any]) -> ModelShape:
    nh = int(hf["num_attention_heads"])
    h = int(hf["hidden_size"])
    return ModelShape(
        architecture=str((hf.get("architectures") or ["LlamaForCausalLM"])[0]),
        hidden_size=h,
        num_hidden_layers=int(hf["num_hidden_layers"]),
        num_attention_heads=nh,
        num_key_value_heads=int(hf.get("num_key_value_heads") or nh),
        head_dim=int(hf.get("head_dim") or h // nh),
        intermediate_size=int(hf["intermediate_size"]),
        vocab_size=int(hf["vocab_size"]),
    )


def observations_from_run(doc: dict[str, Any], source: str) -> list[LatencyObservation]:
    """A raw run of scripts/latency/measure_step.py → one observation per timed point.

    Raises:
        ReportError: not a latency run, or one that failed.
    """
    if doc.get("schema") != "cgplan-latency-raw/1":
        raise ReportError(f"{source}: not a latency run (schema {doc.get('schema')!r})")
    if doc.get("error") or "hf_config" not in doc:
        raise ReportError(f"{source}: the run failed ({str(doc.get('error') or 'no engine')[-200:]})")
    target = forward_shape(_shape_from_hf(doc["hf_config"]))
    k = int(doc.get("num_speculative_tokens") or 0)
    out = []
    for p in doc.get("points") or []:
        if "median_ms" not in p:
            continue
        d = {x[0]: x for x in p.get("dispatch") or []}
        if "target" not in d:
            continue
        _, mode, tokens, _ = d["target"]
        if p["kind"] == "uniform":
            n = int(p["size"])
            rows = n * int(p.get("q") or 1)
        else:
            n = min(int(p["size"]), 3)
            rows = n
        step = StepShape(mode, int(tokens), rows, reqs=n)
        if "drafter_prefill" in d:
            _, dm, dt, _ = d["drafter_prefill"]
            dec = d.get("drafter_decode")
            step = StepShape(
                mode,
                int(tokens),
                rows,
                dm,
                int(dt),
                n,
                dec[1] if dec else "FULL",
                int(dec[2]) if dec else 0,
                max(k - 1, 0) if dec else 0,
                n,
            )
        out.append(
            LatencyObservation(
                str(doc.get("name") or source),
                target,
                step,
                float(p["median_ms"]),
                f"{p['kind']}:{p['size']}",
            )
        )
    return out


def run_files(paths: Sequence[Path]) -> list[Path]:
    """The raw runs among `paths`: files as given, folders searched for lat-*.json at any depth
    (benchmarks/results/h200/latency holds one folder per device call: call1 .. call4)."""
    files: list[Path] = []
    for p in paths:
        files.extend(sorted(p.glob("**/lat-*.json")) if p.is_dir() else [p])
    return files


def read_runs(paths: Sequence[Path]) -> list[LatencyObservation]:
    """Every timed point of the given raw runs, each round of a repeated point kept apart."""
    obs: list[LatencyObservation] = []
    for f in run_files(paths):
        try:
            doc = io_files.read_json(f, what="latency run", limit=io_files.REPORT_LIMIT_BYTES)
        except io_files.ReadError as e:
            raise ReportError(f"{f}: cannot read the run ({e.problem})") from None
        obs.extend(observations_from_run(doc, str(f)))
    return obs
