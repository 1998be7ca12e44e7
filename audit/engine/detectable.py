"""What a multi-run audit that passed could have caught: the smallest leak it refutes with probability 0.9.

A pass says nothing of power by itself.  For a claim (ε_c, δ) that holds, take the record's witness
event S with its estimation counts k_F/n_F under the favoured side and k_O/n_O under the other, and
the test the record was bounded with (registered by name in :mod:`dpaudit.engine.stattests`, chosen
with the event).

**Model.**  The event is fixed; the other side's probability is its estimate q̂ = k_O/n_O; a leak of
ε means the favoured side's probability is p(ε) = min(1, q̂·e^ε + δ) — the event then witnesses
exactly (ε, δ), the tight case of P_F[S] ≤ e^ε·P_O[S] + δ.  With k₁ ~ Bin(n_F, p) and
k₂ ~ Bin(n_O, q̂) independent, the audit refutes ε_c when the test's bound exceeds it, so its power is

    π(p) = P[bound(k₁, n_F, k₂, n_O, δ, α) > ε_c] = E_{k₂}[ P[t(k₂) ≤ k₁ ≤ u(k₂)] ],

where [t, u] is the window of k₁ whose bound exceeds ε_c.  The bound is unimodal in k₁: it rises with
the evidence, and the joint test's correction by the upper bound of p (which is 1 at k₁ = n_F, where
the bound is 0) brings it down again near n_F, so u < n_F for the joint test and u = n_F for the pair.
t is found exactly per k₂ (integer secant steps with a bisection safeguard), u within a factor
:data:`CLIFF_STEP` of its distance to n_F, on the refuting side.  The outer expectation is the midpoint
rule over :data:`GRID` quantiles of Bin(n_O, q̂); the inner one is the exact binomial law.  Then

- ``epsilon``: the smallest ε with π(p(ε)) ≥ :data:`POWER` (bisection in p below the p of the
  largest power); ∞ when no p reaches it (this event cannot refute any leak above the claim at
  these counts: a common event, whose p cannot grow enough);
- ``samples_for_twice``: the smallest budget (samples per side, selection and estimation split in
  the record's proportion) at which a leak of 2·ε_c is refuted with probability ≥ :data:`POWER`
  (bisection in the log of the budget to :data:`BUDGET_STEP`), None when the event cannot carry
  that leak (q̂·e^(2ε_c) + δ ≥ 1).  It is a projection searched over a dozen budgets, so the joint
  test is evaluated there by its closed form (Woolf's normal bound of log ψ, corrected) on
  :data:`BUDGET_GRID` quantiles.

The joint test is evaluated by :func:`dpaudit.engine.bounds.joint_score` (exact where its window is
small, the closed form within a fraction of a per cent elsewhere), the pair exactly.

**The selection's charge.**  The audit does not fix its event: it chooses one on a selection split, and
the event it chooses is a draw — a threshold a little off the best, another view's event — whose
bound varies more than a fixed event's.  Measured (50 seeds at 2·10⁵ samples per side, claim ε = 1):
Laplace built to leak exactly the fixed-event model's 0.9-leak was refuted in 35 of 50 seeds, a
noisy histogram (10⁵ per side) in 41 of 50.  So the model counts the event on half the estimation
samples (:data:`SELECTION_CHARGE`): the excess over the claim it resolves grows by about √2, and the
same mechanisms were then refuted in 47 and 46 of 50 (``tests/test_detectable.py``).  The charge is calibrated on
these two, not derived: a mechanism whose best event is much harder to find (a rare region of a
vector output) may need more.

When S was never seen on the other side (k_O = 0) q̂ = 0 makes every leak undetectable and
meaningless; q̂ is then the Clopper–Pearson upper bound of q at the record's level, and the model
says so.  The model fixes the event: the audit itself chooses its event on a selection split and may
find a better or a worse one; it ignores a sequential run's looks (a fixed-n audit at the counts
where it stopped).  This is the power analysis of the audit's own two-sample binomial test.  Cost:
10-30 ms of CPU per holding record (the leak 3-8 ms, the budget 5-23 ms; best of 3 on a shared
machine, events with q̂ from 0.01 to 0.3 at 10⁴-10⁶ samples per side).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from dpaudit.engine import bounds, stattests
from dpaudit.engine.estimate import Bound

POWER = 0.9         # the probability of refutation a leak must reach to count as detectable
GRID = 16           # quantiles of the other side's count summed over (midpoint rule) ...
BUDGET_GRID = 8     # ... and in the budget's search, a projection searched over a dozen sample sizes
SELECTION_CHARGE = 2.0  # the model counts the event on the estimation samples divided by this (docstring)
BUDGET_STEP = 1.03  # relative precision of samples_for_twice
MAX_SAMPLES = 10**13  # a budget beyond this per side is reported as None
_BISECT = 60

Test = Callable[..., np.ndarray]
# A record's test is taken by its saved name from the registry (dpaudit.engine.stattests) and evaluated
# here by its planning form (StatTest.scorer: the joint test exact where its window is small, Woolf's
# closed form within a fraction of a per cent elsewhere, since the exact sums cost 10-30 ms per call at
# counts of 10⁵ and a search makes dozens of calls) and, for the budget, a projection searched over many
# sample sizes, by its closed form alone (StatTest.closed_form).


@dataclass(frozen=True)
class Detectable:
    """The smallest leak (ε) this audit refutes with probability ≥ :data:`POWER` under :attr:`model`,
    and the budget per side that refutes a leak of twice the claim as often (None: none up to
    :data:`MAX_SAMPLES`, a claim of 0, or an event that cannot carry it: q·e^(2ε_c) + δ ≥ 1)."""

    epsilon: float
    samples_for_twice: int | None
    model: str


Gap = Callable[[np.ndarray, np.ndarray], np.ndarray]


def thresholds(test: Test, k2: np.ndarray, n_fav: int, n_oth: int, epsilon_claim: float, delta: float,
               alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Per other-side count k₂, the window [t, u] of favoured counts k₁ whose bound exceeds
    ``epsilon_claim`` (t = n_fav + 1, u = n_fav where none does).

    The bound is unimodal in k₁: it rises with the evidence, and the joint test's correction by the
    upper bound of p (1 at k₁ = n_fav, where the bound is 0) brings it down again near n_fav.  From
    the point estimate's k₁ (which does not refute) steps that double climb until one refutes; a step
    that falls instead has passed the peak, which a ternary search then finds (:func:`_peak`).  Both
    ends of the window are then found by integer secant steps (:func:`_crossing`)."""
    k2 = np.asarray(k2, dtype=float)

    def gap(k1: np.ndarray, k2_: np.ndarray) -> np.ndarray:
        return np.asarray(test(k1.astype(float), n_fav, k2_, n_oth, delta, alpha), dtype=float) - epsilon_claim

    guess = np.floor(n_fav * np.minimum(1.0, delta + math.exp(min(epsilon_claim, 700.0)) * k2 / n_oth))
    lo = np.clip(guess, 0, n_fav)
    g_lo = gap(lo, k2)
    # the point estimate already refutes (a count of 0 on the other side): start below it
    bad = g_lo > 0
    lo[bad], g_lo[bad] = -1.0, -np.inf
    inside, g_in = _first_refuting(gap, lo, g_lo, k2, n_fav)
    t, u = np.full(k2.shape, n_fav + 1.0), np.full(k2.shape, float(n_fav))
    ok = g_in > 0
    if ok.any():
        t[ok] = _crossing(gap, lo[ok], g_lo[ok], inside[ok], g_in[ok], k2[ok])
        top = np.full(int(ok.sum()), float(n_fav))
        g_top = gap(top, k2[ok])
        falls = g_top <= 0  # the window ends before n_fav (always so for the joint test)
        if falls.any():
            u_ok = top.copy()
            u_ok[falls] = _cliff(gap, n_fav, inside[ok][falls], k2[ok][falls])
            u[ok] = u_ok
    return t, u


