"""The f-DP one-run test: reject a claimed trade-off curve from "c correct out of c′ guesses".

Mahloujifar, Melis, Chaudhuri, *Auditing f-Differential Privacy in One Run*, ICML 2025,
Algorithm 2 (the bound on the probability of c correct guesses, k-ary guesses; k = 2 for
in/out).  With m canaries, level τ and ``B⁻¹(y) = f(1 − y)`` the inverse blow-up of the
claimed symmetric curve f, start from ``r = τc/m``, ``h = τ(c′ − c)/m`` and for
``i = c − 1, …, 0``

    h′ = max(h, (k − 1) · B⁻¹(r)),    r ← min(1, r + i/(c′ − i) · (h′ − h)),    h ← h′;

the claim "the run is f-DP" is rejected at level τ iff ``r + h > c′/m``.  Under an f-DP
mechanism the probability of a rejection is at most τ (their Theorem 9).

The largest rejected μ of the GDP family is searched the same way as Steinke's ε: the first μ
at which the test stops rejecting, so a true μ₀ ≥ that value was rejected (probability ≤ τ).
That μ is a statement about **GDP claims only**.  It is never an (ε, δ) lower bound: reading it
through μ-GDP's profile assumes the mechanism's curve is Gaussian, which a (2, 0)-DP randomized
response is not (there it would read as ε ≈ 3.4 while the true ε is 2).  The (ε, δ) lower bound
of the run is :func:`dpaudit.onerun.steinke.epsilon_lower`, or :func:`epsilon_lower_curve` below.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from dpaudit.core import require
from dpaudit.onerun.curves import CurveClaim, approx_dp_tradeoff, gdp_binv
from dpaudit.onerun.steinke import check_counts

__all__ = ["epsilon_lower_curve", "largest_rejected_mu", "rejects", "rejects_claim"]

Binv = Callable[[np.ndarray], np.ndarray]  # r (n,) -> B⁻¹(r) (n,), one entry per curve of a batch


def _check_tau(tau: float) -> None:
    require(isinstance(tau, (int, float, np.floating)) and 0.0 < float(tau) < 1.0, "tau", tau,
            "must be a level in (0, 1)")


def rejects(binv: Binv, n: int, *, m: int, c_prime: int, c: int, tau: float, k: int = 2) -> np.ndarray:
    """Algorithm 2 of Mahloujifar et al. for a batch of ``n`` curves at once (one bool each).

    ``binv``'s entry j must depend on ``r[j]`` alone (each curve's own B⁻¹).  The c steps stop as
    soon as every curve's answer is known, which gives the answer of all c steps exactly, in
    floating point too:

    * **decided**: r and h never decrease (h′ = max(h, ·) ≥ h, so r + (i/(c′ − i))(h′ − h) ≥ r and
      min(1, ·) keeps r ≤ 1; rounded addition is monotone), so once r + h > c′/m it stays so;
    * **frozen**: a step that leaves r unchanged (bit for bit) leaves the next step's B⁻¹(r) the
      value this step used, already ≤ h′, so h′ stays, r stays, and so does every later step.

    Non-rejected curves freeze within tens of steps (r's increments shrink geometrically when the
    curve is not rejected), so a test of c = 10⁵ right guesses costs tens of steps, not 10⁵
    (``tests/test_onerun_speed_fdp.py`` holds it equal to the full recursion)."""
    check_counts(m, c_prime, c)
    _check_tau(tau)
    require(isinstance(k, int) and k >= 2, "k", k, "must be an integer >= 2")
    r = np.full(n, tau * c / m)
    h = np.full(n, tau * (c_prime - c) / m)
    limit = c_prime / m
    done = np.zeros(n, dtype=bool)
    for i in range(c - 1, -1, -1):
        h_new = np.maximum(h, (k - 1) * binv(r))
        r_new = np.minimum(1.0, r + i / (c_prime - i) * (h_new - h))
        done |= (r_new == r) | (r_new + h_new > limit)
        r, h = r_new, h_new
        if done.all():
            break
    return np.asarray(r + h > limit)


def rejects_claim(claim: CurveClaim, *, m: int, c_prime: int, c: int, tau: float) -> bool:
    """Whether the run rejects ``claim`` at level τ."""
    return bool(rejects(lambda r: claim.inverse_blowup(r), 1, m=m, c_prime=c_prime, c=c, tau=tau)[0])


def _first_non_rejected(batch: Callable[[np.ndarray], np.ndarray], upper: float, *, levels: int = 4,
                        points: int = 48) -> float:
    """The first parameter in [0, upper] at which ``batch`` (params -> rejects) stops rejecting,
    by nested grids (each level narrows the bracket ``points``-fold)."""
    lo, hi = 0.0, upper
    for _ in range(levels):
        grid = np.linspace(lo, hi, points + 1)
        rej = batch(grid)
        if rej.all():
            return float(hi)
        first = int(np.argmin(rej))
        if first == 0:
            return float(lo)
        lo, hi = float(grid[first - 1]), float(grid[first])
    return lo


@functools.lru_cache(maxsize=1 << 16)  # pure in its numbers: computed once per process (as steinke.epsilon_lower)
def largest_rejected_mu(*, m: int, c_prime: int, c: int, tau: float, mu_max: float = 50.0) -> float:
    """The largest μ such that every μ-GDP claim with μ′ ≤ μ is rejected (0 when none is).

    Valid against GDP-family claims only; see the module docstring."""
    check_counts(m, c_prime, c)
    if c == 0:
        return 0.0

    def batch(mus: np.ndarray) -> np.ndarray:
        return rejects(lambda r: gdp_binv(r, mus), mus.size, m=m, c_prime=c_prime, c=c, tau=tau)

    return _first_non_rejected(batch, mu_max, levels=5)


def epsilon_lower_curve(*, m: int, c_prime: int, c: int, tau: float, delta: float, eps_max: float = 40.0) -> float:
    """The (ε, δ) lower bound from the f-DP recursion fed the (ε, δ) curve: the first ε whose
    (ε, δ)-DP curve is not rejected.  A valid (ε, δ) bound (the curve is the claim's own)."""
    check_counts(m, c_prime, c)
    require(0.0 <= delta <= 1.0, "delta", delta, "must be in [0, 1]")
    if c == 0:
        return 0.0

    def batch(eps: np.ndarray) -> np.ndarray:
        return rejects(lambda r: approx_dp_tradeoff(1.0 - r, eps, delta), eps.size, m=m, c_prime=c_prime, c=c,
                       tau=tau)

    return _first_non_rejected(batch, eps_max, levels=5)
