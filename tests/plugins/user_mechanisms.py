"""Mechanisms a user might point `--mechanism pkg.module:attr` at (no subclassing)."""

import numpy as np

from dpaudit.mechanisms.classic import on_grid
from dpaudit.mechanisms.kl_bandits import KLBandit


class NoisyCount:
    """A user's own Laplace count: ε-DP with scale 1/ε; `leaky` uses half the noise."""

    def __init__(self, epsilon, leaky=False):
        self.name = "user-noisy-count" + ("-leaky" if leaky else "")
        self.scale = (0.5 if leaky else 1.0) / epsilon

    def sample(self, data, size, rng):
        return on_grid(float(np.sum(data)) + rng.laplace(0.0, self.scale, size))


class Crashes:
    name = "crashes"

    def sample(self, data, size, rng):
        raise ZeroDivisionError("boom")


correct = NoisyCount(1.0)
leaky = NoisyCount(1.0, leaky=True)
crashes = Crashes()
pair = (np.array([0.0, 1.0]), np.array([0.0, 1.0, 1.0]))
not_a_mechanism = object()


def bad_hyperparameter():
    return KLBandit(2, eta=-1.0, beta0=0.1)


def build_count(epsilon):
    """A builder a config may name with params (``params = { epsilon = 1.0 }``)."""
    return NoisyCount(epsilon)


def pair_builder(n):
    """Builds something that is not a mechanism."""
    return [0.0] * n
