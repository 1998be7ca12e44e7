"""``audit_mechanism``: run a mechanism on a neighbouring pair and hold the bounds against its claims.

The call takes what a user of a DP tool decides — the budget, the δs, the confidence, the
seed, the claims — as keyword arguments; where and under which name the audit runs (worker
backend, checkpoint, spawn key, scenario and pair labels) is the application's business and
travels in one :class:`RunContext`.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dpaudit.claims import expand as renyi_expand
from dpaudit.core import (
    EXPECTATIONS,
    RELATIONS,
    Claim,
    Guarantee,
    InputError,
    Relation,
    check_nonnegative,
    is_real,
    require,
)
from dpaudit.engine import exact, runner
from dpaudit.engine.estimate import Level, check_confidence, check_deltas, resolve_views, unmeasured
from dpaudit.engine.results import AuditResult, ClaimCheck
from dpaudit.mechanisms.base import capabilities
from dpaudit.neighbors import Dataset
from dpaudit.runtime import interrupts
from dpaudit.runtime.blame import what_code_did
from dpaudit.runtime.execution import Execution
from dpaudit.runtime.identity import describe, fingerprint

__all__ = ["RunContext", "audit_mechanism", "mechanism_params", "stopped_result"]

SHORTCUT_CLAIM_ID = "user/claim"


@dataclass(frozen=True)
class RunContext:
    """Where and under which name one audit runs: settings of the application, not of the audit.

    None of these changes what is estimated except ``key``, which selects the random streams.

    ``execution``
        Workers, backend (local or Dask), checkpoint and progress mode
        (:class:`dpaudit.runtime.execution.Execution`).  When given it overrides ``n_jobs`` and
        ``progress`` of :func:`audit_mechanism`.
    ``key``
        Prefix of the spawn key of every chunk's generator,
        ``SeedSequence(seed, spawn_key=(*key, phase, side, chunk))``: audits that share one
        seed but have different keys (the scenarios of one run) draw independent streams.
    ``scenario``
        The scenario's name in records and reports.
    ``pair``
        A description of the neighbouring pair in words (e.g. ``"remove record 0"``).
    ``registry``
        The claim registry (claim id → :class:`~dpaudit.core.Claim`, e.g. ``dpaudit.catalog.claims()``):
        each checked claim's status and source travel into its record, and an ``unverified``
        claim that is not refuted reads "not refuted — unverified claim", never a bare pass.
    """

    execution: Execution | None = None
    key: tuple[int, ...] = ()
    scenario: str = ""
    pair: str = ""
    registry: Mapping[str, Claim] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require(self.execution is None or isinstance(self.execution, Execution), "RunContext.execution",
                self.execution, "must be an dpaudit.runtime.execution.Execution or None")
        key = tuple(self.key) if isinstance(self.key, (tuple, list)) else None
        require(key is not None and all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0
                                        for k in key), "RunContext.key", self.key,
                "must be a tuple of integers >= 0 (a SeedSequence spawn key)")
        require(isinstance(self.scenario, str), "RunContext.scenario", self.scenario, "must be a string")
        require(isinstance(self.pair, str), "RunContext.pair", self.pair, "must be a string")
        object.__setattr__(self, "key", tuple(int(k) for k in key))


def _ask(mechanism: Any, method: str, *args: Any) -> Any:
    """``mechanism.method(*args)``: a failure of the mechanism's own code (``sys.exit`` included) is a
    :class:`~dpaudit.engine.runner.MechanismError` naming it — never a crash of the run, never its exit."""
    try:
        return getattr(mechanism, method)(*args)
    except InputError:
        raise
    except KeyboardInterrupt:
        if interrupts.USER_INTERRUPT.is_set():
            raise
        exc_name: str = "KeyboardInterrupt"
        detail = ""
    except BaseException as exc:  # SystemExit and GeneratorExit are the mechanism's too
        exc_name, detail = type(exc).__name__, f": {exc}"
    raise runner.MechanismError(f"mechanism {runner.mechanism_name(mechanism)!r} raised {exc_name} in {method}{detail}")


def _own_claims(mechanism: Any, method: str, *args: Any) -> list[Guarantee]:
    """The mechanism's claims from ``method``: a list of :class:`~dpaudit.core.Guarantee`, or a
    :class:`~dpaudit.engine.runner.MechanismError` naming the mechanism and what it returned instead."""
    found = _ask(mechanism, method, *args)
    # a ZCDP or RDP claim stands for its (ε, δ) curve's points (dpaudit.claims)
    items = renyi_expand(list(found)) if isinstance(found, (list, tuple)) else None
    if items is None or not all(isinstance(g, Guarantee) for g in items):
        shown = repr(found if items is None else next(g for g in items if not isinstance(g, Guarantee)))
        raise runner.MechanismError(f"mechanism {runner.mechanism_name(mechanism)!r}: {method} returned "
                                    f"{shown[:80]}: it must return a list of dpaudit.core.Guarantee records "
                                    "(or dpaudit.claims.ZCDP / RDP)")
    return items


def _exact_value(mechanism: Any, value: Any, method: str) -> float | None:
    """An exact ε a mechanism returned: None or a real number >= 0 (inf allowed), else a
    :class:`~dpaudit.engine.runner.MechanismError` naming the mechanism."""
    ok = value is None or (is_real(value) and not isinstance(value, bool) and not math.isnan(value) and value >= 0)
    if not ok:
        raise runner.MechanismError(f"mechanism {runner.mechanism_name(mechanism)!r}: {method} returned "
                                    f"{value!r:.80} ({type(value).__name__}): it must return None or a number >= 0")
    return None if value is None else float(value)


def _check_mechanism_name(mechanism: Any) -> None:
    """A mechanism's ``name`` is read in every record: it must be readable and, when set, a non-empty string."""
    try:
        name = getattr(mechanism, "name", None)
    except KeyboardInterrupt:
        if interrupts.USER_INTERRUPT.is_set():
            raise
        raise runner.MechanismError(f"mechanism of type {type(mechanism).__name__}: reading its name raised "
                                    "KeyboardInterrupt") from None
    except BaseException as exc:  # a property of the user's class: sys.exit(0) there must not end the run
        raise runner.MechanismError(f"mechanism of type {type(mechanism).__name__}: reading its name "
                                    f"{what_code_did(exc, detail=True)}") from None
    require(name is None or (isinstance(name, str) and bool(name)), "mechanism.name", name,
            "must be a non-empty string (or absent)")


