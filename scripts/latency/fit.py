"""Fit the step-latency model on the H200 runs, keep held-out runs apart, write the shipped data.

    .venv/bin/python scripts/latency/fit.py benchmarks/results/h200/latency \
        -o cgplan/data/latency-h200.json --report benchmarks/results/h200/latency/fit-report.json

Held out (never seen by the fit): whole runs (shapes of a measured architecture, and the vllm#50488
case on an 8B), and a set of batch sizes in every other run.

The runs are read from every lat-*.json under the folders given (benchmarks/results/h200/latency:
one folder per device call, call1 .. call4); the folders read and their runs are printed and kept
in the report (`sources`).

`--statistic` says which figure of a point's repetitions is fitted and checked: the median (what
the shipped data uses), the median without the first k repetitions (`drop1`, `drop3`, `drop5`: the
warm-up that vLLM's own benchmarks discard), or a low quantile (`p25`, `p10`, `min`).

`--rounds` says how a point timed in several rounds is read (the widest batch, six rounds per
engine in call4; the runs of call1 repeated in call3): its lowest per-round figure (`lowest`, what
the shipped data uses: `least_contended`) or the median over rounds of the per-round figures
(`median`). The alternatives are for the comparisons in docs/latency-model.md ("Repetitions");
write them elsewhere than the shipped file (`-o /tmp/x.json`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from cgplan.core.predict.calibrate import least_contended
from cgplan.core.predict.latency import (
    REFERENCE_ARCH,
    LatencyCoefficients,
    LatencyObservation,
    errors,
    fit_latency,
    step_ms,
)
from cgplan.io.latency_coefficients import (
    observations_from_run,
    read_runs,
    run_files,
    save_latency,
)

HELD_OUT_RUNS = ("llama-3.1-8b-mns256", "qwen2.5-14b-mns256", "llama-3.1-8b-eagle-k16-mns32-max544")
HELD_OUT_BATCHES = (
    "uniform:3",
    "uniform:12",
    "uniform:31",
    "uniform:96",
    "uniform:200",
    "mixed:100",
    "mixed:1000",
)

START = LatencyCoefficients(
    gpu="H200",
    measured_with="vLLM 0.26.0, torch 2.11.0+cu130, FLASH_ATTN (FA3), model runner V2, bf16, dummy weights",
    gpu_ms_per_layer=0.06,
    gpu_ms_per_weight_gb=0.21,
    gpu_ms_per_gflop=0.0006,
    gpu_ms_per_token_width=0.00003,
    gpu_ms_per_gflop_compute_bound=0.0006,
    compute_bound_from_tokens=288.0,
    host_ms_full=0.06,
    host_ms_piecewise=0.65,
    host_ms_piecewise_per_layer=0.11,
    host_ms_eager=0.57,
    host_ms_eager_per_layer=0.38,
    eager_overlap_loss=0.03,
    piecewise_overlap_loss=0.19,
    step_ms=0.09,
    draft_step_ms=0.10,
    gpu_ms_per_request=0.005,
    eager_layer_factor=((REFERENCE_ARCH, 1.0),),
)


STATISTICS = ("median", "drop1", "drop3", "drop5", "p25", "p10", "min")


def point_ms(event_ms: list[float], statistic: str) -> float:
    """One point's figure from its repetitions (CUDA-event times, in timing order)."""
    if statistic.startswith("drop"):
        k = int(statistic.removeprefix("drop"))
        # Keep at least 3 repetitions: a point cut short by its time budget keeps what it has.
        return statistics.median(event_ms[k:] if len(event_ms) >= k + 3 else event_ms)
    if statistic in ("p25", "p10", "min"):
        s = sorted(event_ms)
        q = {"p25": 0.25, "p10": 0.10, "min": 0.0}[statistic]
        return s[round(q * (len(s) - 1))]
    return statistics.median(event_ms)


ROUNDS = ("lowest", "median")


def load(paths: list[Path], statistic: str, rounds: str = "lowest") -> list[LatencyObservation]:
    """Every observation of the raw runs, each point read as `statistic` of its repetitions (the
    median: what the measurement script stored, the median of `event_ms`), a point timed in
    several rounds as `rounds` of its per-round figures."""
    if statistic == "median":
        obs = read_runs(paths)
    else:
        obs = []
        for f in run_files(paths):
            doc: dict[str, Any] = json.loads(f.read_text())
            points = [
                {**p, "median_ms": round(point_ms([float(x) for x in p["event_ms"]], statistic), 4)}
                if p.get("event_ms")
                else p
                for p in doc.get("points") or []
            ]
            obs.extend(observations_from_run({**doc, "points": points}, str(f)))
    return least_contended(obs) if rounds == "lowest" else median_of_rounds(obs)


