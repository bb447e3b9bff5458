"""vLLM's human-readable integers, the one parser for YAML files and command lines alike."""

from __future__ import annotations

import re

_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def human_readable_int(text: str) -> int:
    """vLLM's `human_readable_int` (vllm/utils/argparse_utils.py, 0.33.0): decimal k/m/g/t,
    binary K/M/G/T (integers only), else `int()`.

    vLLM's argparse applies it to a YAML `--config` value as to a flag, so a YAML's `1.5K` is
    refused as vLLM refuses `--max-num-batched-tokens 1.5K` (cgplan's YAML reader used to
    read it as 1536); `8_1k` and `1e3k` are refused too, `2t` is 2*10^12.

    >>> [human_readable_int(t) for t in ("8k", "8K", "1.5k", "8_192", "1M", " 2t ")]
    [8000, 8192, 1500, 8192, 1048576, 2000000000000]

    Raises:
        ValueError: not an integer, or a decimal with a binary suffix (vLLM refuses `1.5K`).
    """
    value = text.strip()
    match = _HUMAN_INT.fullmatch(value)
    if match:
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            try:
                return int(float(number) * _DECIMAL[suffix])
            except OverflowError:  # a 400-digit number: float → inf (vLLM would show a traceback)
                raise ValueError(f"too large: {number[:20]}...{suffix}") from None
        if "." in number:
            raise ValueError(
                f"decimals are not allowed with binary suffixes; did you mean {number}{suffix.lower()}?"
            )
        return int(number) * _BINARY[suffix]
    return int(value)
