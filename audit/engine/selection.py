"""Choosing events on the selection split, and counting them on the estimation split.

The selection samples are halved: every view (:mod:`dpaudit.engine.views`) fits its structure
(likelihood-ratio order, bin edges, classifier) on the first half and counts its candidates
on the second, so views compete on scores their own fitting did not inflate.  Statistics
(:mod:`dpaudit.engine.statistics`) are fitted once and shared by every statistic view.

Within a view, set candidates are prefixes of the categories sorted by empirical likelihood
ratio (Neyman–Pearson; complements are the prefixes of the other direction).  Every
candidate, in both directions, is scored by the Clopper–Pearson bound it would give on the
estimation split, starting from the selection split's own pessimistic bounds
(:func:`dpaudit.engine.bounds.best_candidate`; on both halves where the fitting half's counts carry
no selection bias, see :func:`choose`); the best over every view is chosen, per δ.
Statistics are not fitted when the rows view is exhaustive (:func:`rows_exhaustive`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from dpaudit.core import require
from dpaudit.engine.bounds import Candidates, best_candidates, better_test, projected_counts
from dpaudit.engine.statistics import Linear, RowCodec, fit_statistics
from dpaudit.engine.views import VIEWS, ChunkCache, Event, Family, Split
from dpaudit.engine.views.tabulated import tabulate
from dpaudit.runtime.execution import single_threaded_blas

# A selection split of at most this many outputs per side keeps each statistic's values and their
# sorted halves for the report's display (describe_outputs), which then reads them back; a larger one
# does not: held for every statistic at once they would cost about 80 MB a statistic at 2·10⁶ per
# side, and the display recomputes the one it shows, the same arrays.
MEMO_OUTPUTS = 1_000_000


def _halves(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = len(a) // 2
    return a[:h], a[h:]


def _row_codes(x: np.ndarray, y: np.ndarray) -> tuple[RowCodec, np.ndarray] | None:
    """The codec of integer vector outputs ``x`` and ``y`` and their distinct codes (None for other outputs)."""
    if x.ndim != 2 or x.shape[1] < 2 or x.dtype.kind not in "biu" or y.dtype.kind not in "biu" or not (
            len(x) and len(y)):
        return None
    codec = RowCodec.fit(x, y)
    if codec is None:
        return None
    codes = np.concatenate([codec(x), codec(y)])
    distinct = np.flatnonzero(np.bincount(codes, minlength=codec.size)) if codec.size <= 1 << 22 else np.unique(codes)
    return codec, distinct


def rows_exhaustive(x: np.ndarray, y: np.ndarray) -> bool:
    """True for integer vector outputs with at most √n distinct rows among the ``n`` per side:
    the rows view's likelihood-ratio prefixes then contain every event a fitted statistic could
    cut (any such event is a union of rows), each row counted about √n times or more, so the
    statistics are not fitted — they cannot win and cost most of the selection's time."""
    found = _row_codes(x, y)
    return found is not None and len(found[1]) <= math.isqrt(min(len(x), len(y)))


def _exhaustive(fx: np.ndarray, fy: np.ndarray, memo: ChunkCache) -> bool:
    """:func:`rows_exhaustive` of the fitting halves, from the rows view's count of their distinct
    rows when it ran on them (``memo``; the same count, whatever box its codes are over), else computed."""
    known = memo.get(("rows-fit-distinct",))
    if known is not None and fx.ndim == 2 and fx.shape[1] >= 2 and len(fx) and len(fy):
        return bool(known <= math.isqrt(min(len(fx), len(fy))))
    return rows_exhaustive(fx, fy)


# The selection share of an audit of discrete vector outputs whose choice the default 20 % does
# not settle (:func:`dpaudit.engine.runner.extension_size`).  Where the rows view is exhaustive
# (:func:`rows_exhaustive`) the best event is a union of rows, and rows whose likelihood ratios
# differ by a standard error or two of the selection counts make the choice, not the estimation
# split, what limits the bound.  The sparse-vector variants of Lyu, Su & Li (m = 10, 1.25·10⁶ per
# side, median of 50 seeded audits ÷ the ceiling at the 20 % split's estimation budget), with a
# fixed 20 % → with 30 % where unsettled: Alg. 2 (cutoff 2) at ε = 1 0.930 → 0.946 and at ε = 0.1
# 0.607 → 0.655; Alg. 1 at 0.1 0.921 → 0.902 and Alg. 4 at 0.1 0.965 → 0.960 (within the ±0.035
# a 50-seed median moves); unchanged where settled (Alg. 5, Alg. 1 and 4 at ε = 1).
DISCRETE_VECTOR_FRACTION = 0.3


