"""cgplan: a CUDA-graph capture planner and profiler for vLLM."""

from __future__ import annotations

__version__ = "0.1.0"
"""The one version string: pyproject.toml reads it from here (`[tool.setuptools.dynamic]`)."""
