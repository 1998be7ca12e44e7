"""Reference canary mechanisms with known privacy, for tests, power studies and the planner.

Each canary j is a record ``j``; the output holds one coordinate per canary, so canaries are
isolated (canary j changes coordinate j only) and the mechanism is as private towards each
canary as its per-coordinate channel:

* :class:`GaussianCanaries` — ``o_j = μ·1[j in data] + N(0, 1)``: exactly μ-GDP per canary
  (Dong, Roth, Su 2022, Thm 2.7), hence (ε, δ_μ(ε))-DP for GDP's profile.
* :class:`RRCanaries` — ``o_j`` = the inclusion bit, flipped with probability 1/(1+e^ε):
  exactly (ε, 0)-DP per canary, and no better.
* :class:`NullCanaries` — ``o_j ~ N(0, 1)`` whatever the data (canaries never inserted).

The scorer :func:`coordinate_score` reads coordinate j for canary j.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "GaussianCanaries",
    "NullCanaries",
    "RRCanaries",
    "coordinate_score",
    "gaussian_scores",
    "rr_scores",
]


def _included(dataset: Sequence[Any], m: int) -> np.ndarray:
    x = np.zeros(m)
    idx = np.asarray([int(d) for d in dataset], dtype=int)
    x[idx[(idx >= 0) & (idx < m)]] = 1.0
    return x


@dataclass(frozen=True)
class GaussianCanaries:
    """μ-GDP towards each of m isolated canaries."""

    mu: float
    m: int
    name: str = "gaussian-canaries"

    def run(self, dataset: Sequence[Any], rng: np.random.Generator) -> np.ndarray:
        return self.mu * _included(dataset, self.m) + rng.standard_normal(self.m)


@dataclass(frozen=True)
class RRCanaries:
    """Randomized response on each canary's inclusion bit: exactly (ε, 0)-DP per canary."""

    epsilon: float
    m: int
    name: str = "rr-canaries"

    def run(self, dataset: Sequence[Any], rng: np.random.Generator) -> np.ndarray:
        bits = _included(dataset, self.m)
        flip = rng.random(self.m) < 1.0 / (1.0 + math.exp(self.epsilon))
        return np.where(flip, 1.0 - bits, bits)


@dataclass(frozen=True)
class NullCanaries:
    """Output independent of the data: every canary is perfectly private."""

    m: int
    name: str = "null-canaries"

    def run(self, dataset: Sequence[Any], rng: np.random.Generator) -> np.ndarray:
        return rng.standard_normal(self.m)


def coordinate_score(output: np.ndarray, canaries: Sequence[Any]) -> np.ndarray:
    """Canary j's score is coordinate j of the output."""
    return np.asarray(output, dtype=float)[np.asarray([int(c) for c in canaries], dtype=int)]


def gaussian_scores(secret: np.ndarray, mu: float, rng: np.random.Generator) -> np.ndarray:
    """The scores the Gaussian fixture gives for a secret, without building datasets (fast path
    of simulations; identical in law to playing the game)."""
    return mu * np.asarray(secret, dtype=float) + rng.standard_normal(np.asarray(secret).size)


def rr_scores(secret: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """The RR fixture's scores for a secret (fast path)."""
    s = np.asarray(secret, dtype=float)
    flip = rng.random(s.size) < 1.0 / (1.0 + math.exp(epsilon))
    return np.where(flip, 1.0 - s, s)
