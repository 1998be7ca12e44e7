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
from scipy import special

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


def two_point_epsilon(p: float, q: float, delta: float) -> float:
    """Exact ε(δ) of the bits Bernoulli(p) and Bernoulli(q), both directions.

    For ε ≥ 0 at most one output has P(o) > e^ε Q(o), so the hockey-stick divergence
    Σ_o (P(o) − e^ε Q(o))_+ ≤ δ holds iff P(o) − δ ≤ e^ε Q(o) at the output o where P exceeds Q:
    ε(δ) = max(0, log((p − δ)/q), log((1 − q − δ)/(1 − p)), and the same with p and q exchanged);
    inf when an output with mass above δ has none under the other side."""
    def one_way(a: float, b: float) -> float:
        if a <= delta:
            return 0.0
        return math.inf if b == 0 else max(0.0, math.log((a - delta) / b))
    return max(one_way(p, q), one_way(1 - p, 1 - q), one_way(q, p), one_way(1 - q, 1 - p))


@dataclass(frozen=True)
class CovarianceWitness(PrivateCovariance):
    """Algorithm 2's release seen through a witness event fixed in advance: the bit
    1[Σ̃_ij ≥ c] of one entry (i, j) = ``entry`` of Σ̃ = Σ_D + G and a threshold c = ``threshold``.

    *Its law is exact and in closed form.*  Σ̃_ij = Σ_D,ij + σ(n)·G_ij with G_ij ~ N(0, 1), so the bit is
    Bernoulli(p_D) with p_D = Φ̄((c − Σ_D,ij)/σ(n)) (:meth:`output_distribution`), and ``size``
    independent bits sum to Binomial(size, p_D): :meth:`sample_counts` draws that one binomial, the
    law of ``np.bincount(sample(...))`` (``tests/test_errata_witness.py`` tests the two against each
    other), at O(1) cost whatever ``size``; :meth:`sample` draws the release itself and thresholds it.

    *Its claims are the release's.*  The bit is a post-processing of Σ̃ by a function fixed before any
    draw (Dwork & Roth 2014, Prop. 2.1), so whatever (ε, δ) Σ̃ satisfies the bit satisfies: a bound
    ε_lower > ε on the bit refutes the release's (ε, δ) claim, and a claim the release meets holds
    for the bit.  Its white box (:meth:`exact_epsilon`) is the bit's own exact ε(δ) (at most the
    release's, by the same argument)."""

    entry: tuple[int, int] = (0, 0)   # (i, j): the entry of Σ̃ the witness event reads
    threshold: float = 0.0            # c: the bit is 1 when Σ̃_ij >= c
    name: ClassVar[str] = "align-covariance-witness"

    def __post_init__(self) -> None:
        super().__post_init__()
        require(len(self.entry) == 2 and all(isinstance(k, (int, np.integer)) and k >= 0 for k in self.entry),
                "entry", self.entry, "must be a pair (i, j) of indices >= 0")
        require(math.isfinite(self.threshold), "threshold", self.threshold, "must be a finite number")

    def standardised(self, data) -> float:
        """(c − Σ_D,ij)/σ(n): the threshold in standard deviations above the entry's mean under ``data``."""
        cov = self.covariance(data)
        require(max(self.entry) < cov.shape[0], "entry", self.entry, f"must index the {cov.shape[0]} x "
                f"{cov.shape[1]} covariance of this record model")
        return (self.threshold - float(cov[self.entry])) / self.sigma(len(data))

    def one_probability(self, data) -> float:
        """p_D = P[Σ̃_ij ≥ c] = Φ̄((c − Σ_D,ij)/σ(n)), from the upper tail directly (accurate deep in it)."""
        return float(special.ndtr(-self.standardised(data)))

    def output_distribution(self, data) -> np.ndarray:
        """(P[bit = 0], P[bit = 1]) under ``data``: (Φ((c − Σ_D,ij)/σ), Φ̄((c − Σ_D,ij)/σ))."""
        z = self.standardised(data)
        return np.array([special.ndtr(z), special.ndtr(-z)])

    def sample(self, data, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` bits, each the release's own draw thresholded (the per-sample reference)."""
        self.standardised(data)  # the entry is checked before any draw
        i, j = self.entry
        width = self.covariance(data).shape[1]
        return (super().sample(data, size, rng)[:, i * width + j] >= self.threshold).astype(np.int64)

    def sample_counts(self, data, size: int, rng: np.random.Generator) -> np.ndarray:
        """(#bits 0, #bits 1) of ``size`` draws: one Binomial(size, p_D) draw, the law of the bincount of
        :meth:`sample` (independent bits of equal law)."""
        ones = int(rng.binomial(size, self.one_probability(data)))
        return np.array([size - ones, ones], dtype=np.int64)

    def exact_epsilon(self, d, d_prime, delta: float) -> float | None:
        """The bit's exact ε(δ) (:func:`two_point_epsilon` of p_D and p_D′)."""
        return two_point_epsilon(self.one_probability(d), self.one_probability(d_prime), delta)
