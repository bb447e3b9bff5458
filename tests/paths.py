"""Where the tests find the repository and their data, wherever a test file sits in tests/."""

from __future__ import annotations

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
"""tests/: data/, golden/, fuzz/ and the shared helpers."""
ROOT_DIR = TESTS_DIR.parent
"""The repository's root."""

CAPTURE_RESULTS = ROOT_DIR / "benchmarks" / "results" / "h200"
"""The committed capture reports (cards named in each folder's README)."""


def capture_report(name: str) -> Path:
    """A committed capture report by its stem (what a coefficient set's `fitted_on` names), in
    whichever results folder holds it."""
    for folder in ("", "cost", "memory29", "moe"):
        path = CAPTURE_RESULTS / folder / f"{name}.json"
        if path.is_file():
            return path
    raise FileNotFoundError(f"no committed capture report {name}.json under {CAPTURE_RESULTS}")
