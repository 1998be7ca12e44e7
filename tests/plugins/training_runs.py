"""User training functions and scorers for one-run config scenarios (tests/test_onerun_wiring.py).

The dataset a training run gets is the list of included canaries (the integers 0..m-1); the
output is one number per canary, the scorer reads it back.
"""

import math

import numpy as np

# One randomized-response game of 200 canaries, Fixed(50, 50), against a (4, 1e-5) claim no 100-guess
# bound can reach (3.49): the config the one-run secret, recheck and tie-break tests run and resume.
RR_GAME_CONFIG = """
[[scenario]]
name = "rr-training"
mechanism = "tests.plugins.training_runs:RandomizedResponse"
params = { m = 200, epsilon = 1.0 }
scorer = "tests.plugins.training_runs:score"
canaries = 200
rule = { kind = "fixed", k_plus = 50, k_minus = 50 }

[[scenario.claim]]
epsilon = 4.0
delta = 1e-5
id = "user/claim"
"""


class RandomizedResponse:
    """Each canary's bit, kept with probability e^ε/(1+e^ε): ε-DP towards each canary."""

    name = "user-rr-training"

    def __init__(self, m: int, epsilon: float) -> None:
        self.m, self.keep = m, math.exp(epsilon) / (1.0 + math.exp(epsilon))

    def run(self, dataset, rng):
        bits = np.zeros(self.m)
        bits[list(dataset)] = 1.0
        flip = rng.random(self.m) >= self.keep
        return np.where(flip, 1.0 - bits, bits)


class Leaky:
    """Says exactly which canaries were in: not private at all."""

    name = "user-leaky-training"

    def __init__(self, m: int) -> None:
        self.m = m

    def run(self, dataset, rng):
        bits = np.zeros(self.m)
        bits[list(dataset)] = 1.0
        return bits


def raises(dataset, rng):
    raise RuntimeError("the training diverged")


def score(output, canaries):
    return np.asarray(output, dtype=float)[np.asarray(canaries, dtype=int)]
