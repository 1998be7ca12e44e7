"""The guessing rule an audit with claims plans from the claims alone, before any score is seen.

A one-run bound holds for a rule fixed before the secret is seen (Steinke, Nasr, Jagielski 2023,
Thm 3.3; Mahloujifar, Melis, Chaudhuri 2025, Thm 9).  Claims are known before the game, so they can
fix the rule: each applicable claim names a GDP separation μ (its own for a μ-GDP curve; the μ whose
GDP profile passes through (ε, δ) for an (ε, δ) claim, the smallest over a profile's points), and
:func:`~dpaudit.onerun.planner.best_fixed_rule` picks k₊ = k₋ = k with the largest median bound for
Gaussian canaries at ``separation`` × the smallest such μ — the claim nearest to being refuted —
among the μ-GDP claims when there are any (else the (ε, δ) claims, else the other curves), and
never fewer guesses than can reject ε = 0 with every guess right
(:func:`~dpaudit.onerun.rules.smallest_capable_k`).  The rule is a function of (m, the claims,
confidence, δ) only: no score, no secret, so it is one test at level α with no correction (the
default grid of :func:`~dpaudit.onerun.rules.default_rule` pays Bonferroni over 9 pairs at m = 1000:
13–21 % of the median bound on Gaussian canaries at ε = 4 and 8).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from dpaudit.core import Guarantee
from dpaudit.onerun.curves import CurveClaim, gdp_mu
from dpaudit.onerun.planner import MU_MAX, best_fixed_rule
from dpaudit.onerun.rules import Fixed, smallest_capable_k
from dpaudit.onerun.steinke import rejects_zero

__all__ = ["FALLBACK_MU", "claim_mu", "forget_plans", "rule_from_claims"]

# μ = MU_MAX is (ε, 1e-5)-DP only past ε ≈ 285 (ε(δ) ≈ μ²/2 + μ·Φ⁻¹(1 − δ)): claims beyond are planned at MU_MAX
EPSILON_PAST_MU_MAX = 300.0
FALLBACK_MU = gdp_mu(0.1, 1e-5)  # a claim of ε = 0, δ = 0 or μ = 0 is planned at this nearby finite one


def _eps_delta_mu(epsilon: float, delta: float) -> float:
    if not math.isfinite(epsilon) or epsilon >= EPSILON_PAST_MU_MAX:
        return MU_MAX
    return gdp_mu(epsilon, delta) if epsilon > 0 and delta > 0 else gdp_mu(max(epsilon, 0.1), 1e-5)


def claim_mu(claim: Guarantee | CurveClaim) -> float:
    """The GDP μ a claim is planned at: the largest μ whose μ-GDP mechanism satisfies it (Dong, Roth,
    Su 2022, Cor. 2.13: μ-GDP is (ε, δ_μ(ε))-DP, and δ_μ(ε) grows with μ), capped at MU_MAX."""
    if isinstance(claim, CurveClaim):
        if claim.family == "gdp":
            mu = claim.mu if claim.mu > 0 else FALLBACK_MU
        elif claim.family == "approx-dp":
            mu = _eps_delta_mu(claim.epsilon, claim.delta)
        else:  # a profile holds at every point, so a GDP mechanism satisfying it is below each point's μ
            mu = min(_eps_delta_mu(e, d) for e, d in zip(claim.epsilons, claim.deltas, strict=True))
    else:
        mu = _eps_delta_mu(float(claim.epsilon), float(claim.delta))
    return min(float(mu), MU_MAX)


def _first_kind(claims: list[Guarantee | CurveClaim]) -> list[Guarantee | CurveClaim]:
    """The claims whose μ the plan uses: μ-GDP curves (their μ is the claim itself), else (ε, δ)
    claims, else the other curves (approx-dp, profiles)."""
    gdps: list[Guarantee | CurveClaim] = [c for c in claims if isinstance(c, CurveClaim) and c.family == "gdp"]
    guarantees: list[Guarantee | CurveClaim] = [c for c in claims if isinstance(c, Guarantee)]
    return gdps or guarantees or claims


@functools.lru_cache(maxsize=256)
def _planned(m: int, delta: float, confidence: float, mu: float, objective: str) -> Fixed:
    """The planner's k, never below the smallest k that can reject at all (at a small claimed μ the
    median bound is 0 for every k and the planner's argmax is k = 1: 2 guesses, which no outcome
    makes significant).  Cached: a suite or a test loop audits many games of one size and claim."""
    rule = best_fixed_rule(m, delta=delta, confidence=confidence, mu=mu, objective=objective)[0]
    alpha = 1.0 - confidence
    # "epsilon_lower(n, r, v) > 0", the floor's question, answered exactly by rejects_zero in one or two
    # evaluations of p instead of epsilon_lower's ~70 (the bisection visits every k it visited before)
    floor = smallest_capable_k(m, alpha, lambda n, r, v, a: float(rejects_zero(n, r, v, delta=delta, alpha=a)))
    return rule if floor is None or rule.k_plus >= floor else Fixed(floor, floor)


def forget_plans() -> None:
    """Empty the cache of planned rules, so that the next plan is computed afresh (``dpaudit bench``
    times a first call)."""
    _planned.cache_clear()


def _applies(claim: Guarantee | CurveClaim, relation: str | None) -> bool:
    if not claim.applicable:
        return False
    return isinstance(claim, CurveClaim) or relation is None or claim.relation == relation


def rule_from_claims(m: int, claims: Sequence[Guarantee | CurveClaim], *, confidence: float, delta: float,
                     separation: float = 1.0, relation: str | None = None) -> tuple[Fixed, dict[str, object]] | None:
    """The fixed symmetric rule planned from ``claims`` alone, and what the plan rests on (for the
    record); None when no claim applies (the caller keeps its default).

    ``separation``: the plan assumes Gaussian canaries at ``separation`` × the smallest claimed μ.
    1 (an audit's bound): the rule with the largest median bound for a mechanism exactly at its
    claim.  2 (:func:`~dpaudit.testing.assert_private_one_run`): half the noise the claim allows, the
    size of violation a test should catch.  The objective is the largest rejected GDP μ when a curve
    claim applies (the f-DP test, Mahloujifar et al. 2025, Alg. 2), Steinke's (ε, δ) bound otherwise,
    at the (ε, δ) claim's δ (else ``delta``; 1e-5 when that is 0)."""
    usable = [c for c in claims if isinstance(c, (Guarantee, CurveClaim)) and _applies(c, relation)]
    if not usable:
        return None
    nearest = min(_first_kind(usable), key=claim_mu)
    mu = min(separation * claim_mu(nearest), MU_MAX)
    objective = "gdp-mu" if any(isinstance(c, CurveClaim) for c in usable) else "steinke"
    plan_delta = float(nearest.delta) if isinstance(nearest, Guarantee) and nearest.delta > 0 else delta
    plan_delta = plan_delta if plan_delta > 0 else 1e-5
    rule = _planned(m, plan_delta, confidence, mu, objective)
    return rule, {"planned_from": "claims", "planned_mu": mu, "objective": objective,
                  "separation": separation, "planned_delta": plan_delta}
