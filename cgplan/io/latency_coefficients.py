"""Latency coefficients as JSON files, raw latency runs as fit observations, and plans in time."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cgplan.core.model.modes import Mode
from cgplan.core.model.predictions import LatencyPrediction
from cgplan.core.model.spec import ModelShape, PlanInput
from cgplan.core.model.types import Plan
from cgplan.core.plan.policies import UPSTREAM, CapturePolicy
from cgplan.core.predict.latency import (
    LatencyCoefficients,
    LatencyObservation,
    StepShape,
    forward_shape,
    predict_latency,
)
from cgplan.errors import ConfigError, ReportError
from cgplan.io import files as io_files
from cgplan.io.output import write_atomically
from cgplan.io.schema import SCHEMA_VERSION

DEFAULT_LATENCY = Path(__file__).parent.parent / "data" / "latency-h200.json"
"""Fitted from the H200 runs under benchmarks/results/h200/latency (docs/latency-model.md)."""

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


def load_runs(paths: Sequence[Path]) -> list[LatencyObservation]:
    """One observation per point of the given raw runs (files, or folders holding lat-*.json): a
    point timed in several rounds is read as its least contended round (`least_contended`)."""
    return least_contended(read_runs(paths))


def least_contended(obs: Sequence[LatencyObservation]) -> list[LatencyObservation]:
    """One observation per (run, batch, outcome): the lowest of its per-round medians.

    The same point measured in several rounds (a run repeated in a later device call, the widest
    batch timed again at the end of a run or six times through it) can differ by 20-90% where the
    host was contended for a few seconds: the widest batch's eager step of Llama 3.2 3B read 10.45
    to 20.53 ms over six rounds 2.6 s apart (call4), its FULL graph 6.00 to 6.80 ms. Contention
    only ever adds time, so the lowest round is the measurement of the uncontended step; on
    split halves of those rounds it is also the reading that reproduces best (median |log| of
    0.037 between halves for eager, against 0.27 for the median over rounds:
    docs/latency-model.md, "Repetitions", and scripts/latency/repetitions.py)."""
    best: dict[tuple[str, str, str, int], LatencyObservation] = {}
    for o in obs:
        key = (o.run, o.batch, o.step.target_mode, o.step.target_tokens)
        if key not in best or o.measured_ms < best[key].measured_ms:
            best[key] = o
    return list(best.values())


def with_latency(
    plan: Plan,
    inp: PlanInput,
    coefficients: LatencyCoefficients | None,
    uniform: Sequence[tuple[int, float]] | None = None,
    mixed: Sequence[tuple[int, float]] = (),
    traffic: str = "uniform",
    policy: CapturePolicy = UPSTREAM,
) -> Plan:
    """`plan` with its predicted step times (unchanged without coefficients); each fix is re-planned
    to price its gain, under the capture policy the plan was made with (a fix found under a
    what-if policy priced under vLLM's own would price another ladder)."""
    if coefficients is None:
        return plan
    from cgplan.core.plan.build import plan_again

    def replan(j: int) -> tuple[Plan, PlanInput] | None:
        changed = apply_change(inp, plan.fixes[j].config_change)
        if changed is None:
            return None
        try:
            return plan_again(changed, policy), changed  # the fix search planned it already
        except ConfigError:
            return None

    from cgplan.core.plan.advice import rank_fixes

    pred: LatencyPrediction = predict_latency(coefficients, plan, inp, uniform, mixed, traffic, replan)
    # the fixes ranked by what they buy at this traffic (each priced on its own re-plan above)
    return rank_fixes(dataclasses.replace(plan, latency=pred))


def apply_change(inp: PlanInput, change: Sequence[tuple[str, object]]) -> PlanInput | None:
    """`inp` with a fix's (dotted key, value) pairs applied (None if a key is not a PlanInput field)."""
    names = {f.name for f in dataclasses.fields(PlanInput)}
    kw: dict[str, Any] = {}
    for key, value in change:
        leaf = key.rsplit(".", 1)[-1]
        if leaf == "num_speculative_tokens_per_batch_size" and inp.speculative is not None:
            # the fix search narrows a dynamic-SD tier: a change inside speculative_config
            sched = None if value is None else tuple(tuple(e) for e in value)  # type: ignore[attr-defined]
            kw["speculative"] = dataclasses.replace(
                kw.get("speculative", inp.speculative), num_speculative_tokens_per_batch_size=sched
            )
            continue
        if leaf not in names:
            return None
        if leaf == "cudagraph_mode":
            kw[leaf] = None if value is None else Mode(str(value))
            continue
        kw[leaf] = tuple(value) if isinstance(value, list) else value
    return dataclasses.replace(inp, **kw)
