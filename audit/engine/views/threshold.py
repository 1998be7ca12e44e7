"""The ``threshold`` view: S = {s ≥ t} or {s ≤ t} for a scalar statistic s.

Candidate thresholds t are the fitting half's pooled values of s at :func:`prefix_ends`
ranks; each is counted on both halves, in both directions and for both sides, and scored on
their sum (:func:`dpaudit.engine.selection.choose`); near-ties of the best score are broken at the
one-standard-error level (:func:`dpaudit.engine.bounds.best_candidate`'s ``refine_level``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from dpaudit.engine.statistics import Statistic
from dpaudit.engine.views.base import (
    POOLED_LEVEL,
    SIDES,
    ChunkCache,
    Event,
    Family,
    Split,
    prefix_ends,
    statistic_histogram,
)


def _statistic(event: Event) -> Statistic:
    # Structural: threshold events are built by Threshold.candidates, always with the statistic
    # whose values they threshold.
    assert event.statistic is not None, "a threshold event has a statistic"
    return event.statistic


def _threshold_event(name: str, statistic: Statistic, t: np.ndarray, fav: int, upper: bool
                     ) -> Callable[[int], Event]:
    """The builder of candidate j of one (direction, side): s >= t[j] (``upper``) or s <= t[j]."""
    def build(j: int) -> Event:
        return Event(SIDES[fav], name, statistic, threshold=float(t[j]), upper=upper)
    return build


def _tail_counts(values: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(#{values ≥ t_i}, #{values ≤ t_i}) for sorted ``values``: two binary searches per threshold."""
    return len(values) - np.searchsorted(values, t, "left"), np.searchsorted(values, t, "right")


class Threshold:
    """S = {s ≥ ``threshold``} (``upper``) or {s ≤ ``threshold``} for the event's statistic s."""

    name = "threshold"
    statistic_based: ClassVar[bool] = True

    def candidates(self, split: Split, statistic: Statistic | None) -> list[Family]:
        # Structural: statistic views are only ever asked with a statistic (selection.candidate_views).
        assert statistic is not None, "the threshold view is statistic-based"
        pooled = split.pooled_fit
        t = np.unique(pooled[prefix_ends(len(pooled))])
        # Both halves are counted: the thresholds sit at ranks of the pooled fitting values, which
        # fixes how many fitting values lie beyond each, but not how they split between D and D′
        # — the ratio the bound rests on — so the fitting half's counts add information without
        # the bias of a likelihood-ratio order fitted on them.
        fx, fy, sx, sy = split.sorted_halves
        ge, le = zip(*(_tail_counts(a, t) for a in (sx, sy, fx, fy)), strict=True)
        out = []
        for upper, counts in ((True, ge), (False, le)):
            for fav in (0, 1):
                out.append(Family(counts[fav].astype(float), counts[1 - fav].astype(float), fav,
                                  _threshold_event(self.name, statistic, t, fav, upper),
                                  counts[2 + fav].astype(float), counts[3 - fav].astype(float),
                                  refine_level=POOLED_LEVEL))
        return out

    def count(self, outputs: np.ndarray, events: Sequence[Event], cache: ChunkCache) -> np.ndarray:
        out = np.empty(len(events), dtype=np.int64)
        for i, ev in enumerate(events):
            s = cache.statistic(_statistic(ev), outputs)
            # count_nonzero of the comparison: the same count, 3x cheaper than a bool array's sum.
            out[i] = np.count_nonzero(s >= ev.threshold) if ev.upper else np.count_nonzero(s <= ev.threshold)
        return out

    def contains(self, event: Event, outputs: np.ndarray) -> np.ndarray:
        s = _statistic(event)(outputs)
        return s >= event.threshold if event.upper else s <= event.threshold

    def describe(self, event: Event) -> str:
        return f"{_statistic(event).name} {'>=' if event.upper else '<='} {event.threshold:.6g}"

    def fields(self, event: Event) -> dict[str, Any]:
        return {"threshold": event.threshold, "upper": event.upper}

    def display(self, x: np.ndarray, y: np.ndarray, event: Event, bins: int, top: int,
                memo: ChunkCache | None = None) -> dict[str, Any]:
        """A histogram of the statistic with the threshold marked."""
        return {**statistic_histogram(x, y, _statistic(event), bins, memo), "threshold": event.threshold,
                "upper": event.upper}
