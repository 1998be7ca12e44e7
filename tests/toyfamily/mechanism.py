"""The toy family's mechanism: a three-valued noisy sign of a count (a plugin's own module)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpaudit.core import Guarantee, check_positive


@dataclass(frozen=True)
class NoisySign:
    """Reports sign(count of ones − threshold) in {0, 1, 2}, kept with probability ∝ e^ε, else one
    of the two others: one record moves the sign by one step, so the mechanism is ε-DP."""

    epsilon: float
    threshold: int = 1
    name: ClassVar[str] = "toy-noisy-sign"

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)

    def output_distribution(self, data) -> np.ndarray:
        count = int(np.sum(data["bit"]))
        true = 1 + int(np.sign(count - self.threshold))
        p = np.ones(3)
        p[true] = np.exp(self.epsilon)
        return p / p.sum()

    def sample(self, data, size: int, rng: np.random.Generator) -> np.ndarray:
        cdf = np.cumsum(self.output_distribution(data))
        return np.searchsorted(cdf, rng.random(size), side="right").clip(0, 2).astype(np.int64)

    def guarantees(self, data, relation: str) -> list[Guarantee]:
        return [Guarantee(epsilon=self.epsilon, relation=relation, source="toy paper, Theorem 1", claim_id="toy/sign")]
