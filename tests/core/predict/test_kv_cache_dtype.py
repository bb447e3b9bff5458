"""Issue 29: kv_cache_dtype per release against vLLM's own code (tests/data/kv_cache_dtypes.json,
recorded by scripts/oracle/kv_cache_dtypes.py from vLLM 0.26.0-0.33.0): the accepted values, the
refusal of any other in vLLM's words, and the bytes per token of every value cgplan models."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cgplan.core.model.modes import Platform
from cgplan.core.model.spec import ModelShape, PlanInput
from cgplan.core.model.types import Rejected
from cgplan.core.plan.build import build_plan
from cgplan.core.predict.kv import KV_DTYPE_BYTES, kv_bytes_per_token, kv_element_bytes, kv_withheld
from cgplan.core.vllm.releases import RELEASES, kv_cache_dtype_message
from tests.paths import TESTS_DIR

VLLM: dict[str, dict[str, object]] = json.loads((TESTS_DIR / "data" / "kv_cache_dtypes.json").read_text())


def _recorded(version: str) -> dict[str, object]:
    # 0.27.1 is a patch of 0.27.0 (no venv of its own): the same cache.py
    return VLLM.get(version) or VLLM[version.rsplit(".", 1)[0] + ".0"]


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_accepted_values_are_vllms_cachedtype(version: str) -> None:
    assert RELEASES[version].kv_cache_dtypes == tuple(_recorded(version)["accepted"])  # type: ignore[arg-type]


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_refusal_is_vllms_message(version: str) -> None:
    rec = _recorded(version)
    assert kv_cache_dtype_message(str(rec["invalid"]), RELEASES[version]) == rec["refusal"]


def _inp(version: str, kv: str, dtype: str, heads: int, head_dim: int) -> PlanInput:
    shape = ModelShape(
        hidden_size=4096, num_hidden_layers=1, num_key_value_heads=heads, head_dim=head_dim, dtype=dtype
    )
    return PlanInput(
        vllm_version=version,
        platform=Platform.HOPPER,
        model=shape,
        max_num_seqs=8,
        max_num_batched_tokens=8192,
        kv_cache_dtype=kv,
    )


@pytest.mark.parametrize("version", sorted(VLLM))
def test_bytes_per_token_are_vllms_for_every_modelled_value(version: str) -> None:
    table = VLLM[version]["bytes_per_token_per_layer"]
    assert isinstance(table, dict)
    checked = 0
    for kv, row in table.items():
        for key, want in row.items():
            dtype, dims = key.split("/")
            heads, head_dim = (int(x) for x in dims.split("x"))
            got = kv_bytes_per_token(_inp(version, kv, dtype, heads, head_dim))
            if kv == "auto" or kv in KV_DTYPE_BYTES:
                assert got == want, (version, kv, key)
                checked += 1
            else:
                # a quantised layout: vLLM's backend packs or pads it, so the bare spec's answer is
                # not the served one; cgplan withholds it by name
                assert got is None
                assert kv in kv_withheld(_inp(version, kv, dtype, heads, head_dim))
    assert checked >= 7 * 4


def test_fp8_halves_bfloat16() -> None:
    fp8, auto = kv_element_bytes("fp8", "bfloat16"), kv_element_bytes("auto", "bfloat16")
    assert fp8 is not None and auto is not None and fp8 * 2 == auto


@pytest.mark.parametrize("version", ["0.26.0", "0.33.0"])
def test_a_value_the_release_does_not_accept_is_refused(version: str) -> None:
    rules = RELEASES[version]
    bad = "octave_k3v4" if version == "0.26.0" else "fp4x"
    inp = _inp(version, bad, "bfloat16", 8, 128)
    with pytest.raises(Rejected) as e:
        build_plan(replace(inp, model=replace(inp.model, num_hidden_layers=32)))
    assert str(e.value).endswith(kv_cache_dtype_message(bad, rules))
