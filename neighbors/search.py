"""Worst-case neighbouring pairs, by the exact privacy loss of each candidate pair."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from mechanisms.base import require
from neighbors.relations import Pair


def worst_pair(mechanism, pairs: Iterable[Pair], loss: Callable[[np.ndarray, np.ndarray], float]
               ) -> tuple[Pair, float]:
    """The pair with the largest ``loss(P[M(D)], P[M(D′)])`` among ``pairs``.

    ``mechanism`` must expose ``output_distribution``; ``loss`` is typically
    ``audit.exact.epsilon_for_delta`` at some δ.  Ties keep the first pair.
    """
    require(hasattr(mechanism, "output_distribution"), "mechanism", getattr(mechanism, "name", mechanism),
            "worst-pair search needs output_distribution (a white-box mechanism)")
    best: tuple[Pair, float] | None = None
    for pair in pairs:
        value = loss(mechanism.output_distribution(pair.d), mechanism.output_distribution(pair.d_prime))
        if best is None or value > best[1]:
            best = (pair, value)
    require(best is not None, "pairs", "(none)", "need at least one candidate pair")
    return best
