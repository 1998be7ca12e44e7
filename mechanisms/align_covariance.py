"""Algorithm 2 of the alignment paper: the private covariance Σ̃_D = Σ_D + G.

G has i.i.d. N(0, σ²) entries (not symmetrised), so the release is a Gaussian mechanism on
vec Σ_D with ℓ2 (Frobenius) sensitivity Δ from the record model's table, and its exact
curve is δ_Gauss(ε; Δ/σ) (Balle & Wang 2018, Thm 8).  Two calibrations:

* ``paper`` — σ² = 64 log(1/δ) L⁴/(ε² n²) (pairwise; K⁶ and H⁴ factors for the K-wise and
  trajectory variants as printed).  Claim (ε/2, δ/2): ``align/alg2-printed`` (Lemma A.7,
  VIOLATED: the Dwork–Roth condition needs 2 log(1.25/δ), and swap doubles the variance
  needed), ``align/kwise`` (Lemma B.5) and ``align/trajectory`` (Lemma C.5).
* ``tight`` — σ = Δ/μ* with δ_Gauss(ε/2; μ*) = δ/2 for the chosen relation (the fix of Lemma A.7).

Both carry ``align/alg2-tight`` (kind ``tight``): the exact ε(δ/2) of the worst pair for the
mechanism's σ.  On a given pair with |D| = |D′| the loss is exactly δ_Gauss(ε; ‖Σ_D − Σ_D′‖_F/σ),
which :meth:`PrivateCovariance.exact_epsilon` reports as the white-box value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpaudit.core import Guarantee, Relation, require
from dpaudit.mechanisms.base import per_dataset
from dpaudit.mechanisms.curves import gauss_epsilon, gauss_mu
from dpaudit.mechanisms.preferences import PrivateRelease

PAPER = "alignment paper"
CLAIMS = {"pairwise": ("align/alg2-printed", "Lemma A.7 / Algorithm 2"),
          "kwise": ("align/kwise-cov", "Lemma B.5 (Algorithm 2 on K-wise rankings, covariance half of Thm 4.3)"),
          "trajectory": ("align/trajectory-cov", "Lemma C.5 (Algorithm 2 on trajectories, covariance half of Thm 5.1)")}
CORRECTED = "align/alg2-corrected"  # sigma calibrated on the exact curve (Lemma A.7 fixed), any record type
RELATIONS = ("zero-out", "swap")


CALIBRATIONS = ("paper", "tight")  # the calibrations of sigma this release takes (the printed one first)


@dataclass(frozen=True)
class PrivateCovariance(PrivateRelease):
    """Algorithm 2 for Bradley–Terry, Plackett–Luce or trajectory records; output vec Σ̃ (row-major)."""

    relation: Relation | str = "swap"       # the relation the tight calibration targets
    name: ClassVar[str] = "align-covariance"

    def __post_init__(self) -> None:
        self._check_release(CALIBRATIONS)
        require(self.relation in RELATIONS, "relation", self.relation, f"must be one of {', '.join(RELATIONS)}")

    def sigma(self, n: int) -> float:
        require(n >= 1, "dataset size", n, "Algorithm 2 needs at least one record")
        if self.calibration == "paper":
            return self.model.paper_sigma(self.epsilon, self.delta, n)
        return self.model.sensitivity(self.relation, n) / gauss_mu(self.epsilon / 2, self.delta / 2)

    def mu(self, relation: Relation | str, n: int) -> float:
        """Δ/σ for the worst ``relation`` pair of n records: the exact curve's parameter."""
        return self.model.sensitivity(relation, n) / self.sigma(n)

    @per_dataset
    def covariance(self, data) -> np.ndarray:
        return self.model.covariance(data)

    def sample(self, data, size: int, rng: np.random.Generator) -> np.ndarray:
        cov = self.covariance(data).ravel()
        out = rng.standard_normal((size, cov.size))
        out *= self.sigma(len(data))
        out += cov
        return out

    def guarantees(self, data, relation: Relation | str) -> list[Guarantee]:
        if relation not in RELATIONS:
            return []
        n = len(data)
        cid, lemma = CLAIMS[self.model.kind]
        mu = self.mu(relation, n)
        half = (self.epsilon / 2, self.delta / 2)
        out = []
        if self.calibration == "paper":
            out.append(Guarantee(epsilon=half[0], delta=half[1], relation=relation,
                                 source=f"{PAPER}, {lemma}: sigma as printed; {self.model.describe()}", claim_id=cid))
        else:
            covered = relation == self.relation or (relation == Relation.ZERO_OUT and self.relation == Relation.SWAP)
            out.append(Guarantee(epsilon=half[0], delta=half[1], relation=relation,
                                 source=f"dpaudit's fix of Lemma A.7: sigma on the exact curve for {self.relation}; "
                                        f"{self.model.describe()}",
                                 claim_id=CORRECTED, kind="corrected") if covered else
                       Guarantee.not_applicable(f"calibrated for {self.relation}, not {relation}", relation=relation,
                                                claim_id=CORRECTED, kind="corrected",
                                                source="dpaudit's fix of Lemma A.7"))
        out.append(Guarantee(epsilon=gauss_epsilon(self.delta / 2, mu), delta=self.delta / 2, relation=relation,
                             source=f"Balle & Wang (2018), Thm 8: exact curve of the worst {relation} pair, "
                                    f"mu = {mu:.4g}",
                             claim_id="align/alg2-tight", kind="tight"))
        return out

    def exact_epsilon(self, d, d_prime, delta: float) -> float | None:
        """Exact ε(δ) of this pair: a Gaussian shift by ‖Σ_D − Σ_D′‖_F (None if |D| ≠ |D′|)."""
        if len(d) != len(d_prime):
            return None
        shift = float(np.linalg.norm(self.covariance(d) - self.covariance(d_prime)))
        if shift == 0:
            return 0.0
        return gauss_epsilon(delta, shift / self.sigma(len(d))) if delta > 0 else math.inf