def settled(x: np.ndarray, y: np.ndarray, delta: float, n_est: tuple[int, int], confidence: float) -> bool:
    """Whether the two halves of the selection split ``x``, ``y`` (integer vectors), each choosing
    on its own in the rows view (:func:`select_events`), choose the same event: the same side and
    the same rows among those the split saw.  Then more selection outputs would not change the
    choice, and the estimation split keeps its samples (:func:`dpaudit.engine.runner.extension_size`).
    The rows view alone keeps the check cheap (no statistic is fitted twice more); where it is
    exhaustive it is the only view the audit uses.  On the sparse-vector variants (20 simulated
    splits of 2.5·10⁵ per side each) the halves agree on 18–20 of 20 where the choice is sure
    (Alg. 5, Alg. 1 and 4 at ε = 1) and on 0–7 of 20 where rows are hard to tell apart (Alg. 1, 2
    and 4 at ε = 0.1, Alg. 2 at ε = 1)."""
    hx, hy = len(x) // 2, len(y) // 2
    memos = (ChunkCache(), ChunkCache())
    picks = [select_events(a, b, [delta], n_est, confidence, ("rows",), memo=m)[0][0]
             for (a, b), m in zip(((x[:hx], y[:hy]), (x[hx:], y[hy:])), memos, strict=True)]
    seen = _seen_rows(x, y, memos)
    return picks[0].favours == picks[1].favours and bool(np.array_equal(picks[0].contains(seen),
                                                                        picks[1].contains(seen)))


def _seen_rows(x: np.ndarray, y: np.ndarray, memos: Sequence[ChunkCache]) -> np.ndarray:
    """The distinct rows of ``x`` and ``y``, in lexicographic order: the union of the distinct rows
    the rows view found in each half (``memos``, with the codec of its box) when it kept them, else
    read from ``x`` and ``y`` themselves."""
    kept = [m.get(("rows-seen",)) for m in memos]
    if all(k is not None for k in kept):
        return np.unique(np.concatenate([codec.decode(values) for codec, values in kept]), axis=0)
    found = _row_codes(x, y)
    return found[0].decode(found[1]) if found is not None else np.unique(np.concatenate([x, y]), axis=0)


def candidate_views(x: np.ndarray, y: np.ndarray, views: Sequence[str], rng: np.random.Generator,
                    memo: ChunkCache | None = None) -> tuple[list[Family], tuple[int, int]]:
    """Candidate families on the selection samples ``x`` (D) and ``y`` (D′), and the sample
    sizes their counts come from.

    Each view's structure is fitted on the first half of the selection samples and its
    candidates are counted on the second.  Output views come first, in registry order; then,
    for each statistic (fitted once, only when some statistic view is asked for; for integer
    vectors read from a table over their box, :mod:`dpaudit.engine.views.tabulated`), the statistic
    views in registry order.

    ``memo`` (optional) keeps what the views compute on the halves and the report shows again
    (:func:`describe_outputs`), beside the arrays ``x`` and ``y`` they belong to.
    """
    (fx, x2), (fy, y2) = _halves(x), _halves(y)
    memo = memo if memo is not None else ChunkCache()
    memo.once(("split",), lambda: (x, y))
    chosen = [view for name, view in VIEWS.items() if name in views]
    out: list[Family] = []
    for view in chosen:
        if not view.statistic_based:
            out += view.candidates(Split(fx, fy, x2, y2, memo), None)
    on_statistics = [view for view in chosen if view.statistic_based]
    if on_statistics and not ("rows" in views and _exhaustive(fx, fy, memo)):
        integer = fx.ndim == 2 and fx.dtype.kind in "biu" and fy.dtype.kind in "biu"
        for stat in tabulate(fit_statistics(fx, fy, rng), RowCodec.fit(fx, fy, x2, y2) if integer else None):
            # no memo of its own: statistic views keep nothing there, and a Split the memo keeps that pointed
            # back at it would be a reference cycle holding the selection split until the cycle collector ran
            values = Split(stat(fx), stat(fy), stat(x2), stat(y2))
            if len(x) <= MEMO_OUTPUTS and len(y) <= MEMO_OUTPUTS:
                memo.keep(("values", stat), values)  # for display: the values and their sorted halves
            for view in on_statistics:
                out += view.candidates(values, stat)
            del values  # above MEMO_OUTPUTS (nothing kept): its sorted halves go before the next statistic's values
    return out, (len(x2), len(y2))


