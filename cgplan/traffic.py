"""Traffic histograms for `cgplan optimize`: a YAML histogram, a vLLM `--cudagraph-metrics`
log, or a Prometheus text dump of vLLM's metrics → batch shapes with counts."""

from __future__ import annotations

import gzip
import math
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from cgplan import yaml_load
from cgplan.errors import ConfigError


@dataclass(frozen=True)
class Traffic:
    """Batch shapes the server sees, with how often."""

    uniform_decode: tuple[tuple[int, float], ...]
    """(num_reqs, steps) of uniform-decode steps (tokens = num_reqs × that batch's query length)."""
    mixed: tuple[tuple[int, float], ...]
    """(num_tokens, steps) of every other step."""
    source: str


_METRICS_ROW = re.compile(r"^\|?\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*([A-Z_]+)\s*\|\s*(\d+)\s*\|?\s*$")
_PROM_BUCKET = re.compile(r'^vllm:iteration_tokens_total_bucket\{[^}]*le="([^"]+)"[^}]*\}\s+([0-9.eE+]+)\s*$')


def _count(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ConfigError(where, f"must be a count >= 0 (got {value!r})")
    return float(value)


def _positive(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value > 10_000_000:
        raise ConfigError(where, f"must be an integer in 1..10,000,000 (got {value!r})")
    return value


def parse_histogram(doc: object) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """The YAML form: {uniform_decode: [{num_reqs, count}], mixed: [{num_tokens, count}]}."""
    if not isinstance(doc, dict):
        raise ConfigError("<root>", "a traffic histogram is a mapping with uniform_decode: and/or mixed:")
    for key in doc:
        if key not in ("uniform_decode", "mixed"):
            raise ConfigError(str(key), "unknown key (expected uniform_decode or mixed)")
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
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8", errors="replace")
    except OSError as e:
        raise ConfigError("", f"cannot read: {e.strerror or e}", source=str(path)) from None
    if "vllm:iteration_tokens_total_bucket" in text:
        buckets = []
        for line in text.splitlines():
            m = _PROM_BUCKET.match(line.strip())
            if m and m.group(1) != "+Inf":
                buckets.append((int(float(m.group(1))), float(m.group(2))))
        buckets.sort()
        mixed, prev = [], 0.0
        for le, cum in buckets:
            if cum > prev:
                mixed.append((le, cum - prev))
            prev = max(prev, cum)
        return Traffic(
            (), tuple(mixed), f"{path} (Prometheus iteration_tokens histogram, bucket upper bounds)"
        )
    if "Unpadded Tokens" in text:
        counts: dict[int, float] = {}
        for line in text.splitlines():
            m = _METRICS_ROW.match(line.strip())
            if m:
                counts[int(m.group(1))] = counts.get(int(m.group(1)), 0.0) + float(m.group(5))
        return Traffic((), tuple(sorted(counts.items())), f"{path} (vLLM --cudagraph-metrics tables)")
    try:
        doc = yaml_load.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError("", f"not a traffic file: {str(e).splitlines()[0]}", source=str(path)) from None
    try:
        uniform, mixed = parse_histogram(doc)
    except ConfigError as e:
        raise e.located(str(path)) from None
    return Traffic(tuple(uniform), tuple(mixed), str(path))
