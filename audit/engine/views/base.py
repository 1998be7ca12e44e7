"""The :class:`View` protocol, the :class:`Event` record, and what views share.

An :class:`Event` is a set S of outputs and the side (D or D′) whose probability of S is
bounded from below.  A *view* is one way of cutting the outputs into such sets.  On the
selection split it fits its structure on the first half and proposes candidate families,
each counted on the second half; on the estimation split it counts the members of its
events chunk by chunk.

Set views (rows, histogram) propose prefixes of their categories sorted by the fitting
half's likelihood ratio (Neyman–Pearson; complements are the prefixes of the other
direction): for favoured side F and other side O, the ratio of category c is

    ((k_F(c) + ½) / n_F) / ((k_O(c) + ½) / n_O),

and the prefixes' counts come from the scoring half, so the order's noise is not scored.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from dpaudit.engine.statistics import Bins, Linear, RowCodec, Statistic

SIDES = ("D", "D'")

# Selection level of a prefix family of few, well-observed categories: one standard error
# (Φ(−1)) instead of α — a handful of candidates, each well estimated, so the single best
# outcome is no longer beaten by a union that the pessimism of α favours for its size.
POOLED_LEVEL = 0.1587


@dataclass(frozen=True)
class Split:
    """The selection samples of one view: fitted on ``fit_x``/``fit_y`` (first halves under D
    and D′), candidates counted on ``score_x``/``score_y`` (second halves).  For statistic
    views these are the statistic's values, otherwise the outputs."""

    fit_x: np.ndarray
    fit_y: np.ndarray
    score_x: np.ndarray
    score_y: np.ndarray
    # What the selection computes on these halves and its report shows again (a view's codes of
    # the outputs, a statistic's values): kept here so the display reads them, not recomputes them.
    memo: ChunkCache | None = field(default=None, compare=False)

    @property
    def n_fit(self) -> tuple[int, int]:
        return len(self.fit_x), len(self.fit_y)

    @functools.cached_property
    def sorted_halves(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``fit_x``, ``fit_y``, ``score_x``, ``score_y`` sorted (statistic views: computed once;
        any set of thresholds or bin edges is then counted by binary searches of its few values
        into these, not of every value into them)."""
        fx, fy, sx, sy = (np.sort(a) for a in (self.fit_x, self.fit_y, self.score_x, self.score_y))
        return fx, fy, sx, sy

    @functools.cached_property
    def pooled_fit(self) -> np.ndarray:
        """Both fitting halves pooled and sorted (computed once, shared by the statistic views):
        a stable sort of two sorted runs, a linear merge."""
        return np.sort(np.concatenate(self.sorted_halves[:2]), kind="stable")


@dataclass
class Family:
    """A view's candidates in one direction, counted on the scoring half."""

    k_fav: np.ndarray          # candidate counts under the favoured side
    k_oth: np.ndarray          # and under the other side
    fav: int                   # 0: favours D, 1: favours D′
    make: Callable[[int], Event]  # builds the Event of candidate j
    # The same candidates' counts on the fitting half, given only when they carry no selection
    # bias although the candidates came from that half: thresholds at ranks of the pooled fitting
    # values (threshold view).  (A likelihood-ratio order is fitted there: its counts are biased.)
    fit_fav: np.ndarray | None = None
    fit_oth: np.ndarray | None = None
    # The level of the selection split's pessimistic bounds (None: α).
    level: float | None = None
    # For many nested candidates along a continuous scale (thresholds): near-ties of the best
    # score are broken at this milder level (dpaudit.engine.bounds.best_candidate's refine_level).
    refine_level: float | None = None


class ChunkCache:
    """Values computed once per chunk and shared by every view's counter: a statistic used by
    several events (and views) is evaluated once, a set view's cells are histogrammed once."""

    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}

    def once(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        if key not in self._values:
            self._values[key] = compute()
        return self._values[key]

    def statistic(self, statistic: Statistic, outputs: np.ndarray) -> np.ndarray:
        return self.once(("statistic", id(statistic)), lambda: statistic(outputs))

    def keep(self, key: Hashable, value: Any) -> None:
        """``value`` under ``key``, unless one is there already."""
        self._values.setdefault(key, value)

    def get(self, key: Hashable) -> Any:
        """The value computed under ``key``, or None."""
        return self._values.get(key)


def halves_memo(memo: ChunkCache | None, x: np.ndarray, y: np.ndarray) -> ChunkCache | None:
    """``memo`` when it holds what the selection computed on the halves of exactly ``x`` and ``y``
    (:func:`dpaudit.engine.selection.candidate_views` records them), else None."""
    held = memo.get(("split",)) if memo is not None else None
    return memo if held is not None and held[0] is x and held[1] is y else None


def rejoined(memo: ChunkCache | None, key: Hashable, x: np.ndarray, y: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-output values the selection computed on the four halves (fit x, fit y, score x, score y)
    of ``x`` and ``y`` under ``key``, rejoined per side (x = its fitting half then its scoring
    half): the same values a view computes on ``x`` and ``y`` again, without the second pass."""
    held = halves_memo(memo, x, y)
    parts = held.get(key) if held is not None else None
    if parts is None:
        return None
    return np.concatenate([parts[0], parts[2]]), np.concatenate([parts[1], parts[3]])


class View(Protocol):
    """One way of proposing and counting output events.

    ``statistic_based`` views are fitted once per scalar statistic (:mod:`dpaudit.engine.statistics`)
    and see its values; the others see the outputs themselves.
    """

    name: str
    statistic_based: ClassVar[bool]

    def candidates(self, split: Split, statistic: Statistic | None) -> list[Family]:
        """Candidate families fitted on ``split``'s first half and counted on its second
        (``statistic`` is the statistic ``split`` holds values of, None for output views)."""
        ...

    def count(self, outputs: np.ndarray, events: Sequence[Event], cache: ChunkCache) -> np.ndarray:
        """Members of each of this view's ``events`` among ``outputs`` (one chunk)."""
        ...

    def contains(self, event: Event, outputs: np.ndarray) -> np.ndarray:
        """Membership of each output (row for vectors) in ``event``."""
        ...

    def describe(self, event: Event) -> str:
        """``event``'s set in words."""
        ...

    def fields(self, event: Event) -> dict[str, Any]:
        """The view's own entries of ``event.to_dict()``."""
        ...

    def display(self, x: np.ndarray, y: np.ndarray, event: Event, bins: int, top: int,
                memo: ChunkCache | None = None) -> dict[str, Any]:
        """The selection samples ``x`` (D) and ``y`` (D′) summarised for reports (``memo``: what
        the selection computed on their halves, :func:`rejoined`)."""
        ...


# Filled by :mod:`dpaudit.engine.views`, the one registration point; its order is the search order.
VIEWS: dict[str, View] = {}


@dataclass(frozen=True, eq=False)
class Event:
    """An output event S and the side whose probability of S is bounded from below."""

    favours: str
    view: str
    statistic: Statistic | None = None  # threshold and histogram views
    members: np.ndarray | None = None   # keys or codes (rows view), or cells (histogram view)
    codec: RowCodec | None = None       # rows view: the integer codes ``members`` holds
    bins: Bins | None = None            # histogram view
    threshold: float = 0.0
    upper: bool = True
    # the test its counts are bounded with (dpaudit.engine.bounds.TESTS), chosen with S on the selection split
    test: str = "joint"

    def contains(self, outputs: np.ndarray) -> np.ndarray:
        """Membership of each output (rows for vector outputs) in S."""
        return VIEWS[self.view].contains(self, outputs)

    @property
    def other(self) -> str:
        return SIDES[1 - SIDES.index(self.favours)]

    def describe(self) -> str:
        return f"{VIEWS[self.view].describe(self)} (more likely under {self.favours} than {self.other})"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"view": self.view, "favours": self.favours, "text": self.describe()}
        if self.statistic is not None:
            out["statistic"] = self.statistic.name
            if isinstance(self.statistic, Linear):
                out["weights"] = self.statistic.weights.tolist()
        out.update(VIEWS[self.view].fields(self))
        return out


def prefix_ends(n: int, inner: int = 1000) -> np.ndarray:
    """Indices of the last element of each candidate prefix (or threshold) of ``n`` ordered
    items: all of them up to 2·``inner``, else ``inner`` evenly spaced plus both tails."""
    if n <= 2 * inner:
        return np.arange(n)
    tail = np.unique(np.geomspace(1, n / 4, 200).astype(int))
    return np.unique(np.concatenate([np.linspace(0, n - 1, inner).astype(int), tail - 1, n - tail]))


def _prefix_event(make: Callable[[str, np.ndarray], Event], fav: int, order: np.ndarray, ends: np.ndarray
                  ) -> Callable[[int], Event]:
    """The builder of candidate j of one direction: the event of its prefix of ``order``."""
    def build(j: int) -> Event:
        return make(SIDES[fav], order[: ends[j] + 1])
    return build


def prefix_families(fit: tuple[np.ndarray, np.ndarray], score: tuple[np.ndarray, np.ndarray],
                    n_fit: tuple[int, int], make: Callable[[str, np.ndarray], Event], pooled: bool = False
                    ) -> list[Family]:
    """Prefixes in likelihood-ratio order: the order from the fitting half's per-category counts
    ``fit``, the candidates' counts from the scoring half ``score`` (so the order's noise is not
    scored).  ``make(side, categories)`` builds the event of a prefix.

    With ``pooled`` (few categories, each well observed) the families are scored at the
    one-standard-error level :data:`POOLED_LEVEL` (:func:`dpaudit.engine.selection.choose`)."""
    out = []
    for fav in (0, 1):
        ff, fo = fit[fav], fit[1 - fav]
        ratio = (ff + 0.5) / n_fit[fav] / ((fo + 0.5) / n_fit[1 - fav])
        order = np.argsort(-ratio, kind="stable")
        ends = prefix_ends(len(order))
        out.append(Family(np.cumsum(score[fav][order])[ends], np.cumsum(score[1 - fav][order])[ends], fav,
                          _prefix_event(make, fav, order, ends),
                          level=POOLED_LEVEL if pooled else None))
    return out


def category_counts(parts: Sequence[np.ndarray], most: int) -> tuple[np.ndarray, list[np.ndarray]] | None:
    """The distinct categories of the four halves ``parts`` (fit x, fit y, score x, score y) and
    each half's count per category; None when there are more than ``most`` categories (a view
    then proposes nothing rather than a prefix order over noise)."""
    dense = _dense_counts(parts)
    if dense is not None:
        values, counts = dense
        return (None if len(values) > most else (values, counts))
    values, inverse = np.unique(np.concatenate(parts), return_inverse=True)
    if len(values) > most:
        return None
    ends = np.cumsum([0] + [len(p) for p in parts])
    return values, [np.bincount(inverse[ends[i]:ends[i + 1]], minlength=len(values)).astype(float)
                    for i in range(len(parts))]


DENSE_SPAN = 1 << 20  # integer categories spanning at most this many values are counted by bincount


def _dense_counts(parts: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]] | None:
    """:func:`category_counts` without its sort, for signed integer ``parts`` spanning at most
    :data:`DENSE_SPAN` values (the floating view's codes: below 2^12·5): one bincount per part over
    the span, the categories its occupied cells — the same sorted distinct values and counts as
    ``np.unique``'s, in linear time.  None for any other input (the caller sorts)."""
    if not parts or any(p.dtype.kind != "i" or p.ndim != 1 for p in parts) or not all(len(p) for p in parts):
        return None
    low = min(int(p.min()) for p in parts)
    span = max(int(p.max()) for p in parts) - low + 1
    if span > DENSE_SPAN:
        return None
    cells = [np.bincount(p - low if low else p, minlength=span) for p in parts]
    present = np.flatnonzero(np.sum(cells, axis=0))
    return present + low, [c[present].astype(float) for c in cells]


