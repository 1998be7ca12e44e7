"""Rows pooled by a statistic of the vector: intervals of the first and last top's positions
and of the count of tops (candidates of the ``rows`` view, :mod:`dpaudit.engine.views.rows`).

A sparse vector (Lyu, Su & Li, VLDB 2017, Fig. 1) answers each query with ⊤ or ⊥ (and, with a
cutoff, ⊥-padding after the last ⊤); its outputs are integer vectors with a few likely rows and
many rare ones.  The best event is a union of rows whose likelihood ratio is near the largest,
and it is rare: ordering rows by their noisy selection ratios puts rare rows in the wrong place,
and that loses much of the bound (Alg. 1 at ε = 0.1, m = 10, 1.25·10⁶ per side: a fifth).

The privacy loss of a row is structured: with cutoff 1 the output *is* the position of the
first ⊤ (m when every answer is ⊥), and without a cutoff it depends on which answers are ⊤.
So rows are pooled by two statistics fixed before looking at the data, for a row r ∈ ℤ^m whose
largest value over the selection outputs is ``top`` (⊤):

    first(r) = min{i : r_i = top},  last(r) = max{i : r_i = top}  (both m when no coordinate is top),
    count(r) = #{i : r_i = top},

and the candidates are the intervals {a ≤ s(r) ≤ b} of either statistic, in both directions —
events that pool rare rows with their neighbours, so they share counts.  Nothing is fitted, so
the candidates' counts carry no selection bias from the fitting half: they are scored on both
halves of the selection split (:attr:`dpaudit.engine.views.base.Family.fit_fav`), at the milder level
:data:`INTERVAL_LEVEL`.  An interval event is the set of the selection's distinct rows whose
statistic falls in it (any output is a row), so it is counted like any ``rows`` event.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpaudit.engine.views.base import SIDES, Event, Family

# Selection level of the interval families: at most (m+1)(m+2)/2 nested and overlapping intervals
# per statistic, each scored on the whole selection split.  A quarter (0.67 standard errors)
# instead of α: at α the pessimism prefers wide intervals (their counts are large) over the
# narrow one near the largest ratio; at 0.5 (no pessimism) noise picks lone rare rows.  Sparse
# vector Alg. 1, ε = 0.1, m = 10, 300 simulated selections: 0.984 of the ceiling's expected
# bound in median at 0.25 (0.72 at the 10 % quantile), against 0.93 / 0.70 at α = 0.025.
INTERVAL_LEVEL = 0.25


def first_top(rows: np.ndarray, top: int) -> np.ndarray:
    """Position of the first coordinate equal to ``top`` in each row (``m`` when none is)."""
    hit = rows == top
    return np.where(hit.any(axis=1), np.argmax(hit, axis=1), rows.shape[1])


def last_top(rows: np.ndarray, top: int) -> np.ndarray:
    """Position of the last coordinate equal to ``top`` in each row (``m`` when none is)."""
    hit = rows[:, ::-1] == top
    return np.where(hit.any(axis=1), rows.shape[1] - 1 - np.argmax(hit, axis=1), rows.shape[1])


def top_count(rows: np.ndarray, top: int) -> np.ndarray:
    """Number of coordinates equal to ``top`` in each row."""
    return np.count_nonzero(rows == top, axis=1)


STATISTICS: tuple[tuple[str, Callable[[np.ndarray, int], np.ndarray]], ...] = (
    ("position of the first top", first_top), ("position of the last top", last_top), ("count of tops", top_count))


def _intervals(levels: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.triu_indices(levels)
    return a, b


def interval_families(rows: np.ndarray, fit: tuple[np.ndarray, np.ndarray], score: tuple[np.ndarray, np.ndarray],
                      make: Callable[[str, np.ndarray], Event]) -> list[Family]:
    """Interval families of the distinct ``rows`` (k, m) pooled by each statistic of
    :data:`STATISTICS`, with their per-row counts on the fitting half ``fit`` and the scoring
    half ``score`` (under D and D′); ``make(side, row_indices)`` builds the event of a set of
    rows.  Empty for scalar or constant outputs."""
    if rows.ndim != 2 or rows.shape[1] < 2 or len(rows) < 3:
        return []
    top = int(rows.max())
    if top == int(rows.min()):
        return []
    out: list[Family] = []
    for _, stat in STATISTICS:
        s = stat(rows, top)
        levels = int(s.max()) + 1
        a, b = _intervals(levels)
        cum = [np.concatenate([[0.0], np.cumsum(np.bincount(s, weights=c, minlength=levels))])
               for c in (*fit, *score)]
        k = [c[b + 1] - c[a] for c in cum]    # fit D, fit D′, score D, score D′ per interval
        for fav in (0, 1):
            out.append(Family(k[2 + fav], k[3 - fav], fav, _interval_event(make, fav, s, a, b),
                              fit_fav=k[fav], fit_oth=k[1 - fav], level=INTERVAL_LEVEL))
    return out


def _interval_event(make: Callable[[str, np.ndarray], Event], fav: int, s: np.ndarray, a: np.ndarray,
                    b: np.ndarray) -> Callable[[int], Event]:
    def build(j: int) -> Event:
        return make(SIDES[fav], np.flatnonzero((s >= a[j]) & (s <= b[j])))
    return build
