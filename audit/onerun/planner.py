"""Planning a one-run audit: how many canaries (or runs of m canaries) a target ε_LB needs.

The plan assumes a model of the scores — isolated Gaussian canaries at separation μ (scores
``N(μ S_j, 1)``) or randomized response at ε — and evaluates Steinke et al.'s bound at the
*expected* counts of a symmetric rule k₊ = k₋ = k.  For the Gaussian model, the k highest of m
scores lie above the threshold t solving ``(m/2)(Φ̄(t − μ) + Φ̄(t)) = k`` and are right with
probability ``Φ̄(t − μ)/(Φ̄(t − μ) + Φ̄(t))`` (by symmetry, so are the k lowest).  The fraction
k/m is chosen here, before any game is played, so the resulting :class:`~dpaudit.onerun.rules.Fixed`
rule is fixed in advance.  Expected counts approximate the median run; the realised bound
scatters around it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from dpaudit.core import require
from dpaudit.onerun.fdp import largest_rejected_mu
from dpaudit.onerun.rules import Fixed
from dpaudit.onerun.steinke import epsilon_ceiling, epsilon_lower

__all__ = ["Plan", "best_fixed_rule", "expected_counts", "plan_canaries"]



def expected_counts(m: int, k: int, *, mu: float | None = None, epsilon: float | None = None) -> tuple[int, int]:
    """(r, v) expected for k₊ = k₋ = k under the Gaussian (``mu``) or RR (``epsilon``) model."""
    require(1 <= 2 * k <= m, "k", k, f"must satisfy 1 <= 2k <= m = {m}")
    require((mu is None) != (epsilon is None), "mu/epsilon", (mu, epsilon), "give exactly one model parameter")
    if epsilon is not None:
        precision = math.exp(epsilon) / (1 + math.exp(epsilon))
    else:
        assert mu is not None
        def excess(t: float) -> float:
            return 0.5 * m * (special.ndtr(mu - t) + special.ndtr(-t)) - k
        t = optimize.brentq(excess, -50.0, 50.0 + mu)
        hi, lo = special.ndtr(mu - t), special.ndtr(-t)
        precision = hi / (hi + lo)
    # The median of Bin(2k, precision): the bound is monotone in v, so the bound at the median
    # count is the median bound (the ranked count is close to binomial).
    return 2 * k, int(stats.binom.median(2 * k, precision))


def best_fixed_rule(m: int, *, delta: float, confidence: float = 0.95, mu: float | None = None,
                    epsilon: float | None = None, objective: str = "steinke") -> tuple[Fixed, float]:
    """The fixed symmetric rule with the largest median bound under the model, and that bound.

    ``objective``: ``steinke`` (the (ε, δ) bound) or ``gdp-mu`` (the largest rejected GDP μ,
    returned as μ: a statement about GDP claims only)."""
    require(objective in ("steinke", "gdp-mu"), "objective", objective, "must be 'steinke' or 'gdp-mu'")
    alpha = 1.0 - confidence
    best, best_k = -1.0, 1
    for k in np.unique(np.round(np.geomspace(1, m // 2, 32)).astype(int)):
        r, v = expected_counts(m, int(k), mu=mu, epsilon=epsilon)
        value = (epsilon_lower(m, r, v, delta=delta, alpha=alpha) if objective == "steinke" else
                 largest_rejected_mu(m=m, c_prime=r, c=v, tau=alpha))
        if value > best:
            best, best_k = value, int(k)
    return Fixed(best_k, best_k), best


@dataclass(frozen=True)
class Plan:
    """The smallest game reaching ``target``: ``runs`` runs of ``canaries_per_run`` canaries."""

    target: float
    canaries_per_run: int
    runs: int
    rule: Fixed
    expected_epsilon_lower: float
    ceiling: float  # the bound when every canary is guessed right: no game of this size beats it

    @property
    def m(self) -> int:
        return self.canaries_per_run * self.runs

    def describe(self) -> str:
        return (f"{self.runs} run(s) x {self.canaries_per_run} canaries (m = {self.m}), guess k+ = k- = "
                f"{self.rule.k_plus}: expected eps_lower {self.expected_epsilon_lower:.3g} >= target {self.target:.3g} "
                f"(ceiling at this m {self.ceiling:.3g})")


def plan_canaries(target: float, *, delta: float = 1e-5, confidence: float = 0.95, mu: float | None = None,
                  epsilon: float | None = None, canaries_per_run: int | None = None,
                  max_canaries: int = 10**6) -> Plan | None:
    """The fewest canaries (``canaries_per_run`` None) or runs of ``canaries_per_run`` canaries
    whose expected ε_LB reaches ``target``; None when even ``max_canaries`` cannot (the target
    is above what the model's mechanism leaks, or above the ceiling)."""
    require(target > 0 and math.isfinite(target), "target", target, "must be a finite number > 0")
    require(0.5 <= confidence < 1, "confidence", confidence, "must be in [0.5, 1)")
    if canaries_per_run is not None:
        require(isinstance(canaries_per_run, int) and canaries_per_run >= 2, "canaries_per_run", canaries_per_run,
                "must be an integer >= 2")
    alpha = 1.0 - confidence

    def value(total: int) -> tuple[Fixed, float]:
        return best_fixed_rule(total, delta=delta, confidence=confidence, mu=mu, epsilon=epsilon)

    unit = canaries_per_run or 1
    lo, hi = 0, max(unit, 10 if unit == 1 else unit)
    while value(hi)[1] < target:  # doubling, then bisection to 1 % (or one run)
        if hi >= max_canaries:
            return None
        lo, hi = hi, min(2 * hi, max(max_canaries // unit, 1) * unit)
    while hi - lo > max(unit, hi // 100):
        mid = (lo + hi) // (2 * unit) * unit
        if mid <= lo:
            break
        if value(mid)[1] >= target:
            hi = mid
        else:
            lo = mid
    rule, got = value(hi)
    per = canaries_per_run or hi
    return Plan(target=target, canaries_per_run=per, runs=hi // per, rule=rule, expected_epsilon_lower=got,
                ceiling=epsilon_ceiling(hi, delta=delta, alpha=alpha))
