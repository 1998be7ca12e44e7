"""What a multi-run audit that passed could have caught: the smallest leak it refutes with probability 0.9.

A pass says nothing of power by itself.  For a claim (ε_c, δ) that holds, take the record's witness
event S with its estimation counts k_F/n_F under the favoured side and k_O/n_O under the other, and
the test the record was bounded with (:data:`dpaudit.engine.bounds.TESTS`, chosen with the event).

**Model.**  The event is fixed; the other side's probability is its estimate q̂ = k_O/n_O; a leak of
ε means the favoured side's probability is p(ε) = min(1, q̂·e^ε + δ) — the event then witnesses
exactly (ε, δ), the tight case of P_F[S] ≤ e^ε·P_O[S] + δ.  With k₁ ~ Bin(n_F, p) and
k₂ ~ Bin(n_O, q̂) independent, the audit refutes ε_c when the test's bound exceeds it, so its power is

    π(p) = P[bound(k₁, n_F, k₂, n_O, δ, α) > ε_c] = E_{k₂}[ P[k₁ ≥ t(k₂)] ],

where t(k₂) is the smallest k₁ whose bound exceeds ε_c (the bound increases in k₁; found per k₂ by a
secant search with bisection safeguard).  The outer expectation is the midpoint rule over
:data:`GRID` quantiles of Bin(n_O, q̂); the inner one is the exact binomial tail.  Then

- ``epsilon``: the smallest ε with π(p(ε)) ≥ :data:`POWER` (bisection in p); ∞ when even p = 1
  falls short (this event cannot refute any leak above the claim at these counts);
- ``samples_for_twice``: the smallest budget (samples per side, selection and estimation split in
  the record's proportion) at which a leak of 2·ε_c is refuted with probability ≥ :data:`POWER`
  (bisection in the log of the budget to :data:`BUDGET_STEP`).  It is a projection, so the joint
  test is evaluated there by its closed form (Woolf's normal bound of log ψ, corrected).

The joint test is evaluated by :func:`dpaudit.engine.bounds.joint_score` (exact where its window is
small, the closed form within a fraction of a per cent elsewhere), the pair exactly.

**The selection's charge.**  The audit does not fix its event: it chooses one on a selection split, and
the event it chooses is a draw — a threshold a little off the best, another view's event — whose
bound varies more than a fixed event's.  Measured (50 seeds at 2·10⁵ samples per side, claim ε = 1):
Laplace built to leak exactly the fixed-event model's 0.9-leak was refuted in 70 % of seeds, a noisy
histogram in 82 %.  So the model counts the event on half the estimation samples
(:data:`SELECTION_CHARGE`): the excess over the claim it resolves grows by about √2, and the same
mechanisms were then refuted in ≥ 90 % (``tests/test_detectable.py``).  The charge is calibrated on
these two, not derived: a mechanism whose best event is much harder to find (a rare region of a
vector output) may need more.

When S was never seen on the other side (k_O = 0) q̂ = 0 makes every leak undetectable and
meaningless; q̂ is then the Clopper–Pearson upper bound of q at the record's level, and the model
says so.  The model fixes the event: the audit itself chooses its event on a selection split and may
find a better or a worse one; it ignores a sequential run's looks (a fixed-n audit at the counts
where it stopped).  This is the power analysis of a two-sample binomial test, as in the planning
of DP-auditing budgets (Jagielski, Ullman & Oprea 2020, §3; Lu et al. 2022, §4).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from dpaudit.engine import bounds, ratio_test
from dpaudit.engine.estimate import Bound

POWER = 0.9         # the probability of refutation a leak must reach to count as detectable
GRID = 16           # quantiles of the other side's count summed over (midpoint rule)
SELECTION_CHARGE = 2.0  # the model counts the event on the estimation samples divided by this (docstring)
BUDGET_STEP = 1.03  # relative precision of samples_for_twice
MAX_SAMPLES = 10**13  # a budget beyond this per side is reported as None
_BISECT = 60

Test = Callable[..., np.ndarray]
# The test each record's name stands for, as evaluated here: the joint test by its planning form
# (exact where its window is small, Woolf's closed form within a fraction of a per cent elsewhere:
# the exact sums cost 10-30 ms per call at counts of 10⁵, and a search makes dozens of calls).
PLANNING: dict[str, Test] = {"joint": bounds.joint_score, "clopper-pearson": bounds.pair_epsilon}


def _woolf(k1: np.ndarray, n1: np.ndarray, k2: np.ndarray, n2: np.ndarray, delta: float, alpha: float
           ) -> np.ndarray:
    """The joint test's closed form (Woolf's normal bound of log ψ, corrected): ``alpha`` per bound of
    the pair it replaces, as :data:`dpaudit.engine.bounds.TESTS` take it."""
    k1, n1, k2, n2 = (np.asarray(v, dtype=float) for v in np.broadcast_arrays(k1, n1, k2, n2))
    return np.asarray(ratio_test.approximate_epsilon(k1, n1, k2, n2, delta, 2.0 * alpha), dtype=float)


# ... and for the budget, a projection searched over many sample sizes, its closed form alone.
ROUGH: dict[str, Test] = {"joint": _woolf}


@dataclass(frozen=True)
class Detectable:
    """The smallest leak (ε) this audit refutes with probability ≥ :data:`POWER` under :attr:`model`,
    and the budget per side that refutes a leak of twice the claim as often (None: none up to
    :data:`MAX_SAMPLES`, or a claim of 0)."""

    epsilon: float
    samples_for_twice: int | None
    model: str


def thresholds(test: Test, k2: np.ndarray, n_fav: int, n_oth: int, epsilon_claim: float, delta: float,
               alpha: float) -> np.ndarray:
    """Per other-side count k₂, the smallest favoured count k₁ whose bound exceeds ``epsilon_claim``
    (n_fav + 1 where none does).  Integer secant steps between a k₁ known not to refute and one known
    to refute, a bisection step whenever the same end moved twice (the bound is concave-like in k₁)."""
    k2 = np.asarray(k2, dtype=float)

    def gap(k1: np.ndarray, k2_: np.ndarray) -> np.ndarray:
        return np.asarray(test(k1.astype(float), n_fav, k2_, n_oth, delta, alpha), dtype=float) - epsilon_claim

    guess = np.floor(n_fav * np.minimum(1.0, delta + math.exp(min(epsilon_claim, 700.0)) * k2 / n_oth))
    lo = np.clip(guess, 0, n_fav)
    g_lo = gap(lo, k2)
    # the point estimate already refutes (a count of 0 on the other side): start below it
    bad = g_lo > 0
    lo[bad], g_lo[bad] = -1.0, -np.inf
    hi, g_hi = _first_refuting(gap, lo, k2, n_fav)
    out = np.where(np.isfinite(g_hi), np.nan, n_fav + 1.0)
    todo = np.isfinite(g_hi)
    lo, hi, g_lo, g_hi, k2 = lo[todo], hi[todo], g_lo[todo], g_hi[todo], k2[todo]
    last = np.zeros(lo.shape, dtype=int)  # which end moved last: −1 lo, +1 hi
    bisect = np.zeros(lo.shape, dtype=bool)  # the same end moved twice: the secant is stalling
    while (active := hi - lo > 1).any():
        a = np.flatnonzero(active)
        finite = np.isfinite(g_lo[a]) & np.isfinite(g_hi[a]) & (g_hi[a] > g_lo[a])
        with np.errstate(invalid="ignore", divide="ignore"):
            secant = lo[a] + (hi[a] - lo[a]) * (-g_lo[a]) / (g_hi[a] - g_lo[a])
        mid = np.floor((lo[a] + hi[a]) / 2)
        m = np.where(finite & ~bisect[a], np.round(secant), mid)
        m = np.clip(m, lo[a] + 1, hi[a] - 1)
        g = gap(m, k2[a])
        up = g > 0
        moved = np.where(up, 1, -1)
        bisect[a], last[a] = moved == last[a], moved
        hi[a[up]], g_hi[a[up]] = m[up], g[up]
        lo[a[~up]], g_lo[a[~up]] = m[~up], g[~up]
    out[todo] = hi
    return out


def _first_refuting(gap: Callable[[np.ndarray, np.ndarray], np.ndarray], lo: np.ndarray, k2: np.ndarray,
                    n_fav: int) -> tuple[np.ndarray, np.ndarray]:
    """Per k₂, a k₁ above ``lo`` whose bound refutes, and its gap (−inf where none up to n_fav): steps
    up from ``lo`` that double, the first one two standard deviations of the log ratio
    (√(1/k₁ + 1/k₂)) expressed in counts of k₁.  Not simply k₁ = n_fav: the joint test's correction by the upper bound
    of p (1 at k₁ = n_fav) brings its bound back down near k₁ = n_fav."""
    hi, g_hi = lo.copy(), np.full(lo.shape, -np.inf)
    k1 = np.maximum(lo, 0) + 1
    step = np.ceil(2 * k1 * np.sqrt(1 / k1 + 1 / (k2 + 1))) + 8
    open_ = np.ones(lo.shape, dtype=bool)
    while open_.any():
        i = np.flatnonzero(open_)
        hi[i] = np.minimum(n_fav, hi[i] + step[i])
        g_hi[i] = gap(hi[i], k2[i])
        step[i] *= 2
        open_[i] = (g_hi[i] <= 0) & (hi[i] < n_fav)
    return hi, np.where(g_hi > 0, g_hi, -np.inf)


def _grid(n: int, q: float) -> tuple[np.ndarray, np.ndarray]:
    """Distinct midpoint quantiles of Bin(n, q) over :data:`GRID` cells and their weights."""
    k = stats.binom.ppf((np.arange(GRID) + 0.5) / GRID, n, q)
    values, counts = np.unique(k, return_counts=True)
    return values, counts / GRID


def power(t: np.ndarray, weights: np.ndarray, n_fav: int, p: float) -> float:
    """Σ_j w_j·P[Bin(n_fav, p) ≥ t_j]: the refutation probability given the thresholds t."""
    tail = np.where(t <= 0, 1.0, np.where(t > n_fav, 0.0, special.bdtrc(np.maximum(t - 1, 0), n_fav, p)))
    return float(np.sum(weights * tail))


def smallest_leak(test: Test, n_fav: int, n_oth: int, q: float, epsilon_claim: float, delta: float,
                  alpha: float) -> float:
    """The smallest ε with π(min(1, q·e^ε + δ)) ≥ :data:`POWER` (module docstring); ∞ when none."""
    k2, w = _grid(n_oth, q)
    t = thresholds(test, k2, n_fav, n_oth, epsilon_claim, delta, alpha)
    if power(t, w, n_fav, 1.0) < POWER or q <= 0:
        return math.inf
    lo = min(1.0, q * math.exp(epsilon_claim) + delta)
    if power(t, w, n_fav, lo) >= POWER:  # the claim itself is refuted this often: nothing above it is needed
        return epsilon_claim
    hi = 1.0
    for _ in range(_BISECT):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if power(t, w, n_fav, mid) >= POWER else (mid, hi)
    return math.log((hi - delta) / q) if hi - delta > 0 else math.inf


def _power_at(test: Test, scale: float, n_fav: int, n_oth: int, q: float, p: float, epsilon_claim: float,
              delta: float, alpha: float) -> float:
    nf, no = max(1, math.ceil(scale * n_fav)), max(1, math.ceil(scale * n_oth))
    k2, w = _grid(no, q)
    return power(thresholds(test, k2, nf, no, epsilon_claim, delta, alpha), w, nf, p)


def budget_scale(test: Test, n_fav: int, n_oth: int, q: float, epsilon_claim: float, delta: float,
                 alpha: float, samples: int, detectable: float) -> float | None:
    """The smallest factor s on the budget at which a leak of 2·ε_c is refuted with probability
    ≥ :data:`POWER` (within :data:`BUDGET_STEP`); None past :data:`MAX_SAMPLES` per side.

    The search starts from the large-sample guess s = ((detectable − ε_c)/ε_c)² (the excess a test
    resolves shrinks as 1/√n) and brackets by factors of 2 around it."""
    p = min(1.0, q * math.exp(2 * epsilon_claim) + delta)
    if epsilon_claim <= 0 or q <= 0:
        return None

    def caught(s: float) -> bool:
        return _power_at(test, s, n_fav, n_oth, q, p, epsilon_claim, delta, alpha) >= POWER

    guess = ((detectable - epsilon_claim) / epsilon_claim) ** 2 if math.isfinite(detectable) else 4.0
    lo = hi = min(max(guess, 20 / samples), MAX_SAMPLES / samples)
    if caught(hi):
        while lo * samples > 20 and caught(lo / 2):
            lo /= 2
        hi, lo = lo, lo / 2
    else:
        while not caught(hi):
            lo, hi = hi, hi * 2
            if hi * samples > MAX_SAMPLES:
                return None
    while hi / lo > BUDGET_STEP:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if caught(mid) else (mid, hi)
    return hi


def for_claim(bound: Bound, epsilon_claim: float, samples: int) -> Detectable | None:
    """The :class:`Detectable` of a claim (ε_c = ``epsilon_claim``, δ = ``bound.delta``) that holds,
    from its witness ``bound`` and the audit's budget ``samples`` per side; None when the record has
    no estimation counts or the claim is infinite."""
    k_d, n_d, k_dp, n_dp = bound.counts
    # the favoured side's count is not used: the model puts p where the leak would
    n_fav, k_oth, n_oth = (n_d, k_dp, n_dp) if bound.event.favours == "D" else (n_dp, k_d, n_d)
    if min(n_fav, n_oth) <= 0 or not math.isfinite(epsilon_claim) or bound.test not in bounds.TESTS:
        return None
    alpha = (1.0 - bound.confidence) / 2.0
    if k_oth > 0:
        q, where = k_oth / n_oth, f"q = {k_oth}/{n_oth}"
    else:  # never seen on the other side: q̂ = 0 would make every leak invisible
        q = float(bounds.clopper_pearson(0.0, n_oth, alpha)[1])
        where = f"q = {q:.3g}, the Clopper-Pearson upper bound of 0/{n_oth}"
    test = PLANNING.get(bound.test, bounds.TESTS[bound.test])
    # the selection's charge: the event is counted on half the estimation samples (module docstring)
    m_fav, m_oth = max(1, round(n_fav / SELECTION_CHARGE)), max(1, round(n_oth / SELECTION_CHARGE))
    eps = smallest_leak(test, m_fav, m_oth, q, epsilon_claim, bound.delta, alpha)
    scale = budget_scale(ROUGH.get(bound.test, test), m_fav, m_oth, q, epsilon_claim, bound.delta, alpha, samples, eps)
    model = (f"the witness event fixed, {where} on the other side, p = q*e^eps + delta on the favoured side, "
             f"counted on {m_fav}/{m_oth} samples (half the estimation split's, the charge for choosing the "
             f"event on a split), {bound.test} test, power {POWER:g}")
    return Detectable(epsilon=eps, samples_for_twice=None if scale is None else math.ceil(scale * samples),
                      model=model)
