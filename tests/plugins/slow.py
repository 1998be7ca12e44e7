"""A Laplace count that takes 0.1 s per call, so a run can be killed mid-way."""

import time

import numpy as np

from dpaudit.mechanisms.classic import on_grid


class SlowLaplace:
    name = "slow-laplace"

    def sample(self, data, size, rng):
        time.sleep(0.1)
        return on_grid(float(np.sum(data)) + rng.laplace(0.0, 1.0, size))


slow = SlowLaplace()
