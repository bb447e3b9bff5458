"""Load what diff and gate compare: a config (planned now) or a report file, as a Side."""

from __future__ import annotations

from pathlib import Path

from cgplan.config import Overrides
from cgplan.core.compare_sides import Side, rejected_side, side_from_plan
from cgplan.core.fingerprint import fingerprint
from cgplan.core.policies import UPSTREAM, CapturePolicy
from cgplan.errors import ConfigRejected
from cgplan.planning import plan_file
from cgplan.reports import read_report, side_from_report


def is_report(path: Path) -> bool:
    """JSON files are reports (plan --json or capture); anything else is a config."""
    return path.suffix.lower() == ".json"


def load_side(
    path: Path, overrides: Overrides | None = None, label: str | None = None, policy: CapturePolicy = UPSTREAM
) -> Side:
    """Plan a config (a release's refusal becomes a rejected side) or read a report."""
    name = label or str(path)
    if is_report(path):
        return side_from_report(read_report(path), name)
    try:
        loaded, plan = plan_file(path, overrides, with_fixes=False, policy=policy)
    except ConfigRejected as e:
        version = (overrides.vllm_version if overrides else None) or "?"
        return rejected_side(name, version, e.message)
    return side_from_plan(plan, name, fingerprint(loaded.input))
