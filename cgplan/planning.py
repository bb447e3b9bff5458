"""The library entry point behind `cgplan plan`: a config file in, a plan out."""

from __future__ import annotations

from pathlib import Path

from cgplan.config import LoadedConfig, Overrides, load_config
from cgplan.core.plan import build_plan
from cgplan.core.types import Plan
from cgplan.errors import ConfigRejected


def plan_file(
    path: str | Path, overrides: Overrides | None = None, *, with_fixes: bool = True
) -> tuple[LoadedConfig, Plan]:
    """Load `path` and plan it; vLLM's refusals come back located in that file.

    Raises:
        ConfigError: bad input, or a config the chosen release refuses (ConfigRejected).
    """
    loaded = load_config(path, overrides or Overrides())
    try:
        return loaded, build_plan(loaded.input, with_fixes=with_fixes)
    except ConfigRejected as e:
        raise e.located(str(path)) from None
