"""Traffic histograms for `cgplan optimize`: a histogram (JSON as scripts write it, or YAML as
people write it), a vLLM `--cudagraph-metrics` log, a Prometheus text dump of vLLM's metrics, or
what cgplan's vLLM plugin measured (its counters line in a log, its Prometheus counter) → batch
shapes with counts (core.optimize.traffic.Traffic)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path

from cgplan.core.optimize.traffic import Traffic
from cgplan.errors import ConfigError, preview
from cgplan.io.files import MIB, ReadError, parse_json, parse_yaml, read_text

TRAFFIC_LIMIT_BYTES = 64 * MIB
"""A histogram, a `--cudagraph-metrics` log or a metrics dump, after gzip expansion (its lines
are held in memory at once)."""


_METRICS_ROW = re.compile(r"^\|?\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*([A-Z_]+)\s*\|\s*(\d+)\s*\|?\s*$")
_SPREAD_MAX_TOKENS = 1 << 17
"""Buckets above this many tokens are not spread (no capture size comes near them)."""
_PROM_BUCKET = re.compile(r'^vllm:iteration_tokens_total_bucket\{[^}]*le="([^"]+)"[^}]*\}\s+([0-9.eE+]+)\s*$')


MAX_COUNT = 1e15
"""Steps of one batch shape (a server at 1,000 steps/s for 30,000 years): larger is a broken file,
and sums of such counts stay finite."""
MAX_TOKENS = 10_000_000


def _count(value: object, where: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= MAX_COUNT
    ):
        raise ConfigError(where, f"must be a count in 0..{MAX_COUNT:g} (got {preview(value)})")
    return float(value)


def _positive(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value > MAX_TOKENS:
        raise ConfigError(where, f"must be an integer in 1..{MAX_TOKENS:,} (got {preview(value)})")
    return value


def _text_number(text: str, where: str, highest: float) -> float:
    """A number of a metrics line, bounded before int() or float() sees a 5,000-digit string."""
    try:
        value = float(text) if len(text) <= 40 else math.inf
    except ValueError:
        value = math.nan
    if not 0 <= value <= highest:  # NaN fails too
        raise ConfigError(where, f"must be a number in 0..{highest:,.0f} (got {preview(text)})")
    return value


def parse_histogram(doc: object) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """The histogram form (JSON or YAML): {uniform_decode: [{num_reqs, count}], mixed: [{num_tokens,
    count}]}, and an optional `description` (text: how the histogram was made; JSON has no comments)."""
    if not isinstance(doc, dict):
        raise ConfigError("<root>", "a traffic histogram is a mapping with uniform_decode: and/or mixed:")
    for key in doc:
        if key not in ("uniform_decode", "mixed", "description"):
            raise ConfigError(str(key), "unknown key (expected uniform_decode, mixed or description)")
    if not isinstance(doc.get("description", ""), str):
        raise ConfigError("description", f"must be text (got {preview(doc['description'])})")
    out: dict[str, list[tuple[int, float]]] = {"uniform_decode": [], "mixed": []}
    for key, unit in (("uniform_decode", "num_reqs"), ("mixed", "num_tokens")):
        rows = doc.get(key) or []
        if not isinstance(rows, list):
            raise ConfigError(key, f"must be a list of {{{unit}, count}}")
        for i, row in enumerate(rows):
            where = f"{key}[{i}]"
            if not isinstance(row, dict) or unit not in row or "count" not in row:
                raise ConfigError(where, f"expected {{{unit}: N, count: C}} (got {row!r})")
            out[key].append((_positive(row[unit], f"{where}.{unit}"), _count(row["count"], f"{where}.count")))
    return out["uniform_decode"], out["mixed"]


def load_traffic(path: Path) -> Traffic:
    """Read any of the three forms (by content)."""
    try:
        text = read_text(path, what="traffic file", limit=TRAFFIC_LIMIT_BYTES, gunzip=True, errors="replace")
    except ReadError as e:
        raise e.as_config_error() from None
    try:
        return _parse_text(text, path)
    except ConfigError as e:  # a metrics line out of bounds (YAML errors come located already)
        raise e if e.source else e.located(str(path)) from None


def _plugin_traffic(text: str, path: Path) -> Traffic | None:
    """The measured counts of cgplan's vLLM plugin: its last counters line of a log (exact sizes),
    or its Prometheus counter (decode exact; a mixed step at its bucket's upper bound, the capture
    size it pads to, so the current ladder prices it exactly and a finer one is not credited for
    it). None when the text holds neither. Every outcome counts: the traffic is what was served."""
    from cgplan.core.logs.plugin import (
        COUNTERS_TAG,
        MARK,
        METRIC,
        PluginLogError,
        parse_metrics_text,
        parse_plugin_lines,
    )

    try:
        if f"{METRIC}{{" in text:
            counts = parse_metrics_text(text, str(path))
            form = "the cgplan plugin's Prometheus counter; mixed steps at their bucket's upper bound"
        elif f"{MARK} {COUNTERS_TAG}:" in text:
            log = parse_plugin_lines(text.splitlines(), str(path))
            if log.counts is None:
                return None
            counts = log.counts
            form = f"the cgplan plugin's counters, line {log.counts_line}"
        else:
            return None
    except PluginLogError as e:
        err = ConfigError("", e.message)  # located already (FILE:LINE: problem): not located again
        err.source = str(path)
        raise err from None

    def merged(table: Mapping[str, Mapping[int, int]]) -> tuple[tuple[int, float], ...]:
        out: dict[int, float] = {}
        for row in table.values():
            for size, n in row.items():
                out[size] = out.get(size, 0.0) + float(n)
        return tuple(sorted((k, v) for k, v in out.items() if v > 0))

    return Traffic(merged(counts.decode), merged(counts.mixed), f"{path} ({form})")


def _parse_text(text: str, path: Path) -> Traffic:
    plugin = _plugin_traffic(text, path)
    if plugin is not None:
        return plugin
    if "vllm:iteration_tokens_total_bucket" in text:
        buckets = []
        for i, line in enumerate(text.splitlines(), 1):
            m = _PROM_BUCKET.match(line.strip())
            if m and m.group(1) != "+Inf":
                where = f"line {i}"
                le = _text_number(m.group(1), where, MAX_TOKENS)
                buckets.append((int(le), _text_number(m.group(2), where, MAX_COUNT)))
        buckets.sort()
        mixed, prev = [], 0.0
        # A bucket only says "lo < tokens ≤ le": spread its steps evenly over the token counts it
        # spans, rather than putting every step at its upper bound (which overstates padding
        # below a size and hides the sizes a bucket's interior needs).
        prev_le = 0
        for le, cum in buckets:
            if cum > prev and le > _SPREAD_MAX_TOKENS:
                mixed.append((le, cum - prev))  # far above any capture size: eager either way
            elif cum > prev and le > prev_le:
                width = le - prev_le
                share = (cum - prev) / width
                mixed += [(t, share) for t in range(prev_le + 1, le + 1)]
            prev = max(prev, cum)
            prev_le = max(prev_le, le)
        return Traffic(
            (),
            tuple(mixed),
            f"{path} (Prometheus iteration_tokens histogram, each bucket spread over its token counts)",
        )
    if "Unpadded Tokens" in text:
        counts: dict[int, float] = {}
        for i, line in enumerate(text.splitlines(), 1):
            m = _METRICS_ROW.match(line.strip())
            if m:
                tokens = int(_text_number(m.group(1), f"line {i}", MAX_TOKENS))
                counts[tokens] = counts.get(tokens, 0.0) + _text_number(m.group(5), f"line {i}", MAX_COUNT)
        return Traffic((), tuple(sorted(counts.items())), f"{path} (vLLM --cudagraph-metrics tables)")
    try:
        doc = _histogram_document(text, path)
    except ReadError as e:
        raise ConfigError(e.key_path, f"not a traffic file: {e.problem}", source=str(path)) from None
    try:
        uniform, mixed = parse_histogram(doc)
    except ConfigError as e:
        raise e.located(str(path)) from None
    return Traffic(tuple(uniform), tuple(mixed), str(path))


def _histogram_document(text: str, path: Path) -> object:
    """A histogram's document: JSON (what scripts write: scripts/make_traffic.py) for a .json file
    or a text that is one JSON object, else YAML (what people write by hand; a flow mapping that is
    not JSON, `{uniform_decode: [...]}`, is YAML too)."""
    named_json = path.name.lower().endswith((".json", ".json.gz"))
    if named_json or text.lstrip().startswith("{"):
        try:
            return parse_json(text, str(path))
        except ReadError:
            if named_json:
                raise
    return parse_yaml(text, str(path))
