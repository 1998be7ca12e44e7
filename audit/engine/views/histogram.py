"""The ``histogram`` view: categories of a scalar statistic s, S = a set of them.

Categories are the atoms of s (values repeated in the sample, such as an abort symbol −1
inside real outputs) and quantile bins of the rest, dense in both tails
(:func:`dpaudit.engine.statistics.quantile_bins`).  S = a prefix in likelihood-ratio order, which
captures non-monotone ratios and shifted supports that no single threshold can.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, ClassVar

import numpy as np

from dpaudit.engine.statistics import Bins, Statistic, quantile_bins
from dpaudit.engine.views.base import ChunkCache, Event, Family, Split, prefix_families, statistic_histogram


def _cell_counts(bins: Bins, s: np.ndarray) -> np.ndarray:
    """Cell counts of sorted values ``s`` (the split's sorted halves)."""
    return bins.counts_sorted(s).astype(float)


def _cell_histogram(bins: Bins, s: np.ndarray) -> np.ndarray:
    return np.bincount(bins(s), minlength=bins.n_codes)


def _parts(event: Event) -> tuple[Statistic, Bins, np.ndarray]:
    """A histogram event's statistic, bins and chosen cells."""
    # Structural: histogram events are built by Histogram.candidates, always with all three.
    assert event.statistic is not None and event.bins is not None and event.members is not None, (
        "a histogram event has a statistic, bins and cells")
    return event.statistic, event.bins, event.members


class Histogram:
    """S = the cells ``members`` of ``bins`` applied to the event's statistic."""

    name = "histogram"
    statistic_based: ClassVar[bool] = True

    def candidates(self, split: Split, statistic: Statistic | None) -> list[Family]:
        # Structural: statistic views are only ever asked with a statistic (selection.candidate_views).
        assert statistic is not None, "the histogram view is statistic-based"
        bins = quantile_bins(split.pooled_fit)
        if bins.n_codes < 3:
            return []
        fx, fy, sx, sy = split.sorted_halves
        return prefix_families((_cell_counts(bins, fx), _cell_counts(bins, fy)),
                               (_cell_counts(bins, sx), _cell_counts(bins, sy)), split.n_fit,
                               lambda fav, idx: Event(fav, self.name, statistic, members=np.sort(idx), bins=bins))

    def count(self, outputs: np.ndarray, events: Sequence[Event], cache: ChunkCache) -> np.ndarray:
        """Through a per-chunk histogram of each statistic's cells, so a nested family of events
        costs one pass over the chunk, not one per event."""
        out = np.empty(len(events), dtype=np.int64)
        for i, ev in enumerate(events):
            statistic, bins, members = _parts(ev)
            s = cache.statistic(statistic, outputs)
            cells = cache.once(("cells", id(bins)), partial(_cell_histogram, bins, s))
            out[i] = int(cells[members].sum())
        return out

    def contains(self, event: Event, outputs: np.ndarray) -> np.ndarray:
        statistic, bins, members = _parts(event)
        return np.isin(bins(statistic(outputs)), members)

    def describe(self, event: Event) -> str:
        statistic, bins, members = _parts(event)
        return f"{statistic.name} in {len(members)} of {bins.n_codes} likelihood-ratio cells"

    def fields(self, event: Event) -> dict[str, Any]:
        _, bins, members = _parts(event)
        return {"cells": len(members), "atoms": bins.atoms.tolist()}

    def display(self, x: np.ndarray, y: np.ndarray, event: Event, bins: int, top: int,
                memo: ChunkCache | None = None) -> dict[str, Any]:
        """A histogram of the statistic."""
        return {**statistic_histogram(x, y, _parts(event)[0], bins, memo), "threshold": None, "upper": None}
