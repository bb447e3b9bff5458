"""A parsed vLLM log held against a plan: every figure and event the log states, checked (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cgplan.core.errors import ConfigRejected
from cgplan.core.logs.parse import LogEvent, ParsedLog, _dedupe, _event, _int_list
from cgplan.core.model.modes import Mode
from cgplan.core.model.spec import PlanInput
from cgplan.core.model.types import Plan
from cgplan.core.vllm.dynamic_sd import ScheduleError, lookup_ranges
from cgplan.core.vllm.log_formats import LogFormat, log_format_for
from cgplan.core.vllm.releases import rules_for
from cgplan.core.vllm.resolve import sequence_parallel_on, v1_round_sizes


@dataclass(frozen=True)
class Check:
    """One figure the log states, held against the plan."""

    name: str
    """What is compared, e.g. "capture sizes (engine)"."""
    log: Any
    """The log's value (JSON-ready)."""
    plan: Any
    """The plan's (or the config's) value (JSON-ready)."""
    agrees: bool
    """Whether they agree."""
    detail: str = ""
    """How they were compared, or why they differ."""


@dataclass(frozen=True)
class Comparison:
    """The log against the plan of a config under the log's vLLM release."""

    config: str
    """The config file planned."""
    vllm_version: str
    """The release whose rules were used."""
    refused: str | None
    """vLLM's reason when the plan says this release refuses the config (no plan then)."""
    checks: tuple[Check, ...] = field(default_factory=tuple)
    """Every comparison made."""
    notes: tuple[str, ...] = ()
    """How the config was read where it is not literal (a patch release planned with its
    release's rules, a GPU named for its family), as `plan` prints them."""

    @property
    def disagreements(self) -> tuple[Check, ...]:
        """The checks that failed."""
        return tuple(c for c in self.checks if not c.agrees)

    @property
    def agrees(self) -> bool:
        """No disagreement and no refusal."""
        return self.refused is None and not self.disagreements


@dataclass(frozen=True)
class LogPlan:
    """`cgplan logs LOG` without --config: the log's own engine arguments, planned."""

    plan: Plan | None
    """None where they could not be planned (`not_planned` says why)."""
    comparison: Comparison | None
    """That plan against every figure the log states: where they disagree, the plan is not the
    engine's and its gaps are withheld."""
    not_planned: str | None = None
    assumed: tuple[str, ...] = ()
    """What the log does not say and the plan assumed (the GPU, ...)."""
    left_out: tuple[str, ...] = ()
    """Keys of the log's arguments cgplan does not read."""

    @property
    def trusted(self) -> bool:
        """The plan agrees with everything the log states (its gaps are the engine's)."""
        return self.plan is not None and self.comparison is not None and self.comparison.agrees


def _plan_counts(plan: Plan) -> dict[str, dict[str, int]]:
    return {
        family: {
            "PIECEWISE": sum(1 for g in graphs if g.mode == "PIECEWISE"),
            "FULL": sum(1 for g in graphs if g.mode == "FULL"),
        }
        for family, graphs in plan.graphs.items()
    }


def _expected_engine_sizes(
    log_sizes: tuple[int, ...], log_max: int, inp: PlanInput, plan: Plan
) -> tuple[tuple[int, ...], int, bool]:
    """The log's engine-line sizes as the model runner will use them (V1 rounds them to q)."""
    q = plan.uniform_decode_query_len
    if not (plan.model_runner == "v1" and Mode(plan.cudagraph_mode).decode_mode() is Mode.FULL and q > 1):
        return log_sizes, log_max, False
    rules = rules_for(plan.vllm_version)
    sp_on = sequence_parallel_on(inp, rules, [])
    try:
        sizes, max_size = v1_round_sizes(
            log_sizes, log_max, q, inp.tensor_parallel_size, sp_on, [], sp_pass=rules.sequence_parallel
        )
    except ConfigRejected:
        return (), 0, True
    return sizes, max_size, True


def sizes_text(sizes: tuple[int, ...] | list[int] | None) -> str:
    if sizes is None:
        return "-"
    if not sizes:
        return "[] (none)"
    return f"{len(sizes)} sizes, {min(sizes)}..{max(sizes)}"


