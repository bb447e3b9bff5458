"""Where the tests find the repository and their data, wherever a test file sits in tests/."""

from __future__ import annotations

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
"""tests/: data/, golden/, fuzz/ and the shared helpers."""
ROOT_DIR = TESTS_DIR.parent
"""The repository's root."""