def _scored(fam: Family, n_sel: tuple[int, int], n_fit: tuple[int, int], alpha_sel: float
            ) -> tuple[np.ndarray, np.ndarray, tuple[int, int], float]:
    """The counts a family's candidates are scored on (favoured, other), their sample sizes and the
    selection bounds' level (the family's own, else ``alpha_sel``)."""
    fav = fam.fav
    k_fav, k_oth, n = fam.k_fav, fam.k_oth, (n_sel[fav], n_sel[1 - fav])
    if fam.fit_fav is not None and fam.fit_oth is not None:  # both halves: see Family.fit_fav
        k_fav, k_oth = k_fav + fam.fit_fav, k_oth + fam.fit_oth
        n = (n[0] + n_fit[fav], n[1] + n_fit[1 - fav])
    return k_fav, k_oth, n, alpha_sel if fam.level is None else fam.level


def _best(families: Sequence[Family], n_sel: tuple[int, int], n_est: tuple[int, int], delta: float,
          alpha: float, n_fit: tuple[int, int] | None = None, alpha_sel: float | None = None
          ) -> tuple[float, Family, int]:
    """The score, family and index of the best candidate over every family (:func:`choose`);
    ``alpha_sel`` (default α) is the selection bounds' level where a family sets none."""
    return _best_at_levels(families, n_sel, n_est, delta, alpha, n_fit, (alpha_sel,))[0]


def _best_at_levels(families: Sequence[Family], n_sel: tuple[int, int], n_est: tuple[int, int], delta: float,
                    alpha: float, n_fit: tuple[int, int] | None, levels: Sequence[float | None]
                    ) -> list[tuple[float, Family, int]]:
    """:func:`_best` at each selection level of ``levels``, every family at every level scored in one
    batch (:func:`dpaudit.engine.bounds.best_candidates`; a family with its own level is scored once)."""
    n_fit = n_fit or n_sel
    groups: dict[tuple[int, float], int] = {}
    batch: list[Candidates] = []
    where: list[list[int]] = []  # per level, per family: its entry of the batch
    for level in levels:
        where.append([])
        for i, fam in enumerate(families):
            k_fav, k_oth, n, at = _scored(fam, n_sel, n_fit, alpha if level is None else level)
            if (i, at) not in groups:
                groups[(i, at)] = len(batch)
                batch.append(Candidates(np.asarray(k_fav, dtype=float), np.asarray(k_oth, dtype=float), n,
                                        (n_est[fam.fav], n_est[1 - fam.fav]), at, fam.refine_level))
            where[-1].append(groups[(i, at)])
    scored = best_candidates(batch, delta, alpha)
    out: list[tuple[float, Family, int]] = []
    for entries in where:
        best: tuple[float, Family, int] | None = None
        for fam, entry in zip(families, entries, strict=True):
            score, j = scored[entry]
            if best is None or score > best[0]:
                best = (score, fam, j)
        # Structural: select_events requires at least one family before choosing.
        assert best is not None, "choose needs at least one candidate family"
        out.append(best)
    return out


class Choice(NamedTuple):
    """:func:`choose`'s answer: the event (with its test), its family and its index there
    (``candidate``).  A named tuple: callers that unpack the three keep working."""

    event: Event
    family: Family
    candidate: int


def choose(families: Sequence[Family], n_sel: tuple[int, int], n_est: tuple[int, int], delta: float,
           alpha: float, n_fit: tuple[int, int] | None = None) -> Choice:
    """The best event over every candidate of every view, for one δ (``n_sel``: the sizes the
    candidates were counted on; ``n_fit``: the fitting half's, for families that also carry
    its counts), with its family and index there.

    Every candidate is scored by the bound its pessimistic selection bounds project to the
    estimation split, at level α or the family's own (:attr:`Family.level`: one standard error
    for few, well-observed categories, so that the single best outcome is no longer beaten by
    a union the pessimism of α favours for its size).  A family whose fitting-half counts carry
    no selection bias (:attr:`Family.fit_fav`: thresholds at ranks of the pooled fitting
    values) is scored on both halves together — twice the samples.  The event's test
    (:data:`dpaudit.engine.bounds.TESTS`) is the better one on its projected counts, chosen here with it."""
    _, fam, j = _best(families, n_sel, n_est, delta, alpha, n_fit)
    k_fav, k_oth, n, level = _scored(fam, n_sel, n_fit or n_sel, alpha)
    e = (n_est[fam.fav], n_est[1 - fam.fav])
    k1, k2 = projected_counts(k_fav[j:j + 1], k_oth[j:j + 1], n, e, level)
    return Choice(event=replace(fam.make(j), test=better_test(k1[0], e[0], k2[0], e[1], delta, alpha)), family=fam,
                  candidate=j)


