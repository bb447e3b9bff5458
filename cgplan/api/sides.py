"""Load what diff and gate compare: a config (planned now) or a report file, as a Side."""

from __future__ import annotations

from pathlib import Path

from cgplan.api.plan import plan_file
from cgplan.core.compare.sides import Side, rejected_side, side_from_plan
from cgplan.core.plan.fingerprint import fingerprint
from cgplan.core.plan.policies import UPSTREAM, CapturePolicy
from cgplan.errors import ConfigRejected, ReportError, one_line
from cgplan.io.config import Overrides
from cgplan.io.files import stdin_bytes
from cgplan.io.reports import MAX_REPORT_BYTES, read_report, side_from_report


def is_report(path: Path) -> bool:
    """JSON files are reports (plan --json or capture); anything else is a config. On standard
    input (`-`) its content says: a JSON object with a `schema_version` is a report (a config
    written as JSON has none; YAML reads JSON, so the name was all that told them apart).

    Raises:
        ReadError: `-` and standard input cannot be read (silent, too large).
    """
    if str(path) == "-":
        head = stdin_bytes("report or config", MAX_REPORT_BYTES).lstrip(b"\xef\xbb\xbf \t\r\n")
        return head.startswith(b"{") and b'"schema_version"' in head
    return path.suffix.lower() == ".json"


def load_side(
    path: Path,
    overrides: Overrides | None = None,
    label: str | None = None,
    policy: CapturePolicy = UPSTREAM,
    *,
    require_fingerprint: bool = False,
    notes: list[str] | None = None,
) -> Side:
    """Plan a config (a release's refusal becomes a rejected side) or read a report.

    Raises:
        ReportError: with `require_fingerprint` (the report is compared with another side),
            a report that does not say which config it describes: deleting the fingerprint
            must not get two different configs compared as one.

    `notes`, when given, gets how a config was read (a patch release planned with its release's
    rules, a GPU name's platform), for the command to print as `plan` does.
    """
    name = one_line(label or str(path))  # a file name reaches terminals, JUnit and markdown
    if is_report(path):
        side = side_from_report(read_report(path), name)
        if require_fingerprint and side.fingerprint is None:
            raise ReportError(
                f"{path}:config_fingerprint: missing (expected the fingerprint of the config the "
                "report was made from, as plan --json and capture write it)"
            )
        return side
    try:
        loaded, plan = plan_file(path, overrides, with_fixes=False, policy=policy)
    except ConfigRejected as e:
        version = (overrides.vllm_version if overrides else None) or "?"
        return rejected_side(name, version, e.message)
    if notes is not None:
        notes.extend(n for n in loaded.notes if n not in notes)
    return side_from_plan(plan, name, fingerprint(loaded.input))
