"""KV connectors that require PIECEWISE (#27): `requires_piecewise_for_cudagraph`, per release.

The plans are held to vLLM's own code by tests/core/vllm/test_golden.py (corpus `kv-*`, every release);
here the notes and refusals are held to what vLLM logged and raised for the same configs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from cgplan.core.plan.build import build_plan
from cgplan.core.vllm.releases import SUPPORTED_VERSIONS, first_release
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides, load_config, parse_config
from tests.paths import TESTS_DIR

DATA = TESTS_DIR / "data"


def _recorded(stem: str, version: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(
        gzip.decompress((DATA / "oracle" / f"{stem}.{version}.json.gz").read_bytes())
    )
    return doc


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@pytest.mark.parametrize(
    "stem", ["kv-lmcache-layerwise", "kv-multi-layerwise", "kv-lmcache-layerwise-full-decode-only"]
)
def test_connector_note_is_vllms_warning(stem: str, version: str) -> None:
    plan = build_plan(load_config(DATA / "corpus" / f"{stem}.yaml", Overrides(vllm_version=version)).input)
    note = next(n.message for n in plan.notes if n.kind == "kv_connector_mode")
    assert f"WARNING: {note}" in _recorded(stem, version)["log"]
    assert plan.cudagraph_mode == "PIECEWISE"


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_unregistered_connector_is_vllms_error(version: str) -> None:
    inp = load_config(DATA / "corpus" / "kv-unregistered.yaml", Overrides(vllm_version=version)).input
    with pytest.raises(ConfigError) as info:
        build_plan(inp)
    assert info.value.problem in _recorded("kv-unregistered", version)["error"]


def _parse(kt: object, version: str | None = None) -> Any:
    inp, _ = parse_config(
        {"model": "configs/models/tiny-llama", "kv_transfer_config": kt},
        Path.cwd(),
        Overrides(vllm_version=version),
    )
    return inp


def test_layerwise_is_truthiness_and_only_lmcache() -> None:
    """`extra_config.get("use_layerwise", False)` in an `if`: vLLM tests truthiness."""
    lm = {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}
    for value, piecewise in ((True, True), (1, True), ("yes", True), (False, False), (0, False)):
        plan = build_plan(_parse({**lm, "kv_connector_extra_config": {"use_layerwise": value}}))
        assert (plan.cudagraph_mode == "PIECEWISE") is piecewise, value
    nixl = {
        "kv_connector": "NixlConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"use_layerwise": True},
    }
    assert build_plan(_parse(nixl)).cudagraph_mode == "FULL_AND_PIECEWISE"


_HISPARSE = first_release(lambda r: "HiSparseConnector" in r.kv_connectors)


def test_refusals_by_name() -> None:
    with pytest.raises(
        ConfigError, match=r"kv_transfer_config\.kv_role: Please specify kv_role when kv_connector is set"
    ):
        _parse({"kv_connector": "NixlConnector"})
    with pytest.raises(ConfigError, match=r"kv_transfer_config\.kv_role: Unsupported kv_role: both"):
        _parse({"kv_connector": "NixlConnector", "kv_role": "both"})
    with pytest.raises(ConfigError, match="kv_connector_module_path: an out-of-tree KV connector"):
        _parse({"kv_connector": "MyConnector", "kv_role": "kv_both", "kv_connector_module_path": "my.mod"})
    with pytest.raises(ConfigError, match="HiSparseConnector changes what vLLM captures"):
        _parse({"kv_connector": "HiSparseConnector", "kv_role": "kv_both"}, _HISPARSE)
    with pytest.raises(ConfigError, match=r"connectors\[0\]\.kv_role: Please specify kv_role"):
        _parse(
            {
                "kv_connector": "MultiConnector",
                "kv_role": "kv_both",
                "kv_connector_extra_config": {"connectors": [{"kv_connector": "NixlConnector"}]},
            }
        )
