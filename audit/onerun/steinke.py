"""The (ε, δ) lower bound of one run: Steinke, Nasr and Jagielski's p-value.

Steinke, Nasr, Jagielski, *Privacy Auditing with One (1) Training Run*, NeurIPS 2023,
Theorem 3.1 (pure DP) and Theorem 3.3 / Proposition 5.2 (approximate DP).  In the canary game
each of m canaries is included with probability ½ and a guesser makes r guesses (in or out)
from the one output.  If the mechanism is (ε, δ)-DP, the number V of correct guesses satisfies,
with ``q = e^ε/(1+e^ε)`` and ``f(v) = P[Bin(r, q) ≥ v]``,

    P[V ≥ v] ≤ p(ε, δ) = f(v) + 2mδ · max_{i=1..v} (f(v−i) − f(v)) / i      (capped at 1).

So "the run is (ε, δ)-DP" is rejected at level α when p(ε, δ) < α.  The lower bound we report is
the first ε at which the test stops rejecting,

    ε_LB = inf{ε ≥ 0 : p(ε, δ) ≥ α},

which equals the paper's ``sup{ε : p(ε, δ) < α}`` whenever the rejection region is an interval
(it is for every count we have met), and is otherwise the smaller, still valid, value: if the run
is (ε₀, δ)-DP, ``ε_LB > ε₀`` implies ``p(ε₀, δ) < α``, an event of probability at most α.  Zero
correct guesses give ε_LB = 0, never a positive floor.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import optimize, stats

from dpaudit.core import require
from dpaudit.onerun.rules import Test

__all__ = ["check_counts", "epsilon_ceiling", "epsilon_lower", "epsilon_upper", "p_value", "rejects_zero"]

_EPS_MAX = 60.0  # e^60/(1+e^60) is 1 in floating point: no count can reject beyond this
_TOL = 1e-9


def check_counts(m: int, r: int, v: int) -> None:
    """0 ≤ v ≤ r ≤ m, all integers, m ≥ 1."""
    for name, value in (("m", m), ("r", r), ("v", v)):
        require(isinstance(value, (int, np.integer)) and not isinstance(value, bool), name, value,
                "must be an integer")
    require(m >= 1, "m", m, "must be >= 1 (the number of canaries)")
    require(0 <= r <= m, "r", r, f"must be in [0, m = {m}] (the number of guesses)")
    require(0 <= v <= r, "v", v, f"must be in [0, r = {r}] (the number of correct guesses)")


def _check_level(delta: float, alpha: float) -> None:
    require(isinstance(delta, (int, float, np.floating)) and 0.0 <= float(delta) <= 1.0, "delta", delta,
            "must be a number in [0, 1]")
    require(isinstance(alpha, (int, float, np.floating)) and 0.0 < float(alpha) < 1.0, "alpha", alpha,
            "must be a number in (0, 1)")


# stats.binom.{sf,cdf,pmf} spend most of their time on generic argument handling (~70 µs a call, and
# epsilon_lower makes hundreds): the functions below return the same floats (Boost's routines, that
# binom's _sf/_cdf/_pmf call, with the wrapper's support cases and clipping) for integer k and n ≥ 0
# and p in [0, 1], which is all this module asks (tests/test_onerun_formulas.py compares them bit for bit).
_BINOM = stats.binom


def _binom_sf(k: np.ndarray | int, n: int, p: np.ndarray | float) -> np.ndarray:
    """``stats.binom.sf(k, n, p)``: 1 for k < 0, 0 for k ≥ n, else Boost's P[Bin(n, p) > k]."""
    k, p = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(p, dtype=float))
    out = np.where(k < 0, 1.0, 0.0)
    inside = (k >= 0) & (k < n)
    if inside.any():
        out[inside] = np.clip(_BINOM._sf(k[inside], n, p[inside]), 0, 1)
    return out


def _binom_cdf(k: np.ndarray | int, n: int, p: np.ndarray | float) -> np.ndarray:
    """``stats.binom.cdf(k, n, p)``: 0 for k < 0, 1 for k ≥ n, else Boost's P[Bin(n, p) ≤ k]."""
    k, p = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(p, dtype=float))
    out = np.where(k >= n, 1.0, 0.0)
    inside = (k >= 0) & (k < n)
    if inside.any():
        out[inside] = np.clip(_BINOM._cdf(k[inside], n, p[inside]), 0, 1)
    return out


def _binom_pmf(k: np.ndarray, n: int, p: np.ndarray) -> np.ndarray:
    """``stats.binom.pmf(k, n, p)`` for integer k in [0, n] (the only ones :func:`_gains` asks)."""
    return np.clip(_BINOM._pmf(np.asarray(k, dtype=float), n, np.asarray(p, dtype=float)), 0, 1)


