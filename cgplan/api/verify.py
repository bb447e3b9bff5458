"""The library entry point behind `cgplan verify`: vLLM's own code (in an interpreter the user names)
beside cgplan's rules, config by config; two builds beside each other; drift per rule over a corpus."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cgplan.core.compare.oracle import vllm_answer
from cgplan.core.compare.verify import (
    BuildComparison,
    VerifyReport,
    change,
    drift,
    no_answer,
    summarize,
    verdict,
)
from cgplan.core.plan.build import build_plan
from cgplan.core.plan.policies import UPSTREAM, CapturePolicy
from cgplan.core.vllm.releases import closest_release, release_for
from cgplan.errors import ConfigError
from cgplan.gpu.vllm_cpu import CPU_HOST_LIMITS, EngineProgress, EngineRun, ask_vllm, check_python
from cgplan.io.config import NO_OVERRIDES, Overrides, load_config, resolve_vllm_version
from cgplan.io.oracle_input import oracle_config
from cgplan.io.schema.plan import plan_to_dict

CONFIG_SUFFIXES = (".yaml", ".yml")
"""What a folder given to `verify` contributes: its config files (not recursing)."""


def config_paths(targets: Sequence[Path]) -> list[Path]:
    """The config files of `targets`: a file as given, a folder's `*.yaml`/`*.yml` in name order.

    Raises:
        ConfigError: a target that does not exist, or a folder without configs.
    """
    out: list[Path] = []
    for t in targets:
        if t.is_dir():
            found = sorted(p for p in t.iterdir() if p.suffix in CONFIG_SUFFIXES and p.is_file())
            if not found:
                raise ConfigError("", "the folder holds no config (*.yaml, *.yml)", source=str(t))
            out += found
        elif str(t) == "-" or t.is_file():
            out.append(t)
        else:
            raise ConfigError("", "no such file or folder", source=str(t))
    if not out:
        raise ConfigError("CONFIG", "give at least one config or folder")
    return out


def rules_release(build_version: str, forced: str | None = None) -> tuple[str, str | None]:
    """The release whose rules are compared with a build, and how it was chosen when it is not the
    build's own: `--vllm-version` when given, else the build's release, else the newest release
    cgplan has rules for that is not newer than the build (a dev build, a nightly, a fork).

    >>> rules_release("0.33.0")
    ('0.33.0', None)
    >>> rules_release("0.33.5.dev12+gabc")[0]
    '0.33.0'
    """
    if forced is not None:
        release, note = resolve_vllm_version(forced, "--vllm-version")
        if release != build_version:
            return release, note or f"vLLM {build_version} compared with {release}'s rules (--vllm-version)"
        return release, note
    if release_for(build_version) == build_version:
        return build_version, None
    release = closest_release(build_version)
    return release, (
        f"cgplan has no rules for vLLM {build_version}: compared with {release}'s, the newest release "
        "cgplan has rules for that is not newer than it (its answer above is vLLM's own code)"
    )


def _cgplan_answer(path: Path, overrides: Overrides, policy: CapturePolicy | None) -> dict[str, Any]:
    """cgplan's plan under the compared release, as JSON, or {"error": message} where its rules
    refuse the config."""
    try:
        cfg = load_config(path, overrides)
        return plan_to_dict(build_plan(cfg.input, with_fixes=False, policy=policy or UPSTREAM))
    except ConfigError as e:
        return {"error": e.message}


def _notes(doc: dict[str, Any] | None) -> tuple[str, ...]:
    dropped = (doc or {}).get("not_engine_args") or []
    if not dropped:
        return ()
    return (f"not vLLM engine arguments, not handed to EngineArgs: {', '.join(map(str, dropped))}",)


def _report(
    run: EngineRun,
    paths: Sequence[Path],
    overrides: Overrides,
    forced_release: str | None,
    policy: CapturePolicy | None,
) -> VerifyReport:
    release, note = rules_release(run.vllm_version, forced_release)
    planned = overrides._replace(vllm_version=release)
    verdicts = []
    for path, doc, failure in zip(paths, run.answers, run.failures, strict=True):
        name = str(path)
        if doc is None:
            verdicts.append(
                no_answer(name, failure or "no answer", vllm_version=run.vllm_version, rules_release=release)
            )
            continue
        got = _cgplan_answer(path, planned, policy)
        verdicts.append(
            verdict(
                name,
                vllm_answer(doc),
                got,
                vllm_version=run.vllm_version,
                rules_release=release,
                notes=_notes(doc),
            )
        )
    return VerifyReport(
        python=run.python,
        vllm_version=run.vllm_version,
        rules_release=release,
        rules_note=note,
        verdicts=tuple(verdicts),
        drift=drift(verdicts),
        limits=CPU_HOST_LIMITS,
        vllm_location=run.vllm_location,
        import_s=run.import_s,
        seconds=run.seconds,
        policy=policy.name if policy is not None and policy is not UPSTREAM else None,
    )


def verify_paths(
    targets: Sequence[Path],
    python: Path,
    *,
    against: Path | None = None,
    vllm_version: str | None = None,
    overrides: Overrides = NO_OVERRIDES,
    policy: CapturePolicy | None = None,
    timeout_s: float = 600.0,
    jobs: int = 1,
    progress: EngineProgress | None = None,
) -> VerifyReport | BuildComparison:
    """vLLM's own code in `python` on every config of `targets` (files, or folders of configs),
    beside cgplan's rules for the nearest release (`vllm_version` forces one); with `against`, a
    second build on the same configs, and the before/after between the two (`python` is before).

    Every config is read and translated before vLLM is started, so a bad one costs no engine time.

    Raises:
        ConfigError: a bad config, path or option (exit 2).
        VllmEngineError: an interpreter cannot answer (no vLLM, an import failure, a crash; exit 3).
    """
    if vllm_version is not None:
        resolve_vllm_version(vllm_version, "--vllm-version")
    check_python(python)
    if against is not None:
        check_python(against)
    paths = config_paths(targets)
    for p in paths:
        load_config(p, overrides)  # the config as cgplan reads it: a bad one is refused here
    configs = [oracle_config(p, overrides) for p in paths]
    names = [p.name for p in paths]

    def run(py: Path) -> EngineRun:
        return ask_vllm(py, configs, timeout_s=timeout_s, jobs=jobs, progress=progress, names=names)

    first = _report(run(python), paths, overrides, vllm_version, policy)
    if against is None:
        return first
    second = _report(run(against), paths, overrides, vllm_version, policy)
    changes = []
    for a, b in zip(first.verdicts, second.verdicts, strict=True):
        why = a.no_answer or b.no_answer
        changes.append(change(a.config, a.vllm, b.vllm, why))
    return BuildComparison(first, second, tuple(changes))


__all__ = ["config_paths", "rules_release", "summarize", "verify_paths"]
