"""The pessimistic KL-regularized linear contextual bandit (KL paper, §4.2, eq. (10)).

At a fixed query context whose actions have features φ_a (rows of ``features``, ‖φ_a‖ ≤ 1),

    Σ_D = λI + Σ_i φ_i φ_iᵀ,  θ_D = Σ_D⁻¹ Σ_i r_i φ_i,
    u(a; D) = θ_Dᵀ φ_a − β0 ‖φ_a‖_{Σ_D⁻¹},   π̃(a | x; D) ∝ π0(a | x) exp(u(a; D)/η).

Claims, evaluated on D (λ_min = λ_min(Σ_D), n = |D|):

* ``kl-linear/thm2-pure``  Theorem 2: ε0 = (2(1 + √(nd/(λ_min−1))) R/√(λ_min−1) + β0/(λ_min−1))/(η√λ_min),
  when λ_min > 1 (VALID, asymptotically tight: on n = 0 → 1, d = 1, β0 = 0 the
  exact loss over the bound tends to 1 as λ grows, 0.985 at λ = 100);
* ``kl-linear/thm2-approx`` its approximate part for a user λ0 (VIOLATED: eq. (24) has the flaw
  of eq. (12); with d = 1, λ = 1, 99 points φ = 1 of which ten have reward 1, removing one
  gives exact δ 0.50 against a claimed 0.106 at λ0 = 1.6e5);
* ``kl-linear/cor2-pure``  Corollary 2 for a user k1, when λ_min ≥ 1 + n/(k1 d) (VALID);
* ``kl-linear/cor2-approx`` its approximate part for a user c ∈ (0, 1), as printed:
  (cε0, |A| e^{cε0} exp((β0/η)√(d/n)(1 − √(c k1))))  (VIOLATED: ε = cε0 needs λ0^{-1/2} = c√(k1 d/n), not
  √(c k1 d/n), and it inherits the approximate part of Theorem 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpaudit.core import Guarantee, InputError, Relation, check_positive, require
from dpaudit.mechanisms.kl_policy import FeaturePolicy, elliptical_norms
from dpaudit.neighbors.dataset import Dataset


@dataclass(frozen=True)
class KLLinearBandit(FeaturePolicy):
    """Eq. (10) on a log with columns ``phi`` (n, d) and ``reward`` (n,) in [0, R].

    ``lambda0`` states Theorem 2's approximate part, ``k1`` Corollary 2's pure part, and ``k1``
    with ``c`` Corollary 2's approximate part; each claim is stated only when its parameters are set.
    """

    features: tuple[tuple[float, ...], ...]
    ridge: float
    beta0: float
    eta: float
    reward_range: float = 1.0
    pi0: tuple[float, ...] | None = None
    lambda0: float | None = None
    k1: float | None = None
    c: float | None = None
    name: ClassVar[str] = "kl-linear-bandit"

    def __post_init__(self) -> None:
        self._check_features_and_ridge()
        check_positive("reward_range (R)", self.reward_range)
        if self.lambda0 is not None:
            check_positive("lambda0", self.lambda0)
        if self.k1 is not None:
            check_positive("k1", self.k1)
        if self.c is not None:
            require(isinstance(self.c, (int, float)) and 0 < self.c < 1, "c", self.c, "must be in (0, 1)")
            require(self.k1 is not None, "c", self.c, "Corollary 2's approximate part needs k1 too")
        self._check_pi0()

    def statistics(self, data: Dataset) -> tuple[np.ndarray, np.ndarray]:
        """Σ_D and θ_D after validating the log."""
        require(isinstance(data, Dataset), "kl-linear data", type(data).__name__, "must be a neighbors.Dataset")
        phi = self.feature_column(data, "phi", 1.0)
        d = phi.shape[1]
        rewards = data["reward"].astype(float)
        if len(rewards) and (rewards.min() < 0 or rewards.max() > self.reward_range):
            raise InputError(f"column 'reward' has values in [{rewards.min()}, {rewards.max()}]: "
                             f"rewards must lie in [0, R] = [0, {self.reward_range}]")
        sigma = self.ridge * np.eye(d) + phi.T @ phi
        theta = np.linalg.solve(sigma, phi.T @ rewards)
        return sigma, theta

    def fit(self, data: Dataset) -> tuple[np.ndarray, np.ndarray]:
        """(θ_D, Σ_D)."""
        sigma, theta = self.statistics(data)
        return theta, sigma

    # --- the paper's claims ------------------------------------------------------------
    def _coverage(self, data: Dataset) -> tuple[float, int, int]:
        sigma, _ = self.statistics(data)
        return float(np.linalg.eigvalsh(sigma)[0]), len(data), self.phi.shape[1]

    def _thm2_core(self, lam_min: float, n: int, d: int) -> float:
        return (2 * (1 + math.sqrt(n * d / (lam_min - 1))) * self.reward_range / math.sqrt(lam_min - 1)
                + self.beta0 / (lam_min - 1))

    def guarantees(self, data: Dataset, relation: Relation | str) -> list[Guarantee]:
        if relation != Relation.ADD_REMOVE:
            return []
        lam_min, n, d = self._coverage(data)
        src = "KL paper, Theorem 2"
        if lam_min <= 1:
            why = f"lambda_min(Sigma_D) = {lam_min:.6g} <= 1: Theorem 2 requires lambda_min > 1"
            out = [Guarantee.not_applicable(why, source=src, claim_id="kl-linear/thm2-pure")]
            if self.lambda0 is not None:
                out.append(Guarantee.not_applicable(why, source=src + ", approximate part",
                                                    claim_id="kl-linear/thm2-approx"))
        else:
            core = self._thm2_core(lam_min, n, d)
            out = [Guarantee(epsilon=core / (self.eta * math.sqrt(lam_min)), delta=0.0, relation=relation, source=src,
                             claim_id="kl-linear/thm2-pure")]
            if self.lambda0 is not None:
                eps = core / (self.eta * math.sqrt(self.lambda0))
                sigma, _ = self.statistics(data)
                gamma_min = float(elliptical_norms(self.phi, sigma).min())
                log_delta = (math.log(len(self.features)) + eps
                             + self.beta0 / self.eta * (gamma_min - 1 / math.sqrt(self.lambda0)))
                out.append(Guarantee(epsilon=eps, delta=1.0 if log_delta >= 0 else math.exp(log_delta),
                                     relation=relation, source=f"{src}, approximate part (lambda0 = {self.lambda0:g})",
                                     claim_id="kl-linear/thm2-approx"))
        if self.k1 is not None:
            out.extend(self._corollary2(self.k1, lam_min, n, d))
        return out

    def _corollary2(self, k1: float, lam_min: float, n: int, d: int) -> list[Guarantee]:
        """Corollary 2's pure part and, with ``c`` set, its approximate part as printed (``k1`` is ``self.k1``, set)."""
        src = f"KL paper, Corollary 2, pure part (k1 = {k1:g})"
        src_approx = f"KL paper, Corollary 2, approximate part (k1 = {k1:g}, c = {self.c:g})" if self.c else ""
        if n == 0 or lam_min < (1 + n / (k1 * d)) * (1 - 1e-12):  # equality admitted despite rounding
            need = "n >= 1" if n == 0 else f"lambda_min >= 1 + n/(k1 d) = {1 + n / (k1 * d):.6g}"
            why = f"lambda_min(Sigma_D) = {lam_min:.6g}: Corollary 2 needs {need}"
            out = [Guarantee.not_applicable(why, source=src, claim_id="kl-linear/cor2-pure")]
            if self.c is not None:
                out.append(Guarantee.not_applicable(why, source=src_approx, claim_id="kl-linear/cor2-approx"))
            return out
        R = self.reward_range
        eps = k1 * d / (n * self.eta) * (2 * R * (1 + math.sqrt(k1) * d) + self.beta0 * math.sqrt(k1 * d / n))
        out = [Guarantee(epsilon=eps, delta=0.0, relation="add-remove", source=src, claim_id="kl-linear/cor2-pure")]
        if self.c is not None:
            eps_c = self.c * eps
            log_delta = (math.log(len(self.features)) + eps_c
                         + self.beta0 / self.eta * math.sqrt(d / n) * (1 - math.sqrt(self.c * k1)))
            out.append(Guarantee(epsilon=eps_c, delta=1.0 if log_delta >= 0 else math.exp(log_delta),
                                 relation="add-remove", source=src_approx, claim_id="kl-linear/cor2-approx"))
        return out
