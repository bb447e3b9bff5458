"""`cgplan verify`'s text and markdown against golden files (tests/golden/verify-*), from vLLM's
recorded answers through the fake interpreter (tests/api/fake_vllm.py); regenerate with
`pytest tests/render/test_verify_render.py --update-golden` and read the diff."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cgplan.api.verify import verify_paths
from cgplan.core.compare.verify import BuildComparison, VerifyReport
from cgplan.core.vllm import releases
from cgplan.render.verify import (
    render_against,
    render_against_markdown,
    render_verify,
    render_verify_markdown,
)
from tests.api.test_verify import answer, fake
from tests.paths import ROOT_DIR
from tests.render.test_render import GOLDEN, _check_golden

EXAMPLE = Path("configs/examples/pr50488-eagle-k16.yaml")


def _steady(r: VerifyReport, python: str) -> VerifyReport:
    """The report without what differs run to run (the interpreter's path, the seconds)."""
    return replace(r, python=python, import_s=10.0, seconds=tuple(1.0 for _ in r.seconds))


@pytest.fixture
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT_DIR)  # config names as a user in a checkout gives them


@pytest.mark.usefixtures("at_root")
@pytest.mark.parametrize("planted", [False, True], ids=["agrees", "planted-rule"])
def test_verify_golden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: bool, update_golden: bool
) -> None:
    if planted:
        rules = releases.RELEASES["0.33.0"]
        monkeypatch.setitem(releases.RELEASES, "0.33.0", replace(rules, decode_sizes_capped=False))
    r = verify_paths([EXAMPLE], fake(tmp_path, [answer("0.33.0")]))
    assert isinstance(r, VerifyReport)
    r = _steady(r, "venv-0.33.0/bin/python")
    name = "verify-planted-rule" if planted else "verify-example"
    _check_golden(GOLDEN / f"{name}.txt", render_verify(r), update_golden)
    _check_golden(GOLDEN / f"{name}.md", render_verify_markdown(r), update_golden)


@pytest.mark.usefixtures("at_root")
def test_against_golden(tmp_path: Path, update_golden: bool) -> None:
    before = fake(tmp_path, [answer("0.28.0")], version="0.28.0")
    after = fake(tmp_path, [answer("0.29.0")], version="0.29.0")
    c = verify_paths([EXAMPLE], before, against=after)
    assert isinstance(c, BuildComparison)
    c = replace(
        c,
        before=_steady(c.before, "venv-0.28.0/bin/python"),
        after=_steady(c.after, "venv-0.29.0/bin/python"),
    )
    _check_golden(GOLDEN / "verify-against.txt", render_against(c), update_golden)
    _check_golden(GOLDEN / "verify-against.md", render_against_markdown(c), update_golden)
