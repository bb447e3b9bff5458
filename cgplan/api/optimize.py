"""The library entry point behind `cgplan optimize`: the config and the traffic file read, then
the search over ladders (core/optimize/search.py), whose `Optimized` holds the best ladder's flags."""

from __future__ import annotations

from pathlib import Path

from cgplan.core.optimize.search import Optimized, check_options, optimize
from cgplan.core.plan.build import build_plan
from cgplan.core.predict.latency import LatencyCoefficients
from cgplan.errors import ConfigError, ConfigRejected
from cgplan.io.config import Overrides, load_config
from cgplan.io.latency_coefficients import shipped_latency_for
from cgplan.io.traffic import load_traffic

__all__ = ["Optimized", "optimize_config"]


def optimize_config(
    config: Path,
    traffic_path: Path,
    overrides: Overrides,
    *,
    max_sizes: int | None = None,
    max_graphs: int | None = None,
    eager_step_cost: float = 1000.0,
    max_capture_size: int | None = None,
    objective: str = "padding",
    latency: LatencyCoefficients | None = None,
    max_memory_mib: float | None = None,
    max_capture_s: float | None = None,
    relax: tuple[str, ...] = (),
) -> Optimized:
    """Read the config and the traffic, plan the default ladder, and search (core.optimize.optimize:
    the objectives, budgets and gate are described there); `latency` defaults to the shipped set.

    Raises:
        ConfigError: a bad option, config or traffic file, located at the file it came from.
    """
    from cgplan.api.plan import shipped_coefficients_for  # the set plan prices this model with

    check_options(
        objective, relax, max_memory_mib, max_capture_s
    )  # before any file is read, as the command line is checked first
    loaded = load_config(config, overrides)
    traffic = load_traffic(traffic_path)
    inp = loaded.input
    try:
        default_plan = build_plan(inp, with_fixes=False)
    except ConfigRejected as e:
        raise e.located(str(config)) from None
    try:
        return optimize(
            inp,
            default_plan,
            traffic,
            latency=latency or shipped_latency_for(inp.gpu_name),
            coefficients=shipped_coefficients_for(inp),
            max_sizes=max_sizes,
            max_graphs=max_graphs,
            eager_step_cost=eager_step_cost,
            max_capture_size=max_capture_size,
            objective=objective,
            max_memory_mib=max_memory_mib,
            max_capture_s=max_capture_s,
            relax=relax,
            notes=tuple(loaded.notes),
        )
    except ConfigError as e:
        # The core's one error without a key path is the traffic's (no batch shapes): its file.
        if not e.path and e.source is None:
            raise e.located(str(traffic_path)) from None
        raise
