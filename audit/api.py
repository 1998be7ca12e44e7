"""``audit_mechanism``: run a mechanism on a neighbouring pair and hold the bounds against its claims."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from audit import exact, runner
from audit.estimate import check_confidence, check_deltas
from audit.execution import Execution
from audit.results import EXPECTATIONS, AuditResult, ClaimCheck
from dpcore import RELATIONS, Guarantee, require


def _check_int(field: str, value: Any, minimum: int) -> int:
    require(isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= minimum,
            field, value, f"must be an integer >= {minimum}")
    return int(value)


def _claims_for(mechanism: Any, d: Any, d_prime: Any, relation: str,
                claims: Iterable[Guarantee] | None) -> list[Guarantee]:
    if claims is None:
        if hasattr(mechanism, "pair_guarantees"):
            claims = mechanism.pair_guarantees(d, d_prime, relation)
        elif hasattr(mechanism, "guarantees"):
            claims = mechanism.guarantees(d, relation)
        else:
            claims = []
    out = []
    for c in claims:
        require(isinstance(c, Guarantee), "claims", c, "every claim must be a mechanisms.base.Guarantee")
        if c.applicable and c.relation != relation:
            c = Guarantee.not_applicable(f"the claim is for {c.relation} neighbours, the pair is {relation}",
                                         relation=c.relation, source=c.source, claim_id=c.claim_id, kind=c.kind)
        out.append(c)
    return out


def audit_mechanism(mechanism: Any, d: Any, d_prime: Any, *, samples: int = 1_000_000,
                    deltas: Sequence[float] = (0.0,), confidence: float = 0.95, seed: int = 0,
                    n_jobs: int = 1, relation: str = "add-remove",
                    claims: Iterable[Guarantee] | None = None,
                    expected: Mapping[str, str] | None = None, pair: str = "",
                    discrete: bool | None = None, events: str | Sequence[str] = "auto", progress: bool = False,
                    sequential: bool = False, execution: Execution | None = None, key: tuple[int, ...] = (),
                    scenario: str = "") -> AuditResult:
    """Audit ``mechanism`` on the neighbouring datasets ``d`` and ``d_prime``.

    Draws ``samples`` outputs per side, bounds ε from below at every requested δ and at
    every claim's δ (each bound at ``confidence``), computes the exact ε(δ) of the pair
    when the mechanism has ``output_distribution``, and checks each claim.  With
    ``claims=None`` the claims are ``mechanism.pair_guarantees(d, d_prime, relation)`` when
    the mechanism has it (claims whose free parameters depend on both datasets), else
    ``mechanism.guarantees(d, relation)``.  ``expected``
    maps claim ids to expected verdicts (a known erratum is an expected ``violation``;
    ``exact-violation`` when only the white-box check can reach it).

    Several applicable claims with one ``claim_id`` form a curve (ε(δ) points): each point
    is tested at confidence 1 − (1 − ``confidence``)/K, so a violation anywhere on the curve
    is certified at ``confidence`` (Bonferroni).  ``events`` forces a view of the outputs
    (``rows``, ``threshold``, ``histogram``).  With ``sequential`` the run stops as soon as a
    violation is certified or none can be reached (:data:`audit.runner.RULE`).
    ``execution`` (backend, checkpoint, progress mode) overrides ``n_jobs`` and ``progress``.
    """
    require(callable(getattr(mechanism, "sample", None)), "mechanism", mechanism,
            "must have a sample(data, size, rng) method")
    samples = _check_int("samples", samples, 20)
    seed = _check_int("seed", seed, 0)
    n_jobs = _check_int("n_jobs", n_jobs, 1) if n_jobs != -1 else -1
    require(relation in RELATIONS, "relation", relation, f"must be one of {', '.join(RELATIONS)}")
    confidence = check_confidence(confidence)
    expected = dict(expected or {})
    for cid, v in expected.items():
        require(v in EXPECTATIONS, f"expected[{cid!r}]", v, f"must be one of {', '.join(EXPECTATIONS)}")

    start = time.perf_counter()
    checked = _claims_for(mechanism, d, d_prime, relation, claims)
    levels = [(delta, confidence) for delta in check_deltas(deltas)]
    curve_size = Counter(c.claim_id for c in checked if c.applicable)
    claim_level, targets = [], {}
    for c in checked:
        if not c.applicable:
            claim_level.append(None)
            continue
        level = (c.delta, 1 - (1 - confidence) / curve_size[c.claim_id])
        if level not in levels:
            levels.append(level)
        index = levels.index(level)
        claim_level.append(index)
        targets[index] = min(targets.get(index, math.inf), c.epsilon)
    execution = execution or Execution(n_jobs=n_jobs, progress="bar" if progress else "off")
    est = runner.estimate(mechanism, d, d_prime, samples=samples, levels=levels, seed=seed, execution=execution,
                          key=key, discrete=discrete, events=events, sequential=sequential, targets=targets)
    white, dists = None, None
    if callable(getattr(mechanism, "output_distribution", None)):
        p, q = mechanism.output_distribution(d), mechanism.output_distribution(d_prime)
        white = {delta: exact.epsilon_for_delta(p, q, delta) for delta in {lv[0] for lv in levels}}
        if len(p) <= 256:
            dists = (np.asarray(p, dtype=float).tolist(), np.asarray(q, dtype=float).tolist())
    elif callable(getattr(mechanism, "exact_epsilon", None)):
        curve = {delta: mechanism.exact_epsilon(d, d_prime, delta) for delta in {lv[0] for lv in levels}}
        white = None if any(v is None for v in curve.values()) else curve
    checks = tuple(ClaimCheck(c, None if i is None else est.at(c.delta, i),
                              None if white is None or i is None else white[c.delta],
                              expected.get(c.claim_id)) for c, i in zip(checked, claim_level))
    name = getattr(mechanism, "name", type(mechanism).__name__)
    sup = mechanism.epsilon_sup_pi0(d, d_prime) if callable(getattr(mechanism, "epsilon_sup_pi0", None)) else None
    return AuditResult(mechanism=name, relation=relation, pair=pair, estimate=est, exact=white,
                       claims=checks, seed=seed, seconds=time.perf_counter() - start,
                       scenario=scenario, params=mechanism_params(mechanism), epsilon_sup=sup, distributions=dists)


def mechanism_params(mechanism: Any) -> dict[str, Any]:
    fields = getattr(mechanism, "__dataclass_fields__", {})
    out = {}
    for name in fields:
        value = getattr(mechanism, name)
        if isinstance(value, (int, float, str, bool, type(None))):
            out[name] = value
        elif isinstance(value, tuple):
            out[name] = list(value)
    return out
