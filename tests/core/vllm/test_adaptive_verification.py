"""`speculative_config.enable_adaptive_verification` by release, against vLLM's recorded answers.

Recorded (tests/data/oracle-adaptive/) with vLLM's own code:
    python3 scripts/record_golden.py --venv-root /work/oracle-venvs --versions 0.26.0 0.29.0 0.31.0 0.33.0 \\
        --out-dir tests/data/oracle-adaptive tests/data/corpus-adaptive/dspark-adaptive-k3.yaml
Releases without the key reject it (pydantic's unexpected keyword argument); releases with it
accept the config, where cgplan says by name that it does not model adaptive verification.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from cgplan.core.plan.build import build_plan
from cgplan.core.vllm.releases import rules_for
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides, load_config
from tests.paths import TESTS_DIR

CONFIG = TESTS_DIR / "data" / "corpus-adaptive" / "dspark-adaptive-k3.yaml"
RECORDED = sorted((TESTS_DIR / "data" / "oracle-adaptive").glob("dspark-adaptive-k3.*.json.gz"))


def test_every_release_side_is_recorded() -> None:
    versions = {p.name.removeprefix("dspark-adaptive-k3.").removesuffix(".json.gz") for p in RECORDED}
    assert {rules_for(v).adaptive_verification for v in versions} == {True, False}


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name.split(".", 1)[1].removesuffix(".json.gz"))
def test_adaptive_verification_is_refused_exactly_where_vllm_refuses_it(path: Path) -> None:
    rec = json.loads(gzip.decompress(path.read_bytes()))
    version = rec["vllm_version"]
    vllm_refuses = bool(rec.get("error"))
    assert rules_for(version).adaptive_verification is not vllm_refuses
    with pytest.raises(ConfigError) as e:
        build_plan(load_config(CONFIG, Overrides(vllm_version=version)).input, with_fixes=False)
    msg = str(e.value)
    if vllm_refuses:
        assert "Unexpected keyword argument" in rec["error"]
        assert "unexpected keyword argument" in msg and "no adaptive verification" in msg, msg
    else:
        # vLLM accepts it: cgplan must not claim vLLM refuses, only that it does not model it
        assert "does not model" in msg and "unexpected keyword" not in msg, msg