CLIFF_STEP = 1.1  # relative precision of the distance from n_fav to the window's upper end


def _cliff(gap: Gap, n_fav: int, inside: np.ndarray, k2: np.ndarray) -> np.ndarray:
    """Per k₂, a refuting k₁ at most a factor :data:`CLIFF_STEP` in distance d = n_fav − k₁ from the
    window's upper end (k₁ = n_fav does not refute): bisection in log d.  The bound falls off a cliff
    there (the upper bound of p reaching 1), where a secant crawls; the end only matters for p near 1,
    and the refuting side of the bracket is returned (a window never wider than the true one)."""
    near = np.zeros(inside.shape)               # a distance known not to refute (k₁ = n_fav)
    far = np.maximum(n_fav - inside, 1.0)       # a distance known to refute (inside)
    while (active := (far > near + 1) & (far > near * CLIFF_STEP)).any():
        i = np.flatnonzero(active)
        mid = np.floor(np.sqrt(np.maximum(near[i], 0.5) * far[i]))
        mid = np.clip(mid, near[i] + 1, far[i] - 1)
        hit = gap(n_fav - mid, k2[i]) > 0
        far[i[hit]], near[i[~hit]] = mid[hit], mid[~hit]
    return n_fav - far


def _crossing(gap: Gap, out: np.ndarray, g_out: np.ndarray, inside: np.ndarray, g_in: np.ndarray,
              k2: np.ndarray) -> np.ndarray:
    """Per k₂, the refuting count nearest ``out`` (which does not refute) on the way to ``inside``
    (which does): integer secant steps, a bisection step whenever the same end moved twice."""
    a, b, g_a, g_b = out.astype(float), inside.astype(float), g_out.astype(float), g_in.astype(float)
    last = np.zeros(a.shape, dtype=int)  # which end moved last: −1 a, +1 b
    halve = np.zeros(a.shape, dtype=bool)
    while (active := np.abs(b - a) > 1).any():
        i = np.flatnonzero(active)
        finite = np.isfinite(g_a[i]) & (g_b[i] > g_a[i])
        with np.errstate(invalid="ignore", divide="ignore"):
            secant = np.round(a[i] + (b[i] - a[i]) * (-g_a[i]) / (g_b[i] - g_a[i]))
        m = np.where(finite & ~halve[i], secant, np.floor((a[i] + b[i]) / 2))
        step = np.sign(b[i] - a[i])
        m = np.clip(m, np.minimum(a[i] + step, b[i] - step), np.maximum(a[i] + step, b[i] - step))
        g = gap(m, k2[i])
        hit = g > 0
        moved = np.where(hit, 1, -1)
        halve[i], last[i] = moved == last[i], moved
        b[i[hit]], g_b[i[hit]] = m[hit], g[hit]
        a[i[~hit]], g_a[i[~hit]] = m[~hit], g[~hit]
    return b


def _first_refuting(gap: Gap, lo: np.ndarray, g_lo: np.ndarray, k2: np.ndarray, n_fav: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per k₂, a k₁ above ``lo`` whose bound refutes and its gap (≤ 0 where none does): steps up from
    ``lo`` that double, the first one two standard deviations of the log ratio (√(1/k₁ + 1/k₂))
    expressed in counts of k₁; where a step falls, the peak between the last three points."""
    x, g = lo.copy(), g_lo.copy()
    before = lo.copy()  # the point before x (the peak lies in [before, new x] once g falls)
    k1 = np.maximum(lo, 0) + 1
    step = np.ceil(2 * k1 * np.sqrt(1 / k1 + 1 / (k2 + 1))) + 8
    open_ = np.ones(lo.shape, dtype=bool)
    passed = np.zeros(lo.shape, dtype=bool)
    while open_.any():
        i = np.flatnonzero(open_)
        # never past half the way to n_fav: the bound falls off a cliff there (see _cliff)
        new = np.minimum(x[i] + step[i], np.ceil((np.maximum(x[i], 0) + n_fav) / 2))
        g_new = gap(new, k2[i])
        passed[i] = (g_new <= 0) & (g_new < g[i])
        before[i], x[i], g[i] = np.where(passed[i], before[i], x[i]), new, g_new
        step[i] *= 2
        open_[i] = (g_new <= 0) & (new < n_fav) & ~passed[i]
    if passed.any():
        j = np.flatnonzero(passed)
        x[j], g[j] = _peak(gap, np.maximum(before[j], 0), x[j], k2[j])
    return x, g


def _peak(gap: Gap, a: np.ndarray, b: np.ndarray, k2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The integer k₁ in [a, b] where the unimodal gap is largest, and its gap: ternary search."""
    a, b = a.astype(float), b.astype(float)
    while (active := b - a > 2).any():
        i = np.flatnonzero(active)
        m1, m2 = a[i] + np.floor((b[i] - a[i]) / 3), b[i] - np.floor((b[i] - a[i]) / 3)
        rising = gap(m1, k2[i]) < gap(m2, k2[i])
        a[i[rising]], b[i[~rising]] = m1[rising], m2[~rising]
    points = np.stack([a, np.minimum(a + 1, b), b])
    values = np.stack([gap(p, k2) for p in points])
    best = np.argmax(values, axis=0)
    cols = np.arange(len(a))
    return points[best, cols], values[best, cols]


def _grid(n: int, q: float, cells: int = GRID) -> tuple[np.ndarray, np.ndarray]:
    """Distinct midpoint quantiles of Bin(n, q) over ``cells`` cells and their weights: exact for small
    variances, by the Cornish–Fisher expansion with its skewness term above 100 (scipy's exact inverse
    costs milliseconds per call at n = 10⁶, and the grid is rebuilt at every budget the search tries)."""
    u = (np.arange(cells) + 0.5) / cells
    var = n * q * (1 - q)
    if var <= 100:
        # scipy.stats on first use: loading a results file (engine.results imports this module) needs none
        k = importlib.import_module("scipy.stats").binom.ppf(u, n, q)
    else:
        z = special.ndtri(u)
        k = np.clip(np.round(n * q + z * math.sqrt(var) + (z * z - 1) * (1 - 2 * q) / 6), 0, n)
    values, counts = np.unique(k, return_counts=True)
    return values, counts / cells


def power(window: tuple[np.ndarray, np.ndarray], weights: np.ndarray, n_fav: int, p: float) -> float:
    """Σ_j w_j·P[t_j ≤ Bin(n_fav, p) ≤ u_j]: the refutation probability given the windows [t, u]."""
    t, u = window
    upper = np.where(u >= n_fav, 0.0, special.bdtrc(np.clip(u, 0, n_fav), n_fav, p))  # P[k₁ > u]
    at_least = np.where(t <= 0, 1.0, np.where(t > n_fav, 0.0, special.bdtrc(np.clip(t - 1, 0, n_fav), n_fav, p)))
    return float(np.sum(weights * np.maximum(at_least - upper, 0.0)))


def smallest_leak(test: Test, n_fav: int, n_oth: int, q: float, epsilon_claim: float, delta: float,
                  alpha: float) -> float:
    """The smallest ε with π(min(1, q·e^ε + δ)) ≥ :data:`POWER` (module docstring); ∞ when none.

    π rises with p and, for the joint test, falls again as p nears 1 (its refuting window ends below
    n_fav): the bisection runs between the claim's p and the p of the largest power (golden section)."""
    if q <= 0:
        return math.inf
    k2, w = _grid(n_oth, q)
    window = thresholds(test, k2, n_fav, n_oth, epsilon_claim, delta, alpha)
    lo = _favoured(q, epsilon_claim, delta)
    if power(window, w, n_fav, lo) >= POWER:  # the claim itself is refuted this often: nothing above it is needed
        return epsilon_claim
    hi = _most_powerful(window, w, n_fav, lo)
    if power(window, w, n_fav, hi) < POWER:
        return math.inf
    for _ in range(_BISECT):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if power(window, w, n_fav, mid) >= POWER else (mid, hi)
    return math.log((hi - delta) / q) if hi - delta > 0 else math.inf


def _favoured(q: float, epsilon: float, delta: float) -> float:
    """min(1, q·e^ε + δ), the favoured side's probability under a leak of ε (1 where e^ε overflows)."""
    return 1.0 if epsilon >= math.log(1.0 / q) - 1e-12 else min(1.0, q * math.exp(epsilon) + delta)


def _most_powerful(window: tuple[np.ndarray, np.ndarray], weights: np.ndarray, n_fav: int, lo: float) -> float:
    """The p in [lo, 1] of the largest power: 1 when the windows reach n_fav (π then rises all the way),
    else a golden-section search of the unimodal π."""
    if np.all(window[1] >= n_fav):
        return 1.0
    a, b = lo, 1.0
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(_BISECT):
        c, d = b - ratio * (b - a), a + ratio * (b - a)
        a, b = (a, d) if power(window, weights, n_fav, c) >= power(window, weights, n_fav, d) else (c, b)
    return (a + b) / 2


def _power_at(test: Test, scale: float, n_fav: int, n_oth: int, q: float, p: float, epsilon_claim: float,
              delta: float, alpha: float) -> float:
    nf, no = max(1, math.ceil(scale * n_fav)), max(1, math.ceil(scale * n_oth))
    k2, w = _grid(no, q, BUDGET_GRID)
    return power(thresholds(test, k2, nf, no, epsilon_claim, delta, alpha), w, nf, p)


def budget_scale(test: Test, n_fav: int, n_oth: int, q: float, epsilon_claim: float, delta: float,
                 alpha: float, samples: int, detectable: float) -> float | None:
    """The smallest factor s on the budget at which a leak of 2·ε_c is refuted with probability
    ≥ :data:`POWER` (within :data:`BUDGET_STEP`); None past :data:`MAX_SAMPLES` per side.

    The search starts from the large-sample guess s = ((detectable − ε_c)/ε_c)² (the excess a test
    resolves shrinks as 1/√n) and brackets by factors of 2 around it."""
    p = _favoured(q, 2 * epsilon_claim, delta)
    if epsilon_claim <= 0 or q <= 0 or p >= 1:  # this event cannot carry a leak of twice the claim
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
    if min(n_fav, n_oth) <= 0 or not math.isfinite(epsilon_claim) or bound.test not in stattests.names():
        return None
    alpha = (1.0 - bound.confidence) / 2.0
    if k_oth > 0:
        q, where = k_oth / n_oth, f"q = {k_oth}/{n_oth}"
    else:  # never seen on the other side: q̂ = 0 would make every leak invisible
        q = float(bounds.clopper_pearson(0.0, n_oth, alpha)[1])
        where = f"q = {q:.3g}, the Clopper-Pearson upper bound of 0/{n_oth}"
    test = stattests.get(bound.test).scorer
    # the selection's charge: the event is counted on half the estimation samples (module docstring)
    m_fav, m_oth = max(1, round(n_fav / SELECTION_CHARGE)), max(1, round(n_oth / SELECTION_CHARGE))
    eps = smallest_leak(test, m_fav, m_oth, q, epsilon_claim, bound.delta, alpha)
    scale = budget_scale(stattests.get(bound.test).closed_form, m_fav, m_oth, q, epsilon_claim, bound.delta, alpha,
                         samples, eps)
    model = (f"the witness event fixed, {where} on the other side, p = q*e^eps + delta on the favoured side, "
             f"counted on {m_fav}/{m_oth} samples (half the estimation split's, the charge for choosing the "
             f"event on a split), {bound.test} test, power {POWER:g}")
    return Detectable(epsilon=eps, samples_for_twice=None if scale is None else math.ceil(scale * samples),
                      model=model)