QUANTILES = (0.001, 0.999)  # the display histogram's range: the central 99.8 % of the pooled values


def _ranked(halves: Sequence[np.ndarray], r: int) -> float:
    """The value of rank ``r`` (from 0) among the pooled sorted ``halves``: among the r + 1 smallest
    (or, for a rank in the upper half, the largest) values of each, sorted (a few hundred values)."""
    n = sum(len(h) for h in halves)
    if r < n // 2:
        return float(np.sort(np.concatenate([h[:r + 1] for h in halves]))[r])
    top = n - r  # the value is the top-th largest
    return float(np.sort(np.concatenate([h[max(0, len(h) - top):] for h in halves]))[-top])


def tail_ends(values: Split) -> tuple[float, float] | None:
    """``np.quantile`` of the pooled values of ``values``' four halves at :data:`QUANTILES` (numpy's
    default, Hyndman & Fan's 7th: index (n − 1)·q, the values at its floor and the next rank
    interpolated by its fraction γ), from their sorted halves (:attr:`Split.sorted_halves`) instead
    of a partition of every value: the two order statistics are read off the sorted halves and
    numpy interpolates them itself, as ``np.quantile([a, b], γ)`` (index 1·γ, the same γ).  None
    where that could differ or the caller's other branches apply: a non-finite value, a zero
    among the order statistics (−0.0 and 0.0 are equal but print apart), too few values, or not lo < hi."""
    halves = [h for h in values.sorted_halves if len(h)]
    n = sum(len(h) for h in halves)
    if n < 4 or not all(np.isfinite(h[0]) and np.isfinite(h[-1]) for h in halves):
        return None
    virtual = (n - 1) * np.asarray(QUANTILES)
    below = np.floor(virtual)
    ends = []
    for k, gamma in zip(below.astype(np.intp), virtual - below, strict=True):
        pair = np.array([_ranked(halves, int(k)), _ranked(halves, int(k) + 1)])
        if not pair.all():
            return None
        ends.append(float(np.quantile(pair, np.array([gamma]))[0]))
    lo, hi = ends
    return (lo, hi) if np.isfinite(lo) and np.isfinite(hi) and hi > lo else None


