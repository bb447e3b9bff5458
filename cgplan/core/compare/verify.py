"""verify: vLLM's own answer for each config beside cgplan's rules, two vLLM builds beside each other,
and which of cgplan's rules drift over a corpus (pure: JSON answers in, frozen results out).

The answers come from vLLM's own code run on a CPU (cgplan/gpu/vllm_oracle.py, through
cgplan/api/verify.py); `oracle.vllm_answer` shapes them as the plan's JSON contract and
`oracle.field_agreement` is the comparison, the same the golden tests use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cgplan.core.compare.oracle import RULES, describe_difference, field_agreement, vllm_reason

FULL_DECODE_MODES = frozenset({"FULL", "FULL_AND_PIECEWISE", "FULL_DECODE_ONLY"})
"""cudagraph modes that promise FULL graphs to uniform decode batches (a PIECEWISE one is a gap)."""


@dataclass(frozen=True)
class FieldDiff:
    """One field where cgplan's rules and vLLM's code answer differently."""

    field: str
    """The plan's field (`capture_sizes`, `graphs`, `uniform_decode`, ...; `accept` for a config one
    side refuses, `reason` for a refusal worded differently)."""
    rule: str
    """The rule of cgplan that computes it (`oracle.RULES`)."""
    vllm: str
    """vLLM's answer, in a few words."""
    cgplan: str
    """cgplan's answer, in a few words."""


@dataclass(frozen=True)
class DecodeGap:
    """Uniform-decode request counts that run eager, or below the FULL mode they were promised."""

    query_len: int
    """Tokens per request of the decode step (1 + K)."""
    from_reqs: int
    to_reqs: int
    mode: str
    """What they get: `NONE` (eager) or `PIECEWISE`."""


