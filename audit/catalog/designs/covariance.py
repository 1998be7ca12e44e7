"""Canary design for Algorithm 2 of the alignment paper, the Gaussian covariance release
Σ̃_D = Σ_D + G (wraps :class:`dpaudit.mechanisms.align_covariance.PrivateCovariance`, unchanged).

Features: d = d₀ + m.  The n base comparisons live on the first d₀ coordinates; canary slot j
holds a rare vector x = 2L·e_{d₀+j} (the norm bound) when S_j = 1 and that record zeroed out
when S_j = 0, so n = n_base + m records always and each canary's inclusion is one zero-out
neighbour (the game appends the included canaries; the slots turn that into zero-outs, and
the design's ``neighbours="zero-out"`` checks the claims against that relation).  Σ_D = XᵀX/n
then has the base block in the top-left d₀ × d₀ corner and the diagonal entry (d₀+j, d₀+j) =
4L²/n for an included canary, 0 otherwise:
:class:`DedicatedCovariance` builds it from that structure (the base block's XᵀX once) and
draws G exactly as ``PrivateCovariance.sample`` does (one (1, d²) standard normal draw times σ),
so both give the same release from the same stream (checked in
``tests/test_onerun_covariance.py``).

Score: the released entry (d₀+j, d₀+j), white box = black box.  It is N(4L²/n, σ²) when in
and N(0, σ²) when out: each canary sees exactly the worst zero-out pair, a Gaussian shift with
μ = Δ_F/σ (Δ_F = 4L²/n).  Claims: the calibration's (ε/2, δ/2) (``align/alg2-corrected`` for
σ on the exact curve, ``align/alg2-printed`` for Lemma A.7's σ) and the exact Gaussian curve of
the release, μ-GDP, under the id of the tight claim ``align/alg2-tight`` (the catalog states one
point of that curve, ε(δ/2); here the whole curve is tested).

The catalog's faulty variant, Algorithm 2 as printed (Lemma A.7), is not refutable in one run:
its flaw is in the tail (ε = 1, δ = 1e-6, zero-out: exact ε(5e-7) = 0.566 against the claimed
0.5, i.e. μ = 0.1345 against the μ* = 0.119 the claim allows), while one run of m canaries at
μ ≈ 0.13 does not even reject the μ* the claim allows (largest rejected GDP μ 0 on four of
seeds 0–4, 0.114 on the fifth; Steinke's bound 0 to 0.30, m = 1000).  No canary count within
reach changes that: the true trade-off curve falls below the printed f_{0.5, 5e-7} only at
type-I errors below 2·10⁻⁴ (zero-out) or 8.6·10⁻³ (swap, μ = 0.190), and by at most 3.7·10⁻⁶
or 3.2·10⁻⁴ in type-II error there.  The design is available
(``calibration="paper"``) with its claims and no expected verdict; it is not in the one-run
suite, where a twin expected to pass would be no check.

The correct design runs at ε = 8 (claim (4, 5e-7), μ = 0.816 per canary), chosen on planning
seeds 100–299 that no test uses: at ε = 1 (μ = 0.120) the one-run test of the exact curve is
nearly exact, so a correct release is rejected at a rate close to the level α (3 of 200 seeds,
as the level allows, but not "never"); at ε = 4, 8 and 16 it was rejected 0 of 200 times, and at
ε = 8 the run says something (median Steinke bound 1.32, median rejected GDP μ 0.50).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit.catalog.designs.entry import DesignEntry, DesignSummary
from dpaudit.catalog.designs.mle_dedicated import CoordinateComparison
from dpaudit.core import Guarantee, require
from dpaudit.mechanisms.align_covariance import PrivateCovariance
from dpaudit.mechanisms.preferences import BradleyTerry
from dpaudit.neighbors import Dataset
from dpaudit.onerun.curves import CurveClaim, gdp
from dpaudit.onerun.design import CanaryDesign
from dpaudit.onerun.rules import Fixed

__all__ = ["COV_RULE", "DESIGNS", "DedicatedCovariance", "covariance_design"]

# The catalog family whose claims these designs check (dpaudit.catalog files each design by it).
FAMILY = "alignment"

# Fixed before any run, as the Algorithm 1 designs' rule (the scores are Gaussian shifts either way).
COV_RULE = Fixed(k_plus=50, k_minus=50)


@dataclass(frozen=True, eq=False)
class DedicatedCovariance:
    """Algorithm 2 on the base comparisons (first ``d0`` coordinates) and ``m`` canary slots on
    coordinates [d0, d0 + m), each holding its canary when given to :meth:`run`, else the
    canary zeroed out.  ``run`` returns vec Σ̃ (d², row-major), as ``PrivateCovariance.sample``."""

    mech: PrivateCovariance
    base: Dataset
    d0: int
    m: int
    _gram: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        require(isinstance(self.mech.model, BradleyTerry), "mech.model", self.mech.model.describe(),
                "the dedicated-coordinate design is built for Bradley-Terry comparisons")
        x = self.mech.model.features(self.base)
        require(x.shape[1] == self.d0, "base", x.shape[1], f"must have d0 = {self.d0} feature columns")
        self._gram["base"] = x.T @ x

    @property
    def d(self) -> int:
        return self.d0 + self.m

    @property
    def n(self) -> int:
        """Records in every run: the base and the m slots (a zeroed slot still counts)."""
        return len(self.base) + self.m

    def covariance(self, records: Sequence[Any]) -> np.ndarray:
        """Σ_D (d, d) of the base plus the given canaries in their slots."""
        for r in records:
            require(isinstance(r, CoordinateComparison), "record", r, "must be a CoordinateComparison canary")
        cols = np.array([r.coordinate for r in records], dtype=np.int64)
        vals = np.array([r.value for r in records], dtype=float)
        require(bool(np.all((cols >= self.d0) & (cols < self.d))), "canary coordinate", cols.tolist()[:8],
                f"must be a canary slot in [{self.d0}, {self.d})")
        require(len(set(cols.tolist())) == len(cols), "canary coordinate", cols.tolist()[:8], "one canary per slot")
        bound = 2 * self.mech.model.L
        require(bool(np.all(np.abs(vals) <= bound * (1 + 1e-9))), "canary value", vals.tolist()[:8],
                f"needs |x| <= 2L = {bound:g}")
        cov = np.zeros((self.d, self.d))
        cov[:self.d0, :self.d0] = self._gram["base"]
        cov[cols, cols] = vals ** 2
        return cov / self.n

    def run(self, records: Sequence[Any], rng: np.random.Generator) -> np.ndarray:
        cov = self.covariance(records).ravel()
        out = rng.standard_normal((1, cov.size))               # PrivateCovariance.sample's draw
        out *= self.mech.sigma(self.n)
        out += cov
        return out[0]

    def full_dataset(self, records: Sequence[Any]) -> Dataset:
        """The d-dimensional dataset the mechanism sees, zeroed slots included (small sizes only)."""
        x = np.zeros((self.n, self.d))
        x[:len(self.base), :self.d0] = self.base["x"]
        for r in records:
            x[len(self.base) + r.coordinate - self.d0, r.coordinate] = r.value
        y = np.concatenate([np.asarray(self.base["y"]), np.ones(self.m, dtype=np.int64)])
        return Dataset({"x": x, "y": y})


def _base(n: int, d0: int, L: float, rng: np.random.Generator) -> Dataset:
    x = rng.standard_normal((n, d0)) / np.sqrt(d0)
    x *= np.minimum(1.0, 2 * L / np.linalg.norm(x, axis=1))[:, None]
    return Dataset({"x": x, "y": rng.integers(0, 2, n)})


def covariance_design(*, n: int = 10_000, m: int = 1000, d0: int = 10, epsilon: float = 8.0, delta: float = 1e-6,
                      calibration: str = "tight", rule: Fixed = COV_RULE, seed: int = 5) -> CanaryDesign:
    """m rare vectors on dedicated coordinates in n base comparisons, audited under zero-out.

    ``calibration="tight"``: σ on the exact curve for zero-out (expected: pass); ``"paper"``:
    Lemma A.7's σ (refuted by the exact curve, not refutable in one run: no expected verdict; its
    premise is ε ≤ 1, so pass ``epsilon=1.0``).  ε = 8 by default: see the module docstring."""
    require(isinstance(n, int) and n >= 1, "n", n, "must be an integer >= 1")
    require(isinstance(m, int) and m >= 2, "m", m, "must be an integer >= 2")
    require(isinstance(d0, int) and d0 >= 1, "d0", d0, "must be an integer >= 1")
    require(calibration in ("tight", "paper"), "calibration", calibration, "must be tight or paper")
    model = BradleyTerry()
    mech = PrivateCovariance(model, epsilon, delta, calibration=calibration, relation="zero-out")
    wrapper = DedicatedCovariance(mech, _base(n, d0, model.L, np.random.default_rng(seed)), d0, m)
    canaries = [CoordinateComparison(d0 + j, 2 * model.L, 1) for j in range(m)]
    d = wrapper.d

    def score(released: np.ndarray, cans: Sequence[Any]) -> np.ndarray:
        c = np.array([k.coordinate for k in cans])
        return np.asarray(released)[c * d + c]

    # PrivateCovariance.guarantees reads the data only through n; the base's d0 columns stand in.
    stand_in = Dataset({"x": np.zeros((wrapper.n, 1)), "y": np.ones(wrapper.n, dtype=np.int64)})
    stated = [g for g in mech.guarantees(stand_in, "zero-out") if g.claim_id != "align/alg2-tight"]
    mu = mech.mu("zero-out", wrapper.n)
    curve = gdp(mu, claim_id="align/alg2-tight",
                source=f"Balle & Wang (2018), Thm 8: the release is a Gaussian mechanism, mu = Delta_F/sigma = "
                       f"{mu:.4g} for a zero-out pair")
    claims: tuple[Guarantee | CurveClaim, ...] = (*stated, curve)
    expected = {c.claim_id: "pass" for c in claims} if calibration == "tight" else {}
    return CanaryDesign(name=f"align-alg2-{calibration}", mechanism=wrapper, canaries=canaries, scorer=score,
                        claims=claims, rule=rule, deltas=(delta / 2,), expected=expected, neighbours="zero-out",
                        family=FAMILY,
                        description=f"Algorithm 2 ({calibration} sigma), Bradley-Terry, n={wrapper.n} (base {n}), "
                                    f"d={d}, m={m} rare vectors on dedicated coordinates, zero-out; mu per canary "
                                    f"{mu:.4g}")


DESIGNS = (DesignEntry(DesignSummary(
    "align-alg2-tight", FAMILY, "Algorithm 2 (tight sigma), Bradley-Terry, n=11000 (base 10000), d=1010, m=1000 rare "
                                "vectors on dedicated coordinates, zero-out; mu per canary 0.8159", 1000,
    (("align/alg2-corrected", "pass"), ("align/alg2-tight", "pass")), neighbours="zero-out"),
    functools.partial(covariance_design, calibration="tight")),)
