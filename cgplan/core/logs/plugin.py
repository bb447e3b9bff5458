"""What cgplan's vLLM plugin writes while an engine serves, both ways (pure: counts in, text out,
and text back to counts): the periodic counters line of the log and the Prometheus text of its
metrics. `cgplan.plugin` writes them; `cgplan logs` and `optimize --traffic` read them back, so
the format lives here once.

A step is one call of the engine's dispatcher for a forward pass (V1 `CudagraphDispatcher.
dispatch`, V2 `CudaGraphManager.dispatch`), counted by its kind (`decode`: vLLM's uniform-decode
batch, every request at 1 + K tokens; `mixed`: any other), its outcome (vLLM's `CUDAGraphMode`
names: FULL, PIECEWISE, NONE = eager) and its size: the request count of a decode step (tokens /
(1 + K), exact), the token count of a mixed step.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from cgplan.core.errors import CgplanError

SCHEMA_VERSION = 1
"""Of the counters line's JSON and of the counters file the plugin writes."""

MARK = "[cgplan]"
"""Every line the plugin logs starts its message with this (after vLLM's own prefix)."""
COUNTERS_TAG = "counters"
"""`[cgplan] counters: <words> · json={...}`: the periodic summary."""
STARTUP_TAG = "start-up"
"""`[cgplan] start-up: ...`: the lines of the one block logged after capture."""
ERROR_TAG = "error"
"""`[cgplan] error: ...`: something inside the plugin failed; the engine went on."""

MODES = ("FULL", "PIECEWISE", "NONE")
"""vLLM's runtime modes, in the order they are printed."""
KINDS = ("decode", "mixed")

METRIC = "cgplan_dispatch_steps_total"
"""The Prometheus counter: labels kind, mode and num_reqs (decode) or num_tokens_le (mixed)."""


class PluginLogError(CgplanError):
    """A counters line or a metrics text that cannot be read (exit 2)."""


@dataclass(frozen=True)
class StepCounts:
    """Steps counted by the plugin, by kind, outcome and size (see the module's docstring)."""

    decode: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    """mode → num_reqs → steps."""
    mixed: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    """mode → num_tokens → steps (from metrics: the bucket's upper bound, see `mixed_exact`)."""
    query_len: int | None = None
    """Tokens per request of a decode step (1 + K), as the engine has it."""
    mixed_exact: bool = True
    """False where the mixed sizes are Prometheus buckets (upper bounds), not token counts."""

    def total(self, kind: str, mode: str | None = None) -> int:
        """Steps of one kind (and outcome)."""
        table = self.decode if kind == "decode" else self.mixed
        return sum(sum(by_size.values()) for m, by_size in table.items() if mode is None or m == mode)

    @property
    def steps(self) -> int:
        """Every step counted."""
        return self.total("decode") + self.total("mixed")


def _runs(sizes: Iterable[int]) -> str:
    """`1-8, 12, 33-64` for sorted sizes."""
    out: list[list[int]] = []
    for n in sorted(set(sizes)):
        if out and out[-1][1] == n - 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)


def counts_document(counts: StepCounts) -> dict[str, object]:
    """The counters as JSON (string keys: JSON has no integer keys), with a schema version."""
    return {
        "schema_version": SCHEMA_VERSION,
        "query_len": counts.query_len,
        "steps": counts.steps,
        "decode": {m: {str(n): c for n, c in sorted(counts.decode[m].items())} for m in counts.decode},
        "mixed": {m: {str(n): c for n, c in sorted(counts.mixed[m].items())} for m in counts.mixed},
        "per_mode": {kind: {m: counts.total(kind, m) for m in MODES} for kind in KINDS},
    }