def _key(o: LatencyObservation) -> tuple[str, str, str, int]:
    return (o.run, o.batch, o.step.target_mode, o.step.target_tokens)


def median_of_rounds(obs: list[LatencyObservation]) -> list[LatencyObservation]:
    """One observation per point: the median over its rounds (the alternative to `least_contended`)."""
    groups: dict[tuple[str, str, str, int], list[LatencyObservation]] = {}
    for o in obs:
        groups.setdefault(_key(o), []).append(o)
    median = statistics.median
    return [dataclasses.replace(g[0], measured_ms=median(x.measured_ms for x in g)) for g in groups.values()]


Rounds = dict[tuple[str, str, str, int], list[tuple[str, float]]]
"""(run, batch, outcome, tokens) → every round's figure, with the folder (device call) it came from."""


def round_figures(paths: list[Path], statistic: str) -> Rounds:
    """Every point's per-round figures, in timing order, with the folder (device call) of each."""
    out: Rounds = {}
    for f in run_files(paths):
        doc: dict[str, Any] = json.loads(f.read_text())
        for o, p in zip(observations_from_run(doc, str(f)), _timed(doc), strict=True):
            reps = [float(x) for x in p.get("event_ms") or []]
            ms = point_ms(reps, statistic) if reps else o.measured_ms
            out.setdefault(_key(o), []).append((f.parent.name, round(ms, 4)))
    return out


