"""Mechanisms of our own making with known ε, for validity and power tests of the engine.

Each takes a plain integer (the query answer q(D)) as its data, so a neighbouring pair is
(q, q + 1).  ``true_epsilon`` is exact.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from dpaudit.mechanisms.classic import on_grid


@dataclass(frozen=True)
class Geometric:
    """Two-sided geometric (discrete Laplace) noise on an integer count: exactly ε-DP for |Δq| = 1."""

    epsilon: float
    name: str = "geometric"

    @property
    def true_epsilon(self):
        return self.epsilon

    def sample(self, data, size, rng):
        p = 1 - math.exp(-self.epsilon)
        return int(data) + rng.geometric(p, size) - rng.geometric(p, size)


@dataclass(frozen=True)
class Cauchy:
    """Cauchy noise of scale s on q: heavy tails; ε = sup_x log((s² + (x−1)²)/(s² + x²)) for Δq = 1."""

    scale: float
    name: str = "cauchy"

    @property
    def true_epsilon(self):
        s = self.scale
        f = lambda x: -math.log((s * s + (x - 1) ** 2) / (s * s + x * x))
        return -minimize_scalar(f, bounds=(-50, 50), method="bounded", options={"xatol": 1e-12}).fun

    def sample(self, data, size, rng):
        return on_grid(float(data) + self.scale * rng.standard_cauchy(size))


@dataclass(frozen=True)
class RRVectorWithAbort:
    """Three randomized-response answers about q(D) (bits of q, q+1, q+2 mod 2 are all flipped by a
    neighbour), each at ε_c; with probability ``abort`` (independent of the data) the row is
    [−1, −1, −1].  Exactly 3ε_c-DP: the abort rows cancel in every likelihood ratio."""

    epsilon_each: float
    abort: float = 0.2
    name: str = "rr-vector-abort"

    @property
    def true_epsilon(self):
        return 3 * self.epsilon_each

    def sample(self, data, size, rng):
        bits = (int(data) + np.arange(3)) % 2
        keep = rng.random((size, 3)) < 1 / (1 + math.exp(-self.epsilon_each))
        out = np.where(keep, bits, 1 - bits)
        out[rng.random(size) < self.abort] = -1
        return out.astype(np.int64)


@dataclass(frozen=True)
class ShiftedUniform:
    """Uniform on [q/2, q/2 + 1]: the supports differ, so ε = ∞."""

    name: str = "shifted-uniform"
    true_epsilon: float = math.inf

    def sample(self, data, size, rng):
        return data / 2 + rng.random(size)


@dataclass(frozen=True)
class LaplaceOnCount:
    """Laplace noise of scale 1/ε on an integer count."""

    epsilon: float
    name: str = "laplace-count"

    @property
    def true_epsilon(self):
        return self.epsilon

    def sample(self, data, size, rng):
        return on_grid(float(data) + rng.laplace(0.0, 1.0 / self.epsilon, size))


@dataclass(frozen=True)
class AbortOrLaplace:
    """Returns −1.0 ("aborted") with probability abort(q), else q + Lap(1/ε): an atom inside
    real outputs.  With abort probabilities a0, a1 for q = 0, 1 the exact ε is
    max(ε, |log(a1/a0)|, |log((1−a1)/(1−a0))| + ε)."""

    epsilon: float
    abort_at_0: float = 0.3
    abort_at_1: float = 0.3
    name: str = "abort-or-laplace"

    @property
    def true_epsilon(self):
        a0, a1 = self.abort_at_0, self.abort_at_1
        return max(abs(math.log(a1 / a0)), abs(math.log((1 - a1) / (1 - a0))) + self.epsilon)

    def sample(self, data, size, rng):
        a = self.abort_at_1 if int(data) else self.abort_at_0
        out = on_grid(float(data) + rng.laplace(0.0, 1.0 / self.epsilon, size))
        out[rng.random(size) < a] = -1.0
        return out
