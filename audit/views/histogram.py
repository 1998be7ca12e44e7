"""The ``histogram`` view: categories of a scalar statistic s, S = a set of them.

Categories are the atoms of s (values repeated in the sample, such as an abort symbol −1
inside real outputs) and quantile bins of the rest, dense in both tails
(:func:`audit.statistics.quantile_bins`).  S = a prefix in likelihood-ratio order, which
captures non-monotone ratios and shifted supports that no single threshold can.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from audit.statistics import Bins, Statistic, quantile_bins
from audit.views.base import ChunkCache, Event, Family, Split, prefix_families, statistic_histogram


def _cell_counts(bins: Bins, s: np.ndarray) -> np.ndarray:
    return np.bincount(bins(s), minlength=bins.n_codes).astype(float)


class Histogram:
    """S = the cells ``members`` of ``bins`` applied to the event's statistic."""

    name = "histogram"
    statistic_based: ClassVar[bool] = True

    def candidates(self, split: Split, statistic: Statistic | None) -> list[Family]:
        bins = quantile_bins(np.concatenate([split.fit_x, split.fit_y]))
        if bins.n_codes < 3:
            return []
        return prefix_families((_cell_counts(bins, split.fit_x), _cell_counts(bins, split.fit_y)),
                               (_cell_counts(bins, split.score_x), _cell_counts(bins, split.score_y)), split.n_fit,
                               lambda fav, idx: Event(fav, self.name, statistic, members=np.sort(idx), bins=bins))

    def count(self, outputs: np.ndarray, events: Sequence[Event], cache: ChunkCache) -> np.ndarray:
        """Through a per-chunk histogram of each statistic's cells, so a nested family of events
        costs one pass over the chunk, not one per event."""
        out = np.empty(len(events), dtype=np.int64)
        for i, ev in enumerate(events):
            s = cache.statistic(ev.statistic, outputs)
            cells = cache.once(("cells", id(ev.bins)), lambda ev=ev, s=s: np.bincount(ev.bins(s),
                                                                                      minlength=ev.bins.n_codes))
            out[i] = int(cells[ev.members].sum())
        return out

    def contains(self, event: Event, outputs: np.ndarray) -> np.ndarray:
        return np.isin(event.bins(event.statistic(outputs)), event.members)

    def describe(self, event: Event) -> str:
        return f"{event.statistic.name} in {len(event.members)} of {event.bins.n_codes} likelihood-ratio cells"

    def fields(self, event: Event) -> dict[str, Any]:
        return {"cells": len(event.members), "atoms": event.bins.atoms.tolist()}

    def display(self, x: np.ndarray, y: np.ndarray, event: Event, bins: int, top: int) -> dict[str, Any]:
        """A histogram of the statistic."""
        return {**statistic_histogram(x, y, event.statistic, bins), "threshold": None, "upper": None}