def _check_int(field: str, value: Any, minimum: int) -> int:
    require(isinstance(value, (int, np.integer)) and not isinstance(value, bool) and bool(value >= minimum),
            field, value, f"must be an integer >= {minimum}")
    return int(value)


def _shortcut_claim(epsilon: float | None, delta: float | None, relation: str,
                    claims: Iterable[Guarantee] | None) -> list[Guarantee] | None:
    """The one explicit claim that ``epsilon=``/``delta=`` stand for, or None without them."""
    if epsilon is None:
        require(delta is None, "delta", delta, "a claim's delta needs its epsilon: pass epsilon= too")
        return None
    require(claims is None, "epsilon", epsilon,
            "give either epsilon (with delta) for one claim, or claims, not both")
    epsilon = check_nonnegative("epsilon", epsilon)
    delta = 0.0 if delta is None else delta
    require(is_real(delta) and 0.0 <= delta < 1.0, "delta", delta, "must be a number in [0, 1)")
    return [Guarantee(epsilon=epsilon, delta=float(delta), relation=relation, source="audit_mechanism",
                      claim_id=SHORTCUT_CLAIM_ID)]


def _stricter(on_d: Guarantee, on_d_prime: Guarantee) -> Guarantee:
    """The stricter of one claim evaluated on D and on D′ (the relations are symmetric, so a
    per-dataset claim on D′ covers the pair too, and the strictest test is the minimum).  With
    different δs, D′'s point is taken
    only when it dominates (ε′ ≤ ε and δ′ ≤ δ)."""
    if on_d.applicable != on_d_prime.applicable:
        chosen = on_d if on_d.applicable else on_d_prime
    elif not on_d.applicable:
        chosen = on_d
    elif on_d_prime.epsilon < on_d.epsilon and on_d_prime.delta <= on_d.delta:
        chosen = on_d_prime
    else:
        chosen = on_d
    if chosen is on_d_prime:
        note = "; ".join(filter(None, [chosen.note, "evaluated on D' (the stricter of D and D')"]))
        chosen = replace(chosen, note=note)
    return chosen


