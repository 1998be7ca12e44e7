"""Tight privacy curves: the Gaussian mechanism and objective perturbation.

The Gaussian mechanism with ℓ2 sensitivity Δ and noise σ is (ε, δ)-DP iff
δ ≥ δ_Gauss(ε; μ) with μ = Δ/σ (Balle & Wang 2018, Theorem 8):

    δ_Gauss(ε; μ) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ).

It is decreasing in ε; :func:`gauss_epsilon` inverts it.

Objective perturbation with an exact minimiser over ℝ^d (by change of variables the density of θ* is
φ_σ(b_D(θ)) |det ∇b_D(θ)| with b_D(θ) = −Σ∇ℓ_i(θ) − λθ, the determinants of D and D′ within a
factor e^{ε_J}): with
per-record gradient differences of norm ≤ D_g in a k-dimensional subspace, noise
b ~ N(0, σ²I), μ = D_g/σ and a Jacobian term ε_J,

    δ(ε) ≤ E_{ρ∼χ_k}[(1 − e^{ε − ε_J − μ²/2 − μρ})_+]            (the χ-bound).

For k = 1 and ε − ε_J ≥ μ²/2 it equals 2 δ_Gauss(ε − ε_J; μ).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import special
from scipy.special import log_ndtr

from dpaudit.core import require


def _scipy(name: str) -> Any:
    """``scipy.<name>`` on first use: loading a results file re-checks Rényi claims through this
    module, and scipy.stats, optimize and integrate (0.4 CPU s) are needed only to convert one."""
    return importlib.import_module(f"scipy.{name}")


def gauss_delta(epsilon: float, mu: float) -> float:
    """δ_Gauss(ε; μ), computed in log space for large ε."""
    require(mu > 0 and math.isfinite(mu), "mu", mu, "must be a finite number > 0")
    a = log_ndtr(mu / 2 - epsilon / mu)
    b = epsilon + log_ndtr(-mu / 2 - epsilon / mu)
    return float(max(0.0, math.exp(a) - math.exp(b))) if a > -700 else 0.0


def smallest_epsilon(delta_of: Callable[[float], float], delta: float, xtol: float = 1e-12,
                     cap: float = math.inf) -> float:
    """The smallest ε ≥ 0 with ``delta_of(ε)`` ≤ δ for a non-increasing privacy curve: bracket by
    doubling, then Brent's method; ∞ when the bracket passes ``cap``."""
    if delta_of(0.0) <= delta:
        return 0.0
    hi = 1.0
    while delta_of(hi) > delta:
        hi *= 2
        if hi > cap:
            return math.inf
    return float(_scipy("optimize").brentq(lambda e: delta_of(e) - delta, 0.0, hi, xtol=xtol))


def gauss_epsilon(delta: float, mu: float) -> float:
    """The smallest ε ≥ 0 with δ_Gauss(ε; μ) ≤ δ."""
    require(0 < delta < 1, "delta", delta, "must be in (0, 1)")
    return smallest_epsilon(lambda e: gauss_delta(e, mu), delta)


def gauss_mu(epsilon: float, delta: float) -> float:
    """The largest μ = Δ/σ with δ_Gauss(ε; μ) ≤ δ (calibrating σ on the exact curve)."""
    require(epsilon > 0 and 0 < delta < 1, "(epsilon, delta)", (epsilon, delta), "need epsilon > 0, delta in (0, 1)")
    return float(_scipy("optimize").brentq(lambda m: gauss_delta(epsilon, m) - delta, 1e-9, 100.0, xtol=1e-12))


