"""`cgplan verify` through its subprocess path, without vLLM: the interpreter is tests/api/fake_vllm.py,
which runs cgplan's real engine file with vLLM's answers recorded by scripts/record_golden.py:

    python3 scripts/record_golden.py --venv-root /work/oracle-venvs --versions 0.28.0 0.29.0 0.33.0 \\
        --out-dir tests/data/oracle-verify configs/examples/pr50488-eagle-k16.yaml

(and the corpus records under tests/data/oracle/). A rule planted into cgplan's release table must
show as the field it changes.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from cgplan.api.verify import config_paths, rules_release, verify_paths
from cgplan.core.compare.verify import BuildComparison, VerifyReport
from cgplan.core.vllm import releases
from cgplan.errors import ConfigError, VllmEngineError
from cgplan.gpu.vllm_cpu import ask_vllm
from cgplan.io.oracle_input import oracle_config
from tests.api.fake_vllm import tool
from tests.paths import ROOT_DIR, TESTS_DIR

EXAMPLE = ROOT_DIR / "configs" / "examples" / "pr50488-eagle-k16.yaml"
RECORDED = TESTS_DIR / "data" / "oracle-verify"
CORPUS = TESTS_DIR / "data" / "corpus"
ORACLE = TESTS_DIR / "data" / "oracle"


def answer(version: str) -> Path:
    """vLLM's own answer for the example (#50488's case), recorded under `version`."""
    return RECORDED / f"pr50488-eagle-k16.{version}.json.gz"


def fake(tmp_path: Path, answers: list[Path], version: str = "0.33.0", mode: str = "ok") -> Path:
    """An interpreter that answers with `answers` (one per config) as vLLM `version`."""
    folder = tmp_path / f"py-{version}-{mode}-{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    return tool(
        folder,
        FAKE_VLLM_ANSWERS=os.pathsep.join(map(str, answers)),
        FAKE_VLLM_VERSION=version,
        FAKE_VLLM_MODE=mode,
    )


def test_the_recorded_answers_are_vllms_for_the_example() -> None:
    """The recording's input is the example's translation (the same dict the product hands vLLM)."""
    for version in ("0.28.0", "0.29.0", "0.33.0"):
        doc = json.loads(gzip.decompress(answer(version).read_bytes()))
        assert doc["_recorded"]["vllm_version"] == version
        got = oracle_config(EXAMPLE)
        got["model_dir"] = got["model_dir"].replace(str(ROOT_DIR), "<repo>")
        assert doc["input"] == got


def test_the_example_agrees_with_vllm_0_33(tmp_path: Path) -> None:
    r = verify_paths([EXAMPLE], fake(tmp_path, [answer("0.33.0")]))
    assert isinstance(r, VerifyReport)
    assert (r.agree, r.vllm_version, r.rules_release, r.rules_note) == (True, "0.33.0", "0.33.0", None)
    v = r.verdicts[0]
    assert v.differing == ()
    assert {"capture_sizes", "graphs", "uniform_decode", "mixed", "cudagraph_mode"} <= set(v.compared)
    # vLLM's own answer, summarised: #50488's case, 31-32 requests eager (ux.md)
    assert len(v.vllm.capture_sizes) == 55 and v.vllm.total_graphs == 178
    assert [(g.query_len, g.from_reqs, g.to_reqs, g.mode) for g in v.vllm.gaps] == [(17, 31, 32, "NONE")]
    assert r.limits and r.seconds and len(r.seconds) == 1


def test_a_planted_rule_change_is_the_field_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.33.0's decode sizes uncapped (the rule #54418 added, removed): cgplan now appends 527 and
    544, vLLM's code does not; the verdict names the fields, the rule, and both answers."""
    rules = releases.RELEASES["0.33.0"]
    monkeypatch.setitem(releases.RELEASES, "0.33.0", replace(rules, decode_sizes_capped=False))
    r = verify_paths([EXAMPLE], fake(tmp_path, [answer("0.33.0")]))
    assert isinstance(r, VerifyReport)
    v = r.verdicts[0]
    assert r.agree is False and v.agree is False
    fields = {d.field: d for d in v.differing}
    assert {"capture_sizes", "max_capture_size", "graphs", "uniform_decode"} <= set(fields)
    assert fields["capture_sizes"].vllm == "55 sizes, 1..512"
    assert fields["capture_sizes"].cgplan.endswith(", 1..544")  # 544 = 32 × 17, the widest decode step
    assert "ladder" in fields["capture_sizes"].rule
    assert {d.field for d in r.drift if d.differ} == set(fields)


