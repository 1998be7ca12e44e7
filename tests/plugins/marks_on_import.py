"""A module with a side effect on import: it records that it ran (a config must not import it unasked)."""

import os

import numpy as np

from dpaudit.mechanisms.classic import on_grid

if os.environ.get("DPAUDIT_IMPORT_MARK"):
    with open(os.environ["DPAUDIT_IMPORT_MARK"], "w") as fh:
        fh.write("imported\n")


class Count:
    name = "marked-count"

    def sample(self, data, size, rng):
        return on_grid(float(np.sum(data["x"])) + rng.laplace(0.0, 1.0, size))


mechanism = Count()
