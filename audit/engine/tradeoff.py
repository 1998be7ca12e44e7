"""The empirical f-DP trade-off: (FPR, FNR) of tests that tell D from D′, with confidence.

A test that answers "the output came from F" on an event S favouring F has false-positive
rate α = P_other(S) and false-negative rate β = 1 − P_F(S).  An (ε, δ)-DP mechanism forces
every such test above the claimed curve (Dong, Roth & Su 2022, f-DP, Prop. 2.5):

    β ≥ f_{ε,δ}(α) = max(0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)).

Points come from nested events of one view, fixed on the selection split; their boxes
[α_lo, α_hi] × [β_lo, β_hi] hold simultaneously with the stated confidence (one-sided
Clopper–Pearson, Bonferroni over the 4 bounds of every point).  A box entirely below the
claimed curve is a violation witness.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.engine.bounds import clopper_pearson
from dpaudit.engine.views import Event


@dataclass(frozen=True)
class TradeoffPoint:
    """One test's (FPR, FNR) with simultaneous bounds."""

    fpr: float
    fpr_lower: float
    fpr_upper: float
    fnr: float
    fnr_lower: float
    fnr_upper: float

    def to_dict(self) -> dict[str, Any]:
        return {k: float(v) for k, v in self.__dict__.items()}


def claimed_fnr(fpr: np.ndarray | float, epsilon: float, delta: float) -> np.ndarray:
    """The smallest FNR an (ε, δ)-DP mechanism allows at each FPR."""
    a = np.asarray(fpr, dtype=float)
    e = math.exp(min(epsilon, 700.0))
    return np.maximum.reduce([np.zeros_like(a), 1 - delta - e * a, (1 - delta - a) / e])


def tradeoff_points(events: Sequence[Event], k_d: np.ndarray, n_d: int, k_dp: np.ndarray, n_dp: int,
                    confidence: float) -> tuple[TradeoffPoint, ...]:
    """(FPR, FNR) points of ``events`` from their estimation counts, sorted by FPR."""
    if not events or n_d == 0 or n_dp == 0:
        return ()
    alpha = (1 - confidence) / (4 * len(events))
    on_d = np.array([ev.favours == "D" for ev in events])
    k_d, k_dp = np.asarray(k_d, dtype=float), np.asarray(k_dp, dtype=float)
    kf, nf = np.where(on_d, k_d, k_dp), np.where(on_d, n_d, n_dp)
    ko, no = np.where(on_d, k_dp, k_d), np.where(on_d, n_dp, n_d)
    f_lo, f_hi = clopper_pearson(ko, no, alpha)
    p_lo, p_hi = clopper_pearson(kf, nf, alpha)
    points = [TradeoffPoint(*map(float, row))
              for row in zip(ko / no, f_lo, f_hi, 1 - kf / nf, 1 - p_hi, 1 - p_lo, strict=True)]
    return tuple(sorted(points, key=lambda p: p.fpr))


def violates(points: Sequence[TradeoffPoint], epsilon: float, delta: float) -> bool:
    """True when some box lies entirely below the claimed curve (its upper corner is below)."""
    return any(p.fnr_upper < claimed_fnr(p.fpr_upper, epsilon, delta) for p in points)


@dataclass(frozen=True)
class GDPEstimate:
    """μ of a Gaussian trade-off curve G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) fitted to the empirical tests.

    ASSUMES the pair's trade-off curve is Gaussian (Dong, Roth & Su 2022, Def. 2.6) and that
    the nested tests lie on it; the assumption-free result is ε_lower.  Each box gives
    μ ∈ [Φ⁻¹(1 − α_hi) − Φ⁻¹(β_hi), Φ⁻¹(1 − α_lo) − Φ⁻¹(β_lo)]; the boxes hold simultaneously,
    so ``lower`` (the largest left end) is a valid μ lower bound for any test family, and
    [lower, upper] (the intersection) is the interval under the assumption.  ``mu`` is the
    precision-weighted mean of the points' μ, clipped to it.  ``consistent`` is False when the
    intervals do not intersect: the data reject a Gaussian trade-off."""

    mu: float
    lower: float
    upper: float | None  # None when the data reject the assumption
    consistent: bool
    points: int

    def to_dict(self) -> dict[str, Any]:
        return {"mu": self.mu, "lower": self.lower, "upper": self.upper, "consistent": self.consistent,
                "points": self.points, "assumption": "Gaussian trade-off curve (mu-GDP)"}


def gdp_estimate(points: Sequence[TradeoffPoint]) -> GDPEstimate | None:
    """Fit μ-GDP to trade-off points with simultaneous boxes (None without informative points)."""
    rows = [p for p in points if 0 < p.fpr < 1 and 0 < p.fnr < 1 and p.fpr_upper < 1 and p.fnr_upper < 1
            and p.fpr_lower > 0 and p.fnr_lower > 0]
    if not rows:
        return None
    norm = importlib.import_module("scipy.stats").norm  # on first use: loading a results file needs none
    a = np.array([[p.fpr, p.fpr_lower, p.fpr_upper, p.fnr, p.fnr_lower, p.fnr_upper] for p in rows])
    mid = norm.isf(a[:, 0]) - norm.ppf(a[:, 3])
    lo = norm.isf(a[:, 2]) - norm.ppf(a[:, 5])
    hi = norm.isf(a[:, 1]) - norm.ppf(a[:, 4])
    lower, upper = float(max(0.0, lo.max())), float(hi.min())
    weight = 1.0 / np.maximum(hi - lo, 1e-12) ** 2
    mu = float(np.sum(weight * mid) / np.sum(weight))
    consistent = lower <= upper
    return GDPEstimate(mu=float(min(max(mu, lower), upper)) if consistent else mu, lower=lower,
                       upper=upper if consistent else None, consistent=consistent, points=len(rows))
