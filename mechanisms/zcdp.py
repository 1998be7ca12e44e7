"""The Gaussian mechanism stated as ρ-zCDP: a sum of clamped records plus N(0, σ²).

With sensitivity Δ it is exactly ρ-zCDP for ρ = Δ²/(2σ²) (Bun & Steinke 2016, Prop. 1.6): its Rényi
divergence of every order α between neighbours is αΔ²/(2σ²).  ``claimed_rho`` lets it state another ρ —
the understated claim a miscalibrated library would print — so an audit can be held against both.
Outputs are rounded to the 2^−32 grid (:func:`~dpaudit.mechanisms.classic.on_grid`), so the doubles it
reaches do not depend on the data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpaudit.claims import ZCDP
from dpaudit.core import Relation, check_positive, check_real_array
from dpaudit.mechanisms.classic import on_grid


@dataclass(frozen=True, kw_only=True)
class GaussianZCDP:
    """Σ clip(x, 0, Δ) + N(0, σ²), claiming ``claimed_rho``-zCDP (default: its exact ρ = Δ²/(2σ²))."""

    sigma: float = 1.0
    sensitivity: float = 1.0
    claimed_rho: float | None = None
    name: ClassVar[str] = "gaussian-zcdp"

    def __post_init__(self) -> None:
        check_positive("sigma", self.sigma)
        check_positive("sensitivity", self.sensitivity)
        if self.claimed_rho is not None:
            check_positive("claimed_rho", self.claimed_rho)

    @property
    def rho(self) -> float:
        """The exact ρ = Δ²/(2σ²)."""
        return self.sensitivity ** 2 / (2 * self.sigma ** 2)

    def query(self, data: Any) -> float:
        return float(np.clip(check_real_array("data", data), 0.0, self.sensitivity).sum())

    def sample(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        return on_grid(self.query(data) + self.sigma * rng.standard_normal(size))

    def guarantees(self, data: Any, relation: Relation | str) -> list[ZCDP]:
        if relation not in (Relation.ADD_REMOVE, Relation.SWAP):
            return []
        rho = self.rho if self.claimed_rho is None else self.claimed_rho
        return [ZCDP(rho, relation=relation, source="Bun & Steinke 2016, Prop. 1.6",
                     claim_id="user/gaussian-zcdp")]
