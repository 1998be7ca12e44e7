"""A legacy ``RandomState`` seeded from the audit's generator, for diffprivlib-style mechanisms."""

from __future__ import annotations

import numpy as np

from dpaudit.core import require

__all__ = ["numpy_random_state"]


def numpy_random_state(rng: np.random.Generator) -> np.random.RandomState:
    """A legacy ``RandomState`` seeded from ``rng`` (128 bits drawn from it): give it as the
    ``random_state`` of a diffprivlib-style mechanism inside ``sample``, and the same audit seed
    gives the same outputs."""
    require(isinstance(rng, np.random.Generator), "rng", rng, "must be a numpy.random.Generator")
    words = rng.integers(0, 2**32, size=4, dtype=np.uint64).tolist()
    return np.random.RandomState(np.random.MT19937(np.random.SeedSequence(words)))
