"""Tight curves and composition.

The Gaussian mechanism with ℓ2 sensitivity Δ and noise σ is (ε, δ)-DP iff
δ ≥ δ_Gauss(ε; μ) with μ = Δ/σ (Balle & Wang 2018, Theorem 8):

    δ_Gauss(ε; μ) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ).

It is decreasing in ε; :func:`gauss_epsilon` inverts it.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.special import log_ndtr

from mechanisms.base import require


def gauss_delta(epsilon: float, mu: float) -> float:
    """δ_Gauss(ε; μ), computed in log space for large ε."""
    require(mu > 0 and math.isfinite(mu), "mu", mu, "must be a finite number > 0")
    a = log_ndtr(mu / 2 - epsilon / mu)
    b = epsilon + log_ndtr(-mu / 2 - epsilon / mu)
    return float(max(0.0, math.exp(a) - math.exp(b))) if a > -700 else 0.0


def gauss_epsilon(delta: float, mu: float) -> float:
    """The smallest ε ≥ 0 with δ_Gauss(ε; μ) ≤ δ."""
    require(0 < delta < 1, "delta", delta, "must be in (0, 1)")
    if gauss_delta(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while gauss_delta(hi, mu) > delta:
        hi *= 2
    return float(brentq(lambda e: gauss_delta(e, mu) - delta, 0.0, hi, xtol=1e-12))


def gauss_mu(epsilon: float, delta: float) -> float:
    """The largest μ = Δ/σ with δ_Gauss(ε; μ) ≤ δ (calibrating σ on the exact curve)."""
    require(epsilon > 0 and 0 < delta < 1, "(epsilon, delta)", (epsilon, delta), "need epsilon > 0, delta in (0, 1)")
    return float(brentq(lambda m: gauss_delta(epsilon, m) - delta, 1e-9, 100.0, xtol=1e-12))


def classical_gauss_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Dwork & Roth (2014), Theorem A.1: σ = Δ √(2 log(1.25/δ)) / ε (valid for ε < 1)."""
    return sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon


