"""Adapters for mechanisms written for other DP libraries.

dpaudit calls ``mechanism.sample(data, size, rng)`` with a seeded ``numpy.random.Generator``
and expects ``size`` outputs at once.  Two common shapes of third-party code do not fit:

* **diffprivlib-style** mechanisms take a ``random_state`` (an int or a legacy
  ``numpy.random.RandomState``) and release one value per ``randomise`` call:
  :func:`numpy_random_state` turns the audit's generator into such a ``RandomState``, so the
  mechanism stays seeded and the audit reproducible.
* **OpenDP-style** measurements are functions of the data that release one value per call
  and draw their noise from the operating system, so they cannot be seeded: :func:`per_call`
  makes one a vectorised mechanism (through a process pool for large sizes) and records
  ``seeded = False``; results and reports then say "not reproducible: unseeded mechanism".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from joblib import Parallel, delayed

from dpaudit.core import require

__all__ = ["PerCall", "numpy_random_state", "per_call"]

PER_CALL_BLOCK = 10_000  # calls per task when per_call fans out to worker processes


def numpy_random_state(rng: np.random.Generator) -> np.random.RandomState:
    """A legacy ``RandomState`` seeded from ``rng`` (128 bits drawn from it): give it as the
    ``random_state`` of a diffprivlib-style mechanism inside ``sample``, and the same audit seed
    gives the same outputs."""
    require(isinstance(rng, np.random.Generator), "rng", rng, "must be a numpy.random.Generator")
    words = rng.integers(0, 2**32, size=4, dtype=np.uint64).tolist()
    return np.random.RandomState(np.random.MT19937(np.random.SeedSequence(words)))


def _calls(fn: Callable[[Any], Any], data: Any, n: int) -> list[Any]:
    return [fn(data) for _ in range(n)]


@dataclass(frozen=True, eq=False)
class PerCall:
    """A mechanism from a function that releases one output per call (see :func:`per_call`).

    ``sample`` ignores its generator: the function's own randomness decides, so the audit is
    not reproducible (``seeded`` is False and every result says so).
    """

    fn: Callable[[Any], Any]
    name: str
    n_jobs: int = 1
    seeded: bool = field(default=False, init=False)

    def sample(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        if self.n_jobs == 1 or size < 2 * PER_CALL_BLOCK:
            out = _calls(self.fn, data, size)
        else:
            blocks = [PER_CALL_BLOCK] * (size // PER_CALL_BLOCK) + ([size % PER_CALL_BLOCK] if size % PER_CALL_BLOCK
                                                                     else [])
            parts = Parallel(n_jobs=self.n_jobs)(delayed(_calls)(self.fn, data, n) for n in blocks)
            out = [value for part in parts for value in part]
        return np.asarray(out)


def per_call(fn: Callable[[Any], Any], name: str | None = None, n_jobs: int = 1) -> PerCall:
    """A vectorised, auditable mechanism from ``fn(data) -> one output`` (a number or a vector).

    ``sample(data, size, rng)`` calls ``fn(data)`` ``size`` times — in ``n_jobs`` worker
    processes (−1: every core) when ``size`` is at least ``2 × PER_CALL_BLOCK``.  ``fn`` must
    draw fresh randomness on each call, as OpenDP's measurements do (operating-system entropy):
    a function holding its own generator would repeat that generator's stream in every worker
    process, so keep ``n_jobs=1`` for it.  The mechanism cannot be seeded: it carries
    ``seeded = False``, and the audit's results say "not reproducible: unseeded mechanism".
    """
    require(callable(fn), "fn", fn, "must be a function of the data returning one output")
    label = name if name is not None else getattr(fn, "__name__", type(fn).__name__)
    require(isinstance(label, str) and bool(label), "name", name, "must be a non-empty string")
    require(isinstance(n_jobs, int) and not isinstance(n_jobs, bool) and (n_jobs >= 1 or n_jobs == -1),
            "n_jobs", n_jobs, "must be an integer >= 1, or -1 for every core")
    return PerCall(fn, label, n_jobs)