def _window(r: int, v: int, q: float) -> tuple[int, int]:
    """[lo, hi]: the counts below v within ±40 standard deviations of rq (see :func:`_gains`)."""
    sd = math.sqrt(r * q * (1.0 - q)) + 1.0
    return max(0, math.floor(r * q - 40.0 * sd)), min(v - 1, math.ceil(r * q + 40.0 * sd))


def _gains(r: int, v: int, q: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """For each q (``tail`` = P[Bin(r, q) ≥ v] there), an upper bound, exact to ~1e-300, on
    ``max_{i=1..v} P[v−i ≤ Bin(r, q) ≤ v−1] / i``.

    Only the window ``[lo, hi]`` of ±40 standard deviations around rq carries mass; the terms
    whose range starts above ``hi`` are bounded by the mass above ``hi`` (for i ≥ 1), and those
    that reach below ``lo`` by ``P[Bin ≤ v−1] / (v − lo)``.  Bounding from above keeps p(ε, δ)
    conservative (a larger p can only lower ε_LB).  Every q's window is summed from hi down on its
    own (:func:`_window_max`): the value per q does not depend on the other q's."""
    lo, hi = np.array([_window(r, v, float(x)) for x in q], dtype=np.int64).reshape(-1, 2).T
    above = np.zeros(q.shape)
    part = hi < v - 1
    if part.any():
        above[part] = _binom_sf(hi[part], r, q[part]) - tail[part]
    best = np.maximum(above, 0.0)  # every i whose range starts above hi: at most ``above`` / 1
    rows = np.flatnonzero(hi >= lo)
    if rows.size:
        best[rows] = np.maximum(best[rows], _window_max(r, v, q[rows], lo[rows], hi[rows], best[rows]))
    cut = np.flatnonzero(lo > 0)
    if cut.size:
        spread = np.where(hi[cut] >= lo[cut], v - lo[cut], 1)
        best[cut] = np.maximum(best[cut], _binom_cdf(v - 1, r, q[cut]) / spread)
    return best


_PADDED_CELLS = 50_000  # up to this many cells the windows are scored as one padded array, beyond it row by row


def _window_max(r: int, v: int, q: np.ndarray, lo: np.ndarray, hi: np.ndarray, above: np.ndarray) -> np.ndarray:
    """For each q, ``max_{k=lo..hi} (above + Σ_{j=k..hi} P[Bin(r, q) = j]) / (v − k)``, the sum
    accumulated from hi down.  Small windows share one padded array (each row's cumulative sum is its
    own: the padding, zeros, comes after its lo); large ones, where the pmf costs more than a call, are
    scored one by one, so no padded cell is built.  Either way the same floats per q."""
    width = hi - lo + 1
    if q.size > 1 and q.size * int(width.max()) > _PADDED_CELLS:
        return np.array([_window_max(r, v, q[i:i + 1], lo[i:i + 1], hi[i:i + 1], above[i:i + 1])[0]
                         for i in range(q.size)])
    step = np.arange(int(width.max()))
    k = hi[:, None] - step  # row j: hi_j, hi_j − 1, ..., then padding past lo_j
    inside = step < width[:, None]
    pmf = np.zeros(k.shape)
    pmf[inside] = _binom_pmf(k[inside], r, np.broadcast_to(q[:, None], k.shape)[inside])
    sums = above[:, None] + np.cumsum(pmf, axis=1)
    return np.where(inside, sums / (v - k), -np.inf).max(axis=1)


def p_value(m: int, r: int, v: int, epsilon: float | np.ndarray, delta: float) -> np.ndarray:
    """p(ε, δ) of Steinke et al. (Theorem 3.3), for each ε of ``epsilon``.

    ``f(v−i) − f(v) = P[v−i ≤ Bin(r, q) ≤ v−1]`` is a cumulative sum of the binomial pmf below
    v (see :func:`_gains` for the window that carries it).  Elementwise: p at one ε is the same
    float whatever other ε are asked with it.
    """
    check_counts(m, r, v)
    eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
    require(bool(np.all(eps >= 0)) and not np.any(np.isnan(eps)), "epsilon", epsilon, "must be >= 0")
    q = np.exp(-np.logaddexp(0.0, -eps))  # e^ε/(1+e^ε) without overflow
    tail = _binom_sf(v - 1, r, q)  # P[Bin(r, q) ≥ v]
    if v == 0 or delta == 0:
        return np.minimum(tail, 1.0)
    return np.minimum(tail + 2.0 * m * delta * _gains(r, v, q, tail), 1.0)


def _tail_top(r: int, v: int, alpha: float) -> float:
    """The ε at which the pure tail P[Bin(r, q) ≥ v] reaches α (:data:`_EPS_MAX` when it never does
    below it).  p ≥ f(v), so p first reaches α no later: :func:`epsilon_lower` scans [0, this] only."""
    if _binom_sf(v - 1, r, 1.0 / (1.0 + math.exp(-_EPS_MAX))) < alpha:
        return _EPS_MAX
    return float(optimize.brentq(lambda e: float(_binom_sf(v - 1, r, 1.0 / (1.0 + math.exp(-e)))) - alpha,
                                 0.0, _EPS_MAX, xtol=1e-12))


def _scan_grid(r: int, v: int, alpha: float) -> np.ndarray:
    """The coarse scan of :func:`epsilon_lower`: 41 points on [0, :func:`_tail_top` + 1e-9]."""
    return np.linspace(0.0, _tail_top(r, v, alpha) + 1e-9, 41)


# A pure function of its five numbers, met again and again by a caller that bounds many games (a
# rule's tests have fixed r, counts v near their mean): each answer is computed once per process.
@functools.lru_cache(maxsize=1 << 16)
def epsilon_lower(m: int, r: int, v: int, *, delta: float, alpha: float) -> float:
    """ε_LB = inf{ε ≥ 0 : p(ε, δ) ≥ α} (see the module docstring); 0 when nothing is rejected.

    A coarse scan brackets the first crossing (robust to a non-monotone p), then bisection
    narrows it to 1e-9.
    """
    check_counts(m, r, v)
    _check_level(delta, alpha)
    if v == 0 or p_value(m, r, v, 0.0, delta)[0] >= alpha:
        return 0.0
    grid = _scan_grid(r, v, alpha)
    ok = p_value(m, r, v, grid, delta) >= alpha
    if not ok.any():
        return _EPS_MAX
    hi_idx = int(np.argmax(ok))
    lo, hi = float(grid[hi_idx - 1]), float(grid[hi_idx])
    while hi - lo > _TOL:
        mid = 0.5 * (lo + hi)
        if p_value(m, r, v, mid, delta)[0] < alpha:
            lo = mid
        else:
            hi = mid
    return lo


def epsilon_upper(m: int, r: int, v: int, *, delta: float, alpha: float) -> float:
    """A strict upper bound on :func:`epsilon_lower` from two evaluations of p instead of ~70:
    ``epsilon_lower(...) < epsilon_upper(...)`` always.  1e-9 when it is 0 (v = 0 or p(0) ≥ α);
    else the scan's last point when p ≥ α there (the answer lies below the first such point); else
    :data:`_EPS_MAX` + 1e-9 (no answer exceeds :data:`_EPS_MAX`).  A search for the largest bound
    skips a candidate whose ``epsilon_upper`` is ≤ the best so far: it can neither win nor tie."""
    check_counts(m, r, v)
    _check_level(delta, alpha)
    if v == 0 or p_value(m, r, v, 0.0, delta)[0] >= alpha:
        return 1e-9
    grid = _scan_grid(r, v, alpha)
    return float(grid[-1]) if p_value(m, r, v, grid[-1:], delta)[0] >= alpha else _EPS_MAX + 1e-9


def rejects_zero(m: int, r: int, v: int, *, delta: float, alpha: float) -> bool:
    """``epsilon_lower(m, r, v, ...) > 0``, exactly, in one or two evaluations of p instead of ~70.

    The same steps as :func:`epsilon_lower`, stopped as soon as the sign of its answer is known: 0
    when p(0) ≥ α; else positive when p < α at the scan's second point (the crossing is past it, or
    there is none and the answer is :data:`_EPS_MAX`); else the crossing is in the first interval and
    the answer is positive iff one of the bisection's midpoints has p < α (lo leaves 0 there).
    p is evaluated elementwise, so p at one point is the same float as in the scan's vector."""
    check_counts(m, r, v)
    _check_level(delta, alpha)
    if v == 0 or p_value(m, r, v, 0.0, delta)[0] >= alpha:
        return False
    grid = _scan_grid(r, v, alpha)
    if p_value(m, r, v, grid[1:2], delta)[0] < alpha:
        return True
    lo, hi = 0.0, float(grid[1])
    while hi - lo > _TOL:
        mid = 0.5 * (lo + hi)
        if p_value(m, r, v, mid, delta)[0] < alpha:
            return True
        hi = mid
    return False


def epsilon_ceiling(m: int, *, delta: float, alpha: float) -> float:
    """The largest ε_LB any run of m canaries can give: every canary guessed, every guess right."""
    return epsilon_lower(m, m, m, delta=delta, alpha=alpha)


def prior_guard(test: Test) -> float:
    """The largest ε a balanced test may reject when the secret's prior is unknown: the ε with
    r·σ(ε) + 1 = v, i.e. logit((v − 1)/r) (0 when v − 1 ≤ r/2).  Below it, Hoeffding's comparison
    (:func:`~dpaudit.onerun.bound.check_rule_for_secret`) does not apply.  At α ≤ ¼ it never binds: P[Bin(r, q) ≥ v] ≥
    P[Bin(r, q) ≥ rq] > ¼ for v < rq + 1 (Greenberg and Mohri 2013), so no such v rejects."""
    if 2 * (test.v - 1) <= test.r:
        return 0.0
    return math.log((test.v - 1) / (test.r - test.v + 1))