def _strictest(on_d: list[Guarantee], on_d_prime: list[Guarantee]) -> list[Guarantee]:
    """Per claim id and curve point, :func:`_stricter` of the two evaluations (D's order kept)."""
    by_id: dict[str, list[Guarantee]] = {}
    for g in on_d_prime:
        by_id.setdefault(g.claim_id, []).append(g)
    seen: Counter[str] = Counter()
    out = []
    for g in on_d:
        others = by_id.get(g.claim_id, [])
        i = seen[g.claim_id]
        seen[g.claim_id] += 1
        same_curve = len(others) == sum(1 for h in on_d if h.claim_id == g.claim_id)
        out.append(_stricter(g, others[i]) if same_curve else g)
    return out


def _claims_for(mechanism: Any, d: Any, d_prime: Any, relation: str,
                claims: Iterable[Guarantee] | None) -> list[Guarantee]:
    """The claims to check: the caller's (which must be stated for ``relation``), or the
    mechanism's own, evaluated strictly — on both datasets where they are per dataset."""
    if claims is not None:
        out = renyi_expand(list(claims))  # a ZCDP or RDP claim is its (ε, δ) curve's points
        for i, c in enumerate(out):
            require(isinstance(c, Guarantee), f"claims[{i}]", c,
                    "every claim must be a dpaudit.core.Guarantee, or a dpaudit.claims.ZCDP or RDP")
            require(c.relation == relation, f"claims[{i}].relation", c.relation,
                    f"the claim is stated for {c.relation} neighbours but the audit's pair is {relation}: audit "
                    f"a {c.relation} pair, or state the claim with relation={relation!r} if it covers that relation")
        return out
    caps = capabilities(mechanism)  # the documented protocols of dpaudit.mechanisms.base
    if "pair_guarantees" in caps:
        own = _own_claims(mechanism, "pair_guarantees", d, d_prime, relation)
    elif "guarantees" in caps:
        own = _strictest(_own_claims(mechanism, "guarantees", d, relation),
                         _own_claims(mechanism, "guarantees", d_prime, relation))
    else:
        own = []
    out = []
    for c in own:
        require(isinstance(c, Guarantee), "guarantees", c, "a mechanism's claims must be dpaudit.Guarantee records")
        if c.applicable and c.relation != relation:
            c = Guarantee.outside_premise(f"stated for {c.relation} neighbours, the pair is {relation}",
                                          epsilon=c.epsilon, delta=c.delta, relation=c.relation, source=c.source,
                                          claim_id=c.claim_id, kind=c.kind, stated_as=c.stated_as)
        out.append(c)
    return out


