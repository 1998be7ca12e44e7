"""Canary design for Algorithm 1 of the alignment paper, the objective-perturbed MLE (wraps
:class:`dpaudit.mechanisms.align_mle.PrivateMLE`, unchanged), on Bradley–Terry comparisons.

With d < m there are not enough dedicated coordinates for the canaries, so canary j is a
comparison along a random unit direction u_j (x = 2L·u_j, the norm bound; label 1: "a₁
preferred"), added under add-or-remove.  The minimiser θ̂ of Σℓ_i + (λ/2)‖θ‖² + ⟨b, θ⟩ satisfies
∇L_base(θ̂) + λθ̂ = −b + Σ_{j∈S} s(−θ̂ᵀx_j)·x_j, so a white-box auditor who knows the base data
scores canary j by the projection of that residual gradient, taken at the released θ̃, on u_j
(the output noise w moves θ̃ off θ̂ and adds to the noise).  The directions are drawn from the
design's own seed, before and independently of the secret.  The canaries overlap in d
dimensions (interference ≈ √(m/2d) canary pulls per score), so this design is weak by
construction (a one-run lower bound near 0 is expected); it checks that the printed and the
instantiated calibrations survive an audit at 10⁵ comparisons, not their tightness.  With
d ≥ m, :mod:`dpaudit.catalog.designs.mle_dedicated` gives each canary its own coordinate.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.catalog.designs.entry import DesignEntry, DesignSummary
from dpaudit.core import Guarantee, require
from dpaudit.mechanisms.align_mle import PrivateMLE
from dpaudit.mechanisms.preferences import BradleyTerry
from dpaudit.neighbors import Dataset
from dpaudit.onerun.design import CanaryDesign
from dpaudit.onerun.rules import Fixed

__all__ = ["DESIGNS", "MLEOnRows", "mle_design"]

# The catalog family whose claims these designs check (dpaudit.catalog files each design by it).
FAMILY = "alignment"


@dataclass(frozen=True)
class MLEOnRows:
    """Algorithm 1 on rows ``[x (d), y]`` (the game concatenates canary rows to the base)."""

    mech: PrivateMLE

    def dataset(self, rows: np.ndarray) -> Dataset:
        rows = np.asarray(rows, dtype=float)
        return Dataset({"x": rows[:, :-1], "y": rows[:, -1].astype(np.int64)})

    def run(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self.mech.sample(self.dataset(rows), 1, rng)[0]


def _comparisons(n: int, d: int, L: float, rng: np.random.Generator) -> np.ndarray:
    theta = rng.standard_normal(d)
    x = rng.standard_normal((n, d)) / np.sqrt(d)
    x *= np.minimum(1.0, 2 * L / np.linalg.norm(x, axis=1))[:, None]
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-x @ theta))).astype(float)
    return np.column_stack([x, y])


def mle_design(*, n: int = 100_000, m: int = 1000, d: int = 16, epsilon: float = 1.0, delta: float = 1e-6,
               calibration: str = "instantiated", output_noise: bool = True, seed: int = 3) -> CanaryDesign:
    """m random-direction canary comparisons added to n base comparisons (d < m)."""
    require(isinstance(n, int) and n >= d, "n", n, f"must be an integer >= d = {d}")
    require(isinstance(m, int) and m >= 2, "m", m, "must be an integer >= 2")
    model = BradleyTerry()
    mech = PrivateMLE(model, epsilon, delta, calibration=calibration, output_noise=output_noise)
    rng = np.random.default_rng(seed)
    base = _comparisons(n, d, model.L, rng)
    u = rng.standard_normal((m, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    canaries = np.column_stack([2 * model.L * u, np.ones(m)])
    wrapper = MLEOnRows(mech)
    base_data = wrapper.dataset(base)
    terms = model.loss_terms(base_data)
    lam = mech.regulariser(d)

    def score(theta: np.ndarray, cans: Sequence[Any]) -> np.ndarray:
        # At the perturbed minimiser, ∇L_base(θ̂) + λθ̂ = −b + Σ_{j∈S} s(−θ̂ᵀx_j)·x_j: the base
        # data's residual gradient is the objective noise plus the included canaries' pulls.
        th = np.asarray(theta, dtype=float)[None, :]
        grad, _ = model.gradient_hessian(th, terms, hessian=False)
        resid = grad[0] + lam * th[0]
        dirs = np.asarray(cans, dtype=float)[:, :-1]
        return dirs @ resid / np.linalg.norm(dirs, axis=1)

    claims: list[Guarantee] = [g for g in mech.guarantees(base_data, "add-remove") if g.applicable]
    return CanaryDesign(name=f"align-alg1-{calibration}", mechanism=wrapper, canaries=list(canaries), scorer=score,
                        claims=tuple(claims), rule=Fixed(k_plus=50, k_minus=50), base=base, deltas=(delta / 2,),
                        expected={g.claim_id: "pass" for g in claims},
                        family=FAMILY,
                        description=f"Algorithm 1 ({calibration}), Bradley-Terry, n={n}, d={d}, m={m} random-direction "
                                    f"canaries (residual-gradient scores)")


def _summary(calibration: str, claim: str) -> DesignSummary:
    return DesignSummary(f"align-alg1-{calibration}", FAMILY,
                         f"Algorithm 1 ({calibration}), Bradley-Terry, n=100000, d=16, m=1000 random-direction "
                         "canaries (residual-gradient scores)", 1000, ((claim, "pass"), ("align/alg1-chi", "pass")))


DESIGNS = (
    DesignEntry(_summary("instantiated", "align/alg1-instantiated"),
                functools.partial(mle_design, calibration="instantiated")),
    DesignEntry(_summary("paper", "align/alg1-printed"), functools.partial(mle_design, calibration="paper")),
)
