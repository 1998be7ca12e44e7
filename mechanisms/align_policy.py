"""The alignment paper's released pair (θ̃, Σ̃) and Algorithm 3, pessimistic policy optimisation.

* :class:`PrivateAlignment` releases (θ̃, vec Σ̃) from Algorithms 1 and 2 run independently
  on the same records.  Claim: (ε, δ) by basic composition of two (ε/2, δ/2) halves —
  Theorem 4.1 (``align/thm41``), 4.3 (``align/kwise``) and 5.1 (``align/trajectory``), all
  UNVERIFIED (Lemma A.7 is false, composition has slack).  Beside it
  ``align/thm41-composed`` (kind ``corrected``): a tight check, the χ-bound of
  Algorithm 1 (exact solver) composed with Algorithm 2's exact curve,
  δ(ε) ≤ min_{ε₁+ε₂=ε} δ_χ(ε₁) + δ_Gauss(ε₂; μ₂).
* :class:`PessimisticPolicy` is Algorithm 3 for one state (ρ a point mass) and finitely many
  actions: Ĵ(a) = min over the confidence set {θ : ‖θ̃ − θ‖_Γ ≤ F} of ⟨θ, φ(a) − v⟩
  = ⟨θ̃, u_a⟩ − F‖u_a‖_{Γ⁻¹}, u_a = φ(a) − v, Γ = Σ̃ + λI; it returns argmax_a Ĵ(a).  Σ̃ is
  symmetrised and projected onto the PSD cone first (it is a noisy matrix; the paper leaves
  this implicit).  It reads only (θ̃, Σ̃), so it inherits their claims by post-processing,
  and an audit of its action must never show more loss than an audit of its inputs.
  The intersection with Θ_B is dropped: it changes utility, not privacy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpaudit.core import Guarantee, Relation, check_nonnegative, check_positive, require
from dpaudit.mechanisms.align_covariance import PrivateCovariance
from dpaudit.mechanisms.align_mle import PrivateMLE
from dpaudit.mechanisms.curves import chi_delta_array, compose_epsilon, gauss_delta_array

PAPER = "alignment paper"
THEOREMS = {"pairwise": ("align/thm41", "Theorem 4.1"), "kwise": ("align/kwise", "Theorem 4.3"),
            "trajectory": ("align/trajectory", "Theorem 5.1")}
RELATIONS = ("zero-out", "swap")


@dataclass(frozen=True)
class PrivateAlignment:
    """(θ̃, vec Σ̃): Algorithm 1 and Algorithm 2 on the same records, released together."""

    mle: PrivateMLE
    covariance: PrivateCovariance
    name: ClassVar[str] = "align-release"

    def __post_init__(self) -> None:
        require(isinstance(self.mle, PrivateMLE), "mle", self.mle, "must be a PrivateMLE")
        require(isinstance(self.covariance, PrivateCovariance), "covariance", self.covariance,
                "must be a PrivateCovariance")
        require(type(self.mle.model) is type(self.covariance.model), "covariance.model", self.covariance.model,
                f"must be the same record model as mle.model ({self.mle.model.describe()})")
        require((self.mle.epsilon, self.mle.delta) == (self.covariance.epsilon, self.covariance.delta),
                "covariance (epsilon, delta)", (self.covariance.epsilon, self.covariance.delta),
                f"must equal the MLE's {(self.mle.epsilon, self.mle.delta)}: the theorems split one budget")

    def sample(self, data, size: int, rng: np.random.Generator) -> np.ndarray:
        return np.hstack([self.mle.sample(data, size, rng), self.covariance.sample(data, size, rng)])

    def composed_epsilon(self, data, relation: Relation | str, delta: float) -> float:
        """The composition of the χ-bound (exact solver) and the exact Gaussian curve."""
        if self.mle.solver != "exact":
            return math.inf
        mu1, k, ej = self.mle.objective_part(self.mle.model.dimension(data), relation)
        mu2 = self.covariance.mu(relation, len(data))
        return compose_epsilon(delta, lambda e: chi_delta_array(e, mu1, k, ej), lambda e: gauss_delta_array(e, mu2))

    def guarantees(self, data, relation: Relation | str) -> list[Guarantee]:
        if relation not in RELATIONS:
            return []
        cid, theorem = THEOREMS[self.mle.model.kind]
        e, dl = self.mle.epsilon, self.mle.delta
        composed = self.composed_epsilon(data, relation, dl)
        return [Guarantee(epsilon=e, delta=dl, relation=relation,
                          source=f"{PAPER}, {theorem}: (eps/2, delta/2) + (eps/2, delta/2) by composition; "
                                 f"{self.mle.model.describe()}", claim_id=cid,
                          note="UNVERIFIED: Lemma A.7 is false, composition has slack"),
                Guarantee(epsilon=composed, delta=dl, relation=relation,
                          source="chi-bound of Algorithm 1 composed with the exact curve "
                                 "of Algorithm 2", claim_id="align/thm41-composed", kind="corrected")
                if math.isfinite(composed) else
                Guarantee.not_applicable("needs the exact solver", relation=relation,
                                         claim_id="align/thm41-composed", kind="corrected")]


@dataclass(frozen=True)
class PessimisticPolicy:
    """Algorithm 3 on one state with finitely many actions: returns the chosen action's index."""

    release: PrivateAlignment
    actions: tuple           # φ(s, a) for each action, (A, d)
    reference: tuple | None = None  # v; None: zeros
    radius: float = 1.0      # F, the confidence radius (unspecified in the paper)
    ridge: float = 1.0       # λ in Γ = Σ̃ + λI
    name: ClassVar[str] = "align-pessimistic"

    def __post_init__(self) -> None:
        require(isinstance(self.release, PrivateAlignment), "release", self.release, "must be a PrivateAlignment")
        phi = np.asarray(self.actions, dtype=float)
        require(phi.ndim == 2 and len(phi) >= 2 and bool(np.all(np.isfinite(phi))), "actions", np.shape(phi),
                "must be a finite (A, d) array with A >= 2 actions")
        object.__setattr__(self, "actions", tuple(map(tuple, phi.tolist())))
        if self.reference is not None:
            v = np.asarray(self.reference, dtype=float)
            require(v.shape == (phi.shape[1],), "reference", v.shape, f"must have d = {phi.shape[1]} entries")
            object.__setattr__(self, "reference", tuple(v.tolist()))
        check_nonnegative("radius (F)", self.radius)
        check_positive("ridge (lambda)", self.ridge)

    def choose(self, theta: np.ndarray, cov: np.ndarray) -> np.ndarray:
        """argmax_a ⟨θ̃, u_a⟩ − F‖u_a‖_{Γ⁻¹} for each row of θ̃ (T, d) and Σ̃ (T, d, d)."""
        phi = np.asarray(self.actions)
        u = phi - (np.zeros(phi.shape[1]) if self.reference is None else np.asarray(self.reference))
        w, vecs = np.linalg.eigh(0.5 * (cov + cov.transpose(0, 2, 1)))
        w = np.maximum(w, 0.0) + self.ridge                              # PSD projection, then + λI
        coords = np.einsum("tdk,ad->tak", vecs, u, optimize=True)          # u_a in Γ's eigenbasis
        width = np.sqrt(np.einsum("tak,tk->ta", coords ** 2, 1.0 / w, optimize=True))
        return np.argmax(theta @ u.T - self.radius * width, axis=1).astype(np.int64)

    def sample(self, data, size: int, rng: np.random.Generator) -> np.ndarray:
        out = self.release.sample(data, size, rng)
        d = len(self.actions[0])
        require(out.shape[1] == d + d * d, "actions", d, f"must have the dataset's feature dimension {out.shape[1]}")
        return self.choose(out[:, :d], out[:, d:].reshape(size, d, d))

    def guarantees(self, data, relation: Relation | str) -> list[Guarantee]:
        """The release's claims: Algorithm 3 is post-processing of (θ̃, Σ̃)."""
        return self.release.guarantees(data, relation)