def audit_mechanism(mechanism: Any, d: Any, d_prime: Any, *, samples: int = 1_000_000,
                    deltas: Sequence[float] | None = None, confidence: float = 0.95, seed: int = 0,
                    n_jobs: int = 1, relation: Relation | str = "add-remove", claims: Iterable[Guarantee] | None = None,
                    epsilon: float | None = None, delta: float | None = None,
                    expected: Mapping[str, str] | None = None, discrete: bool | None = None,
                    events: str | Sequence[str] = "auto", sequential: bool = False, progress: bool = False,
                    context: RunContext | None = None) -> AuditResult:
    """Audit ``mechanism`` on the neighbouring datasets ``d`` and ``d_prime``.

    Draws ``samples`` outputs per side with ``mechanism.sample(data, size, rng)``, chooses an
    event S on a selection split (20 %; 30 % for discrete vector outputs whose choice 20 % does
    not settle, :func:`dpaudit.engine.runner.extension_size`) and bounds ε from below on the rest
    with Clopper–Pearson: ``ε_lower(δ) = log((p_lo − δ) / q_hi)`` in the likelier direction, valid
    with probability ≥ ``confidence``.  When the mechanism declares ``output_distribution``
    (or ``exact_epsilon``) the exact ε(δ) of the pair is computed too, and each claim gets a
    white-box verdict beside the empirical one.  A claim (ε_c, δ) is a ``violation`` when
    ε_lower(δ) > ε_c: it is then false with confidence ≥ ``confidence``.

    Parameters (all keyword-only after the pair):

    ``samples``
        Outputs drawn per side (≥ 20), selection and estimation splits together.
    ``deltas``
        The δs at which to report ε_lower; ``result.epsilon_lower`` is the bound at the
        first.  Default ``(delta,)`` with the ``epsilon=`` shortcut, else ``(0.0,)``.  Every
        claim's δ is bounded as well.
    ``confidence``
        1 − α of every bound, in [0.5, 1); default 0.95, a reported measurement's level (as on the
        command line).  :func:`~dpaudit.testing.assert_private` defaults to 0.99: it fails builds.
    ``seed``
        Root seed (≥ 0): the same seed gives the same numbers for any ``n_jobs``.
    ``n_jobs``
        Local worker processes (−1: all cores).
    ``relation``
        The neighbour relation of (d, d′): ``add-remove``, ``swap``, ``label-flip``,
        ``zero-out`` or ``user-level``.  An explicit claim stated for another relation is an
        :class:`~dpaudit.core.InputError`; a mechanism's own claim for another relation is
        ``not-applicable`` with that premise named.
    ``claims``
        The :class:`~dpaudit.core.Guarantee` s to check; a :class:`~dpaudit.claims.ZCDP` or
        :class:`~dpaudit.claims.RDP` stands for the points of the (ε, δ) curve it implies (one claim id).
        ``None``: the mechanism's own,
        ``mechanism.pair_guarantees(d, d_prime, relation)`` when it implements
        :class:`~dpaudit.mechanisms.base.HasPairGuarantees`, else ``mechanism.guarantees(d, relation)``
        (:class:`~dpaudit.mechanisms.base.HasGuarantees`) evaluated on ``d`` and on ``d_prime``, keeping
        the stricter of the two (the data-dependent bounds are per dataset and each covers the
        pair, the relations being symmetric), else none.  Several applicable claims with
        one ``claim_id`` form a curve of (ε, δ) points: each point is tested at confidence
        1 − (1 − ``confidence``)/K, so a violation anywhere on the curve is certified at
        ``confidence`` (Bonferroni).
    ``epsilon``, ``delta``
        Shortcut for one explicit claim: ``claims=[Guarantee(epsilon=epsilon, delta=delta,
        relation=relation, source="audit_mechanism", claim_id="user/claim")]`` (``delta``
        defaults to 0).  Giving both ``epsilon`` and ``claims``, or ``delta`` without
        ``epsilon``, is an :class:`~dpaudit.core.InputError`.
    ``expected``
        Claim id → expected verdict (``pass``, ``violation``, ``not-applicable``, or
        ``exact-violation`` when only the white-box check can reach it); a printed bound
        known to be false is an expected ``violation``.  Read by ``result.as_expected``.
    ``discrete``, ``events``
        How outputs are viewed: ``discrete`` says whether outputs are categories (None:
        guessed from the outputs); ``events`` forces a view (``rows``, ``threshold``,
        ``histogram``) or a list of them (``"auto"``: every view that fits).
    ``sequential``
        Stop as soon as a violation is certified or none can be reached
        (α-spending over looks, :data:`dpaudit.engine.runner.RULE`), keeping the confidence.
    ``progress``
        Show a progress bar on stderr.
    ``context``
        Where and under which name the audit runs (:class:`RunContext`: execution backend
        and checkpoint, spawn key, scenario and pair labels); applications set it, users
        rarely need to.

    Returns an :class:`~dpaudit.engine.results.AuditResult`; ``print(result)`` explains it in words.
    """
    call = _checked_call(mechanism, d, d_prime, samples=samples, deltas=deltas, confidence=confidence, seed=seed,
                         n_jobs=n_jobs, relation=relation, claims=claims, epsilon=epsilon, delta=delta,
                         expected=expected, discrete=discrete, events=events, sequential=sequential,
                         progress=progress, context=context)
    return _audit_checked(call)


@dataclass(frozen=True)
class _Call:
    """The checked arguments of one :func:`audit_mechanism` call (``claims`` and ``deltas`` with the
    ``epsilon=`` shortcut applied, ``context`` never None)."""

    mechanism: Any
    d: Any
    d_prime: Any
    samples: int
    deltas: Sequence[float]
    confidence: float
    seed: int
    n_jobs: int
    relation: str
    claims: Iterable[Guarantee] | None
    expected: dict[str, str]
    discrete: bool | None
    events: str | Sequence[str]
    sequential: bool
    progress: bool
    context: RunContext


