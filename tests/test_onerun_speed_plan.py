"""The shortcuts of the one-run planner and bound give the exhaustive answers.

* ``steinke.rejects_zero`` is ``epsilon_lower(...) > 0`` and ``steinke.epsilon_upper`` is a strict
  upper bound on ``epsilon_lower`` (random counts, every guess right included);
* ``planner.best_fixed_rule`` (it skips a k whose ``epsilon_upper`` is ≤ the best so far) picks the
  k and the bound of the full scan over its 32 k (written out below);
* the claims-planned rule's floor (``smallest_capable_k`` asked through ``rejects_zero``) is the one
  asked through ``epsilon_lower``;
* ``one_run_bound`` under a grid (it skips tests that cannot beat an earlier one) reports the
  bounds, the best test and the claims' verdicts of every test bounded.

Exact equality throughout; no time is measured.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.core import Guarantee
from dpaudit.onerun import claimrule, planner
from dpaudit.onerun.bound import one_run_bound
from dpaudit.onerun.rules import Fixed, Grid, default_rule, smallest_capable_k
from dpaudit.onerun.steinke import epsilon_lower, epsilon_upper, prior_guard, rejects_zero


def random_case(rng: np.random.Generator) -> tuple[int, int, int, float, float]:
    m = int(rng.choice([10, 100, 1000, 10_000, 100_000]) * rng.uniform(1, 9))
    r = int(rng.integers(1, m + 1))
    v = int(min(r, rng.binomial(r, rng.uniform(0.5, 1.0)) + rng.integers(0, 3)))
    return m, r, v, float(rng.choice([0.0, 1e-6, 1e-5, 1e-3])), float(rng.choice([0.05, 0.01, 0.001]))


@pytest.mark.parametrize("seed", range(60))
def test_rejects_zero_and_epsilon_upper_agree_with_epsilon_lower(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, r, v, delta, alpha = random_case(rng)
    if seed % 3 == 0:
        r = v = int(rng.integers(1, min(m, 60) + 1))  # every guess right: the floor's question
    eps = epsilon_lower.__wrapped__(m, r, v, delta=delta, alpha=alpha)
    assert rejects_zero(m, r, v, delta=delta, alpha=alpha) == (eps > 0), (m, r, v, delta, alpha)
    assert eps < epsilon_upper(m, r, v, delta=delta, alpha=alpha), (m, r, v, delta, alpha)


def test_the_cases_meet_both_answers() -> None:
    """Not vacuous: the random cases include tests that reject ε = 0 and tests that do not."""
    answers = set()
    for seed in range(60):
        m, r, v, delta, alpha = random_case(np.random.default_rng(seed))
        answers.add(rejects_zero(m, r, v, delta=delta, alpha=alpha))
    assert answers == {True, False}


def full_scan(m: int, *, delta: float, confidence: float, mu: float, objective: str) -> tuple[Fixed, float]:
    """best_fixed_rule without skipping: every k of its grid bounded (the reference)."""
    alpha = 1.0 - confidence
    best, best_k = -1.0, 1
    for k in np.unique(np.round(np.geomspace(1, m // 2, 32)).astype(int)):
        r, v = planner.expected_counts(m, int(k), mu=mu)
        value = (epsilon_lower(m, r, v, delta=delta, alpha=alpha) if objective == "steinke" else
                 planner.largest_rejected_mu(m=m, c_prime=r, c=v, tau=alpha))
        if value > best:
            best, best_k = value, int(k)
    return Fixed(best_k, best_k), best


@pytest.mark.parametrize("seed", range(16))
def test_best_fixed_rule_equals_the_full_scan(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    m = int(rng.choice([50, 400, 3000, 20_000, 200_000]))
    mu = float(rng.uniform(0.05, 6.0))
    delta = float(rng.choice([1e-5, 1e-3, 1e-7]))
    confidence = float(rng.choice([0.95, 0.99]))
    got = planner.best_fixed_rule(m, delta=delta, confidence=confidence, mu=mu, objective="steinke")
    assert got == full_scan(m, delta=delta, confidence=confidence, mu=mu, objective="steinke"), (m, mu, delta)


@pytest.mark.parametrize("m", [40, 1000, 30_000, 10**6])
@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_the_planned_floor_equals_the_floor_asked_through_epsilon_lower(m: int, delta: float) -> None:
    for alpha in (0.05, 0.001):
        fast = smallest_capable_k(m, alpha, lambda n, r, v, a: float(rejects_zero(n, r, v, delta=delta, alpha=a)))
        slow = smallest_capable_k(m, alpha, lambda n, r, v, a: epsilon_lower(n, r, v, delta=delta, alpha=a))
        assert fast == slow, (m, delta, alpha)


def test_rule_from_claims_is_the_plan_of_the_full_scan_and_the_floor() -> None:
    claimrule._planned.cache_clear()
    for eps in (0.5, 2.0, 8.0):
        rule, why = claimrule.rule_from_claims(20_000, [Guarantee(epsilon=eps, delta=1e-5)], confidence=0.95,
                                               delta=1e-5) or (None, {})
        want = full_scan(20_000, delta=1e-5, confidence=0.95, mu=float(why["planned_mu"]), objective="steinke")[0]
        floor = smallest_capable_k(20_000, 0.05, lambda n, r, v, a: epsilon_lower(n, r, v, delta=1e-5, alpha=a))
        assert floor is not None
        assert rule == (want if want.k_plus >= floor else Fixed(floor, floor)), eps


@pytest.mark.parametrize("seed", range(10))
def test_grid_bound_equals_every_test_bounded(seed: int) -> None:
    """one_run_bound may skip grid tests that cannot win: its bounds, best test and verdicts are those
    of bounding every test (with the caller's-secret cap, prior_guard, as it applies here)."""
    rng = np.random.default_rng(300 + seed)
    m = int(rng.choice([200, 2000, 20_000]))
    secret = rng.integers(0, 2, m)
    scores = float(rng.uniform(0.0, 4.0)) * secret + rng.standard_normal(m)
    deltas = (1e-5, 1e-3)
    claims = (Guarantee(epsilon=float(rng.uniform(0.1, 3.0)), delta=1e-5),
              Guarantee(epsilon=float(rng.uniform(0.1, 3.0)), delta=1e-4))
    rule = default_rule(m) if seed % 2 else Grid.symmetric(sorted({int(k) for k in rng.integers(1, m // 2, 6)}))
    res = one_run_bound(scores, secret, rule=rule, deltas=deltas, claims=claims, tiebreak=seed)
    per = np.array([[min(epsilon_lower(t.m, t.r, t.v, delta=d, alpha=t.alpha), prior_guard(t))
                     for d in (*deltas, 1e-4)] for t in res.tests])
    assert res.epsilon_lowers == tuple(float(x) for x in per[:, :2].max(axis=0))
    assert res.best == int(np.argmax(per[:, 0]))
    assert [c.epsilon_lower for c in res.claims] == [float(per[:, 0].max()), float(per[:, 2].max())]
