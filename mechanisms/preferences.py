"""Preference records of the alignment paper and their losses, per-record constants and sensitivities.

Three record types, each a small frozen dataclass that validates its columns and gives the
summed negative log-likelihood's gradient and Hessian for *many parameter vectors at once*
(``theta`` of shape (T, d)), so Algorithm 1 solves T noise draws together:

* :class:`BradleyTerry` — pairwise, columns ``x`` = φ(s, a₁) − φ(s, a₀) (‖x‖ ≤ 2L) and
  ``y`` ∈ {0, 1}; ℓ_i(θ) = −log s((2y_i − 1) θᵀx_i) (eq. 5); L_g = 2L, β_s = L², rank 1.
* :class:`PlackettLuce` — K-wise rankings, column ``phi`` (n, K, d) with rows in preference
  order (best first), ‖φ‖ ≤ L; ℓ_i(θ) = Σ_{j<K} [log Σ_{k≥j} e^{θᵀφ_k} − θᵀφ_j];
  gradient Σ_j (E_{p_j}φ − φ_j), Hessian Σ_j Cov_{p_j}(φ) of rank ≤ K − 1 (the paper's Claims B.1–B.2 have
  the wrong form);
  L_g = 2(K − 1)L, τ ≤ (K − 1)L².
* :class:`Trajectory` — trajectory comparisons, column ``steps`` (n, H, d) of per-step
  differences d_h (‖d_h‖ ≤ 2L) and ``y``; Bradley–Terry on x = Σ_h d_h; L_g = 2HL,
  β_s = H²L², rank 1.

Each also gives the covariance Σ_D released by Algorithm 2, the paper's σ² for it and its
Frobenius sensitivity under zero-out and swap (pairwise 4L²/n and 4√2L²/n, K-wise the same,
trajectory 4HL²/n and 4√2HL²/n).  Zeroing a record's features
(:meth:`neighbors.Dataset.zero_out`) removes its contribution to both the loss (up to a
constant) and Σ_D while keeping n: the zero-out relation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpaudit.core import Relation, check_positive, require

_TOL = 1e-9


def _column(data, name: str, ndim: int, what: str) -> np.ndarray:
    arr = np.asarray(data[name], dtype=float)
    require(arr.ndim == ndim, f"column {name!r}", arr.shape, f"must be {what}")
    return arr


def _labels(data, n: int) -> np.ndarray:
    y = np.asarray(data["y"])
    require(y.shape == (n,) and bool(np.isin(y, (0, 1)).all()), "column 'y'", y.tolist()[:8],
            "must hold one 0/1 preference label per record")
    return y.astype(float)


def _require_norms(name: str, norms: np.ndarray, limit: float, rule: str) -> None:
    flat = norms.reshape(len(norms), -1) if norms.ndim else norms
    if flat.size and flat.max() > limit * (1 + _TOL):
        row = int(np.argmax(flat.max(axis=1)))
        require(False, f"column {name!r} record {row}", round(float(flat[row].max()), 6), rule)


class _BinaryComparison:
    """Bradley–Terry on signed differences z_i = (2y_i − 1) x_i: ℓ_i = log(1 + e^{−θᵀz_i})."""

    def signed(self, data) -> np.ndarray:
        raise NotImplementedError

    def loss_terms(self, data) -> tuple:
        """The signed differences and the sums the gradient and Hessian reuse (once per dataset)."""
        z = self.signed(data)
        outer = (z[:, :, None] * z[:, None, :]).reshape(len(z), -1)
        return z, z.sum(axis=0), outer, outer.sum(axis=0)

    def dimension(self, data) -> int:
        return self.signed(data).shape[1]

    def objective(self, theta: np.ndarray, terms: tuple) -> np.ndarray:
        """Σ_i ℓ_i(θ) for each row of ``theta`` (T, d)."""
        z = terms[0]
        return np.logaddexp(0.0, -(theta @ z.T)).sum(axis=1)

    def gradient_hessian(self, theta: np.ndarray, terms: tuple, hessian: bool = True):
        """(Σ∇ℓ_i, Σ∇²ℓ_i) for each row of ``theta``: shapes (T, d) and (T, d, d).

        With u = tanh(θᵀz/2): s(−θᵀz) = (1 − u)/2 and s′ = (1 − u²)/4, so the gradient is
        (uᵀZ − Σz)/2 and the Hessian (Σ zzᵀ − (u²)ᵀ(zzᵀ))/4 — one tanh per entry (several
        times faster than the logistic function) and two small matrix products."""
        z, z_sum, outer, outer_sum = terms
        u = theta @ z.T
        u *= 0.5
        np.tanh(u, out=u)
        grad = 0.5 * (u @ z - z_sum)
        if not hessian:
            return grad, None
        u *= u
        d = z.shape[1]
        return grad, (0.25 * (outer_sum - u @ outer)).reshape(len(theta), d, d)


@dataclass(frozen=True)
class BradleyTerry(_BinaryComparison):
    """Pairwise comparisons (§4.1) with feature bound L."""

    L: float = 1.0
    kind: ClassVar[str] = "pairwise"
    feature_columns: ClassVar[tuple[str, ...]] = ("x",)

    def __post_init__(self) -> None:
        check_positive("L", self.L)

    def features(self, data) -> np.ndarray:
        x = _column(data, "x", 2, "an (n, d) array of feature differences")
        _require_norms("x", np.linalg.norm(x, axis=1), 2 * self.L, f"needs ||x|| <= 2L = {2 * self.L:g}")
        return x

    def signed(self, data) -> np.ndarray:
        x = self.features(data)
        return (2 * _labels(data, len(x)) - 1)[:, None] * x

    @property
    def lipschitz(self) -> float:
        return 2 * self.L

    @property
    def curvature(self) -> float:
        """β_s = max s′ · ‖x‖² = L² (rank one)."""
        return self.L ** 2

    rank: ClassVar[int] = 1
    rank_one: ClassVar[bool] = True

    def covariance(self, data) -> np.ndarray:
        x = self.features(data)
        return x.T @ x / max(len(x), 1)

    def sensitivity(self, relation: Relation | str, n: int) -> float:
        """Frobenius sensitivity of Σ_D: 4L²/n (zero-out), 4√2 L²/n (swap, orthogonal x ⊥ x′)."""
        return 4 * self.L ** 2 / n * (math.sqrt(2) if relation == Relation.SWAP else 1.0)

    def paper_sigma(self, epsilon: float, delta: float, n: int) -> float:
        """Algorithm 2: σ² = 64 log(1/δ) L⁴/(ε² n²)."""
        return 8 * math.sqrt(math.log(1 / delta)) * self.L ** 2 / (epsilon * n)

    def describe(self) -> str:
        return f"Bradley-Terry pairs, L = {self.L:g}"


@dataclass(frozen=True)
class Trajectory(_BinaryComparison):
    """Trajectory comparisons of horizon H (§5): Bradley–Terry on x = Σ_h d_h."""

    H: int
    L: float = 1.0
    kind: ClassVar[str] = "trajectory"
    feature_columns: ClassVar[tuple[str, ...]] = ("steps",)
    rank: ClassVar[int] = 1
    rank_one: ClassVar[bool] = True

    def __post_init__(self) -> None:
        require(isinstance(self.H, int) and self.H >= 1, "H", self.H, "must be an integer >= 1")
        check_positive("L", self.L)

    def features(self, data) -> np.ndarray:
        steps = _column(data, "steps", 3, "an (n, H, d) array of per-step feature differences")
        require(steps.shape[1] == self.H, "column 'steps'", steps.shape, f"must have H = {self.H} steps per record")
        _require_norms("steps", np.linalg.norm(steps, axis=2), 2 * self.L, f"needs ||d_h|| <= 2L = {2 * self.L:g}")
        return steps

    def signed(self, data) -> np.ndarray:
        steps = self.features(data)
        return (2 * _labels(data, len(steps)) - 1)[:, None] * steps.sum(axis=1)

    @property
    def lipschitz(self) -> float:
        return 2 * self.H * self.L

    @property
    def curvature(self) -> float:
        return (self.H * self.L) ** 2

    def covariance(self, data) -> np.ndarray:
        """Σ_D = (1/n) Σ_i Σ_h d_h d_hᵀ (§5; not the loss's Fisher matrix, which is built from x xᵀ with
        x = Σ_h d_h)."""
        steps = self.features(data)
        flat = steps.reshape(-1, steps.shape[2])
        return flat.T @ flat / max(len(steps), 1)

    def sensitivity(self, relation: Relation | str, n: int) -> float:
        """4HL²/n (zero-out: H steps of norm 2L), 4√2 HL²/n (swap)."""
        return 4 * self.H * self.L ** 2 / n * (math.sqrt(2) if relation == Relation.SWAP else 1.0)

    def paper_sigma(self, epsilon: float, delta: float, n: int) -> float:
        """σ² = 64 log(1/δ) H⁴ L⁴/(ε² n²) (Lemma C.5 as printed)."""
        return 8 * math.sqrt(math.log(1 / delta)) * (self.H * self.L) ** 2 / (epsilon * n)

    def describe(self) -> str:
        return f"trajectory comparisons, H = {self.H}, L = {self.L:g}"


@dataclass(frozen=True)
class PlackettLuce:
    """K-wise rankings (§4.2) with feature bound L."""

    K: int
    L: float = 1.0
    kind: ClassVar[str] = "kwise"
    feature_columns: ClassVar[tuple[str, ...]] = ("phi",)
    rank_one: ClassVar[bool] = False

    def __post_init__(self) -> None:
        require(isinstance(self.K, int) and self.K >= 2, "K", self.K, "must be an integer >= 2")
        check_positive("L", self.L)

    def features(self, data) -> np.ndarray:
        phi = _column(data, "phi", 3, "an (n, K, d) array of features, best-ranked first")
        require(phi.shape[1] == self.K, "column 'phi'", phi.shape, f"must rank K = {self.K} responses per record")
        _require_norms("phi", np.linalg.norm(phi, axis=2), self.L, f"needs ||phi|| <= L = {self.L:g}")
        return phi

    def loss_terms(self, data) -> tuple:
        return (self.features(data),)

    def dimension(self, data) -> int:
        return self.features(data).shape[2]

    @property
    def rank(self) -> int:
        return self.K - 1

    @property
    def lipschitz(self) -> float:
        return 2 * (self.K - 1) * self.L

    @property
    def curvature(self) -> float:
        """τ ≤ (K − 1)L²: the trace of Σ_j Cov_{p_j}(φ)."""
        return (self.K - 1) * self.L ** 2

    def _suffix_probs(self, theta: np.ndarray, phi: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """p_j = softmax of the scores over responses j..K−1, for j < K − 1: one exponential
        per score, suffix sums by a reversed cumulative sum."""
        scores = np.einsum("td,nkd->tnk", theta, phi, optimize=True)   # (T, n, K)
        e = np.exp(scores - scores.max(axis=2, keepdims=True))
        tails = np.cumsum(e[:, :, ::-1], axis=2)[:, :, ::-1]            # Σ_{k ≥ j} e_k
        if not np.all(tails[:, :, -1] > 0):                             # a last suffix underflowed
            e = None
        probs = []
        for j in range(self.K - 1):
            if e is None:
                s = scores[:, :, j:]
                p = np.exp(s - s.max(axis=2, keepdims=True))
                probs.append(p / p.sum(axis=2, keepdims=True))
            else:
                probs.append(e[:, :, j:] / tails[:, :, j:j + 1])
        return scores, probs

    def objective(self, theta: np.ndarray, terms: tuple) -> np.ndarray:
        (phi,) = terms
        scores = np.einsum("td,nkd->tnk", theta, phi, optimize=True)
        total = np.zeros(len(theta))
        for j in range(self.K - 1):
            s = scores[:, :, j:]
            top = s.max(axis=2)
            total += (top + np.log(np.exp(s - top[:, :, None]).sum(axis=2)) - s[:, :, 0]).sum(axis=1)
        return total

    def gradient_hessian(self, theta: np.ndarray, terms: tuple, hessian: bool = True):
        (phi,) = terms
        _, probs = self._suffix_probs(theta, phi)
        T, d = len(theta), phi.shape[2]
        grad = np.zeros((T, d))
        hess = np.zeros((T, d, d)) if hessian else None
        for j, p in enumerate(probs):
            sub = phi[:, j:, :]                                           # (n, K−j, d)
            mean = np.einsum("tnk,nkd->tnd", p, sub, optimize=True)       # E_{p_j} φ per record
            grad += mean.sum(axis=1) - phi[:, j, :].sum(axis=0)
            if hessian:
                outer = np.einsum("nkd,nke->nkde", sub, sub).reshape(len(phi), -1, d * d)
                second = np.einsum("tnk,nkf->tf", p, outer, optimize=True).reshape(T, d, d)
                hess += second - np.einsum("tnd,tne->tde", mean, mean, optimize=True)
        return grad, hess

    def covariance(self, data) -> np.ndarray:
        """Σ_D = 2/(nK(K−1)) Σ_i Σ_{j<k} (φ_j − φ_k)(φ_j − φ_k)ᵀ."""
        phi = self.features(data)
        j, k = np.triu_indices(self.K, 1)
        diff = (phi[:, j, :] - phi[:, k, :]).reshape(-1, phi.shape[2])
        return 2 * diff.T @ diff / (max(len(phi), 1) * self.K * (self.K - 1))

    def sensitivity(self, relation: Relation | str, n: int) -> float:
        """2K L²/((K−1) n) (zero-out) and √2 times that (swap); the paper's Lemma B.5 says 4K³L²/n.

        One record adds 2/(nK(K−1)) Σ_{j<k} (φ_j − φ_k)(φ_j − φ_k)ᵀ, a PSD matrix whose Frobenius
        norm is at most its trace, 2/(nK(K−1)) (K Σ‖φ_j‖² − ‖Σφ_j‖²) ≤ 2K L²/((K−1) n); for even K
        the collinear record (v, …, v, −v, …, −v) with ‖v‖ = L attains it.  A swap replaces one PSD
        term by another, ‖A − B‖_F² ≤ ‖A‖_F² + ‖B‖_F², attained by orthogonal records."""
        worst = 2 * self.K * self.L ** 2 / ((self.K - 1) * n)
        return worst * (math.sqrt(2) if relation == Relation.SWAP else 1.0)

    def paper_sigma(self, epsilon: float, delta: float, n: int) -> float:
        """σ² = 64 log(1/δ) K⁶ L⁴/(ε² n²) (Lemma B.5 as printed)."""
        return 8 * math.sqrt(math.log(1 / delta)) * self.K ** 3 * self.L ** 2 / (epsilon * n)

    def describe(self) -> str:
        return f"Plackett-Luce rankings, K = {self.K}, L = {self.L:g}"


MODELS = {"pairwise": BradleyTerry, "kwise": PlackettLuce, "trajectory": Trajectory}


def check_model(value) -> None:
    """A record model of this module (the ``model`` field of Algorithms 1 and 2)."""
    require(isinstance(value, tuple(MODELS.values())), "model", value,
            "must be a BradleyTerry, PlackettLuce or Trajectory record model")


@dataclass(frozen=True)
class PrivateRelease:
    """The parameters the alignment paper's private releases take first (Algorithm 1, the MLE;
    Algorithm 2, the covariance): the record model, (ε, δ) and the calibration of their noise, one of
    the calibrations the release knows (its module's ``CALIBRATIONS``, "paper", the printed σ, first)."""

    model: BradleyTerry | PlackettLuce | Trajectory
    epsilon: float
    delta: float
    calibration: str = "paper"

    def _check_release(self, calibrations: tuple[str, ...]) -> None:
        """The checks both releases make first (a release's ``__post_init__`` calls it with its calibrations)."""
        check_model(self.model)
        check_positive("epsilon", self.epsilon)
        require(0 < self.delta < 1, "delta", self.delta, "must be in (0, 1)")
        require(self.calibration in calibrations, "calibration", self.calibration,
                f"must be {' or '.join(map(repr, calibrations))}")
