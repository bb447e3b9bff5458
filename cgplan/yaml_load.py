"""The one YAML reader of every file cgplan reads: libyaml's C parser when PyYAML has it.

`yaml.safe_load` runs PyYAML's pure-Python scanner and parser, about 10× slower than libyaml
(`optimize --traffic` spent most of its time there). `CSafeLoader` builds the same Python
values with the same `SafeConstructor`: unknown tags are refused, aliases are shared objects
(an alias bomb costs its text, not its expansion), errors carry line and column. Two
differences are smoothed here: libyaml limits nesting to 1,000 levels with a scanner error
where PyYAML hits Python's recursion limit, and the callers already say "nested too deeply"
for a RecursionError.
"""

from __future__ import annotations

from typing import Any

import yaml

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser with PyYAML's safe constructor; the pure-Python one without libyaml."""


def safe_load(text: str) -> Any:
    """`yaml.safe_load(text)`, through libyaml when available.

    Raises:
        yaml.YAMLError: not YAML (with `problem_mark` line and column where libyaml gives them).
        RecursionError: nested deeper than the parser allows.
        ValueError: a scalar Python cannot hold (a 5,000-digit integer, a date such as 2001-13-45).
    """
    try:
        return yaml.load(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as e:
        if e.problem == "exceeded maximum nesting depth":
            raise RecursionError("YAML nested too deeply") from None
        raise