def _checked_call(mechanism: Any, d: Any, d_prime: Any, *, samples: Any, deltas: Sequence[float] | None,
                  confidence: Any, seed: Any, n_jobs: Any, relation: Any, claims: Iterable[Guarantee] | None,
                  epsilon: float | None, delta: float | None, expected: Mapping[str, str] | None,
                  discrete: bool | None, events: str | Sequence[str], sequential: bool, progress: bool,
                  context: RunContext | None) -> _Call:
    """:func:`audit_mechanism`'s arguments checked, in the order a bad one is reported: an
    :class:`~dpaudit.core.InputError` naming the first bad field (a mechanism whose name cannot be
    read is a :class:`~dpaudit.engine.runner.MechanismError`)."""
    require(callable(getattr(mechanism, "sample", None)), "mechanism", mechanism,
            "must have a sample(data, size, rng) method")
    context = RunContext() if context is None else context
    require(isinstance(context, RunContext), "context", context, "must be an dpaudit.engine.api.RunContext or None")
    samples = _check_int("samples", samples, 20)
    seed = _check_int("seed", seed, 0)
    n_jobs = _check_int("n_jobs", n_jobs, 1) if n_jobs != -1 else -1
    require(relation in RELATIONS, "relation", relation, f"must be one of {', '.join(RELATIONS)}")
    confidence = check_confidence(confidence)
    shortcut = _shortcut_claim(epsilon, delta, relation, claims)
    if shortcut is not None:
        claims = shortcut
        deltas = (shortcut[0].delta,) if deltas is None else deltas
    deltas = (0.0,) if deltas is None else deltas
    expected = dict(expected or {})
    for cid, v in expected.items():
        require(v in EXPECTATIONS, f"expected[{cid!r}]", v, f"must be one of {', '.join(EXPECTATIONS)}")

    require(d is not None and d_prime is not None, "pair", (d, d_prime), "both datasets must be given (not None)")
    _check_mechanism_name(mechanism)
    return _Call(mechanism=mechanism, d=d, d_prime=d_prime, samples=samples, deltas=deltas, confidence=confidence,
                 seed=seed, n_jobs=n_jobs, relation=relation, claims=claims, expected=expected, discrete=discrete,
                 events=events, sequential=sequential, progress=progress, context=context)


def _audit_checked(call: _Call) -> AuditResult:
    """The audit of a checked call: the claims and the estimate (a Ctrl-C before any sample: a
    result without a bound), the white box and the value views, then the claims' checks."""
    mechanism, d, d_prime, context = call.mechanism, call.d, call.d_prime, call.context
    start = time.perf_counter()
    levels = [Level(delta=level_delta, confidence=call.confidence) for level_delta in check_deltas(call.deltas)]
    try:  # the scenario's setup (the mechanism's claims, the data's hash) and its estimate
        before, checked, claim_level, execution, est = _setup_and_estimate(call, levels)
    except KeyboardInterrupt as exc:
        if not interrupts.stopped_by_user(exc):
            raise
        est = unmeasured(levels, 0, "interrupted by the user during the scenario's setup: no sample was drawn, "
                         "so there is no bound (eps_lower 0 at every delta)")
    if not est.measured:
        return stopped_result(mechanism, call.relation, context.pair, est, seed=call.seed, scenario=context.scenario,
                              seconds=time.perf_counter() - start)
    white, dists, value, sup = _white_box_and_value_views(call, est, levels, claim_level, checked, execution)
    checks = tuple(ClaimCheck(c, None if i is None else est.at(c.delta, i),
                              None if white is None or i is None else white[c.delta],
                              call.expected.get(c.claim_id), context.registry.get(c.claim_id),
                              None if value is None or i is None or est.at(c.delta, i).event.view != "floating"
                              else value.at(c.delta, i))
                   for c, i in zip(checked, claim_level, strict=True))
    name = runner.mechanism_name(mechanism)  # a non-string name would not survive into results.json
    if before is not None and before != _content(d, d_prime):
        raise runner.MechanismError(f"mechanism {name!r} changed its datasets while sampling: a mechanism must "
                                    "not change its input (each chunk must come from the pair the record names)")
    return AuditResult(mechanism=name, relation=call.relation, pair=context.pair, estimate=est, exact=white,
                       claims=checks, seed=call.seed, seconds=time.perf_counter() - start,
                       scenario=context.scenario, params=mechanism_params(mechanism), epsilon_sup=sup,
                       distributions=dists, seeded=getattr(mechanism, "seeded", True) is not False)


