"""The full fuzz run takes minutes: it runs only when asked for (`make fuzz`, `pytest -m fuzz`)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "fuzz" in (config.getoption("markexpr", "") or "").replace("not fuzz", ""):
        return
    skip = pytest.mark.skip(reason="the full fuzz run: make fuzz (pytest -m fuzz)")
    for item in items:
        if "fuzz" in item.keywords and item.get_closest_marker("fuzz") is not None:
            item.add_marker(skip)