def predicted_bound(x: np.ndarray, y: np.ndarray, deltas: Sequence[float], n_est: tuple[int, int],
                    confidence: float, views: Sequence[str] = tuple(VIEWS), seed: int = 0,
                    selection_levels: Sequence[float | None] = (None,)) -> list[list[float]]:
    """Per δ and per selection level, the ε lower bound :func:`select_events` predicts for the
    event it would choose on ``x`` and ``y`` — the best candidate's score in :func:`choose`: its
    pessimistic selection bounds (at the level, None: α = (1 − ``confidence``)/2) projected to the
    estimation sizes ``n_est`` and bounded again at α; −inf where no candidate clears δ.

    The score of the winner of a maximum, it is biased upward by the selection (less so the more
    pessimistic the level), but it needs one fit of the views and no second split — a
    low-variance ranking of samples drawn at equal sizes (the pair search's pilot,
    :mod:`dpaudit.engine.search`)."""
    with single_threaded_blas():
        families, n_score = candidate_views(x, y, views, np.random.default_rng(seed))
    require(bool(families), "events", list(views), "no view applies to these outputs (rows needs integer outputs)")
    n_fit = (len(x) // 2, len(y) // 2)
    alpha = (1 - confidence) / 2
    # equal δs (the pilot's δ and 0 when the claim's δ is 0) have equal scores: computed once
    at_delta = {d: [b[0] for b in _best_at_levels(families, n_score, n_est, d, alpha, n_fit, selection_levels)]
                for d in dict.fromkeys(deltas)}
    return [list(at_delta[d]) for d in deltas]


def nested_family(fam: Family, best: int, points: int) -> list[Event]:
    """``points`` nested events of one view family (thresholds, or likelihood-ratio prefixes),
    spread over its range and including the chosen one: the empirical trade-off curve."""
    idx = np.unique(np.concatenate([np.linspace(0, len(fam.k_fav) - 1, points).astype(int), [best]]))
    return [fam.make(int(j)) for j in idx]


def count_members(outputs: np.ndarray, events: Sequence[Event]) -> np.ndarray:
    """How many outputs fall in each event: each view counts its own events, sharing one
    per-chunk cache, so a statistic is computed once per chunk."""
    cache = ChunkCache()
    by_view: dict[str, list[int]] = {}
    for i, ev in enumerate(events):
        by_view.setdefault(ev.view, []).append(i)
    out = np.empty(len(events), dtype=np.int64)
    # BLAS runs only in a linear statistic's product: other events need no thread limit (whose
    # set-up and restore, a query of every loaded library, cost more than counting a small chunk)
    with single_threaded_blas() if any(isinstance(ev.statistic, Linear) for ev in events) else nullcontext():
        for name, idx in by_view.items():
            out[idx] = VIEWS[name].count(outputs, [events[i] for i in idx], cache)
    return out


def select_events(x: np.ndarray, y: np.ndarray, deltas: Sequence[float], n_est: tuple[int, int],
                  confidence: float | Sequence[float], views: Sequence[str] = tuple(VIEWS), seed: int = 0,
                  tradeoff_points: int = 0, memo: ChunkCache | None = None) -> tuple[list[Event], list[Event]]:
    """One event per δ, chosen on the selection samples ``x`` (under D) and ``y`` (under D′),
    and (with ``tradeoff_points``) a nested family of the first δ's view for the trade-off curve.

    ``confidence`` may be one value or one per δ (a curve claim tested at Bonferroni levels).
    ``memo``: a :class:`ChunkCache` to keep what :func:`describe_outputs` shows again.
    """
    if isinstance(confidence, (int, float, np.generic)):  # np.isscalar's cases here, numpy scalars included
        confidences = [confidence] * len(deltas)
    else:
        confidences = list(confidence)
    require(len(confidences) == len(deltas), "confidence", confidence, "one value, or one per delta")
    for v in views:
        require(v in VIEWS, "events", v, f"views are {', '.join(VIEWS)}")
    with single_threaded_blas():
        families, n_score = candidate_views(x, y, views, np.random.default_rng(seed), memo)
    require(bool(families), "events", list(views), "no view applies to these outputs (rows needs integer outputs)")
    n_fit = (len(x) // 2, len(y) // 2)
    picks = [choose(families, n_score, n_est, d, (1 - c) / 2, n_fit) for d, c in zip(deltas, confidences, strict=True)]
    family = nested_family(picks[0].family, picks[0].candidate, tradeoff_points) if tradeoff_points else []
    return [p.event for p in picks], family


def describe_outputs(x: np.ndarray, y: np.ndarray, event: Event, bins: int = 40, top: int = 12,
                     memo: ChunkCache | None = None) -> dict[str, Any]:
    """What the selection split looked like, for reports, as ``event``'s view shows it: the most
    frequent outputs (rows view) or a histogram of the chosen statistic, under D and D′ (what
    the selection computed on ``x`` and ``y`` read from its ``memo``, not computed again)."""
    return VIEWS[event.view].display(x, y, event, bins, top, memo)