def test_a_policy_is_compared_as_the_rules_it_changes(tmp_path: Path) -> None:
    from cgplan.io.policies import load_capture_policy

    pol = load_capture_policy("uncapped-uniform-decode")
    r = verify_paths([EXAMPLE], fake(tmp_path, [answer("0.33.0")]), policy=pol)
    assert isinstance(r, VerifyReport)
    assert r.policy == "uncapped-uniform-decode" and not r.agree
    assert "capture_sizes" in {d.field for d in r.verdicts[0].differing}


def test_a_build_without_rules_is_answered_and_says_which_rules(tmp_path: Path) -> None:
    """A nightly on its way to the next release: vLLM's answer is still given, beside the rules of
    the newest release that is not newer than it, and the report says so."""
    dev = "0.34.0.dev112+g1a2b3c4"
    r = verify_paths([EXAMPLE], fake(tmp_path, [answer("0.33.0")], version=dev))
    assert isinstance(r, VerifyReport)
    assert r.vllm_version == dev and r.rules_release == releases.LATEST_VERSION
    assert r.rules_note is not None and dev in r.rules_note and releases.LATEST_VERSION in r.rules_note
    assert r.verdicts[0].vllm.total_graphs == 178


def test_rules_release() -> None:
    assert rules_release("0.33.0") == ("0.33.0", None)
    assert rules_release("0.28.5")[0] == "0.28.0"
    assert rules_release("0.0.1")[0] == releases.SUPPORTED_VERSIONS[0]
    assert rules_release("0.34.0", "0.29.0")[0] == "0.29.0"
    with pytest.raises(ConfigError, match=r"--vllm-version: no rules for vLLM 0\.99"):
        rules_release("0.33.0", "0.99")


def test_two_builds_before_and_after(tmp_path: Path) -> None:
    """0.28.0 → 0.29.0 on #50488's case: 0.29 appends uniform-decode sizes (multiples of 17) to the
    ladder, the target and drafter-prefill PIECEWISE sets grow with them, the 31-32 gap stays."""
    before = fake(tmp_path, [answer("0.28.0")], version="0.28.0")
    after = fake(tmp_path, [answer("0.29.0")], version="0.29.0")
    c = verify_paths([EXAMPLE], before, against=after)
    assert isinstance(c, BuildComparison)
    assert (c.before.rules_release, c.after.rules_release) == ("0.28.0", "0.29.0")
    assert c.before.agree and c.after.agree
    x = c.changes[0]
    assert x.changed
    assert (len(x.before.capture_sizes), len(x.after.capture_sizes)) == (51, 55)
    assert (x.before.total_graphs, x.after.total_graphs) == (169, 178)
    assert x.before.graph_counts["target"] == {"PIECEWISE": 51, "FULL": 30}
    assert x.after.graph_counts["target"] == {"PIECEWISE": 55, "FULL": 30}
    assert x.gaps_opened == x.gaps_closed == ()
    added = set(x.after.capture_sizes) - set(x.before.capture_sizes)
    assert (
        added
        and all(s % 17 == 0 for s in added)
        and not set(x.before.capture_sizes) - set(x.after.capture_sizes)
    )


