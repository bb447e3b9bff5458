"""cgplan inside vLLM: an opt-in general plugin (entry point group `vllm.general_plugins`, name
`cgplan`; pyproject.toml).

vLLM calls `register()` in every process it starts (the API server, the engine core, each
worker). Unless the plugin is enabled (CGPLAN_PLUGIN=1, or `cgplan` named in VLLM_PLUGINS) it
returns at once, having imported nothing but the standard library and patched nothing. Enabled,
it waits for vLLM's worker modules to be imported (`cgplan.plugin.engine`), then: after the
engine's start-up (compile, capture, warmup) it logs one block holding the engine's captured set
and dispatcher against cgplan's plan of that engine's config, and while serving it counts steps
per dispatch outcome and batch size (a log line every N steps or S seconds; a Prometheus
counter). Every error inside the plugin is caught and logged as one line: the engine never fails
because of it, and its behaviour is unchanged.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

ENABLE_ENV = "CGPLAN_PLUGIN"
"""1 (or true, yes, on) enables the plugin."""
ENTRY_POINT = "cgplan"
"""The entry point's name: VLLM_PLUGINS=cgplan (vLLM's allow-list) enables it too."""
LOGGER = "vllm.cgplan"
"""A child of vLLM's logger: the lines carry vLLM's own prefix and go where vLLM's go."""


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the plugin is switched on in this process's environment.

    >>> enabled({}), enabled({"CGPLAN_PLUGIN": "1"}), enabled({"VLLM_PLUGINS": "lora,cgplan"})
    (False, True, True)
    >>> enabled({"CGPLAN_PLUGIN": "0", "VLLM_PLUGINS": ""})
    False
    """
    if environ.get(ENABLE_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    return ENTRY_POINT in (name.strip() for name in environ.get("VLLM_PLUGINS", "").split(","))


def log_error(where: str, error: BaseException) -> None:
    """One line, never a traceback: the plugin failed at `where`, the engine goes on."""
    try:
        message = " ".join(f"{type(error).__name__}: {error}".split())[:400]
        logging.getLogger(LOGGER).warning(
            "[cgplan] error: %s failed (%s); the engine is unaffected, the plugin stops there", where, message
        )
    except Exception:  # logging itself failed: nothing more can be said
        pass


def register() -> None:
    """vLLM's general-plugin hook (called in every vLLM process, possibly several times)."""
    if not enabled():
        return
    try:
        from cgplan.plugin.engine import install

        install()
    except Exception as e:  # never fail the engine: the plugin is an observer
        log_error("register", e)
