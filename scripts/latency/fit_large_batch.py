"""Fit the large-batch decode step (256..1024 requests) per outcome, keep held-out points apart.

    .venv/bin/python scripts/latency/fit_large_batch.py benchmarks/results/h200/latency-large/call1 \
        -o cgplan/data/latency-h200-large.json --report benchmarks/results/h200/latency-large/fit-report.json

Input: the raw runs of scripts/device/latency_large_batch.sh (large-default.json,
large-ladder1024.json, large-eager.json; schema cgplan-latency-large/1), from one or more folders.

Each timed point is classed by what vLLM dispatched for it (recorded per step, never assumed):

- ``graph``: a FULL (or PIECEWISE) graph replayed, at its padded size (the ladder to 1024, and the
  default ladder up to 512);
- ``compiled_nograph``: a compiled engine with no graph for the shape (NONE: the default ladder's
  520..1024);
- ``eager``: ``enforce_eager`` (no torch.compile, no graphs).

Per outcome and per figure (``serve``: the serving step of LLM.generate; ``forward``: the forward
alone), a straight line in the forward's tokens (padded for a graph) is fitted on the fit points
only: ``ms = ms_at_0 + ms_per_token * tokens``. A point timed in several rounds is read as its
lowest per-round median (scripts/latency/fit.py's rule). Held out, never seen by the fit: the
request counts of ``--held-out-reqs`` (default 384, 520, 768) in every run, and every run of the
folders given with ``--held-out`` (a second device call). The report gives each point's measured,
fitted and held-out error, the ratios to the graph step at each request count (measured and
fitted), and, for the shipped latency model (cgplan/data/latency-h200.json), its prediction of the
same forward and how far off it is: the "before" of issue 29.

Runs marked ``dry_run`` (the CPU dry run's invented numbers) are refused unless --allow-dry-run, and
then the output says so in ``measured_with``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from pathlib import Path
from typing import Any

OUTCOMES = ("graph", "compiled_nograph", "eager")
FIGURES = ("serve", "forward")
SCHEMA = "cgplan-latency-large/1"


def read_runs(folders: list[Path], allow_dry_run: bool) -> list[dict[str, Any]]:
    runs = []
    for folder in folders:
        files = sorted(folder.glob("**/large-*.json")) if folder.is_dir() else [folder]
        if not files:
            sys.exit(f"error: {folder}: no large-*.json")
        for f in files:
            doc = json.loads(f.read_text())
            if doc.get("schema") != SCHEMA:
                sys.exit(f"error: {f}: not a large-batch run (schema {doc.get('schema')!r})")
            if doc.get("dry_run") and not allow_dry_run:
                sys.exit(f"error: {f}: a dry run (invented numbers); pass --allow-dry-run to fit it anyway")
            if doc.get("error"):
                print(f"skipped {f}: the engine failed ({str(doc['error'])[-160:]!r})", file=sys.stderr)
                continue
            doc["_source"] = str(f)
            runs.append(doc)
    return runs


def _outcome(doc: dict[str, Any], dispatch: dict[str, int]) -> tuple[str, int] | None:
    """(outcome, forward tokens) from the dispatch vLLM recorded for the point's steps; None when
    the steps were dispatched two ways (not one outcome: not fitted)."""
    if doc.get("enforce_eager"):
        return "eager", -1
    if not dispatch:
        return None
    if len(dispatch) > 1:
        return None
    (key,) = dispatch
    m = re.fullmatch(r"(FULL|PIECEWISE|NONE) (\d+)", key)
    if not m:
        return None
    return ("compiled_nograph" if m.group(1) == "NONE" else "graph"), int(m.group(2))


def points(
    runs: list[dict[str, Any]], held_out_reqs: set[int], held_out_sources: set[str]
) -> list[dict[str, Any]]:
    """One record per (run, figure, request count): the lowest per-round median, its outcome."""
    by: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for doc in runs:
        for p in doc.get("points") or []:
            if "median_ms" not in p:
                continue
            by.setdefault((doc["_source"], p["kind"], int(p["reqs"])), []).append(p)
    docs = {d["_source"]: d for d in runs}
    out = []
    for (src, kind, n), ps in sorted(by.items()):
        doc = docs[src]
        best = min(ps, key=lambda p: p["median_ms"])
        oc = _outcome(doc, best.get("dispatch") or {})
        if oc is None:
            continue
        outcome, tokens = oc
        out.append(
            {
                "run": doc.get("name") or src,
                "case": doc.get("case"),
                "source": src,
                "figure": kind,
                "reqs": n,
                "outcome": outcome,
                "tokens": n if tokens < 0 else tokens,
                "measured_ms": best["median_ms"],
                "rounds_ms": [p["median_ms"] for p in ps],
                "held_out": n in held_out_reqs or src in held_out_sources,
            }
        )
    return out


def _gpu(doc: dict[str, Any]) -> str:
    """The GPU a run was timed on, as its engine read it ("NVIDIA H200" -> "H200")."""
    name = str(doc.get("gpu_name") or "unknown GPU")
    return name.removeprefix("NVIDIA ").split(" ")[0] if name != "unknown GPU" else name


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x (a flat line through the mean when x does not vary)."""
    if len(xs) < 2 or len(set(xs)) < 2:
        return (statistics.fmean(ys) if ys else 0.0), 0.0
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def shipped_model_ms(hf: dict[str, Any], outcome: str, tokens: int, n: int) -> float | None:
    """The shipped latency model's forward for this point (FULL at the padded size, NONE at n);
    None for enforce_eager (the shipped model's NONE was measured on compiled engines)."""
    if outcome == "eager":
        return None
    try:
        from cgplan.core.predict.latency import StepShape, forward_shape, step_ms
        from cgplan.io.latency_coefficients import _shape_from_hf, load_latency
    except ImportError:
        return None
    root = Path(__file__).resolve().parents[2]
    c = load_latency(root / "cgplan" / "data" / "latency-h200.json")
    shape = forward_shape(_shape_from_hf(hf))
    mode = "FULL" if outcome == "graph" else "NONE"
    return step_ms(c, shape, StepShape(mode, tokens, n, reqs=n))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--held-out", nargs="*", type=Path, default=[], help="folders of whole held-out runs")
    ap.add_argument("--held-out-reqs", default="384,520,768")
    ap.add_argument("-o", "--output", type=Path)
    ap.add_argument("--report", type=Path)
    ap.add_argument("--allow-dry-run", action="store_true")
    a = ap.parse_args()
    fit_runs = read_runs(a.folders, a.allow_dry_run)
    ho_runs = read_runs(a.held_out, a.allow_dry_run) if a.held_out else []
    runs = fit_runs + ho_runs
    if not runs:
        sys.exit("error: no run to fit")
    held_reqs = {int(x) for x in a.held_out_reqs.split(",") if x.strip()}
    pts = points(runs, held_reqs, {d["_source"] for d in ho_runs})
    hf = runs[0].get("hf_config") or {}
    coeffs: dict[str, Any] = {}
    for oc in OUTCOMES:
        coeffs[oc] = {}
        for fig in FIGURES:
            fit = [p for p in pts if p["outcome"] == oc and p["figure"] == fig and not p["held_out"]]
            if not fit:
                continue
            a0, b = fit_line([p["tokens"] for p in fit], [p["measured_ms"] for p in fit])
            coeffs[oc][fig] = {"ms_at_0": round(a0, 5), "ms_per_token": round(b, 7), "fit_points": len(fit)}
    for p in pts:
        c = coeffs.get(p["outcome"], {}).get(p["figure"])
        if c:
            p["fitted_ms"] = round(c["ms_at_0"] + c["ms_per_token"] * p["tokens"], 4)
            p["error"] = round(p["fitted_ms"] / p["measured_ms"] - 1, 4)
        if p["figure"] == "forward":
            m = shipped_model_ms(hf, p["outcome"], p["tokens"], p["reqs"])
            if m is not None:
                p["shipped_model_ms"] = round(m, 4)
                p["shipped_model_error"] = round(m / p["measured_ms"] - 1, 4)
    # ratios to the graph step (the ladder to 1024) at each request count, per figure
    ratios = []
    for fig in FIGURES:
        graph = {p["reqs"]: p for p in pts if p["figure"] == fig and p["case"] == "ladder1024"}
        for p in pts:
            g = graph.get(p["reqs"])
            if p["figure"] == fig and p["outcome"] != "graph" and g:
                r = {
                    "figure": fig,
                    "reqs": p["reqs"],
                    "outcome": p["outcome"],
                    "measured_ratio": round(p["measured_ms"] / g["measured_ms"], 4),
                }
                if "fitted_ms" in p and "fitted_ms" in g:
                    r["fitted_ratio"] = round(p["fitted_ms"] / g["fitted_ms"], 4)
                if "shipped_model_ms" in p and "shipped_model_ms" in g:
                    r["shipped_model_ratio"] = round(p["shipped_model_ms"] / g["shipped_model_ms"], 4)
                ratios.append(r)
    held = [abs(p["error"]) for p in pts if p["held_out"] and "error" in p]
    shipped = [abs(p["shipped_model_error"]) for p in pts if "shipped_model_error" in p]
    summary = {
        "held_out_points": len(held),
        "held_out_median_error": round(statistics.median(held), 4) if held else None,
        "held_out_max_error": round(max(held), 4) if held else None,
        "held_out_within_15pct": round(sum(e <= 0.15 for e in held) / len(held), 4) if held else None,
        "shipped_model_median_error": round(statistics.median(shipped), 4) if shipped else None,
        "shipped_model_max_error": round(max(shipped), 4) if shipped else None,
    }
    dry = any(d.get("dry_run") for d in runs)
    versions = sorted({str(d.get("vllm_version")) for d in runs})
    reqs = sorted({p["reqs"] for p in pts})
    out = {
        "kind": "cgplan-latency-large-batch",
        "schema_version": 1,
        "gpu": "none (dry run)" if dry else ", ".join(sorted({_gpu(d) for d in runs})),
        "measured_with": ("DRY RUN, invented numbers; " if dry else "")
        + f"vLLM {', '.join(versions)}, LLM.generate serving step and the forward alone, bf16, "
        + f"dummy weights, {hf.get('architectures', ['?'])[0]} hidden {hf.get('hidden_size')} "
        + f"x {hf.get('num_hidden_layers')} layers",
        "reqs_range": [reqs[0], reqs[-1]] if reqs else None,
        "coefficients": coeffs,
        "fitted_on": sorted({f"{p['run']} n={p['reqs']}" for p in pts if not p["held_out"]}),
        "held_out": sorted({f"{p['run']} n={p['reqs']}" for p in pts if p["held_out"]}),
        **summary,
    }
    print(json.dumps(summary, indent=1))
    for r in ratios:
        fitted, shipped = r.get("fitted_ratio", math.nan), r.get("shipped_model_ratio", math.nan)
        print(
            f"{r['figure']:8s} n={r['reqs']:5d} {r['outcome']:17s} / graph: measured "
            f"{r['measured_ratio']:.3f}  fitted {fitted:.3f}  shipped model {shipped:.3f}"
        )
    if a.output:
        a.output.write_text(json.dumps(out, indent=1) + "\n")
    if a.report:
        a.report.write_text(
            json.dumps(
                {**out, "points": pts, "ratios": ratios, "sources": sorted({d["_source"] for d in runs})},
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
