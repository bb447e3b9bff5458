"""`cgplan logs` reads a log in one streamed pass: bounded memory, keyword prefilter proven sound."""

from __future__ import annotations

import dataclasses
import gzip
import re
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from cgplan.core import log_parse as logs
from cgplan.core.log_parse import GUARDS, KEYWORDS, parse_log
from cgplan.core.vllm.log_formats import LOG_FORMATS
from cgplan.io.logs import parse_file, read_log

try:  # the regular-expression parser (re._parser from 3.11, sre_parse before)
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef,unused-ignore]

LOGS = Path(__file__).parent / "data" / "logs"
REAL = sorted(LOGS.glob("*-vllm.log.gz"))


def _always_contains(items: Any, text: str) -> bool:
    """Whether every match of the parsed sequence `items` contains `text`: some run of
    consecutive literals holds it, or some element that must match does."""
    run: list[str] = []
    runs: list[str] = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            run.append(chr(arg))
            continue
        runs.append("".join(run))
        run = []
        if name == "SUBPATTERN" and _always_contains(arg[-1], text):
            return True
        if name == "BRANCH" and all(_always_contains(alt, text) for alt in arg[1]):
            return True
        repeated = name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and arg[0] >= 1
        if repeated and _always_contains(arg[2], text):
            return True
    runs.append("".join(run))
    return any(text in r for r in runs)


def _line_patterns() -> list[tuple[str, str, re.Pattern[str]]]:
    out = []
    for fmt in LOG_FORMATS:
        for f in dataclasses.fields(fmt):
            value = getattr(fmt, f.name)
            if isinstance(value, re.Pattern) and f.name not in logs._TABLE_ONLY_FIELDS:
                out.append((f"{fmt.since}.{f.name}", f.name, value))
    return out


@pytest.mark.parametrize(
    ("name", "field", "pattern"), _line_patterns(), ids=lambda x: x if isinstance(x, str) else ""
)
def test_every_line_pattern_needs_its_guard(name: str, field: str, pattern: re.Pattern[str]) -> None:
    """A pattern is searched only where its GUARDS text is, and a segment with no KEYWORDS is
    skipped: sound only if no match of the pattern lacks the text."""
    assert field in GUARDS, f"{name}: add the field to cgplan.core.log_parse.GUARDS"
    assert _always_contains(sre_parse.parse(pattern.pattern), GUARDS[field]), name
    assert any(k in GUARDS[field] for k in KEYWORDS), f"{name}: no KEYWORDS entry covers its guard"


def test_the_proof_can_fail() -> None:
    assert not _always_contains(sre_parse.parse(r"Capturing (?:CUDA graphs)?"), "CUDA graph")
    assert not _always_contains(sre_parse.parse(r"KV cache|memory"), "KV cache")
    assert not _always_contains(sre_parse.parse(r"KV cach[ex]"), "KV cache")
    assert _always_contains(sre_parse.parse(r"(?:a|b)(?P<x>Using the CUDA graphs+)"), "CUDA graph")
    assert _always_contains(sre_parse.parse(r"(?:KV cache size|x KV cache memory)+"), "KV cache")


@pytest.mark.parametrize("path", [*REAL, *sorted(LOGS.glob("synthetic-*.log"))], ids=lambda p: p.name)
def test_streamed_file_equals_parsed_text(path: Path) -> None:
    assert parse_file(path) == parse_log(read_log(path), str(path))


def _restarts(tmp_path: Path, copies: int) -> tuple[Path, str, int]:
    """A log of `copies` engine start-ups (the real ones in turn) with serving lines between."""
    starts = [gzip.decompress(p.read_bytes()).decode() for p in REAL]
    serving = (
        "INFO 11-30 05:20:01 [loggers.py:257] Engine 000: Avg prompt throughput: 1234.5 tokens/s, "
        "Running: 31 reqs, GPU KV cache usage: 12.3%\n"
        'INFO:     127.0.0.1:51234 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    ) * 40
    parts = [starts[i % len(starts)] + serving for i in range(copies)]
    path = tmp_path / "restarts.log.gz"
    path.write_bytes(gzip.compress("".join(parts).encode(), compresslevel=1))
    return path, parts[-1], max(len(s.encode()) for s in starts)


def test_memory_follows_one_engine_start_not_the_file(tmp_path: Path) -> None:
    path, last, largest_start_bytes = _restarts(tmp_path, 300)
    file_bytes = len(gzip.decompress(path.read_bytes()))
    tracemalloc.start()
    try:
        parsed = parse_file(path)
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert file_bytes > 3 * 2**20
    # The constant: a few read blocks (cgplan.io.logs._BLOCK_BYTES) as bytes and text, gzip buffers.
    assert peak_bytes <= 2 * largest_start_bytes + 2**20, (peak_bytes, largest_start_bytes)
    # The last engine is read, as from its own lines alone (the previous start-up ended with
    # its "init engine ... took" line).
    alone = parse_log(last, str(path))
    assert parsed.engine_starts == 300
    assert dataclasses.replace(parsed, engine_starts=1) == alone


@pytest.mark.parametrize("deferred_chars", [-1, 100, 5000])
def test_deferred_reading_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deferred_chars: int
) -> None:
    """A region reads its segments when the next engine line has not dropped it first (#18):
    read at once (-1), flushed mid-region (100, 5000 characters) or at the end, the same log."""
    path, _, _ = _restarts(tmp_path, 12)
    files = [path, *REAL, *sorted(LOGS.glob("synthetic-*.log"))]
    default = [parse_file(p) for p in files]
    monkeypatch.setattr(logs, "DEFERRED_CHARS", deferred_chars)
    assert [parse_file(p) for p in files] == default
