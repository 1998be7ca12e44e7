"""Canary design for Algorithm 1 of the alignment paper (objective-perturbed MLE, wrapping
:class:`dpaudit.mechanisms.align_mle.PrivateMLE`, unchanged) with dedicated item features, d ≥ m.

Features: d = d₀ + m.  The n base comparisons live on the first d₀ coordinates; canary j is the
comparison x = 2L·e_{d₀+j} (the norm bound, label 1: "a₁ preferred"), alone on its coordinate,
added under add-or-remove.  The objective Σℓ_i(θ) + (λ/2)‖θ‖² + ⟨b, θ⟩ then separates exactly:

* the base block θ[:d₀] minimises the base records' loss with b[:d₀] (a d₀-dimensional Newton
  solve, by the mechanism's own :func:`~dpaudit.mechanisms.align_mle.minimise_batch`);
* an included canary's coordinate c minimises log(1 + e^{−2Lθ_c}) + (λ/2)θ_c² + b_cθ_c (a
  one-dimensional solve, all included canaries in one batch);
* an excluded canary's coordinate is −b_c/λ (no record touches it).

:class:`DedicatedMLE` computes the same θ̃ = θ̂ + w as ``PrivateMLE.sample`` on the full
d-dimensional data, from the same random stream (b then w, each of shape (1, d)): the dense
solve would need the n × d² outer products of the records (8·10¹¹ bytes at n = 10⁵, d = 1010),
the separable one needs the base block's n × d₀².  ``tests/test_onerun_alignment.py`` checks the
two agree on a small instance.

Score: the released θ̃'s canary coordinate (white box = black box here).  It is the
Neyman–Pearson statistic up to monotone maps: θ̃_c = −b_c/λ + w_c when out, and shifted up by
2L·s(−2Lθ̂_c)/λ when in, so each canary sees a one-dimensional instance of the χ-bound's worst
pair (k = 1) and the run is as close to the claims as the claims allow.  At ε = 1 the claims
are (0.5, 5·10⁻⁷): the per-canary signal is small (μ ≈ 2L·s/σ_b, a few hundredths) and the
one-run bound is near 0 by the mechanism's privacy, not by the design's interference (compare
:mod:`dpaudit.catalog.designs.alignment`, random directions, d < m).  With the catalog's faulty
σ_b/10 at ε = 8 the same scores give a one-run bound above 1: they find the canaries when the
noise allows it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit.catalog.designs.entry import DesignEntry, DesignSummary
from dpaudit.core import Guarantee, require
from dpaudit.mechanisms.align_mle import PrivateMLE, minimise_batch
from dpaudit.mechanisms.faulty import PrivateMLEOnTenthNoise
from dpaudit.mechanisms.preferences import BradleyTerry
from dpaudit.neighbors import Dataset
from dpaudit.onerun.design import CanaryDesign
from dpaudit.onerun.isolated import IsolatedCanaries, plan_threshold
from dpaudit.onerun.rules import Fixed

__all__ = ["DESIGNS", "MLE_RULE", "CoordinateComparison", "DedicatedMLE", "mle_dedicated_design"]

# The catalog family whose claims these designs check (dpaudit.catalog files each design by it).
FAMILY = "alignment"

# The random-direction design's rule, kept: fixed before any dedicated-coordinate run was seen.
MLE_RULE = Fixed(k_plus=50, k_minus=50)
PLANNING_SEED = 20_261_128  # the independent-canary threshold's planning stream; no audited run uses it
ISOLATION_REASON = ("canary j is the only comparison on coordinate d0+j and the objective separates by coordinate "
                    "(module docstring), so the released coordinate d0+j is a function of canary j's bit and of the "
                    "noise b, w at d0+j only, independent across coordinates")


def planned_threshold(wrapper: DedicatedMLE, claimed: PrivateMLE, *, samples: int = 20_000) -> float:
    """The independent-canary threshold, planned from the claimed mechanism alone (its σ_b, ν, λ at
    d = d0 + m, never an audited run): canary coordinates simulated out (−b/λ + w) and in (the
    one-dimensional solve of the module docstring, + w), then
    :func:`~dpaudit.onerun.isolated.plan_threshold` at m canaries."""
    rng = np.random.default_rng(PLANNING_SEED)
    model, lam = claimed.model, claimed.regulariser(wrapper.d)
    b = claimed.sigma_b * rng.standard_normal(samples)
    w = claimed.nu * rng.standard_normal(samples) if claimed.output_noise else np.zeros(samples)
    one = model.loss_terms(Dataset({"x": np.array([[2 * model.L]]), "y": np.array([1])}))
    theta_in = minimise_batch(model, one, lam, b[:, None], (-b / lam)[:, None], wrapper.tol)[:, 0]
    return plan_threshold(theta_in + w, -b / lam + w, m=wrapper.m)


@dataclass(frozen=True)
class CoordinateComparison:
    """A Bradley–Terry comparison whose feature difference is ``value``·e_``coordinate``."""

    coordinate: int
    value: float
    y: int = 1


@dataclass(frozen=True, eq=False)
class DedicatedMLE:
    """Algorithm 1 on the base comparisons (first ``d0`` coordinates) plus the canary comparisons
    given to :meth:`run`, each on its own coordinate in [d0, d0 + m).  ``run`` returns θ̃ (d,)."""

    mech: PrivateMLE
    base: Dataset
    d0: int
    m: int
    _fit: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        require(isinstance(self.mech.model, BradleyTerry), "mech.model", self.mech.model.describe(),
                "the dedicated-coordinate design is built for Bradley-Terry comparisons")
        require(self.mech.model.dimension(self.base) == self.d0, "base", self.mech.model.dimension(self.base),
                f"must have d0 = {self.d0} feature columns")
        model, lam = self.mech.model, self.lam
        terms = model.loss_terms(self.base)
        theta0 = minimise_batch(model, terms, lam, np.zeros((1, self.d0)), np.zeros((1, self.d0)), 1e-12 * (1 + lam))
        _, h0 = model.gradient_hessian(theta0, terms)
        self._fit.update(terms=terms, theta0=theta0[0], h0_inv=np.linalg.inv(h0[0] + lam * np.eye(self.d0)))

    @property
    def d(self) -> int:
        return self.d0 + self.m

    @property
    def lam(self) -> float:
        return self.mech.regulariser(self.d)

    @property
    def tol(self) -> float:
        # The mechanism stops at ‖∇J‖ ≤ tol on all d coordinates; each of the two blocks stops at
        # tol/√2, so the whole gradient is within the mechanism's own stopping rule.
        lam = self.lam
        tol = 1e-9 * (1 + lam) if self.mech.solver == "exact" else lam * self.mech.accuracy
        return tol / math.sqrt(2)

    def canary_rows(self, records: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """(coordinates, signed values (2y − 1)·value) of the included canaries, validated."""
        for r in records:
            require(isinstance(r, CoordinateComparison), "record", r, "must be a CoordinateComparison canary")
        cols = np.array([r.coordinate for r in records], dtype=np.int64)
        z = np.array([(2 * r.y - 1) * r.value for r in records], dtype=float)
        require(bool(np.all((cols >= self.d0) & (cols < self.d))), "canary coordinate", cols.tolist()[:8],
                f"must be a dedicated coordinate in [{self.d0}, {self.d})")
        require(len(set(cols.tolist())) == len(cols), "canary coordinate", cols.tolist()[:8],
                "one canary per dedicated coordinate")
        bound = 2 * self.mech.model.L
        require(bool(np.all(np.abs(z) <= bound * (1 + 1e-9))), "canary value", z.tolist()[:8],
                f"needs |x| <= 2L = {bound:g}")
        return cols, z

    def minimiser(self, records: Sequence[Any], b: np.ndarray) -> np.ndarray:
        """θ̂ for one noise row b (d,): the base block, then the canary coordinates."""
        model, lam, tol = self.mech.model, self.lam, self.tol
        theta = -b / lam                                     # coordinates no record touches
        fit = self._fit
        start = fit["theta0"] - b[None, :self.d0] @ fit["h0_inv"].T
        theta[:self.d0] = minimise_batch(model, fit["terms"], lam, b[None, :self.d0], start, tol)[0]
        cols, z = self.canary_rows(records)
        for value in np.unique(z):                           # one 1-d problem per canary value
            at = cols[z == value]
            one = model.loss_terms(Dataset({"x": np.array([[abs(value)]]), "y": np.array([int(value > 0)])}))
            theta[at] = minimise_batch(model, one, lam, b[at, None], theta[at, None], tol)[:, 0]
        return theta

    def run(self, records: Sequence[Any], rng: np.random.Generator) -> np.ndarray:
        mech = self.mech
        b = mech.sigma_b * rng.standard_normal((1, self.d))[0]   # PrivateMLE.sample's stream order
        theta = self.minimiser(records, b)
        if mech.output_noise:
            theta += mech.nu * rng.standard_normal((1, self.d))[0]
        return theta

    def full_dataset(self, records: Sequence[Any]) -> Dataset:
        """The d-dimensional dataset the mechanism sees (for checks at small size only)."""
        cols, z = self.canary_rows(records)
        x = np.zeros((len(self.base) + len(cols), self.d))
        x[:len(self.base), :self.d0] = self.base["x"]
        x[len(self.base) + np.arange(len(cols)), cols] = np.abs(z)
        y = np.concatenate([np.asarray(self.base["y"]), (z > 0).astype(np.int64)])
        return Dataset({"x": x, "y": y})


def _base(n: int, d0: int, L: float, rng: np.random.Generator) -> Dataset:
    theta = rng.standard_normal(d0)
    x = rng.standard_normal((n, d0)) / np.sqrt(d0)
    x *= np.minimum(1.0, 2 * L / np.linalg.norm(x, axis=1))[:, None]
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-x @ theta))).astype(np.int64)
    return Dataset({"x": x, "y": y})


def mle_dedicated_design(*, n: int = 100_000, m: int = 1000, d0: int = 10, epsilon: float = 1.0,
                         delta: float = 1e-6, calibration: str = "instantiated", output_noise: bool = True,
                         bug: str = "none", rule: Fixed = MLE_RULE, seed: int = 3) -> CanaryDesign:
    """m canary comparisons on dedicated coordinates (d = d0 + m ≥ m) added to n base comparisons.

    ``bug="tenth-noise"`` runs :class:`~dpaudit.mechanisms.faulty.PrivateMLEOnTenthNoise` (σ_b/10,
    claims unchanged); no verdict is expected of it: at ε = 1 its per-canary signal (μ ≈ 0.3) is
    far too small to refute (0.5, 5e-7) in one run, and it serves to show the scores see canaries."""
    require(isinstance(n, int) and n >= d0, "n", n, f"must be an integer >= d0 = {d0}")
    require(isinstance(m, int) and m >= 2, "m", m, "must be an integer >= 2")
    require(isinstance(d0, int) and d0 >= 1, "d0", d0, "must be an integer >= 1")
    require(bug in ("none", "tenth-noise"), "bug", bug, "must be none or tenth-noise")
    model = BradleyTerry()
    kind = PrivateMLE if bug == "none" else PrivateMLEOnTenthNoise
    mech = kind(model, epsilon, delta, calibration=calibration, output_noise=output_noise)
    wrapper = DedicatedMLE(mech, _base(n, d0, model.L, np.random.default_rng(seed)), d0, m)
    canaries = [CoordinateComparison(d0 + j, 2 * model.L, 1) for j in range(m)]

    def score(theta: np.ndarray, cans: Sequence[Any]) -> np.ndarray:
        return np.asarray(theta)[[c.coordinate for c in cans]]

    isolation = IsolatedCanaries(
        reason=ISOLATION_REASON, coordinates=tuple(c.coordinate for c in canaries),
        threshold=planned_threshold(wrapper, PrivateMLE(model, epsilon, delta, calibration=calibration,
                                                        output_noise=output_noise)),
        threshold_source=f"planned from the claimed mechanism (Algorithm 1, {calibration}, m={m}; planning seed "
                         f"{PLANNING_SEED})")
    # The claims depend on the data only through d (λ_R of the printed calibration grows with √d).
    stand_in = Dataset({"x": np.zeros((1, wrapper.d)), "y": np.array([1])})
    claims: list[Guarantee] = [g for g in mech.guarantees(stand_in, "add-remove") if g.applicable]
    suffix = "" if bug == "none" else "-" + bug
    return CanaryDesign(name=f"align-alg1-dedicated-{calibration}{suffix}", mechanism=wrapper, canaries=canaries,
                        scorer=score, claims=tuple(claims), rule=rule, deltas=(delta / 2,),
                        isolated_canaries=isolation,
                        expected={g.claim_id: "pass" for g in claims} if bug == "none" else {},
                        family=FAMILY,
                        description=f"Algorithm 1 ({calibration}), Bradley-Terry, n={n}, d={wrapper.d} (d0={d0}), "
                                    f"m={m} canaries on dedicated coordinates (score: the fitted coordinate)")


def _summary(calibration: str, claim: str) -> DesignSummary:
    return DesignSummary(f"align-alg1-dedicated-{calibration}", FAMILY,
                         f"Algorithm 1 ({calibration}), Bradley-Terry, n=100000, d=1010 (d0=10), m=1000 canaries "
                         "on dedicated coordinates (score: the fitted coordinate)", 1000,
                         ((claim, "pass"), ("align/alg1-chi", "pass")))


DESIGNS = (
    DesignEntry(_summary("instantiated", "align/alg1-instantiated"),
                functools.partial(mle_dedicated_design, calibration="instantiated")),
    DesignEntry(_summary("paper", "align/alg1-printed"),
                functools.partial(mle_dedicated_design, calibration="paper")),
)
