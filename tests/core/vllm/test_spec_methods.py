"""Speculative method names as each release's `SpeculativeConfig` takes them.

tests/data/oracle-spec-methods/methods.json is read off vLLM's own vllm/config/speculative.py per
release (scripts/oracle/spec_methods.py): every name `SpeculativeMethod` admits, the MTP model types
`__post_init__` replaces by "mtp", and that warning. A name vLLM has is never "unknown": cgplan
plans it (an MTP model type is MTP) or refuses it as not modelled; a name vLLM lacks is unknown.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from cgplan.core.model.spec import SPEC_METHODS
from cgplan.core.plan.build import build_plan
from cgplan.core.vllm.releases import RELEASES, SUPPORTED_VERSIONS
from cgplan.errors import ConfigError
from cgplan.io.config import load_config
from cgplan.io.schema.plan import plan_to_dict
from tests.paths import TESTS_DIR

RECORDED = json.loads((TESTS_DIR / "data/oracle-spec-methods/methods.json").read_text())
MTP = TESTS_DIR / "data/corpus/mtp-k3-dsv3-mns32.yaml"


def _config(tmp_path: Path, method: str, version: str) -> Path:
    text = MTP.read_text().replace("method: mtp", f"method: {method}").replace("0.33.0", version)
    path = tmp_path / f"{method}.yaml"
    path.write_text(text.replace("configs/models/", str(MTP.parents[3] / "configs/models") + "/"))
    return path


def test_every_release_is_recorded() -> None:
    assert set(RECORDED) == set(SUPPORTED_VERSIONS)


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_the_release_tables_are_vllms_method_names(version: str) -> None:
    rules, rec = RELEASES[version], RECORDED[version]
    assert sorted(rules.mtp_model_types) == rec["mtp_model_types"]
    assert (
        sorted({*SPEC_METHODS, *rules.mtp_model_types, *rules.unmodelled_speculative_methods})
        == rec["methods"]
    )
    assert not set(rules.unmodelled_speculative_methods) & {*SPEC_METHODS, *rules.mtp_model_types}


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_an_mtp_model_type_is_mtp_with_vllms_warning(tmp_path: Path, version: str) -> None:
    mtp = plan_to_dict(build_plan(load_config(_config(tmp_path, "mtp", version)).input, with_fixes=False))
    for name in RELEASES[version].mtp_model_types:
        if name == "mtp":
            continue
        cfg = load_config(_config(tmp_path, name, version))
        assert cfg.notes == (RECORDED[version]["mtp_alias_warning"].replace("%s", name),)
        assert plan_to_dict(build_plan(cfg.input, with_fixes=False)) == mtp, name


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_methods_vllm_has_are_not_modelled_and_the_rest_unknown(tmp_path: Path, version: str) -> None:
    for name in RELEASES[version].unmodelled_speculative_methods:
        with pytest.raises(
            ConfigError, match=rf"{name}: a vLLM {version} speculative method cgplan does not model"
        ):
            load_config(_config(tmp_path, name, version))
    for name in {n for r in RECORDED.values() for n in r["methods"]} - set(RECORDED[version]["methods"]):
        with pytest.raises(ConfigError, match="unknown value"):
            load_config(_config(tmp_path, name, version))


def test_a_recorded_alias_is_vllms_mtp() -> None:
    """vLLM's own config code, run on the alias (tests/data/oracle-boundaries/mtp-alias-*)."""
    for path in sorted((TESTS_DIR / "data/oracle-boundaries").glob("mtp-alias-*.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        name = "deepseek_mtp" if "deepseek" in path.name else "glm4_moe_mtp"
        assert doc["config"]["speculative_method"] == "mtp"
        assert f"WARNING: method `{name}` is deprecated and replaced with mtp." in doc["log"]


def test_no_method_is_not_modelled_inference(tmp_path: Path) -> None:
    path = tmp_path / "none.yaml"
    path.write_text(
        MTP.read_text()
        .replace("  method: mtp\n", "")
        .replace("configs/models/", str(MTP.parents[3] / "configs/models") + "/")
    )
    with pytest.raises(ConfigError, match="not given: vLLM infers the method from the draft model's name"):
        load_config(path)


def test_moonep_is_not_modelled(tmp_path: Path) -> None:
    """vLLM 0.31+ sets cudagraph_mode NONE wherever MoonEP's all-to-all runs (vllm/config/vllm.py):
    cgplan, which does not model that, must not plan graphs for it."""
    path = tmp_path / "moonep.yaml"
    text = (TESTS_DIR / "data/corpus-deploy/a2a-ht-dp2-moe-ep.yaml").read_text()
    path.write_text(
        text.replace("deepep_high_throughput", "moonep").replace(
            "configs/models/", str(MTP.parents[3] / "configs/models") + "/"
        )
    )
    with pytest.raises(ConfigError, match="all2all_backend: moonep: cgplan does not model it yet"):
        load_config(path)