def _note_events(plan: Plan, fmt: LogFormat) -> list[LogEvent]:
    """The plan's notes parsed with the log patterns (cgplan's notes use vLLM's words)."""
    out: list[LogEvent] = []
    for note in plan.notes:
        msg = note.message
        if note.kind == "truncated_max" and (m := fmt.truncated_max.search(msg)):
            out.append(_event(note.kind, msg, size=int(m.group("size"))))
        elif note.kind == "explicit_sizes_overridden" and (m := fmt.sizes_overridden.search(msg)):
            out.append(
                _event(note.kind, msg, given=_int_list(m.group("given")), final=_int_list(m.group("final")))
            )
        elif note.kind == "runner_fallback" and (m := fmt.runner_fallback.search(msg)):
            out.append(_event(note.kind, msg, unsupported=m.group("what")))
        elif note.kind in ("dynamic_sd_override", "mode_downgrade"):
            pattern = fmt.dynamic_sd_override if note.kind == "dynamic_sd_override" else fmt.mode_downgrade
            if m := pattern.search(msg):
                out.append(_event(note.kind, msg, **{"from": m.group("from"), "to": m.group("to")}))
    return out


_EVENT_KEYS = {
    "truncated_max": ("size",),
    "explicit_sizes_overridden": ("given", "final"),
    "runner_fallback": ("unsupported",),
    "dynamic_sd_override": ("from", "to"),
    "mode_downgrade": ("from", "to"),
}


_EVENT_NAMES = {
    "truncated_max": "warning: truncated max",
    "explicit_sizes_overridden": "warning: sizes overridden",
    "runner_fallback": "warning: V2 → V1 runner",
    "dynamic_sd_override": "warning: dynamic-SD mode",
    "mode_downgrade": "warning: mode downgrade",
}


def _event_key(e: LogEvent) -> tuple[Any, ...]:
    return tuple(list(v) if isinstance(v := e.value(k), tuple) else v for k in _EVENT_KEYS.get(e.kind, ()))


def jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def compare(parsed: ParsedLog, inp: PlanInput, plan: Plan) -> tuple[Check, ...]:
    """Every figure the log states against `plan` (the config `inp` under the log's release)."""
    fmt = log_format_for(parsed.vllm_version)
    checks: list[Check] = []

    def add(name: str, log: Any, planned: Any, agrees: bool | None = None, detail: str = "") -> None:
        log, planned = jsonable(log), jsonable(planned)
        checks.append(Check(name, log, planned, log == planned if agrees is None else agrees, detail))

    # What the engine was started with (the config file's settings as vLLM read them).
    if parsed.model_runner is not None:
        add(
            "model runner",
            parsed.model_runner,
            plan.model_runner,
            detail="; ".join(parsed.model_runner_evidence),
        )
    spec = inp.speculative
    if parsed.vllm_version is not None:
        add(
            "speculative method",
            parsed.speculative_method,
            spec.method if spec else None,
            detail="engine line speculative_config vs the config",
        )
        add(
            "num_speculative_tokens",
            parsed.num_speculative_tokens or 0,
            plan.uniform_decode_query_len - 1,
            detail="uniform decode query length is 1 + K",
        )
    if parsed.tensor_parallel_size is not None:
        add("tensor_parallel_size", parsed.tensor_parallel_size, inp.tensor_parallel_size)
    if parsed.enforce_eager is not None:
        add("enforce_eager", parsed.enforce_eager, inp.enforce_eager)
    if parsed.max_num_seqs is not None:
        add("max_num_seqs", parsed.max_num_seqs, plan.max_num_seqs, detail="from 'non-default args'")
    if parsed.max_num_batched_tokens is not None:
        add("max_num_batched_tokens", parsed.max_num_batched_tokens, plan.max_num_batched_tokens)
    if parsed.has_non_default_args and (parsed.dynamic_sd_schedule or plan.dynamic_sd_lookup):
        log_lookup: Any = None
        detail = "the log's num_speculative_tokens_per_batch_size as vLLM's scheduler expands it"
        if parsed.dynamic_sd_schedule:
            try:
                runs = lookup_ranges(
                    parsed.dynamic_sd_schedule, plan.max_num_seqs, parsed.num_speculative_tokens or 0
                )
                log_lookup = [list(r) for r in runs]
            except ScheduleError as e:
                log_lookup = f"invalid: {e}"
        plan_lookup = [list(r) for r in plan.dynamic_sd_lookup] if plan.dynamic_sd_lookup else None
        add("dynamic-SD lookup", log_lookup, plan_lookup, detail=detail)

    # Mode and sizes.
    if parsed.cudagraph_mode is not None:
        add(
            "cudagraph_mode (engine)",
            parsed.cudagraph_mode,
            plan.requested_cudagraph_mode,
            detail="logged before the attention-backend downgrade",
        )
    runner_started = parsed.worker_started
    if parsed.final_cudagraph_mode is not None and runner_started:
        add(
            "cudagraph_mode (final)",
            parsed.final_cudagraph_mode,
            plan.cudagraph_mode,
            detail="the engine line's mode, or the last 'setting cudagraph_mode=' warning",
        )
    if parsed.capture_sizes is not None:
        sizes, max_size, rounded = _expected_engine_sizes(
            parsed.capture_sizes, parsed.max_capture_size or 0, inp, plan
        )
        why = (
            f"the log's sizes are before model runner V1 rounds them to multiples of "
            f"{plan.uniform_decode_query_len}; rounded: {sizes_text(sizes)}"
            if rounded
            else "engine line cudagraph_capture_sizes"
        )
        add(
            "capture sizes (engine)",
            parsed.capture_sizes,
            plan.capture_sizes,
            sizes == plan.capture_sizes,
            why,
        )
        if parsed.max_capture_size is not None:
            add(
                "max capture size (engine)",
                parsed.max_capture_size,
                plan.max_capture_size,
                max_size == plan.max_capture_size,
                f"rounded by V1: {max_size}" if rounded else "",
            )

    # Warnings the planner predicts (its notes carry vLLM's words).
    planned_events = _note_events(plan, fmt)
    for kind, name in _EVENT_NAMES.items():
        logged = sorted({_event_key(e) for e in parsed.events if e.kind == kind}, key=repr)
        expected = sorted({_event_key(e) for e in planned_events if e.kind == kind}, key=repr)
        if not logged and not expected:
            continue
        if kind == "mode_downgrade" and not logged and not runner_started:
            continue  # the log ends before the model runner resolves the mode
        keys = _EVENT_KEYS[kind]
        add(
            name,
            [dict(zip(keys, k, strict=True)) for k in logged] or None,
            [dict(zip(keys, k, strict=True)) for k in expected] or None,
        )

    counts = _plan_counts(plan)
    target = counts.get("target", {"PIECEWISE": 0, "FULL": 0})
    largest = {
        mode: max((g.num_tokens for g in plan.graphs.get("target", ()) if g.mode == mode), default=0)
        for mode in ("PIECEWISE", "FULL")
    }
    if parsed.profiling is not None:
        log_prof = {mode: {"graphs": n, "largest": t} for mode, n, t in parsed.profiling}
        plan_prof = {
            mode: {"graphs": target[mode], "largest": largest[mode]}
            for mode in ("PIECEWISE", "FULL")
            if target[mode]
        }
        add(
            "profiling: target graphs",
            log_prof,
            plan_prof,
            detail="V1 'Profiling CUDA graph memory: MODE=N (largest=T)'",
        )

    # Progress bars of the capture.
    capture_bars = parsed.capture_bars
    if capture_bars:
        logged_counts = parsed.graph_counts()
        comparable = (
            ["target"]
            if plan.model_runner == "v1"
            else ["target", "drafter_prefill", "drafter_decode", "drafter_query"]
        )
        for manager in _dedupe([*comparable, *logged_counts]):
            for mode in ("PIECEWISE", "FULL"):
                totals = logged_counts.get(manager, {}).get(mode, [])
                planned = counts.get(manager, {}).get(mode, 0)
                if manager not in counts and manager not in comparable:
                    continue  # a speculator cgplan does not model
                if not totals and not planned:
                    continue
                if len(totals) > 1:
                    agrees = all(t == planned for t in totals)
                    detail = f"{len(totals)} bars of this manager and mode; each should count {planned}"
                    add(f"bars: {manager} {mode}", totals, planned, agrees, detail)
                else:
                    add(
                        f"bars: {manager} {mode}",
                        totals[0] if totals else None,
                        planned,
                        detail="M of the bar's N/M",
                    )
        unfinished = [f"{b.desc}: {b.done}/{b.total}" for b in capture_bars if b.done < b.total]
        if unfinished:
            add("bars: complete", unfinished, "all N/N", False, "the capture stopped part-way")

    # Did the engine capture?
    total_planned = sum(len(g) for g in plan.graphs.values())
    if parsed.capture_status == "incomplete":
        add(
            "capture finished",
            "capture started, no 'Graph capturing finished' line",
            f"capture of {total_planned} graph descriptors completes",
            False,
            "the engine stopped before capture finished (or the log is cut short)",
        )
    elif parsed.capture_status == "finished":
        add("capture finished", "finished", "finished" if total_planned else "no graphs to capture")
    elif parsed.capture_status == "skipped":
        add(
            "capture finished",
            "skipped (vLLM logged that it skips CUDA graph capture)",
            "skipped" if not total_planned else f"{total_planned} graph descriptors",
            total_planned == 0,
        )

    # Graph memory, like for like: the "took X GiB" of the capture (rank 0's free-memory delta
    # over the whole capture phase, warmups included) is what the cost model predicts per rank.
    if parsed.capture_took_gib is not None and plan.cost is not None and plan.cost.graphs:
        c = plan.cost
        took_mib = parsed.capture_took_gib * 1024
        slack = 0.005 * 1024  # the log rounds to 0.01 GiB
        inside = c.low_mib - slack <= took_mib <= c.high_mib + slack
        kv = (
            f"; = {int(c.total_mib * (1 << 20) // plan.kv_bytes_per_token):,} KV-cache tokens predicted"
            if plan.kv_bytes_per_token and plan.graph_memory_reserved
            else ""
        )
        ratio = took_mib / c.total_mib if c.total_mib else 0.0
        if c.caveats:
            detail = (
                f"measured/predicted {ratio:.2f}; outside the cost model's fitted domain "
                f"({'; '.join(c.caveats)}): not held to its band{kv}"
            )
        else:
            detail = (
                f"measured/predicted {ratio:.2f}, the cost model's band {c.low_mib / c.total_mib:.2f}.."
                f"{c.high_mib / c.total_mib:.2f}{kv}"
            )
        add(
            "graph memory (capture phase, GiB)",
            round(parsed.capture_took_gib, 2),
            round(c.total_mib / 1024, 2),
            inside or bool(c.caveats),
            detail,
        )

    # --cudagraph-metrics tables.
    for n, t in enumerate(parsed.metrics, start=1):
        name = f"metrics table {n}"
        if t.mode is not None:
            add(
                f"{name}: mode",
                t.mode,
                plan.cudagraph_mode,
                t.mode in (plan.cudagraph_mode, plan.requested_cudagraph_mode),
                "the front end's config: the engine-line mode or the final one",
            )
        if t.capture_sizes is not None:
            rounded_sizes, _, _ = _expected_engine_sizes(
                t.capture_sizes, max(t.capture_sizes, default=0), inp, plan
            )
            add(
                f"{name}: capture sizes",
                t.capture_sizes,
                plan.capture_sizes,
                t.capture_sizes == plan.capture_sizes or rounded_sizes == plan.capture_sizes,
                "the final sizes, or the engine line's before V1 rounding",
            )
        graphs = {(g.mode, g.num_tokens) for gs in plan.graphs.values() for g in gs}
        bad = []
        for r in t.rows:
            if r.padded_tokens < r.unpadded_tokens or r.num_paddings != r.padded_tokens - r.unpadded_tokens:
                bad.append(f"{r.unpadded_tokens}→{r.padded_tokens} {r.runtime_mode}: inconsistent padding")
            elif r.runtime_mode in ("PIECEWISE", "FULL") and (r.runtime_mode, r.padded_tokens) not in graphs:
                bad.append(f"{r.unpadded_tokens}→{r.padded_tokens} {r.runtime_mode}: no such graph planned")
        add(
            f"{name}: rows",
            bad or f"{len(t.rows)} rows replay planned graphs",
            f"{len(t.rows)} rows replay planned graphs",
            not bad,
            "every PIECEWISE/FULL row's padded token count is a planned graph of that mode",
        )
    return tuple(checks)


def refused_checks(parsed: ParsedLog) -> tuple[Check, ...]:
    if parsed.capture_status == "finished":
        return (
            Check(
                "capture finished",
                "finished",
                "vLLM refuses this config",
                False,
                "the plan says the engine does not start, the log shows a finished capture",
            ),
        )
    return ()