def _setup_and_estimate(call: _Call, levels: list[Level]
                        ) -> tuple[str | None, list[Guarantee], list[int | None], Execution, Any]:
    """The data's hash when it cannot be made read-only, the claims to check, each claim's level
    (added to ``levels`` in place, so an interrupted setup still reports them), the execution and
    the estimate at every level (the applicable claims' ε are the sequential rule's targets)."""
    mechanism, d, d_prime = call.mechanism, call.d, call.d_prime
    # Arrays reach the mechanism read-only (dpaudit.runtime.readonly); other data is compared after the audit.
    before = None if all(_freezable(x) for x in (d, d_prime)) else _content(d, d_prime)
    checked = _claims_for(mechanism, d, d_prime, call.relation, call.claims)
    for cid in call.expected:
        require(any(c.claim_id == cid for c in checked), f"expected[{cid!r}]", call.expected[cid],
                f"no claim with this id is checked here (ids: {', '.join(sorted({c.claim_id for c in checked}))})")
    claim_level, targets = _claim_levels(checked, levels, call.confidence)
    execution = call.context.execution or Execution(n_jobs=call.n_jobs, progress="bar" if call.progress else "off")
    est = runner.estimate(mechanism, d, d_prime, samples=call.samples, levels=levels, seed=call.seed,
                          execution=execution, key=call.context.key, discrete=call.discrete, events=call.events,
                          sequential=call.sequential, targets=targets)
    return before, checked, claim_level, execution, est


def _claim_levels(checked: list[Guarantee], levels: list[Level], confidence: float
                  ) -> tuple[list[int | None], dict[int, float]]:
    """Each claim's index in ``levels`` (appended when new; None for a claim without a bound) and the
    sequential rule's targets (per level, the least ε of its applicable claims).  A curve of K
    points is tested at 1 − (1 − confidence)/K per point (Bonferroni)."""
    # A claim outside its premise still gets a bound at its δ (not a target of the sequential rule),
    # so its record can say whether the samples would refute it.
    curve_size = Counter(c.claim_id for c in checked if c.applicable or c.broken_premise)
    claim_level: list[int | None] = []
    targets: dict[int, float] = {}
    for c in checked:
        if not (c.applicable or c.broken_premise):
            claim_level.append(None)
            continue
        level = Level(delta=c.delta, confidence=1 - (1 - confidence) / curve_size[c.claim_id])
        if level not in levels:
            levels.append(level)
        index = levels.index(level)
        claim_level.append(index)
        if c.applicable:
            targets[index] = min(targets.get(index, math.inf), c.epsilon)
    return claim_level, targets


def _white_box_and_value_views(call: _Call, est: Any, levels: list[Level],
                               claim_level: list[int | None], checked: list[Guarantee], execution: Execution
                               ) -> tuple[dict[float, float] | None, tuple[list[float], list[float]] | None,
                                          Any, float | None]:
    """The exact ε(δ) and distributions (:func:`_white_box`), the value views' estimate
    (:func:`_value_views_estimate`) and ``epsilon_sup_pi0``; a Ctrl-C here keeps the estimate and
    what was done before it, without the value views' verdict."""
    mechanism, d, d_prime = call.mechanism, call.d, call.d_prime
    white, dists, value, sup = None, None, None, None
    try:  # the white box and the value views: a Ctrl-C here keeps the estimate, without what it stopped
        white, dists = _white_box(mechanism, d, d_prime, {lv.delta for lv in levels})
        if not interrupts.USER_INTERRUPT.is_set():  # after a Ctrl-C no second estimate is started
            value = _value_views_estimate(mechanism, d, d_prime, est, levels, claim_level, checked, seed=call.seed,
                                          execution=execution, key=call.context.key, discrete=call.discrete,
                                          events=call.events)
        if value is not None and (not value.measured or interrupts.USER_INTERRUPT.is_set()):
            value = None  # stopped by the user: the value views' verdict is not given from a part of its samples
        if "epsilon_sup_pi0" in capabilities(mechanism):
            sup = _exact_value(mechanism, _ask(mechanism, "epsilon_sup_pi0", d, d_prime), "epsilon_sup_pi0")
    except KeyboardInterrupt as exc:
        if not interrupts.stopped_by_user(exc):
            raise
        value = None
    return white, dists, value, sup


VALUE_VIEWS_KEY = 0x56414C  # appended to a scenario's key: the value views' own samples ("VAL")


