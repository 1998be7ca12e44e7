"""The policy shared by every KL-paper mechanism (KL paper, Lemma 1):

    π̃(a; D) ∝ π0(a) exp(u(a; D)/η),

computed in log space; actions with u = −∞ get probability 0.  Subclasses define
``utility(data)``; this mixin supplies the policy, sampling and the supremum of the pair
loss over the reference policy:

    ε_pair ≤ (max_a Δu − min_a Δu)/η,   Δu = u(·; D′) − u(·; D),

attained as π0 concentrates on argmin Δu.
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit.core import InputError, check_nonnegative, check_positive, check_probability_vector, require
from dpaudit.mechanisms.base import counts_categorical, log_softmax, per_dataset, sample_categorical

_NORM_TOL = 1e-9


def check_features(field: str, features, max_norm: float) -> np.ndarray:
    """A (rows, d) matrix of finite features with every row norm ≤ ``max_norm``."""
    arr = np.asarray(features, dtype=float)
    require(arr.ndim == 2 and arr.shape[0] >= 1 and arr.shape[1] >= 1, field, arr.shape,
            "must be a (rows, d) matrix")
    require(bool(np.all(np.isfinite(arr))), field, "non-finite entries", "every entry must be finite")
    norms = np.linalg.norm(arr, axis=1)
    if np.any(norms > max_norm * (1 + _NORM_TOL)):
        raise InputError(f"{field} row {int(np.argmax(norms))} has norm {norms.max():.6g}: "
                         f"rows must have norm <= {max_norm}")
    return arr


def require_count(field: str, value: object, low: int) -> None:
    """Refuse ``value`` unless it is an integer (Python or numpy) ≥ ``low``: the sizes the KL-paper
    mechanisms take (actions, rounds, iterations)."""
    require(isinstance(value, (int, np.integer)) and bool(value >= low), field, value, f"must be an integer >= {low}")


def elliptical_norms(features: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """‖φ_a‖_{Σ⁻¹} for each row φ_a."""
    solved = np.linalg.solve(sigma, features.T)
    return np.sqrt(np.maximum(np.einsum("ij,ji->i", features, solved), 0.0))


class KLPolicy:
    """Mixin for frozen dataclasses with fields ``eta`` and ``pi0`` and a ``utility`` method."""

    # The fields the mixin reads, declared for the type checker: annotations only, so the
    # dataclasses that mix this in keep their own fields, order and defaults.
    eta: float
    pi0: tuple[float, ...] | None

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

    def sample_counts(self, data, size: int, rng: np.random.Generator) -> np.ndarray:
        """How many of ``size`` draws pick each action (Multinomial(size, π̃(·; D)): the law of ``sample``'s counts)."""
        return counts_categorical(self.output_distribution(data), size, rng)

    def epsilon_sup_pi0(self, data, data_prime) -> float:
        """sup over reference policies π0 of the pure loss of (D, D′) on this action set: (max_a Δu − min_a Δu)/η."""
        u, v = self.utility(data), self.utility(data_prime)
        finite_u, finite_v = np.isfinite(u), np.isfinite(v)
        if np.any(finite_u != finite_v):
            return math.inf
        if not finite_u.any():
            return 0.0
        du = v[finite_u] - u[finite_u]
        return float((du.max() - du.min()) / self.eta)


class FeaturePolicy(KLPolicy):
    """KL policies over action features φ_a (rows of ``features``) with
    u(φ; D) = θ_Dᵀφ − β0 ‖φ‖_{Σ_D⁻¹} (eqs. (10) and (11)); subclasses define ``fit(data) -> (θ_D, Σ_D)``."""

    features: tuple[tuple[float, ...], ...]
    beta0: float
    ridge: float

    def _n_outputs(self) -> int:
        return len(self.features)

    def _check_features_and_ridge(self) -> None:
        """The checks every feature policy makes first: ``features`` a matrix of at least 2 action rows of
        norm ≤ 1 (stored back as tuples), ridge λ > 0, β0 ≥ 0 and η > 0."""
        feats = check_features("features", self.features, 1.0)
        require(len(feats) >= 2, "features", feats.shape, "need at least 2 actions")
        object.__setattr__(self, "features", tuple(map(tuple, feats.tolist())))
        check_positive("ridge (lambda)", self.ridge)
        check_nonnegative("beta0", self.beta0)
        check_positive("eta", self.eta)

    @property
    def phi(self) -> np.ndarray:
        return np.asarray(self.features, dtype=float)

    def fit(self, data) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def feature_column(self, data, column: str, max_norm: float) -> np.ndarray:
        """The (n, d) feature column of ``data``, validated against the action features' d and ``max_norm``."""
        d = self.phi.shape[1]
        values = data[column].reshape(len(data), -1).astype(float) if len(data) else np.zeros((0, d))
        require(values.shape[1] == d, f"column {column!r}", values.shape, f"must have d = {d} columns")
        if len(values):
            check_features(f"column {column!r}", values, max_norm)
        return values

    def utility_of(self, data, phi: np.ndarray) -> np.ndarray:
        """u(φ; D) for arbitrary feature rows φ (also used for the supremum over action sets)."""
        theta, sigma = self.fit(data)
        return phi @ theta - self.beta0 * elliptical_norms(phi, sigma)

    def utility(self, data) -> np.ndarray:
        return self.utility_of(data, self.phi)