def counters_line(counts: StepCounts, since_s: float | None = None) -> str:
    """The periodic summary: words first (what a person reads), then the exact counts as JSON
    on the same line (what `cgplan logs` and `optimize --traffic` read).

    >>> counters_line(StepCounts({"FULL": {4: 10}, "NONE": {40: 3}}, {"PIECEWISE": {100: 2}}, 1))
    '[cgplan] counters: 15 steps · decode FULL 10, PIECEWISE 0, eager 3 (eager at 40 requests) · \
mixed FULL 0, PIECEWISE 2, eager 0 · json={"schema_version": 1, "query_len": 1, "steps": 15, \
"decode": {"FULL": {"4": 10}, "NONE": {"40": 3}}, "mixed": {"PIECEWISE": {"100": 2}}, \
"per_mode": {"decode": {"FULL": 10, "PIECEWISE": 0, "NONE": 3}, "mixed": {"FULL": 0, \
"PIECEWISE": 2, "NONE": 0}}}'
    """
    parts = [f"{counts.steps:,} steps" + (f" in {since_s:,.0f} s" if since_s is not None else "")]
    for kind in KINDS:
        words = ", ".join(f"{'eager' if m == 'NONE' else m} {counts.total(kind, m):,}" for m in MODES)
        eager = (counts.decode if kind == "decode" else counts.mixed).get("NONE", {})
        if eager:
            unit = "requests" if kind == "decode" else "tokens"
            words += f" (eager at {_runs(eager)} {unit})"
        parts.append(f"{kind} {words}")
    doc = json.dumps(counts_document(counts))
    return f"{MARK} {COUNTERS_TAG}: {' · '.join(parts)} · json={doc}"


_COUNTERS = re.compile(re.escape(f"{MARK} {COUNTERS_TAG}:") + r".* · json=(\{.*\})\s*$")
_STARTUP = re.compile(re.escape(MARK) + r" (" + STARTUP_TAG + "|" + ERROR_TAG + r"): (.*)$")


def _table(doc: object, where: str, key: str) -> dict[str, dict[int, int]]:
    """One kind's counts; errors located as `FILE:LINE: key.mode.size: problem`."""
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise PluginLogError(
            f"{where}: {key}: expected a mapping of mode to counts (got {type(doc).__name__})"
        )
    out: dict[str, dict[int, int]] = {}
    for mode, by_size in doc.items():
        if mode not in MODES or not isinstance(by_size, dict):
            raise PluginLogError(f"{where}: {key}.{mode}: expected one of {', '.join(MODES)} with counts")
        row: dict[int, int] = {}
        for size, count in by_size.items():
            if not (isinstance(size, str) and size.isdigit() and 0 < len(size) <= 9 and int(size) > 0):
                raise PluginLogError(f"{where}: {key}.{mode}: size {size!r} is not a positive integer")
            if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= 10**15:
                raise PluginLogError(
                    f"{where}: {key}.{mode}.{size}: count {count!r} is not a count in 0..1e15"
                )
            row[int(size)] = count
        out[mode] = row
    return out


def counts_from_document(doc: object, where: str) -> StepCounts:
    """The counters from their JSON (a counters line's tail or the plugin's counters file)."""
    if not isinstance(doc, dict) or doc.get("schema_version") != SCHEMA_VERSION:
        got = doc.get("schema_version") if isinstance(doc, dict) else type(doc).__name__
        raise PluginLogError(f"{where}: schema_version {got!r}, expected {SCHEMA_VERSION}")
    q = doc.get("query_len")
    if q is not None and (isinstance(q, bool) or not isinstance(q, int) or q < 1):
        raise PluginLogError(f"{where}: query_len {q!r} is not a positive integer")
    return StepCounts(_table(doc.get("decode"), where, "decode"), _table(doc.get("mixed"), where, "mixed"), q)


@dataclass(frozen=True)
class PluginLog:
    """The plugin's lines found in a log."""

    startup: tuple[str, ...]
    """The start-up block's lines (and any error lines), without the mark, in order."""
    counts: StepCounts | None
    """The last counters line's counts (they are cumulative: the last holds them all)."""
    counters_lines: int
    """How many counters lines the log holds."""
    counts_line: int | None = None
    """The line number (1-based) of the last one."""


def parse_plugin_lines(lines: Iterable[str], source: str) -> PluginLog:
    """The plugin's lines of a vLLM log (any prefix before the mark: vLLM's own formatter).

    >>> log = parse_plugin_lines(["INFO x [cgplan] start-up: no gaps",
    ...     '[cgplan] counters: 2 steps · json={"schema_version": 1, "decode": {"FULL": {"3": 2}}}'], "-")
    >>> log.startup, log.counts.total("decode", "FULL")
    (('start-up: no gaps',), 2)
    """
    startup: list[str] = []
    counts: StepCounts | None = None
    at: int | None = None
    n = 0
    for i, line in enumerate(lines, 1):
        if MARK not in line:
            continue
        if m := _COUNTERS.search(line):
            try:
                doc = json.loads(m.group(1))
            except ValueError as e:
                raise PluginLogError(f"{source}:{i}: the counters line's json is not JSON ({e})") from None
            counts, at, n = counts_from_document(doc, f"{source}:{i}"), i, n + 1
        elif m := _STARTUP.search(line):
            startup.append(f"{m.group(1)}: {m.group(2)}")
    return PluginLog(tuple(startup), counts, n, at)