def _white_box(mechanism: Any, d: Any, d_prime: Any, deltas: set[float]
               ) -> tuple[dict[float, float] | None, tuple[list[float], list[float]] | None]:
    """The exact ε(δ) of the pair at each of ``deltas`` when the mechanism declares its output
    distributions (or ``exact_epsilon`` at every δ), and the distributions when they are small."""
    caps = capabilities(mechanism)
    if "output_distribution" in caps:
        p, q = _ask(mechanism, "output_distribution", d), _ask(mechanism, "output_distribution", d_prime)
        dists = (np.asarray(p, dtype=float).tolist(), np.asarray(q, dtype=float).tolist()) if len(p) <= 256 else None
        return {dl: exact.epsilon_for_delta(p, q, dl) for dl in deltas}, dists
    if "exact_epsilon" in caps:
        curve = {dl: _exact_value(mechanism, _ask(mechanism, "exact_epsilon", d, d_prime, dl), "exact_epsilon")
                 for dl in deltas}
        known = {dl: v for dl, v in curve.items() if v is not None}
        return (known if len(known) == len(curve) else None), None
    return None, None


def stopped_result(mechanism: Any, relation: str, pair: str, est: Any, *, seed: int, scenario: str,
                   seconds: float, search: dict[str, Any] | None = None) -> AuditResult:
    """The result of an audit the user stopped before an estimation output of each side was counted
    (``est`` from :func:`dpaudit.engine.estimate.unmeasured`): no bound, ε_lower 0 at every δ, and no
    claim checked.  With nothing counted there is no evidence either way, so no claim may read as
    holding (nor as refuted): the record says "no claim checked", and the run is partial."""
    note = f"{est.sequential}; no claim checked"
    return AuditResult(mechanism=runner.mechanism_name(mechanism), relation=relation, pair=pair,
                       estimate=replace(est, sequential=note), exact=None, claims=(), seed=seed, seconds=seconds,
                       scenario=scenario, params=mechanism_params(mechanism), search=search,
                       seeded=getattr(mechanism, "seeded", True) is not False)


def _value_views_estimate(mechanism: Any, d: Any, d_prime: Any, est: Any, levels: list[Level],
                          claim_level: list[int | None], checked: list[Guarantee], *, seed: int,
                          execution: Execution, key: tuple[int, ...], discrete: bool | None,
                          events: str | Sequence[str]) -> Any:
    """When the floating view decided an applicable claim's bound: a second estimate with the value
    views alone (the chosen views minus ``floating``: rows, threshold, histogram), or None.

    A real output computed in doubles answers two questions: does the *implementation* leak (the
    floating view sees the doubles' low bits; Mironov, CCS 2012, §3), and does the *mechanism, as
    mathematics*, keep its ε (only events on the values can say).  The second estimate draws its own
    samples (the scenario's key extended by :data:`VALUE_VIEWS_KEY`: fresh, independent draws, as many
    per side as the first estimate used) and chooses its own event on its own selection split, so each
    of its bounds is an ordinary Clopper–Pearson bound valid with its level's confidence on its own;
    the two verdicts of one claim hold together with confidence ≥ 1 − 2(1 − confidence) (a union
    bound).  It costs a second pass over the samples, only when the floating view decided."""
    floating = any(i is not None and c.applicable and est.at(c.delta, i).event.view == "floating"
                   for c, i in zip(checked, claim_level, strict=True))
    if not floating:
        return None
    views = tuple(v for v in resolve_views(discrete, events) if v != "floating")
    if not views:
        return None
    # its progress continues the scenario's bar under its own label (the overall line was said once)
    second = replace(execution, label=f"{execution.label or runner.mechanism_name(mechanism)}: value views",
                     position=None)
    return runner.estimate(mechanism, d, d_prime, samples=est.samples, levels=levels, seed=seed,
                           execution=second, key=(*key, VALUE_VIEWS_KEY), discrete=discrete, events=views)


def _freezable(data: Any) -> bool:
    return isinstance(data, (np.ndarray, Dataset)) or (type(data) is tuple and all(map(_freezable, data)))


def _content(*datasets: Any) -> str:
    """A hash of the datasets' contents (:func:`dpaudit.runtime.identity.describe`)."""
    return fingerprint({"data": [describe(x) for x in datasets]})


def mechanism_params(mechanism: Any) -> dict[str, Any]:
    """The mechanism's dataclass fields that are plain values (numbers, strings, tuples), for records."""
    fields = getattr(mechanism, "__dataclass_fields__", {})
    out: dict[str, Any] = {}
    for name in fields:
        value = getattr(mechanism, name)
        if isinstance(value, (int, float, str, bool, type(None))):
            out[name] = value
        elif isinstance(value, tuple):
            out[name] = list(value)
    return out
