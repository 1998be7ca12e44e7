"""Curve claims: a claimed trade-off curve f, the object the f-DP one-run test rejects or not.

A mechanism is f-DP (Dong, Roth, Su, *Gaussian Differential Privacy*, JRSS-B 2022, Def. 2.3)
when every test between neighbouring datasets with type-I error x has type-II error ≥ f(x).
The one-run test of Mahloujifar, Melis, Chaudhuri (*Auditing f-Differential Privacy in One
Run*, ICML 2025, Algorithm 2) uses the inverse blow-up ``B⁻¹(y) = f(1 − y)`` of a symmetric f.

Three families are held here, each vectorised over its parameter so that the largest rejected
parameter can be searched in one pass:

* μ-GDP: ``f(x) = Φ(Φ⁻¹(1 − x) − μ)``, hence ``B⁻¹(y) = Φ(Φ⁻¹(y) − μ)``.
* (ε, δ)-DP: ``f(x) = max(0, 1 − δ − e^ε x, e^{−ε}(1 − δ − x))`` (Dong et al., Prop. 2.5).
* a privacy profile δ(ε) sampled at grid points ε₁ < … < ε_n (e.g. dp-accounting's PLD of a
  subsampled Gaussian).  A mechanism with profile δ(·) is (ε_j, δ(ε_j))-DP for every j, so it
  is f_grid-DP for ``f_grid = max_j f_{ε_j, δ(ε_j)}`` (the pointwise maximum of valid curves is
  valid).  The true curve is the same maximum over *all* ε, so ``f_grid ≤ f``: the grid gives a
  lower envelope, i.e. a *weaker* claim.  That is the direction a test needs: a mechanism that
  satisfies the claim also satisfies f_grid, so rejecting f_grid at level α is a valid rejection
  of the claim, never a false one (a curve above f would make a correct claim rejectable).
  Each f_{ε,δ} is symmetric, and so is their maximum, as the recursion requires.  δ values from
  an accountant are upper bounds (pessimistic PLD), which lowers the curve further: still safe.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from dpaudit.core import ClaimStatus, require

__all__ = [
    "CurveClaim",
    "approx_dp",
    "gdp",
    "gdp_epsilon",
    "gdp_mu",
    "profile",
    "subsampled_gaussian_profile",
]

FAMILIES = ("gdp", "approx-dp", "profile")


def _phi(x: np.ndarray | float) -> np.ndarray:
    return special.ndtr(x)


def _phi_inv(y: np.ndarray) -> np.ndarray:
    return special.ndtri(y)


def gdp_binv(y: np.ndarray, mu: np.ndarray | float) -> np.ndarray:
    """B⁻¹(y) = Φ(Φ⁻¹(y) − μ) of μ-GDP, broadcast over y and μ."""
    return _phi(_phi_inv(np.clip(y, 0.0, 1.0)) - mu)


def approx_dp_tradeoff(x: np.ndarray, eps: np.ndarray | float, delta: np.ndarray | float) -> np.ndarray:
    """f_{ε,δ}(x) = max(0, 1 − δ − e^ε x, e^{−ε}(1 − δ − x)), broadcast over x, ε and δ."""
    x = np.clip(x, 0.0, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        a = 1.0 - delta - np.exp(eps) * x
    a = np.where(np.isnan(a), -np.inf, a)  # e^ε·0 for huge ε
    b = np.exp(-eps) * (1.0 - delta - x)
    return np.maximum(0.0, np.maximum(a, b))


def gdp_delta(eps: float, mu: float) -> float:
    """δ(ε) of μ-GDP: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong et al., Cor. 2.13)."""
    if mu <= 0:
        return 0.0
    return float(_phi(-eps / mu + mu / 2) - math.exp(eps) * _phi(-eps / mu - mu / 2))


def gdp_epsilon(mu: float, delta: float) -> float:
    """The ε at which μ-GDP has δ(ε) = δ (0 when δ(0) ≤ δ).  Used only to *read* a μ, and every
    such reading is labelled as a statement about GDP claims, never an (ε, δ) bound."""
    require(0.0 < delta < 1.0, "delta", delta, "must be in (0, 1)")
    if mu <= 0 or gdp_delta(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while gdp_delta(hi, mu) > delta:
        hi *= 2.0
    return float(optimize.brentq(lambda e: gdp_delta(e, mu) - delta, 0.0, hi, xtol=1e-12, rtol=1e-14))


def gdp_mu(epsilon: float, delta: float) -> float:
    """The μ whose GDP profile has δ(ε) = δ: the Gaussian fixture calibrated to (ε, δ)."""
    require(epsilon > 0, "epsilon", epsilon, "must be > 0")
    require(0.0 < delta < 1.0, "delta", delta, "must be in (0, 1)")
    hi = 1.0
    while gdp_delta(epsilon, hi) < delta:
        hi *= 2.0
    return float(optimize.brentq(lambda mu: gdp_delta(epsilon, mu) - delta, 1e-9, hi, xtol=1e-13))


@dataclass(frozen=True, kw_only=True)
class CurveClaim:
    """A claimed symmetric trade-off curve, with the registry fields a verdict needs.

    ``family`` is ``gdp`` (``mu``), ``approx-dp`` (``epsilon``, ``delta``) or ``profile``
    (``epsilons``, ``deltas``: a privacy profile sampled on a grid, read as its lower envelope).
    ``status`` is the registry's claim status; a claim the run does not apply to carries
    ``applicable=False`` and the reason in ``note``.
    """

    family: str
    claim_id: str = ""
    mu: float = 0.0
    epsilon: float = 0.0
    delta: float = 0.0
    epsilons: tuple[float, ...] = ()
    deltas: tuple[float, ...] = ()
    status: str = ClaimStatus.PROVEN.value
    source: str = ""
    applicable: bool = True
    note: str = ""

    def __post_init__(self) -> None:
        require(self.family in FAMILIES, "CurveClaim.family", self.family, f"must be one of {', '.join(FAMILIES)}")
        require(self.status in tuple(s.value for s in ClaimStatus), "CurveClaim.status", self.status,
                f"must be one of {', '.join(s.value for s in ClaimStatus)}")
        require(self.applicable or bool(self.note), "CurveClaim.note", self.note, "a not-applicable claim must say why")
        if self.family == "gdp":
            require(math.isfinite(self.mu) and self.mu >= 0, "CurveClaim.mu", self.mu, "must be a finite number >= 0")
        elif self.family == "approx-dp":
            require(self.epsilon >= 0 and not math.isnan(self.epsilon), "CurveClaim.epsilon", self.epsilon,
                    "must be >= 0")
            require(0.0 <= self.delta <= 1.0, "CurveClaim.delta", self.delta, "must be in [0, 1]")
        else:
            eps, dl = np.asarray(self.epsilons, dtype=float), np.asarray(self.deltas, dtype=float)
            require(eps.ndim == 1 and eps.size >= 1 and eps.shape == dl.shape, "CurveClaim.epsilons",
                    self.epsilons, "must be a non-empty grid with one delta per epsilon")
            require(bool(np.all(np.isfinite(eps)) and np.all(eps >= 0)), "CurveClaim.epsilons", self.epsilons,
                    "must be finite and >= 0")
            require(bool(np.all(np.isfinite(dl)) and np.all((dl >= 0) & (dl <= 1))), "CurveClaim.deltas",
                    self.deltas, "must be in [0, 1]")
            object.__setattr__(self, "epsilons", tuple(float(e) for e in eps))
            object.__setattr__(self, "deltas", tuple(float(d) for d in dl))

    def tradeoff(self, x: np.ndarray | float) -> np.ndarray:
        """f(x), vectorised over x."""
        x = np.asarray(x, dtype=float)
        if self.family == "gdp":
            return gdp_binv(1.0 - x, self.mu)
        if self.family == "approx-dp":
            return approx_dp_tradeoff(x, self.epsilon, self.delta)
        eps = np.asarray(self.epsilons)[:, None]
        dl = np.asarray(self.deltas)[:, None]
        return approx_dp_tradeoff(np.atleast_1d(x)[None, :], eps, dl).max(axis=0).reshape(x.shape)

    def inverse_blowup(self, y: np.ndarray | float) -> np.ndarray:
        """B⁻¹(y) = f(1 − y)."""
        return self.tradeoff(1.0 - np.asarray(y, dtype=float))

    def describe(self) -> str:
        if self.family == "gdp":
            return f"{self.mu:.4g}-GDP"
        if self.family == "approx-dp":
            return f"({self.epsilon:.4g}, {self.delta:.3g})-DP curve"
        return f"privacy profile on {len(self.epsilons)} grid points (lower envelope)"

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"family": self.family, "claim_id": self.claim_id or None,
                                  "status": self.status, "source": self.source, "curve": self.describe()}
        if self.family == "gdp":
            out["mu"] = self.mu
        elif self.family == "approx-dp":
            out.update(epsilon=self.epsilon, delta=self.delta)
        else:
            out.update(epsilons=list(self.epsilons), deltas=list(self.deltas))
        return out


def gdp(mu: float, **fields: object) -> CurveClaim:
    """A μ-GDP claim."""
    return CurveClaim(family="gdp", mu=float(mu), **fields)  # type: ignore[arg-type]


def approx_dp(epsilon: float, delta: float, **fields: object) -> CurveClaim:
    """The trade-off curve of an (ε, δ)-DP claim."""
    return CurveClaim(family="approx-dp", epsilon=float(epsilon), delta=float(delta), **fields)  # type: ignore[arg-type]


def profile(epsilons: Sequence[float], deltas: Sequence[float], **fields: object) -> CurveClaim:
    """A privacy profile δ(ε) sampled on a grid (read as the lower envelope of its curve)."""
    return CurveClaim(family="profile", epsilons=tuple(epsilons), deltas=tuple(deltas), **fields)  # type: ignore[arg-type]


def subsampled_gaussian_profile(noise_multiplier: float, sampling_probability: float, steps: int,
                                epsilons: Sequence[float], **fields: object) -> CurveClaim:
    """The profile of DP-SGD's Poisson-subsampled Gaussian over ``steps`` steps, from
    dp-accounting's PLD accountant (add-or-remove-one relation, pessimistic discretisation, so
    every δ is an upper bound), sampled at ``epsilons``."""
    require(noise_multiplier > 0, "noise_multiplier", noise_multiplier, "must be > 0")
    require(0 < sampling_probability <= 1, "sampling_probability", sampling_probability, "must be in (0, 1]")
    require(isinstance(steps, int) and steps >= 1, "steps", steps, "must be an integer >= 1")
    from dp_accounting import dp_event, pld  # optional here: a slow import, only profiles need it

    event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(sampling_probability, dp_event.GaussianDpEvent(noise_multiplier)), steps)
    accountant = pld.PLDAccountant()
    accountant.compose(event)
    deltas = [min(1.0, float(accountant.get_delta(float(e)))) for e in epsilons]
    return profile(epsilons, deltas, **fields)