# --------------------------------------------------------------------------------------------
# Prometheus text
# --------------------------------------------------------------------------------------------


def mixed_bucket_bounds(capture_sizes: Iterable[int], max_num_batched_tokens: int) -> tuple[int, ...]:
    """The upper bounds of the mixed-step buckets the metrics carry: every capture size (a step
    between two sizes pads to the upper one, so a bucket is one graph), then powers of two up to
    max_num_batched_tokens (eager either way). Bounded: a token-count label per token would be
    thousands of series.

    >>> mixed_bucket_bounds([1, 2, 4, 8], 40)
    (1, 2, 4, 8, 16, 32, 40)
    """
    sizes = sorted({int(s) for s in capture_sizes if 0 < int(s) <= max_num_batched_tokens})
    top = sizes[-1] if sizes else 0
    p = 1
    while p <= top:
        p *= 2
    while p < max_num_batched_tokens:
        sizes.append(p)
        p *= 2
    if not sizes or sizes[-1] < max_num_batched_tokens:
        sizes.append(max_num_batched_tokens)
    return tuple(sizes)


def bucket_of(num_tokens: int, bounds: tuple[int, ...]) -> int:
    """The smallest bound ≥ num_tokens (the last bound for anything above it)."""
    lo, hi = 0, len(bounds) - 1
    if num_tokens >= bounds[hi]:
        return bounds[hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if bounds[mid] >= num_tokens:
            hi = mid
        else:
            lo = mid + 1
    return bounds[lo]


_SAMPLE = re.compile(r"^" + METRIC + r"\{([^}]*)\}\s+(\S+)(?:\s+\S+)?\s*$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_metrics_text(text: str, source: str) -> StepCounts:
    """The plugin's counter from a Prometheus exposition text (an endpoint's /metrics body):
    decode steps by exact request count, mixed steps by bucket (`mixed_exact` False: the bucket's
    upper bound stands for its token counts). Other metrics are skipped.

    >>> sample = 'cgplan_dispatch_steps_total{kind="decode",mode="NONE",num_reqs="40"} 3.0'
    >>> c = parse_metrics_text(sample, "-")
    >>> c.decode
    {'NONE': {40: 3}}
    """
    decode: dict[str, dict[int, int]] = {}
    mixed: dict[str, dict[int, int]] = {}
    found = False
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line.startswith(METRIC + "{"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise PluginLogError(f"{source}:{i}: not a Prometheus sample line: {line[:120]!r}")
        labels = dict(_LABEL.findall(m.group(1)))
        kind, mode = labels.get("kind"), labels.get("mode")
        size_text = labels.get("num_reqs" if kind == "decode" else "num_tokens_le", "")
        if kind not in KINDS or mode not in MODES or not size_text.isdigit() or len(size_text) > 9:
            raise PluginLogError(
                f"{source}:{i}: labels {m.group(1)!r}: expected kind decode|mixed, mode FULL|PIECEWISE|NONE "
                "and num_reqs (decode) or num_tokens_le (mixed)"
            )
        try:
            value = float(m.group(2)) if len(m.group(2)) <= 40 else math.inf
        except ValueError:
            value = math.nan
        if not 0 <= value <= 1e15 or value != int(value):
            raise PluginLogError(f"{source}:{i}: count {m.group(2)!r} is not a count in 0..1e15")
        table = decode if kind == "decode" else mixed
        row = table.setdefault(mode, {})
        row[int(size_text)] = row.get(int(size_text), 0) + int(value)
        found = True
    if not found:
        raise PluginLogError(f"{source}: no {METRIC} samples (is the cgplan plugin enabled in that engine?)")
    return StepCounts(decode, mixed, None, mixed_exact=False)