def classical_gauss_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Dwork & Roth (2014), Theorem A.1: σ = Δ √(2 log(1.25/δ)) / ε (valid for ε < 1)."""
    return sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon




def chi_delta(epsilon: float, mu: float, k: int = 1, epsilon_j: float = 0.0) -> float:
    """The χ-bound on δ(ε) for objective perturbation (see the module docstring)."""
    require(mu > 0 and math.isfinite(mu), "mu", mu, "must be a finite number > 0")
    require(isinstance(k, int) and k >= 1, "k", k, "must be an integer >= 1")
    require(epsilon_j >= 0, "epsilon_j", epsilon_j, "must be >= 0")
    c = epsilon - epsilon_j - mu * mu / 2
    start = max(0.0, c / mu)
    log_norm = _chi_log_norm(k)
    # The integrand is positive above `start`: integrate it directly (no cancellation at small δ).
    # χ_k's density is scipy's own formula (chi._logpdf) on numpy scalars: the same values as
    # stats.chi(k).pdf without its per-call argument handling (~100 µs, most of a χ-bound's time).
    def integrand(rho: float) -> float:
        x = np.float64(rho)
        return -math.expm1(c - mu * rho) * float(np.exp(log_norm + special.xlogy(k - 1.0, x) - 0.5 * (x * x)))
    top = max(start, math.sqrt(k)) + 40.0
    mode = math.sqrt(max(k - 1, 0))
    points = [p for p in (mode, start + 1.0 / mu) if start < p < top]
    quad = _scipy("integrate").quad
    value, _ = quad(integrand, start, top, points=points or None, limit=200, epsabs=0.0, epsrel=1e-10)
    return float(min(1.0, max(0.0, value)))


def _chi_log_norm(k: int) -> np.float64:
    """log of χ_k's normalising constant 2^{1 − k/2}/Γ(k/2), as scipy's chi._logpdf computes it."""
    df = np.float64(k)
    return np.log(2) - .5 * np.log(2) * df - special.gammaln(.5 * df)


def chi_epsilon(delta: float, mu: float, k: int = 1, epsilon_j: float = 0.0) -> float:
    """The smallest ε ≥ 0 the χ-bound certifies at ``delta``."""
    require(0 < delta < 1, "delta", delta, "must be in (0, 1)")
    return smallest_epsilon(lambda e: chi_delta(e, mu, k, epsilon_j), delta)


def objective_sigma(epsilon: float, delta: float, sensitivity: float, k: int = 1, epsilon_j: float = 0.0) -> float:
    """The smallest objective-noise σ with χ-bound δ(ε) ≤ ``delta`` (the instantiation's objective noise)."""
    require(epsilon > epsilon_j >= 0, "(epsilon, epsilon_j)", (epsilon, epsilon_j), "need epsilon > epsilon_j >= 0")
    require(0 < delta < 1, "delta", delta, "must be in (0, 1)")
    check = lambda log_s: chi_delta(epsilon, sensitivity / math.exp(log_s), k, epsilon_j) - delta
    lo, hi = math.log(sensitivity) - 5, math.log(sensitivity) + 12
    return float(math.exp(_scipy("optimize").brentq(check, lo, hi, xtol=1e-12)))


_CHI_ROWS = 16


def chi_delta_array(epsilons: np.ndarray, mu: float, k: int = 1, epsilon_j: float = 0.0,
                    grid_points: int = 20_001) -> np.ndarray:
    """:func:`chi_delta` at many ε at once, by the trapezoid rule on a fixed ρ grid (for
    compositions and plots; :func:`chi_delta` is the reference, agreeing to ~1e-7 relative)."""
    top = math.sqrt(k) + 40.0
    rho = np.linspace(0.0, top, grid_points)
    pdf = _scipy("stats").chi(k).pdf(rho)
    c = np.asarray(epsilons, dtype=float)[:, None] - epsilon_j - mu * mu / 2
    out = np.empty(len(c))
    # A few ε at a time: each block's (ε, ρ) arrays stay in cache (the whole is ~10^3 x 2·10^4),
    # and every row is computed exactly as in one piece.
    for lo in range(0, len(c), _CHI_ROWS):
        integrand = np.maximum(-np.expm1(c[lo:lo + _CHI_ROWS] - mu * rho[None, :]), 0.0) * pdf[None, :]
        out[lo:lo + _CHI_ROWS] = _scipy("integrate").trapezoid(integrand, rho, axis=1)
    return np.minimum(1.0, out)


def gauss_delta_array(epsilons: np.ndarray, mu: float) -> np.ndarray:
    """:func:`gauss_delta` at many ε at once."""
    e = np.asarray(epsilons, dtype=float)
    return np.maximum(0.0, np.exp(log_ndtr(mu / 2 - e / mu)) - np.exp(e + log_ndtr(-mu / 2 - e / mu)))


def compose_epsilon(delta: float, delta_1, delta_2, top: float = 10.0, points: int = 1001) -> float:
    """The smallest ε with min_{ε₁+ε₂=ε} δ₁(ε₁) + δ₂(ε₂) ≤ δ (basic composition optimised over the
    split), for vectorised curves ``delta_1``, ``delta_2``; ε on a grid of step ``top/(points−1)``,
    rounded up so the result stays an upper bound, and δ held to ``delta``/(1 + 1e-3) to cover the
    curves' quadrature error."""
    grid = np.linspace(0.0, top, points)
    d1, d2 = delta_1(grid), delta_2(grid)
    # total[i] = min_j d1[j] + d2[i − j]: ε = grid[i] split as grid[j] + grid[i − j].
    for i in range(points):
        if (d1[: i + 1] + d2[i::-1]).min() <= delta / (1 + 1e-3):
            return float(grid[i])
    return math.inf
