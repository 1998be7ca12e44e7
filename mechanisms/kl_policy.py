"""The policy shared by every KL-paper mechanism (spec A.1):

    π̃(a; D) ∝ π0(a) exp(u(a; D)/η),

computed in log space; actions with u = −∞ get probability 0.  Subclasses define
``utility(data)``; this mixin supplies the policy, sampling and the supremum of the pair
loss over the reference policy (spec §0):

    ε_pair ≤ (max_a Δu − min_a Δu)/η,   Δu = u(·; D′) − u(·; D),

attained as π0 concentrates on argmin Δu.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.base import check_probability_vector, log_softmax, per_dataset, sample_categorical


class KLPolicy:
    """Mixin for frozen dataclasses with fields ``eta`` and ``pi0`` and a ``utility`` method."""

    def _n_outputs(self) -> int:
        raise NotImplementedError

    def _check_pi0(self) -> None:
        if self.pi0 is not None:
            object.__setattr__(self, "pi0", tuple(check_probability_vector("pi0", self.pi0, self._n_outputs())))

    def log_pi0(self) -> np.ndarray:
        k = self._n_outputs()
        if self.pi0 is None:
            return np.full(k, -math.log(k))
        with np.errstate(divide="ignore"):
            return np.log(np.asarray(self.pi0, dtype=float))

    def utility(self, data) -> np.ndarray:
        raise NotImplementedError

    @per_dataset
    def output_distribution(self, data) -> np.ndarray:
        """π̃(·; D), one probability per action."""
        return np.exp(log_softmax(self.log_pi0() + self.utility(data) / self.eta))

    def sample(self, data, size: int, rng: np.random.Generator) -> np.ndarray:
        return sample_categorical(self.output_distribution(data), size, rng)

    def epsilon_sup_pi0(self, data, data_prime) -> float:
        """sup over reference policies π0 of the pure loss of (D, D′) on this action set (spec §0)."""
        u, v = self.utility(data), self.utility(data_prime)
        finite_u, finite_v = np.isfinite(u), np.isfinite(v)
        if np.any(finite_u != finite_v):
            return math.inf
        if not finite_u.any():
            return 0.0
        du = v[finite_u] - u[finite_u]
        return float((du.max() - du.min()) / self.eta)
