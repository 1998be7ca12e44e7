"""Training runs, scorers and names that end the process or interrupt it themselves
(tests/test_onerun_exits.py): each must be the user's bad input (exit 2), never exit 0."""

import sys

import numpy as np


def exits(dataset, rng):
    sys.exit(0)


def interrupts(dataset, rng):
    raise KeyboardInterrupt


def honest(dataset, rng):
    return rng.standard_normal(4)


def score(output, canaries):
    return np.zeros(len(canaries))


def score_exits(output, canaries):
    sys.exit(0)


def score_exits_1(output, canaries):
    sys.exit(1)


class NameExits:
    """A training run whose ``name`` property calls sys.exit(0)."""

    @property
    def name(self):
        sys.exit(0)

    def run(self, dataset, rng):
        return rng.standard_normal(4)
