"""The library entry point behind `cgplan diff`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cgplan.api.sides import is_report, load_side
from cgplan.core.compare.diff import Diff, diff_sides
from cgplan.core.vllm.releases import LATEST_VERSION, SUPPORTED_VERSIONS
from cgplan.errors import ConfigError, ReportError
from cgplan.io.config import Overrides
from cgplan.io.policies import load_capture_policy


def split_versions(values: list[str]) -> list[str]:
    """`--vllm-version A --vllm-version B` or `--vllm-version A..B` → [A, B]."""
    out: list[str] = []
    for v in values:
        out += [x for x in v.split("..") if x] if ".." in v else [v]
    return out


def _refuse_options_for_reports(a: Path, b: Path | None, vs: list[str], pols: Sequence[object]) -> None:
    """A report holds one release's plan under one capture policy: a release or a policy given
    for its side cannot apply, and ignoring it would show "nothing changed"."""
    sides = [a] if b is None else [a, b]
    if b is None and is_report(a) and (vs or pols):
        option = "--vllm-version" if vs else "--policy"
        raise ConfigError(
            option,
            f"{a} is a report: it holds one release's plan under one policy, so {option} cannot "
            "apply to it (compare two reports, or give the config)",
        )
    reports = [p for p in sides if is_report(p)]
    if len(reports) == len(sides) and (vs or pols):
        option = "--vllm-version" if vs else "--policy"
        raise ConfigError(option, f"{a} and {b} are reports: {option} applies to configs only")
    if len(vs) == 2 and b is not None:
        for path, v in ((a, vs[0]), (b, vs[1])):
            if is_report(path):
                raise ConfigError(
                    "--vllm-version", f"{v} is given for {path}, a report: a release applies to configs only"
                )
    if len(pols) == 2 and b is not None:
        for path in (a, b):
            if is_report(path):
                raise ConfigError(
                    "--policy", f"a policy is given for {path}, a report: it applies to configs only"
                )


def diff_paths(
    a: Path,
    b: Path | None,
    versions: list[str],
    *,
    allow_mismatch: bool = False,
    policies: list[str] | None = None,
    model_config: Path | None = None,
    notes: list[str] | None = None,
    platform: str | None = None,
    model_runner: str | None = None,
) -> Diff:
    """Diff two configs, one config under two releases, a plan and a capture, or two captures;
    `notes` (when given) gets how the configs were read (see `load_side`).

    Raises:
        ConfigError: bad arguments or configs; ReportError: reports of different configs.
    """
    pols = [load_capture_policy(p) for p in (policies or [])]
    if len(pols) > 2:
        raise ConfigError("--policy", "at most two policies (one per side)")
    _refuse_options_for_reports(a, b, split_versions(versions), pols)
    if b is None and len(pols) == 2:
        vs_one = split_versions(versions)
        ov = Overrides(
            vllm_version=vs_one[0] if vs_one else None,
            model_config=model_config,
            platform=platform,
            model_runner=model_runner,
        )
        return diff_sides(
            load_side(a, ov, f"{a} (policy {pols[0].name})", pols[0], notes=notes),
            load_side(a, ov, f"{a} (policy {pols[1].name})", pols[1], notes=notes),
        )
    pa = pols[0] if pols else load_capture_policy(None)
    pb = pols[-1] if pols else pa
    vs = split_versions(versions)
    if len(vs) > 2:
        raise ConfigError("--vllm-version", f"at most two releases (got {', '.join(vs)})")
    if b is None:
        if len(vs) != 2:
            raise ConfigError(
                "--vllm-version",
                "one config needs two releases to compare, e.g. --vllm-version "
                f"{SUPPORTED_VERSIONS[0]}..{LATEST_VERSION}",
            )
        return diff_sides(
            load_side(
                a,
                Overrides(
                    vllm_version=vs[0],
                    model_config=model_config,
                    platform=platform,
                    model_runner=model_runner,
                ),
                f"{a} @ {vs[0]}",
                pa,
                notes=notes,
            ),
            load_side(
                b or a,
                Overrides(
                    vllm_version=vs[1],
                    model_config=model_config,
                    platform=platform,
                    model_runner=model_runner,
                ),
                f"{a} @ {vs[1]}",
                pb,
                notes=notes,
            ),
        )
    va = vs[0] if vs else None
    vb = vs[-1] if vs else None
    need = not allow_mismatch
    side_a = load_side(
        a,
        Overrides(vllm_version=va, model_config=model_config, platform=platform, model_runner=model_runner),
        policy=pa,
        require_fingerprint=need,
        notes=notes,
    )
    side_b = load_side(
        b,
        Overrides(vllm_version=vb, model_config=model_config, platform=platform, model_runner=model_runner),
        policy=pb,
        require_fingerprint=need,
        notes=notes,
    )
    d = diff_sides(side_a, side_b)
    if (is_report(a) or is_report(b)) and not d.fingerprints_match and not allow_mismatch:
        raise ReportError(
            f"{a} and {b} describe different configs (fingerprints {side_a.fingerprint} and "
            f"{side_b.fingerprint}); compare them anyway with --allow-mismatch"
        )
    return d
