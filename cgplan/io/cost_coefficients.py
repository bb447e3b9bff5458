"""Cost coefficients as JSON or YAML files, capture reports as fit observations, the default H200 set.

Reading and writing only: pricing a plan with a set is core/plan/assess.py."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cgplan.core.predict.cost import CAPTURE_TIME_BASES, CostCoefficients, cost_input_for, unsplit_full_graphs
from cgplan.errors import ConfigError, ReportError, preview
from cgplan.io.config import load_config
from cgplan.io.files import ReadError, read_json, read_yaml
from cgplan.io.output import write_atomically
from cgplan.io.schema import SCHEMA_VERSION

if TYPE_CHECKING:  # the report types cost ~30 ms to build; `plan` never reads a report (issue 26)
    from cgplan.core.model.reports import CaptureReport, PlanDocument
    from cgplan.core.predict.cost_fit import CostObservation

DEFAULT_COEFFICIENTS = Path(__file__).parent.parent / "data" / "cost-h200.json"
"""Fitted from the H200 capture reports under benchmarks/results/h200 (docs/cost-model.md);
JSON, because every `plan` reads it and the C JSON parser costs microseconds where YAML costs
milliseconds."""

MOE_COEFFICIENTS = Path(__file__).parent.parent / "data" / "cost-h200-moe.json"
"""The set fitted on MoE/MLA captures (benchmarks/results/h200/moe, the command in that folder's
README and docs/cost-model.md), used for models with MoE or MLA layers; it states its own domain."""

COEFFICIENTS_KIND = "cgplan-cost-coefficients"
_FIELDS = {f.name: f for f in dataclasses.fields(CostCoefficients)}


def coefficients_to_dict(c: CostCoefficients) -> dict[str, Any]:
    """The document of a coefficient set (JSON or YAML)."""
    doc: dict[str, Any] = {"kind": COEFFICIENTS_KIND, "schema_version": SCHEMA_VERSION}
    for name in _FIELDS:
        v = getattr(c, name)
        doc[name] = list(v) if isinstance(v, tuple) else (round(v, 6) if isinstance(v, float) else v)
    return doc


def coefficients_text(c: CostCoefficients, as_json: bool) -> str:
    """What `cgplan calibrate -o` writes: JSON for a `.json` file, else commented YAML."""
    if as_json:
        return json.dumps(coefficients_to_dict(c), indent=2) + "\n"
    import yaml  # here, not at import: `plan` reads the shipped JSON set and writes no YAML (issue 18)

    text = "# cgplan cost-model coefficients (docs/cost-model.md); written by `cgplan calibrate`\n"
    return text + yaml.safe_dump(coefficients_to_dict(c), sort_keys=False)


def save_coefficients(c: CostCoefficients, path: Path) -> None:
    """Write a coefficient set (atomically): JSON when the name ends in .json, else YAML."""
    write_atomically(path, coefficients_text(c, path.suffix.lower() == ".json"))


def load_coefficients(path: str | Path) -> CostCoefficients:
    """Read a coefficient set written by `cgplan calibrate` (or by hand): JSON or YAML.

    Raises:
        ConfigError: located at the file and key that is wrong.
    """
    source = str(path)
    try:
        reader = read_json if Path(path).suffix.lower() == ".json" else read_yaml
        doc = reader(path, what="coefficient file", source=source)
    except ReadError as e:
        raise e.as_config_error() from None
    if not isinstance(doc, dict) or doc.get("kind") != COEFFICIENTS_KIND:
        raise ConfigError(
            "kind", f"not a cost-coefficient file (expected kind: {COEFFICIENTS_KIND})", source=source
        )
    values: dict[str, Any] = {}
    for name, f in _FIELDS.items():
        if name not in doc:
            if f.default is dataclasses.MISSING:
                raise ConfigError(name, "missing", source=source)
            continue
        v = doc[name]
        kind = str(f.type)
        if kind == "float | None" and v is None:
            values[name] = None
            continue
        if kind in ("float", "float | None"):
            if isinstance(v, bool) or not isinstance(v, int | float) or v != v or abs(v) > 1e9:
                raise ConfigError(name, f"expected a number, got {preview(v)}", source=source)
            values[name] = float(v)
        elif kind == "int":
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 1024:
                raise ConfigError(name, f"expected an integer 0..1024, got {preview(v)}", source=source)
            values[name] = v
        elif kind == "bool":
            if not isinstance(v, bool):
                raise ConfigError(name, f"expected true or false, got {preview(v)}", source=source)
            values[name] = v
        elif kind == "str":
            if not isinstance(v, str):
                raise ConfigError(name, f"expected text, got {preview(v)}", source=source)
            values[name] = v
        else:  # tuples
            values[name] = _tuple_field(name, v, source)
    if values.get("capture_time_basis", "capture") not in CAPTURE_TIME_BASES:
        raise ConfigError(
            "capture_time_basis",
            f"expected one of {', '.join(CAPTURE_TIME_BASES)} (got {preview(values['capture_time_basis'])})",
            source=source,
        )
    unknown = sorted(str(k) for k in doc if k not in _FIELDS and k not in ("kind", "schema_version"))
    if unknown:
        key = unknown[0] if unknown[0].isprintable() and len(unknown[0]) <= 80 else preview(unknown[0])
        raise ConfigError(key, "unknown key", source=source)
    return CostCoefficients(**values)


_MAX_NAMES = 1000
_MAX_RATIO = 1000.0
_MAX_WIDTH = 1 << 20


def _tuple_field(name: str, v: object, source: str) -> tuple[Any, ...]:
    """A list field checked entry by entry: what the cost model multiplies or compares with."""
    if not isinstance(v, list):
        raise ConfigError(name, f"expected a list (got {preview(v)})", source=source)
    if name in ("band_ratio", "capture_band_ratio"):
        ok = len(v) == 2 and all(isinstance(x, int | float) and not isinstance(x, bool) for x in v)
        # a capture band of [0, 0] is "not recorded" (a set fitted before it was kept)
        unrecorded = ok and name == "capture_band_ratio" and v[0] == v[1] == 0
        if not unrecorded and (not ok or not 0 < v[0] <= v[1] <= _MAX_RATIO):
            raise ConfigError(
                name,
                f"expected [low, high] with 0 < low <= high <= {_MAX_RATIO:g}"
                + (" (or [0, 0]: not recorded)" if name == "capture_band_ratio" else "")
                + f" (got {preview(v)})",
                source=source,
            )
        return (float(v[0]), float(v[1]))
    if name in ("hidden_size_range", "routed_experts_range", "largest_graph_tokens_range"):
        lowest = 1 if name == "hidden_size_range" else 0
        ok = len(v) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
        if not ok or not lowest <= v[0] <= v[1] <= _MAX_WIDTH:
            raise ConfigError(
                name,
                f"expected [lowest, highest] in {lowest}..{_MAX_WIDTH:,} (got {preview(v)})",
                source=source,
            )
        return (v[0], v[1])
    if name == "fitted_regimes":
        from cgplan.core.predict.cost import REGIMES

        bad = [x for x in v if x not in REGIMES]
        if bad:
            raise ConfigError(
                name, f"unknown regime {preview(bad[0])} (known: {', '.join(REGIMES)})", source=source
            )
        return tuple(v)
    if len(v) > _MAX_NAMES or not all(isinstance(x, str) and 0 < len(x) <= 200 for x in v):
        raise ConfigError(name, f"expected a list of names (got {preview(v)})", source=source)
    return tuple(v)


def default_coefficients() -> CostCoefficients:
    """The shipped H200 set."""
    return load_coefficients(DEFAULT_COEFFICIENTS)


def moe_coefficients(path: Path | None = None) -> CostCoefficients | None:
    """The shipped MoE/MLA set, or None while there is none."""
    p = path or MOE_COEFFICIENTS
    return load_coefficients(p) if p.is_file() else None


SOURCE_MAX_CHARS = 4096
"""The longest `source` a report may name (PATH_MAX on Linux)."""
NAME_MAX_BYTES = 255
"""The longest name of one folder or file in it (NAME_MAX)."""


def _source_config(raw: str | None, report: Path, root: Path) -> Path:
    """The config a report names, only ever inside `root` (the folder the user named, or the
    working directory): a report is data, so its `source` cannot make cgplan open a file
    anywhere else, by an absolute path, `..`, a link or a search of parent folders."""
    where = f"{report}:source"
    if not raw:
        raise ReportError(f"{where}: missing (expected the config capture ran, relative to {root})")
    # A report is data: its `source` is checked as a name before the file system sees it (a NUL
    # or an over-long name was a traceback from the OS call; issue 33).
    if "\x00" in raw:
        raise ReportError(f"{where}: holds a NUL character; not a file name (got {preview(raw)})")
    if len(raw) > SOURCE_MAX_CHARS:
        raise ReportError(
            f"{where}: longer than {SOURCE_MAX_CHARS:,} characters; not a file name (got {preview(raw)})"
        )
    if any(len(os.fsencode(part)) > NAME_MAX_BYTES for part in Path(raw).parts):
        raise ReportError(
            f"{where}: a name in it is longer than {NAME_MAX_BYTES} bytes; not a file name "
            f"(got {preview(raw)})"
        )
    src = Path(raw)
    if src.is_absolute() or ".." in src.parts or src.suffix.lower() not in (".yaml", ".yml"):
        raise ReportError(
            f"{where}: expected a relative path to a .yaml config inside {root} (got {preview(raw)})"
        )
    try:
        base = root.resolve()
        target = (base / src).resolve()
        is_file = target.is_file()
    except (OSError, ValueError) as e:
        raise ReportError(
            f"{where}: cannot look {preview(raw)} up: {getattr(e, 'strerror', None) or e}"
        ) from None
    if not target.is_relative_to(base):
        raise ReportError(f"{where}: {preview(raw)} leads outside {root} (through a link); not read")
    if not is_file:
        raise ReportError(
            f"{where}: {preview(raw)} is not a file in {root} (give --configs DIR: the folder capture ran in)"
        )
    return target


def observation_from_report(
    doc: PlanDocument | CaptureReport, report: Path, root: Path | None = None
) -> CostObservation:
    """Reduce a complete vLLM capture report to a fit observation; its config is read from
    `root` (default: the working directory).

    Raises:
        ReportError: not a complete capture with NVML figures, or its config cannot be found; a
            figure out of range, at its key path.
    """
    # the report reader only here: `plan` (which prices every plan) does not pay for it (issue 18)
    from cgplan.core.model.reports import CaptureReport
    from cgplan.core.predict.cost_fit import CostObservation, ObservedGraph
    from cgplan.io.reports import measurements
    from cgplan.io.schema.reports import number

    if not isinstance(doc, CaptureReport) or doc.status != "complete":
        status = doc.status if isinstance(doc, CaptureReport) else None
        raise ReportError(f"{report}: not a complete capture report (status {preview(status)})")
    m = doc.measured
    nvml = m.capture_nvml_delta_bytes
    if nvml is None:
        raise ReportError(f"{report}: no NVML figure for the capture phase")
    if m.backend == "fake":
        raise ReportError(f"{report}: made by the fake backend (no GPU): nothing to fit on")
    measured = measurements(m.graphs)
    wall_s = m.capture_wall_s
    root = Path.cwd() if root is None else root
    src = _source_config(doc.source, report, root)
    try:
        inp = load_config(src, base_dir=root).input  # the folder capture ran in: its paths start there
    except ConfigError:
        # Not quoted: the config is a file the report named, not one the user did.
        raise ReportError(
            f"{report}:source: its config {doc.source} does not load "
            f"(`cgplan plan {doc.source}` in {root} says why)"
        ) from None
    runner = m.model_runner or doc.plan.model_runner or "v1"
    if runner not in ("v1", "v2"):
        raise ReportError(f"{report}:measured.model_runner: expected v1 or v2 (got {preview(runner)})")
    backend = doc.plan.attention_backend or "FLASH_ATTN"
    if not backend.replace("_", "").isalnum() or len(backend) > 64:
        raise ReportError(
            f"{report}:plan.attention_backend: expected a backend name (got {preview(backend)})"
        )
    graphs = []
    for g in measured:
        if g.nvml_delta_bytes is None:
            raise ReportError(f"{report}: graph {g.order} has no NVML figure")
        graphs.append(
            ObservedGraph(
                g.family,
                g.mode,
                g.num_tokens,
                g.pieces or 1,
                g.nvml_delta_bytes,
                g.torch_reserved_delta_bytes,
                g.capture_time_ms,
                g.num_reqs,
                g.window_time_ms,
            )
        )
    est, took = m.vllm.estimated_cudagraph_gib, m.vllm.capture_took_gib
    name = report.name.removesuffix(".json")
    return CostObservation(
        name=name,
        inp=dataclasses.replace(
            cost_input_for(inp, runner, backend),
            unsplit_full=unsplit_full_graphs((g.family, g.mode, g.num_tokens, g.num_reqs) for g in graphs),
        ),
        graphs=tuple(graphs),
        capture_nvml_bytes=nvml,
        capture_wall_s=wall_s,
        vllm_estimate_gib=None
        if est is None
        else number(est, f"{report}:measured.vllm.estimated_cudagraph_gib"),
        vllm_took_gib=None if took is None else number(took, f"{report}:measured.vllm.capture_took_gib"),
    )