def statistic_histogram(x: np.ndarray, y: np.ndarray, statistic: Statistic, bins: int,
                        memo: ChunkCache | None = None) -> dict[str, Any]:
    """A histogram of ``statistic`` under D (``x``) and D′ (``y``) over its central 99.8 %.  Where
    the selection's ``memo`` holds the statistic's values on the halves of ``x`` and ``y``, they are
    read from it, the range comes from their sorted halves (:func:`tail_ends`) and each side's
    counts are the sums of its halves' (the same counts: every value is binned on its own)."""
    held = halves_memo(memo, x, y)
    values = held.get(("values", statistic)) if held is not None else None
    # per side, its parts: the two halves the selection computed, or the statistic of all its outputs
    sides = ([statistic(x)], [statistic(y)]) if values is None else (
        [values.fit_x, values.score_x], [values.fit_y, values.score_y])
    ends = tail_ends(values) if values is not None else None
    with np.errstate(over="ignore", invalid="ignore"):
        if ends is not None:
            lo, hi = ends
        else:
            pooled = np.concatenate([*sides[0], *sides[1]])
            pooled = pooled[np.isfinite(pooled)]
            if not len(pooled):
                pooled = np.zeros(1)
            lo, hi = np.quantile(pooled, QUANTILES)
            if not (np.isfinite(lo) and np.isfinite(hi)):  # the interpolation of values near ±1.8e308 overflowed
                lo, hi = np.quantile(pooled, QUANTILES, method="nearest")
            if not hi > lo:
                lo, hi = float(pooled.min()) - 0.5, float(pooled.max()) + 0.5
        edges = np.linspace(lo, hi, bins + 1)
        if np.isfinite(hi - lo) and len(np.unique(edges)) == bins + 1:
            # Equal bins given as a count and a range: numpy's arithmetic path, checked against these
            # same linspace edges (the counts of edges given as an array, without sorting the values).
            counts = [np.sum([np.histogram(s, bins, (lo, hi))[0] for s in parts], axis=0).tolist() for parts in sides]
        else:
            # A range wider than the largest float (±1.7e308) or narrower than bins of distinct
            # floats (subnormals): exact edges, each a float between the ends, duplicates merged.
            t = np.linspace(0.0, 1.0, bins + 1)
            edges = np.unique(np.clip(lo * (1 - t) + hi * t, lo, hi))
            if len(edges) < 2:  # one value: one bin from it to the next float (both finite)
                v = float(edges[0])
                edges = np.array([v, np.nextafter(v, np.inf)] if v < np.finfo(float).max
                                 else [np.nextafter(v, -np.inf), v])
            counts = [np.sum([np.histogram(s[np.isfinite(s)], edges)[0] for s in parts], axis=0).tolist()
                      for parts in sides]
    return {"kind": "histogram", "statistic": statistic.name, "edges": edges.tolist(),
            "D": counts[0], "D'": counts[1], "n": [len(x), len(y)]}