def test_a_folder_is_a_corpus_with_drift_per_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    names = ["eagle-k16-mns32", "nospec-mns256", "eagle-k3-mns64"]
    for n in names:
        shutil.copy(CORPUS / f"{n}.yaml", corpus / f"{n}.yaml")
    py = fake(tmp_path, [ORACLE / f"{n}.0.33.0.json.gz" for n in sorted(names)])
    assert config_paths([corpus]) == sorted(corpus / f"{n}.yaml" for n in names)
    r = verify_paths([corpus], py)
    assert isinstance(r, VerifyReport)
    assert r.agree and all(d.differ == 0 and d.compared == 3 for d in r.drift if d.field == "capture_sizes")
    rules = releases.RELEASES["0.33.0"]
    monkeypatch.setitem(releases.RELEASES, "0.33.0", replace(rules, decode_sizes_capped=False))
    r = verify_paths([corpus], py)
    assert isinstance(r, VerifyReport)
    drifted = {d.field: d for d in r.drift}
    # only the EAGLE K=16 config's widest decode step (544 tokens) is above the 512 maximum
    assert drifted["capture_sizes"].differ == 1
    assert drifted["capture_sizes"].configs == (str(corpus / "eagle-k16-mns32.yaml"),)
    assert r.drift[0].differ == 1  # the drifting rules first
    assert drifted["accept"].differ == 0


def test_no_vllm_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(
        VllmEngineError, match=r"cannot import vLLM: ModuleNotFoundError: No module named 'vllm'$"
    ):
        verify_paths([EXAMPLE], fake(tmp_path, [answer("0.33.0")], mode="no-vllm"))


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("die", r"it ended \(status 139\) before importing vLLM: Fatal Python error: Segmentation fault"),
        ("silent", r"it ended \(status 0\) before importing vLLM: no output"),
    ],
)
def test_an_interpreter_that_cannot_answer(tmp_path: Path, mode: str, message: str) -> None:
    with pytest.raises(VllmEngineError, match=message):
        verify_paths([EXAMPLE], fake(tmp_path, [answer("0.33.0")], mode=mode))


def test_a_crash_or_a_timeout_on_one_config_is_that_config_without_an_answer(tmp_path: Path) -> None:
    answers = [answer("0.33.0")] * 2
    two = [EXAMPLE, CORPUS / "nospec-mns256.yaml"]
    r = verify_paths(two, fake(tmp_path, answers, mode="crash:1"))
    assert isinstance(r, VerifyReport)
    assert r.verdicts[0].agree is True and r.verdicts[1].agree is None
    assert r.verdicts[1].no_answer is not None and "the fake engine broke" in r.verdicts[1].no_answer
    assert not r.answered and not r.agree
    r = verify_paths(two, fake(tmp_path, answers, mode="hang:0"), timeout_s=1, jobs=2)
    assert isinstance(r, VerifyReport)
    assert r.verdicts[0].no_answer == "vLLM's code took more than 1 s on it (--timeout)"
    assert r.verdicts[1].no_answer is None  # answered beside it (-j 2)


def test_a_bad_config_costs_no_engine_time(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: configs/models/tiny-llama\nmax_num_seqs: -1\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml:max_num_seqs"):
        verify_paths([EXAMPLE, bad], fake(tmp_path, [answer("0.33.0")], mode="die"))


def test_a_hub_model_without_its_config_is_refused_by_name(tmp_path: Path) -> None:
    """vLLM's code runs offline: a hub id it would download is refused before it runs."""
    cfg = tmp_path / "hub.yaml"
    cfg.write_text(
        "model: configs/models/tiny-llama\nmax_num_seqs: 8\nspeculative_config:\n"
        "  method: eagle\n  num_speculative_tokens: 2\n  model: yuhuili/EAGLE-LLaMA3.1-Instruct-8B\n"
    )
    with pytest.raises(
        ConfigError, match=r"hub\.yaml:speculative_config\.model: 'yuhuili/.*' is not a local"
    ):
        oracle_config(cfg)


def test_python_that_does_not_exist() -> None:
    with pytest.raises(ConfigError, match=r"^--python: /no/such/python does not exist"):
        ask_vllm(Path("/no/such/python"), [{}])


def test_a_folder_without_configs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="the folder holds no config"):
        config_paths([tmp_path])
    with pytest.raises(ConfigError, match="no such file or folder"):
        config_paths([tmp_path / "missing.yaml"])
