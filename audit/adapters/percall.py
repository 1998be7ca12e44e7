"""A function that releases one output per call, as a vectorised unseeded mechanism."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from joblib import Parallel, delayed

from dpaudit.adapters.shipping import PER_CALL_BLOCK, blocks, check_n_jobs, shippable
from dpaudit.core import require

__all__ = ["PerCall", "per_call"]


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
            parts = Parallel(n_jobs=self.n_jobs)(delayed(_calls)(self.fn, data, n) for n in blocks(size))
            out = [value for part in parts for value in part]
        return np.asarray(out)


def per_call(fn: Callable[[Any], Any], name: str | None = None, n_jobs: int = 1) -> PerCall:
    """A vectorised, auditable mechanism from ``fn(data) -> one output`` (a number or a vector).

    ``sample(data, size, rng)`` calls ``fn(data)`` ``size`` times — in ``n_jobs`` worker
    processes (−1: every core) when ``size`` is at least ``2 × PER_CALL_BLOCK``.  ``fn`` must
    draw fresh randomness on each call, as OpenDP's measurements do (operating-system entropy):
    a function holding its own generator would repeat that generator's stream in every worker
    process, so keep ``n_jobs=1`` for it.  With ``n_jobs`` other than 1, ``fn`` must be picklable
    (an OpenDP measurement holds ctypes pointers and is not): build such an object inside each
    worker with :func:`dpaudit.adapters.from_factory` instead.  The mechanism cannot be seeded:
    it carries ``seeded = False``, and the audit's results say "not reproducible: unseeded
    mechanism".
    """
    require(callable(fn), "fn", fn, "must be a function of the data returning one output")
    label = name if name is not None else getattr(fn, "__name__", type(fn).__name__)
    require(isinstance(label, str) and bool(label), "name", name, "must be a non-empty string")
    check_n_jobs(n_jobs)
    if n_jobs != 1:
        why = shippable(fn)
        require(not why, "fn", fn, f"cannot be sent to worker processes ({why}); with n_jobs = {n_jobs}, pass a "
                "picklable factory that builds it to dpaudit.adapters.from_factory, or keep n_jobs = 1")
    return PerCall(fn, label, n_jobs)
