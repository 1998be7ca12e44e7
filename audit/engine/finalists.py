"""The pair search's last step (:func:`dpaudit.engine.search.search_pair`): which of the pilot's best
pairs the final audit takes, on the evidence of the samples that audit will choose its event on."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpaudit.core import InputError
from dpaudit.engine.runner import SELECTION, chunk_rng, chunk_sizes, draw
from dpaudit.engine.selection import predicted_bound
from dpaudit.engine.streaming import SELECTION_FRACTION, selection_size
from dpaudit.neighbors import Pair


def _selection_split(mechanism: Any, data: Any, samples: int, seed: int, key: tuple[int, ...], side: int
                     ) -> np.ndarray:
    """The selection outputs the final audit of ``samples`` per side draws for ``side`` (its own
    chunk streams, :func:`dpaudit.engine.runner.estimate`), drawn ahead of it."""
    sizes = chunk_sizes(selection_size(samples, SELECTION_FRACTION))
    return np.concatenate([draw(mechanism, data, size, chunk_rng(seed, key, SELECTION, side, c))
                           for c, size in enumerate(sizes)])


def best_finalist(mechanism: Any, finalists: Sequence[tuple[Pair, list[np.ndarray], list[np.ndarray]]], samples: int,
                  seed: int, key: tuple[int, ...], views: Sequence[str], delta: float, confidence: float
                  ) -> tuple[int, list[dict[str, Any]]]:
    """Which of the pilot's best pairs the final audit takes: the one whose selection evidence —
    its pilot samples and the final audit's own selection split (the samples that audit would
    choose its event on), pooled — predicts the largest bound
    (:func:`dpaudit.engine.selection.predicted_bound` at the final sizes), so the search never audits a
    pair that its selection evidence ranks below another pair it tried.

    Valid: the choice sees only selection splits; the winner's estimation split is drawn on
    streams none of them used, so its bound is the ordinary audit of a fixed pair.  A pair on
    which the mechanism raises :class:`~dpaudit.core.InputError` scores −inf."""
    n_est = samples - selection_size(samples, SELECTION_FRACTION)
    scores, out = [], []
    for pair, pilot_x, pilot_y in finalists:
        try:
            x = np.concatenate([*pilot_x, _selection_split(mechanism, pair.d, samples, seed, key, 0)])
            y = np.concatenate([*pilot_y, _selection_split(mechanism, pair.d_prime, samples, seed, key, 1)])
            score = predicted_bound(x, y, (delta,), (n_est, n_est), confidence, views, seed)[0][0]
        except InputError:
            score = -math.inf
        scores.append(score)
        out.append({"pair": pair.description, "selection_score": score if math.isfinite(score) else None})
    best = max(range(len(finalists)), key=lambda i: (scores[i], -i))
    return best, out
