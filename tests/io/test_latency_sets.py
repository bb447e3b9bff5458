"""The shipped step-time sets: each is the card it names, and a plan is priced with its own card's set."""

from __future__ import annotations

from cgplan.core.predict.latency import latency_withheld
from cgplan.io.config import load_config
from cgplan.io.latency_coefficients import SHIPPED_LATENCY, load_latency, shipped_latency, shipped_latency_for
from tests.paths import ROOT_DIR

CONFIG = ROOT_DIR / "configs" / "examples" / "pr50488-eagle-k16.yaml"


def test_every_shipped_set_was_timed_on_the_card_it_is_filed_under() -> None:
    for gpu, path in SHIPPED_LATENCY.items():
        assert load_latency(path).gpu == gpu, path


def test_a_card_with_its_own_set_gets_it_and_its_step_time() -> None:
    from cgplan.io.config import Overrides

    for gpu in SHIPPED_LATENCY:
        inp = load_config(CONFIG, Overrides(platform=gpu)).input
        c = shipped_latency_for(inp.gpu_name)
        assert c.gpu == gpu
        assert latency_withheld(c, inp) == ()


def test_a_family_name_or_a_card_without_a_set_gets_the_default_set() -> None:
    from cgplan.io.config import Overrides

    assert shipped_latency_for("") is shipped_latency()
    inp = load_config(CONFIG, Overrides(platform="hopper")).input
    assert shipped_latency_for(inp.gpu_name) is shipped_latency()
    assert latency_withheld(shipped_latency(), inp) == ()  # hopper stands for the H200 it was timed on
    for platform in ("L40S", "H100 NVL", "B200", "A100"):
        inp = load_config(CONFIG, Overrides(platform=platform)).input
        assert inp.gpu_name not in SHIPPED_LATENCY
        c = shipped_latency_for(inp.gpu_name)
        assert c is shipped_latency()
        assert latency_withheld(c, inp), platform  # a card it was not timed on: no step time