@dataclass(frozen=True)
class BuildAnswer:
    """One build's answer for one config, summarised: what a before/after table shows."""

    refused: str | None = None
    """vLLM's reason when it refuses to start with the config (the rest is then empty)."""
    model_runner: str | None = None
    cudagraph_mode: str | None = None
    capture_sizes: tuple[int, ...] = ()
    max_capture_size: int | None = None
    graph_counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Family (target, drafter, drafter_prefill, drafter_decode) → mode → graphs."""
    gaps: tuple[DecodeGap, ...] = ()
    decode: Mapping[str, tuple[tuple[int, int, str, int | None], ...]] = field(default_factory=dict)
    """Query length → (first request count, last, mode, padded tokens) runs, over the request
    counts that decode at that length (the dynamic-SD tier; every one without dynamic SD)."""

    @property
    def total_graphs(self) -> int:
        """Capture descriptors over every family (as the plan's `total_graphs`)."""
        return sum(n for modes in self.graph_counts.values() for n in modes.values())


@dataclass(frozen=True)
class Verdict:
    """One config: vLLM's own code beside cgplan's rules for the compared release."""

    config: str
    vllm_version: str
    """The vLLM build that answered (`vllm.__version__` in the interpreter given)."""
    rules_release: str
    """The release whose rules cgplan compared."""
    agree: bool | None
    """Every compared field agrees (None: the build gave no answer, see `no_answer`)."""
    compared: tuple[str, ...] = ()
    differing: tuple[FieldDiff, ...] = ()
    vllm: BuildAnswer = field(default_factory=BuildAnswer)
    cgplan_refused: str | None = None
    """cgplan's refusal, when its rules refuse the config."""
    no_answer: str | None = None
    """Why the build gave no answer (the engine crashed or timed out on this config)."""
    notes: tuple[str, ...] = ()
    """What the engine reported about the input (options that are not engine arguments)."""


@dataclass(frozen=True)
class RuleDrift:
    """One rule over a corpus: on how many configs its field differs from vLLM's code."""

    field: str
    rule: str
    compared: int
    differ: int
    configs: tuple[str, ...]
    """The configs where it differs."""


@dataclass(frozen=True)
class VerifyReport:
    """`cgplan verify CONFIG... --python PY`: every config's verdict and the drift per rule."""

    python: str
    vllm_version: str
    rules_release: str
    rules_note: str | None
    """How the release was chosen when the build is not one cgplan has rules for."""
    verdicts: tuple[Verdict, ...]
    drift: tuple[RuleDrift, ...]
    limits: tuple[str, ...] = ()
    """What vLLM's code on a CPU cannot reach (stated with every answer)."""
    vllm_location: str | None = None
    """The folder of the vLLM package that answered (a checkout on PYTHONPATH shows here)."""
    import_s: float = 0.0
    """Seconds the build took to import vLLM (once)."""
    seconds: tuple[float, ...] = ()
    """Seconds vLLM's code took per config."""
    policy: str | None = None
    """The what-if capture policy cgplan's rules were planned under (None: vLLM's own)."""

    @property
    def agree(self) -> bool:
        """Every config answered and agrees."""
        return all(v.agree is True for v in self.verdicts)

    @property
    def answered(self) -> bool:
        """Every config got an answer from the build."""
        return all(v.no_answer is None for v in self.verdicts)


@dataclass(frozen=True)
class DispatchChange:
    """Request counts whose uniform-decode dispatch differs between two builds."""

    query_len: int
    from_reqs: int
    to_reqs: int
    before: str
    after: str


@dataclass(frozen=True)
class ConfigChange:
    """One config under two builds."""

    config: str
    before: BuildAnswer
    after: BuildAnswer
    dispatch_changes: tuple[DispatchChange, ...]
    gaps_opened: tuple[DecodeGap, ...]
    """Request counts that are a gap after, not before."""
    gaps_closed: tuple[DecodeGap, ...]
    no_answer: str | None = None

    @property
    def changed(self) -> bool:
        """Anything the table shows differs."""
        return self.before != self.after


@dataclass(frozen=True)
class BuildComparison:
    """`cgplan verify CONFIG... --python A --against B`: a PR's before/after over the same configs,
    and each build against cgplan's rules."""

    before: VerifyReport
    after: VerifyReport
    changes: tuple[ConfigChange, ...]


def _dispatch_kind(row: tuple[int, int, str, int | None] | None, n: int, q: int) -> str:
    """How a decode step of `n` requests runs: eager, a graph of its exact size, or a padded one."""
    if row is None:
        return "not scheduled"
    if row[2] == "NONE":
        return "eager"
    return f"{row[2]} {'exact' if row[3] == n * q else 'padded'}"


def _tiers(answer: Mapping[str, Any], query_len: int, max_reqs: int) -> list[tuple[int, int]]:
    dyn = answer.get("dynamic_sd")
    lookup = (dyn or {}).get("lookup") if isinstance(dyn, dict) else None
    if not lookup:
        return [(1, max_reqs)]
    return [(a, b) for a, b, k in lookup if k + 1 == query_len]


def summarize(answer: Mapping[str, Any]) -> BuildAnswer:
    """One build's answer (`oracle.vllm_answer`'s shape) as a `BuildAnswer`.

    >>> summarize({"error": "ValueError: no"}).refused
    'no'
    """
    if "error" in answer:
        return BuildAnswer(refused=vllm_reason(str(answer["error"])))
    counts: dict[str, dict[str, int]] = {}
    for family, graphs in (answer.get("graphs") or {}).items():
        modes = counts.setdefault(family, {"PIECEWISE": 0, "FULL": 0})
        for g in graphs:
            modes[g["mode"]] = modes.get(g["mode"], 0) + 1
    full_decode = answer.get("cudagraph_mode") in FULL_DECODE_MODES
    decode: dict[str, tuple[tuple[int, int, str, int | None], ...]] = {}
    gaps: list[DecodeGap] = []
    for q_text, rows in sorted((answer.get("uniform_decode") or {}).items(), key=lambda kv: int(kv[0])):
        q = int(q_text)
        last = max((r["to_reqs"] for r in rows), default=0)
        runs: list[tuple[int, int, str, int | None]] = []
        for lo, hi in _tiers(answer, q, last):
            for r in rows:
                a, b = max(lo, r["from_reqs"]), min(hi, r["to_reqs"])
                if a > b:
                    continue
                pad = r["padded_tokens"] if r["mode"] != "NONE" else None
                if runs and runs[-1][1] == a - 1 and runs[-1][2:] == (r["mode"], pad):
                    runs[-1] = (runs[-1][0], b, r["mode"], pad)
                else:
                    runs.append((a, b, r["mode"], pad))
        decode[q_text] = tuple(runs)
        for a, b, mode, _ in runs:
            if mode == "NONE" or (mode == "PIECEWISE" and full_decode):
                if gaps and gaps[-1].query_len == q and gaps[-1].to_reqs == a - 1 and gaps[-1].mode == mode:
                    gaps[-1] = DecodeGap(q, gaps[-1].from_reqs, b, mode)
                else:
                    gaps.append(DecodeGap(q, a, b, mode))
    return BuildAnswer(
        model_runner=answer.get("model_runner"),
        cudagraph_mode=answer.get("cudagraph_mode"),
        capture_sizes=tuple(answer.get("capture_sizes") or ()),
        max_capture_size=answer.get("max_capture_size"),
        graph_counts=counts,
        gaps=tuple(gaps),
        decode=decode,
    )


def verdict(
    config: str,
    exp: Mapping[str, Any],
    got: Mapping[str, Any],
    *,
    vllm_version: str,
    rules_release: str,
    notes: Sequence[str] = (),
) -> Verdict:
    """vLLM's answer (`exp`, `oracle.vllm_answer`) beside cgplan's plan (`got`, the JSON contract,
    or {"error": message} when cgplan's rules refuse the config), field by field. The release
    fields are left out: the build and the rules are named in the verdict itself."""
    e = {k: v for k, v in exp.items() if k != "vllm_version"}
    g = {k: v for k, v in got.items() if k != "vllm_version"}
    fields = field_agreement(e, g, reason=True)
    differing = []
    for key, ok in fields.items():
        if ok:
            continue
        if key == "accept":
            a = f"refuses: {vllm_reason(str(e['error']))}" if "error" in e else "starts"
            b = f"refuses: {g['error']}" if "error" in g else "plans it"
        elif key == "reason":
            a, b = vllm_reason(str(e["error"])), str(g["error"])
        else:
            a, b = describe_difference(key, e.get(key), g.get(key))
        differing.append(FieldDiff(key, RULES.get(key, key), a, b))
    return Verdict(
        config=config,
        vllm_version=vllm_version,
        rules_release=rules_release,
        agree=not differing,
        compared=tuple(fields),
        differing=tuple(differing),
        vllm=summarize(exp),
        cgplan_refused=str(g["error"]) if "error" in g else None,
        notes=tuple(notes),
    )


def no_answer(config: str, why: str, *, vllm_version: str, rules_release: str) -> Verdict:
    """A config the build gave no answer for (the engine crashed or timed out on it)."""
    return Verdict(config, vllm_version, rules_release, agree=None, no_answer=why)


def drift(verdicts: Sequence[Verdict]) -> tuple[RuleDrift, ...]:
    """Per compared field (each a rule of cgplan), on how many configs it differs; the rules that
    drift first, then by the field order of the comparison.

    >>> d = drift([Verdict("a", "x", "x", True, compared=("accept",))])
    >>> (d[0].field, d[0].compared, d[0].differ)
    ('accept', 1, 0)
    """
    order: dict[str, int] = {}
    compared: dict[str, int] = {}
    differ: dict[str, list[str]] = {}
    for v in verdicts:
        for key in v.compared:
            order.setdefault(key, len(order))
            compared[key] = compared.get(key, 0) + 1
        for d in v.differing:
            differ.setdefault(d.field, []).append(v.config)
    rows = [
        RuleDrift(
            key, RULES.get(key, key), compared[key], len(differ.get(key, [])), tuple(differ.get(key, []))
        )
        for key in order
    ]
    return tuple(sorted(rows, key=lambda r: (r.differ == 0, order[r.field])))


def _decode_at(answer: BuildAnswer, q: str, n: int) -> tuple[int, int, str, int | None] | None:
    """The run of `answer`'s decode table for `q` that holds `n` requests."""
    return next((r for r in answer.decode.get(q, ()) if r[0] <= n <= r[1]), None)


def _gap_counts(answer: BuildAnswer) -> set[tuple[int, int, str]]:
    return {(g.query_len, n, g.mode) for g in answer.gaps for n in range(g.from_reqs, g.to_reqs + 1)}


def _as_gaps(cells: set[tuple[int, int, str]]) -> tuple[DecodeGap, ...]:
    out: list[DecodeGap] = []
    for q, n, mode in sorted(cells):
        if out and out[-1].query_len == q and out[-1].mode == mode and out[-1].to_reqs == n - 1:
            out[-1] = DecodeGap(q, out[-1].from_reqs, n, mode)
        else:
            out.append(DecodeGap(q, n, n, mode))
    return tuple(out)


def change(
    config: str, before: BuildAnswer, after: BuildAnswer, no_answer: str | None = None
) -> ConfigChange:
    """One config under two builds: the request counts whose uniform-decode dispatch moved (runs of
    the same move: eager, a graph of the exact size, or a padded one; "to another size" where
    only the padding moved), and the gaps opened and closed."""
    changes: list[DispatchChange] = []
    for q in sorted(set(before.decode) | set(after.decode), key=int):
        last = max([r[1] for r in (*before.decode.get(q, ()), *after.decode.get(q, ()))] or [0])
        for n in range(1, last + 1):
            a, b = _decode_at(before, q, n), _decode_at(after, q, n)
            if (a and a[2:]) == (b and b[2:]):  # the same mode and padding (runs may be cut apart)
                continue
            ta, tb = _dispatch_kind(a, n, int(q)), _dispatch_kind(b, n, int(q))
            if ta == tb:
                tb += " (to another size)"
            prev = changes[-1] if changes else None
            if prev and (prev.query_len, prev.to_reqs, prev.before, prev.after) == (int(q), n - 1, ta, tb):
                changes[-1] = DispatchChange(int(q), prev.from_reqs, n, ta, tb)
            else:
                changes.append(DispatchChange(int(q), n, n, ta, tb))
    ga, gb = _gap_counts(before), _gap_counts(after)
    return ConfigChange(
        config,
        before,
        after,
        tuple(changes),
        gaps_opened=_as_gaps(gb - ga),
        gaps_closed=_as_gaps(ga - gb),
        no_answer=no_answer,
    )