def _timed(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The points `observations_from_run` turns into observations, in the same order."""
    return [
        p
        for p in doc.get("points") or []
        if "median_ms" in p and "target" in {x[0] for x in p.get("dispatch") or []}
    ]


def card_of(folder: Path) -> str | None:
    """The card a device call's gpu.txt (nvidia-smi's CSV) names, as cgplan names it; None without one."""
    from cgplan.core.vllm.gpus import find_gpu

    f = folder / "gpu.txt"
    if not f.is_file():
        return None
    rows = [r.split(",")[0].strip() for r in f.read_text().splitlines()[1:] if r.strip()]
    gpu = find_gpu(rows[0]) if rows else None
    return gpu.name if gpu is not None else None


def held(o: LatencyObservation, runs: tuple[str, ...] = HELD_OUT_RUNS) -> bool:
    return o.run in runs or o.batch in HELD_OUT_BATCHES


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("-o", "--output", type=Path, required=True)
    ap.add_argument("--report", type=Path)
    ap.add_argument("--statistic", choices=STATISTICS, default="median")
    ap.add_argument("--rounds", choices=ROUNDS, default="lowest")
    ap.add_argument(
        "--gpu",
        default="H200",
        help="the card the runs were timed on, as cgplan names it (H200, H100); each gpu.txt must name it",
    )
    ap.add_argument(
        "--held-out-runs",
        nargs="*",
        default=list(HELD_OUT_RUNS),
        help="whole runs the fit never sees (default: the H200 set's three)",
    )
    a = ap.parse_args()
    held_runs = tuple(a.held_out_runs)
    for folder in sorted({f.parent for f in run_files(a.runs)}):
        named = card_of(folder)
        if named is not None and named != a.gpu:
            print(f"{folder}: timed on {named}, not {a.gpu} (--gpu)", file=sys.stderr)
            return 2
    sources: dict[str, list[str]] = {}
    for f in run_files(a.runs):
        sources.setdefault(f.parent.name, []).append(f.name.removeprefix("lat-").removesuffix(".json"))
    print("read: " + "; ".join(f"{k} ({len(v)} runs)" for k, v in sorted(sources.items())))
    obs = load(a.runs, a.statistic, a.rounds)
    per_round = round_figures(a.runs, a.statistic)
    fit = [o for o in obs if not held(o, held_runs)]
    out = [o for o in obs if held(o, held_runs)]
    c = fit_latency(fit, dataclasses.replace(START, gpu=a.gpu))
    med, w10 = errors(c, out)
    fmed, fw10 = errors(c, fit)
    runs = sorted({o.run for o in obs})
    hidden = [o.target.hidden_size for o in obs]
    layers = [o.target.layers for o in obs]
    c = LatencyCoefficients(
        **{
            **c.__dict__,
            "hidden_size_range": (min(hidden), max(hidden)),
            "layers_range": (min(layers), max(layers)),
            "max_tokens": max(o.step.target_tokens for o in obs),
            "max_reqs": max(o.step.reqs for o in obs),
            "fitted_on": tuple(r for r in runs if r not in held_runs),
            "held_out": held_runs + tuple(f"batch {b} of every run" for b in HELD_OUT_BATCHES),
            "held_out_median_error": round(med, 4),
            "held_out_within_10pct": round(w10, 4),
        }
    )
    save_latency(c, a.output)
    print(f"fit: {len(fit)} points, median |err| {fmed:.3f}, within 10% {fw10:.2f}")
    print(f"held out: {len(out)} points, median |err| {med:.3f}, within 10% {w10:.2f}")
    if a.report:
        report = {
            "fit_points": len(fit),
            "held_out_points": len(out),
            "fit_median_error": fmed,
            "fit_within_10pct": fw10,
            "held_out_median_error": med,
            "held_out_within_10pct": w10,
            "sources": sources,
            "runs": {},
        }
        for r in runs:
            pts = [o for o in obs if o.run == r]
            rows = []
            for o in pts:
                p = step_ms(c, o.target, o.step)
                rows.append(
                    {
                        "batch": o.batch,
                        "mode": o.step.target_mode,
                        "tokens": o.step.target_tokens,
                        "measured_ms": o.measured_ms,
                        "predicted_ms": round(p, 4),
                        "error": round(p / o.measured_ms - 1, 4),
                        "held_out": held(o, held_runs),
                    }
                )
            h = [x for x in pts if held(x, held_runs)]
            f = [x for x in pts if not held(x, held_runs)]
            report["runs"][r] = {
                "held_out_run": r in held_runs,
                "fit": dict(zip(("median_error", "within_10pct"), errors(c, f), strict=True)),
                "held_out": dict(zip(("median_error", "within_10pct"), errors(c, h), strict=True)),
                "widest": widest(c, pts, per_round),
                "points": rows,
            }
        w10 = {r: abs(float(v["widest"].get("ratio_error", 1.0))) <= 0.10 for r, v in report["runs"].items()}
        report["statistic"] = a.statistic
        report["rounds"] = a.rounds
        report["widest_ratio_within_10pct"] = {
            "runs": sum(w10.values()),
            "of": len(w10),
            "held_out_runs": sum(w10[r] for r in held_runs if r in w10),
            "of_held_out": sum(1 for r in held_runs if r in w10),
        }
        a.report.write_text(json.dumps(report, indent=1) + "\n")
        for r, v in report["runs"].items():
            w = v["widest"]
            print(
                f"  {r:40s} held-out {v['held_out']['median_error']:.3f}/{v['held_out']['within_10pct']:.2f}"
                f"  widest {w.get('batch')}: eager/graph measured {w.get('measured_ratio')} "
                f"predicted {w.get('predicted_ratio')} ({w.get('ratio_error')})"
            )
        s = report["widest_ratio_within_10pct"]
        print(
            f"widest batch eager/graph within 10%: {s['runs']} of {s['of']} runs "
            f"({s['held_out_runs']} of {s['of_held_out']} held-out runs)"
        )
    return 0


def widest(
    c: LatencyCoefficients,
    pts: list[LatencyObservation],
    per_round: Rounds,
) -> dict[str, object]:
    """The widest uniform batch: eager / graph step time, measured (with every round it was timed
    in: device call and figure, in timing order) and predicted."""
    uni = [o for o in pts if o.batch.startswith("uniform:")]
    if not uni:
        return {}
    n = max(int(o.batch.split(":")[1]) for o in uni)
    at = [o for o in uni if o.batch == f"uniform:{n}"]
    eager = [o for o in at if o.step.target_mode == "NONE"]
    graph = [o for o in at if o.step.target_mode == "FULL"]
    if not eager or not graph:
        return {"batch": n}
    m = eager[0].measured_ms / graph[0].measured_ms
    p = step_ms(c, eager[0].target, eager[0].step) / step_ms(c, graph[0].target, graph[0].step)
    return {
        "batch": n,
        "graph_tokens": graph[0].step.target_tokens,
        "measured_ratio": round(m, 3),
        "predicted_ratio": round(p, 3),
        "ratio_error": round(p / m - 1, 3),
        "measured_eager_ms": eager[0].measured_ms,
        "measured_graph_ms": graph[0].measured_ms,
        "predicted_eager_ms": round(step_ms(c, eager[0].target, eager[0].step), 3),
        "predicted_graph_ms": round(step_ms(c, graph[0].target, graph[0].step), 3),
        "log_error": round(math.log(p / m), 3),
        "eager_rounds": [list(x) for x in per_round.get(_key(eager[0]), [])],
        "graph_rounds": [list(x) for x in per_round.get(_key(graph[0]), [])],
    }


if __name__ == "__main__":
    sys.exit(main())
