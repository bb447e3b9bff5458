"""The gate's checks on plans vLLM recorded (tests/data/oracle*/): pass, fail and the words they say."""

from __future__ import annotations
