"""A fix's gain in time is priced under the capture policy the plan was made with.

Before: `with_latency` re-planned every fix under vLLM's own policy whatever `--policy` said, so a
fix found under a what-if policy was priced on another ladder than the one it was found on.
"""

from __future__ import annotations

from typing import Any

import pytest

import cgplan.core.plan.build as core_plan
from cgplan.api.plan import plan_file
from cgplan.core.plan.policies import BUILTIN_POLICIES, UPSTREAM
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
EXAMPLE = ROOT / "configs/examples/pr50488-eagle-k16.yaml"


@pytest.mark.parametrize("name", [n for n in BUILTIN_POLICIES if n != "upstream"])
def test_fixes_are_priced_under_the_chosen_policy(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    policy = BUILTIN_POLICIES[name]
    seen: list[Any] = []
    real = core_plan.plan_again

    def spy(inp: Any, policy: Any = UPSTREAM) -> Any:
        seen.append(policy)
        return real(inp, policy)

    monkeypatch.setattr(core_plan, "plan_again", spy)
    _, plan = plan_file(EXAMPLE, policy=policy)
    assert plan.latency is not None
    if not plan.fixes:
        assert plan.latency.fixes == ()
        return
    assert plan.latency.fixes and seen, "every fix is re-planned to price it"
    assert all(p == policy for p in seen), [getattr(p, "name", p) for p in seen]
