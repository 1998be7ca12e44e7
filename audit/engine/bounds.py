"""Binomial bounds, the ε they certify, and how candidate events are scored.

For k successes in n trials, the one-sided Clopper–Pearson bounds at level α are

    p_lo = Beta⁻¹(α; k, n − k + 1)   (0 when k = 0),
    p_hi = Beta⁻¹(1 − α; k + 1, n − k)   (1 when k = n),

and an event S seen k1/n1 times under the favoured side and k2/n2 under the other certifies

    ε ≥ log((p1_lo − δ) / p2_hi)   (−inf when p1_lo ≤ δ).

Candidates are scored by the bound they would give on the estimation split: the selection
split's own pessimistic bounds are projected to the estimation sample sizes and bounded
again.  Wilson score bounds, a closed form, rank all candidates; the best few are re-scored
with Clopper–Pearson.

The *ceiling* (:func:`best_event`) is what no audit can beat on average: the bound of the best
event fixed in advance, at its expected counts on the estimation split.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import special

from dpaudit.engine import betainv, stattest
from dpaudit.engine.jointratio import JOINT, PRUNE_MARGIN, SCREEN_TERMS, joint_epsilon, joint_score

__all__ = ["CEILING_SHORTLIST", "JOINT", "NEAR", "PAIR", "REFINE_SHORTLIST", "SCREEN_TERMS", "TESTS", "BestEvent",
           "Candidates", "Ceiling", "all_subsets", "best_candidate", "best_candidates", "best_event", "better_test",
           "both_tests", "ceiling", "clopper_pearson", "clopper_pearson_lower", "clopper_pearson_upper",
           "epsilon_from_bounds", "joint_epsilon", "joint_score", "pair_epsilon", "pair_only", "projected_counts",
           "wilson"]

Bounds = Callable[[np.ndarray, np.ndarray | float, np.ndarray | float], tuple[np.ndarray, np.ndarray]]
Sizes = tuple[np.ndarray | int, np.ndarray | int]  # (favoured side, other side): numbers, or one per candidate


def clopper_pearson(k: np.ndarray | float, n: np.ndarray | float, alpha: np.ndarray | float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson bounds (lower, upper), each at level ``alpha`` (broadcast with k
    and n: candidates of several families are bounded at their own levels in one call).

    lower = Beta⁻¹(α; k, n − k + 1) (0 when k = 0), upper = Beta⁻¹(1 − α; k + 1, n − k)
    (1 when k = n).  Real-valued k is allowed (used for projected counts).
    """
    return clopper_pearson_lower(k, n, alpha), clopper_pearson_upper(k, n, alpha)


def _broadcast(k: np.ndarray | float, n: np.ndarray | float, alpha: np.ndarray | float
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k, n, a = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float),
                                  np.asarray(alpha, dtype=float))
    return k, n, a


# scipy.special's inverses are what stats.beta.ppf / isf evaluate, without their per-call argument
# checks (4x faster: the pair search scores thousands of candidates with these), each answer checked
# against betainc (dpaudit.engine.betainv: scipy's is wrong at a parameter of 1000); each side is its own
# function because most callers need one (an inverse Beta costs microseconds per event, and a ceiling
# bounds 2^16 events in both directions).
def clopper_pearson_lower(k: np.ndarray | float, n: np.ndarray | float, alpha: np.ndarray | float) -> np.ndarray:
    """The lower bound of :func:`clopper_pearson` alone."""
    k, n, a = _broadcast(k, n, alpha)
    lower = np.zeros(k.shape)
    pos = k > 0
    lower[pos] = betainv.betaincinv(k[pos], n[pos] - k[pos] + 1, a[pos])
    return lower


def clopper_pearson_upper(k: np.ndarray | float, n: np.ndarray | float, alpha: np.ndarray | float) -> np.ndarray:
    """The upper bound of :func:`clopper_pearson` alone."""
    k, n, a = _broadcast(k, n, alpha)
    upper = np.ones(k.shape)
    below = k < n
    upper[below] = betainv.betainccinv(k[below] + 1, n[below] - k[below], a[below])
    return upper


def wilson(k: np.ndarray, n: np.ndarray | float, alpha: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Wilson score bounds (lower, upper): a closed-form proxy for Clopper–Pearson,
    used only to rank candidates."""
    z = -special.ndtri(alpha)  # = stats.norm.isf(alpha) bit for bit, without its ~160 µs of argument checks
    p = np.asarray(k, dtype=float) / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(np.maximum(p * (1 - p), 0) / n + z * z / (4 * n * n)) / denom
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def epsilon_from_bounds(p_lower: np.ndarray, q_upper: np.ndarray, delta: float) -> np.ndarray:
    """log((p_lo − δ)/q_hi), −inf where p_lo ≤ δ."""
    excess = np.asarray(p_lower, dtype=float) - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(excess > 0, np.log(np.maximum(excess, 1e-300)) - np.log(q_upper), -np.inf)


def pair_epsilon(k_fav: np.ndarray | float, n_fav: np.ndarray | float, k_oth: np.ndarray | float,
                 n_oth: np.ndarray | float, delta: float, alpha: float) -> np.ndarray:
    """The Clopper–Pearson pair's bound log((p_lo − δ)/q_hi), each bound at level ``alpha``: the
    estimator's bound before the joint test, kept for comparison (the bench prints both)."""
    return epsilon_from_bounds(clopper_pearson_lower(k_fav, n_fav, alpha), clopper_pearson_upper(k_oth, n_oth, alpha),
                               delta)


# Registered here, where it is defined, after the joint test (imported above): ties go to the joint one.
PAIR = stattest.register(stattest.StatTest(
    name="clopper-pearson", bound=pair_epsilon, title="Clopper-Pearson", described="the Clopper-Pearson pair",
    requires="each count binomial (k ~ Bin(n, p)), the two sides' samples independent", spends=2.0))

# The tests an event's counts can be bounded with: every registered one (dpaudit.engine.stattest), by name.
# Of the built-in two neither is more powerful everywhere: the odds ratio is a ratio of probabilities for
# rare events, where the joint test gains (×4 at p = 0.02, ε = 0.1, n = 10⁵), but the odds of a common
# event are noisier than its probability (the 1/(n − k) terms of log ψ's variance), where the pair is
# tighter (randomized response at ε = 1).  The event's test is chosen with the event, on the selection
# split (:func:`better_test`): the estimation counts then meet one test fixed in advance, and its
# confidence is exact.  Read live: a test registered later is here too.
TESTS = stattest.BOUNDS


def both_tests(k_fav: np.ndarray | float, n_fav: np.ndarray | float, k_oth: np.ndarray | float,
               n_oth: np.ndarray | float, delta: float, alpha: float) -> np.ndarray:
    """The best of the registered tests' scores (:attr:`~dpaudit.engine.stattest.StatTest.scorer`: the
    joint test's by :func:`joint_score`) of (projected) counts: the score of a candidate whose test is
    chosen with it (exactly, by :func:`better_test`)."""
    return functools.reduce(np.maximum, [test.scorer(k_fav, n_fav, k_oth, n_oth, delta, alpha)
                                         for test in stattest.registered()])


def better_test(k_fav: float, n_fav: float, k_oth: float, n_oth: float, delta: float, alpha: float) -> str:
    """The name of the registered test (:data:`TESTS`) with the highest bound of these (projected) counts,
    the first registered on ties (the joint test before the pair)."""
    name, best = "", -math.inf
    for i, test in enumerate(stattest.registered()):
        value = float(test.bound(k_fav, n_fav, k_oth, n_oth, delta, alpha))
        if i == 0 or not best >= value:  # a NaN never keeps its place
            name, best = test.name, value
    return name


def projected_counts(k_fav: np.ndarray, k_oth: np.ndarray, n_sel: Sizes, n_est: Sizes,
                     alpha_sel: np.ndarray | float, bounds: Bounds | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The counts at the estimation sizes of the selection split's pessimistic bounds (``bounds`` at
    level ``alpha_sel``, Clopper–Pearson by default): p_lo·n_est under the favoured side, q_hi·n_est under
    the other."""
    bounds = clopper_pearson if bounds is None else bounds
    if bounds is clopper_pearson:  # the one side each needs
        return clopper_pearson_lower(k_fav, n_sel[0], alpha_sel) * n_est[0], \
            clopper_pearson_upper(k_oth, n_sel[1], alpha_sel) * n_est[1]
    p_sel, _ = bounds(k_fav, n_sel[0], alpha_sel)
    _, q_sel = bounds(k_oth, n_sel[1], alpha_sel)
    return p_sel * n_est[0], q_sel * n_est[1]


def _projected(k_fav: np.ndarray, k_oth: np.ndarray, n_sel: Sizes, n_est: Sizes,
               delta: float, alpha: float, bounds: Bounds, alpha_sel: np.ndarray | float) -> np.ndarray:
    """The ε the selection split's pessimistic bounds would certify at the estimation sizes: with
    Wilson bounds (``bounds``), the closed-form rough score of the pair; with Clopper–Pearson, the
    better test's bound of the projected counts (:func:`both_tests`).  Element-wise in every
    argument but ``delta`` and ``alpha``: candidates of many families score in one call."""
    k1, k2 = projected_counts(k_fav, k_oth, n_sel, n_est, alpha_sel, bounds)
    if bounds is clopper_pearson:
        return both_tests(k1, n_est[0], k2, n_est[1], delta, alpha)
    lo, _ = bounds(k1, n_est[0], alpha)
    _, hi = bounds(k2, n_est[1], alpha)
    return epsilon_from_bounds(lo, hi, delta)


def _projected_distinct(k_fav: np.ndarray, k_oth: np.ndarray, n_sel: Sizes, n_est: Sizes, delta: float,
                        alpha: float, alpha_sel: np.ndarray) -> np.ndarray:
    """:func:`_projected` with Clopper–Pearson bounds, each distinct candidate (its counts, sizes and
    level, equal as bytes) scored once: families share candidates (a view's events seen from two
    statistics, complements), and every step is element-wise, so the copies get the same numbers."""
    rows = np.stack(np.broadcast_arrays(k_fav, k_oth, *n_sel, *n_est, alpha_sel), axis=1).astype(float)
    distinct, where = np.unique(rows, axis=0, return_inverse=True)
    if len(distinct) == len(rows):
        return _projected(k_fav, k_oth, n_sel, n_est, delta, alpha, clopper_pearson, alpha_sel)
    c = distinct.T
    return _projected(c[0], c[1], (c[2], c[3]), (c[4], c[5]), delta, alpha, clopper_pearson, c[6])[where.reshape(-1)]


# Near-ties of a refined family (:func:`best_candidate`'s ``refine_level``): candidates whose score
# is within this fraction of the best one's, and how many of the Wilson ranking are re-scored.
NEAR = 0.1
REFINE_SHORTLIST = 64


@dataclass(frozen=True)
class Candidates:
    """One family's candidates as :func:`best_candidate` takes them: counts (favoured, other), the
    sizes they come from and the estimation sizes (favoured side first), the selection bounds' level
    and the milder level of near-ties (None: no refinement)."""

    k_fav: np.ndarray
    k_oth: np.ndarray
    n_sel: tuple[int, int]
    n_est: tuple[int, int]
    alpha_sel: float
    refine_level: float | None = None


def best_candidate(k_fav: np.ndarray, k_oth: np.ndarray, n_sel: tuple[int, int], n_est: tuple[int, int],
                   delta: float, alpha: float, shortlist: int = 16, alpha_sel: float | None = None,
                   refine_level: float | None = None) -> tuple[float, int]:
    """Index and score of the candidate with the best confidence-adjusted bound.

    The selection split's own Clopper–Pearson bounds (pessimistic for the candidate) are
    projected to the estimation sample sizes and bounded again; projecting raw counts
    instead lets a tail event with 3-vs-0 counts look like a sure win and then fail.
    All candidates are ranked with Wilson bounds and the ``shortlist`` best re-scored
    exactly.  ``n_sel``/``n_est`` are (favoured side, other side); the selection bounds are at
    level ``alpha_sel`` (default ``alpha``), the projected ones at ``alpha``.

    With ``refine_level`` (a family of many nested candidates along a continuous scale:
    thresholds), the pessimism of ``alpha_sel`` only keeps the candidates whose score is within
    :data:`NEAR` of the best (which excludes deep-tail events that a few lucky counts make look
    good); among those, the one with the best score at the milder ``refine_level`` is taken.
    Near the optimum the bound is flat in the threshold, and the pessimism of α prefers the
    more central of near-equal thresholds for their larger counts, systematically short of the
    optimum.  The score returned stays the best one: the family competes with other views as
    before, only which of its near-ties is taken changes (returning the taken candidate's own,
    lower score hands some audits to a worse event of another view).
    """
    family = Candidates(np.asarray(k_fav, dtype=float), np.asarray(k_oth, dtype=float), n_sel, n_est,
                        alpha if alpha_sel is None else alpha_sel, refine_level)
    return best_candidates([family], delta, alpha, shortlist)[0]


def _stacked(families: Sequence[Candidates], index: np.ndarray, level: Sequence[float] | None = None
             ) -> tuple[np.ndarray, np.ndarray, Sizes, Sizes, np.ndarray]:
    """The ``index`` entries of every family's candidates laid end to end, with each one's sizes and
    selection level (``level``: one per family, in place of its own ``alpha_sel``)."""
    owner = np.repeat(np.arange(len(families)), [len(f.k_fav) for f in families])[index]

    def per(values: Sequence[float]) -> np.ndarray:
        return np.asarray(values, dtype=float)[owner]

    return (np.concatenate([f.k_fav for f in families])[index], np.concatenate([f.k_oth for f in families])[index],
            (per([f.n_sel[0] for f in families]), per([f.n_sel[1] for f in families])),
            (per([f.n_est[0] for f in families]), per([f.n_est[1] for f in families])),
            per([f.alpha_sel for f in families] if level is None else level))


def best_candidates(families: Sequence[Candidates], delta: float, alpha: float, shortlist: int = 16
                    ) -> list[tuple[float, int]]:
    """:func:`best_candidate` of each family, (score, index) — the same numbers (every step is
    element-wise in the candidates, and the exact test solves each event on its own), with every
    family's candidates scored together: three calls of the scoring functions, not three per family
    (a selection has a dozen small families; their per-call overhead was most of the pair search's
    pilot)."""
    if not families or any(len(f.k_fav) == 0 for f in families):  # as best_candidate: argmax of nothing raises
        return [best_candidate(f.k_fav, f.k_oth, f.n_sel, f.n_est, delta, alpha, shortlist, f.alpha_sel,
                               f.refine_level) for f in families]
    ends = np.cumsum([len(f.k_fav) for f in families])
    starts = ends - [len(f.k_fav) for f in families]
    k1, k2, n_sel, n_est, levels = _stacked(families, np.arange(ends[-1]))
    rough = _projected(k1, k2, n_sel, n_est, delta, alpha, wilson, levels)
    tops = [a + np.argsort(-rough[a:b], kind="stable")[:shortlist if f.refine_level is None
                                                         else max(shortlist, REFINE_SHORTLIST)]
            for a, b, f in zip(starts, ends, families, strict=True)]
    cuts = np.cumsum([0, *(len(t) for t in tops)])
    top = np.concatenate(tops)
    t1, t2, t_sel, t_est, t_levels = _stacked(families, top)
    exact = _projected_distinct(t1, t2, t_sel, t_est, delta, alpha, t_levels)
    picks = [int(np.argmax(exact[a:b])) for a, b in itertools.pairwise(cuts)]
    scores = [float(exact[a + j]) for a, j in zip(cuts[:-1], picks, strict=True)]
    refined = [i for i, f in enumerate(families) if f.refine_level is not None and math.isfinite(scores[i])]
    if refined:
        # Only the near-ties can be taken, so only they are scored at the milder level (each score is
        # element-wise: the same numbers as when every shortlisted row was scored).
        near = {i: exact[cuts[i]:cuts[i + 1]] >= scores[i] - NEAR * abs(scores[i]) for i in refined}
        rows = np.concatenate([cuts[i] + np.flatnonzero(near[i]) for i in refined])
        milder_levels = [f.refine_level if f.refine_level is not None else f.alpha_sel for f in families]
        milder = np.full(len(top), -np.inf)
        m1, m2, m_sel, m_est, m_levels = _stacked(families, top[rows], milder_levels)
        milder[rows] = _projected_distinct(m1, m2, m_sel, m_est, delta, alpha, m_levels)
        for i in refined:
            picks[i] = int(np.argmax(np.where(near[i], milder[cuts[i]:cuts[i + 1]], -np.inf)))
    return [(score, int(top[cuts[i] + picks[i]] - starts[i])) for i, score in enumerate(scores)]


@dataclass(frozen=True)
class Ceiling:
    """The best event fixed in advance (:func:`best_event`): its bound at the expected counts,
    the side it favours (0: D, 1: D′) and its membership test on outputs, so that it can also
    be counted on an audit's own estimation samples."""

    epsilon: float
    favours: int
    contains: Callable[[np.ndarray], np.ndarray]


# best_event's test where its caller does not say (a catalog's ceiling function): pair_only() sets it
_PAIR_ONLY: ContextVar[bool] = ContextVar("pair_only", default=False)


@contextmanager
def pair_only() -> Iterator[None]:
    """Within this block :func:`best_event` (and so every ceiling built on it) uses the
    Clopper–Pearson pair alone, the estimator's test before the joint one: the old ceiling, which
    the bench prints beside the new one."""
    token = _PAIR_ONLY.set(True)
    try:
        yield
    finally:
        _PAIR_ONLY.reset(token)


class BestEvent(NamedTuple):
    """:func:`best_event`'s answer: the ceiling ε, the best candidate's index and the side it favours
    (0: D, 1: D′).  A named tuple: callers that unpack the three values keep working."""

    epsilon: float
    candidate: int
    favours: int


def best_event(p_d: np.ndarray, p_dp: np.ndarray, n: int, delta: float, confidence: float, pair: bool | None = None
               ) -> BestEvent:
    """The statistical ceiling of an audit whose estimation split has ``n`` samples per side:
    (ε, index of the best candidate, side it favours).

    For each candidate event S with P[S] = ``p_d`` under D and ``p_dp`` under D′ (arrays over
    the candidates), the bound that S, fixed in advance, gives at the expected counts k = n·P[S]
    in both directions, max_S max(ε(n·p_d, n·p_dp), ε(n·p_dp, n·p_d)): ε is the best of the
    registered tests (:func:`both_tests`: the event's test is fixed in advance with it) at
    confidence ``confidence``, or with ``pair`` the Clopper–Pearson pair log((lo − δ)/hi) alone, each
    bound at α = (1 − confidence)/2, the estimator's only test before the joint one (real-valued
    counts: the Beta quantiles take them; the joint test rounds them); ``pair`` None: as
    :func:`pair_only` says.  The other tests (the joint one) are
    evaluated on the :data:`CEILING_SHORTLIST` best events of each direction by the pair's bound
    (2¹⁶ sets of a finite output space would otherwise each solve a root).
    No event chosen from data can beat the best event known in advance, so ours ÷ ceiling is
    the share of the attainable bound an audit reaches (≈ 1 when selection is perfect; a seed
    may land above 1 by the luck of its estimation samples).  ε is 0 when no event certifies
    anything.
    """
    alpha = (1.0 - confidence) / 2.0
    k_d, k_dp = np.clip(np.asarray(p_d, dtype=float), 0, 1) * n, np.clip(np.asarray(p_dp, dtype=float), 0, 1) * n
    pair_alone = _PAIR_ONLY.get() if pair is None else pair
    # pair_epsilon in both directions, exactly for every candidate that can be among the best (the
    # shortlist, or the best one with the pair alone), -inf for the others
    for_d, for_dp = _pair_scores(k_d, k_dp, n, delta, alpha, 1 if pair_alone else CEILING_SHORTLIST)
    if not pair_alone:
        for_d, for_dp = (_raised_on_shortlist(rough, a, b, n, delta, alpha)
                         for rough, a, b in ((for_d, k_d, k_dp), (for_dp, k_dp, k_d)))
    i, j = int(np.argmax(for_d)), int(np.argmax(for_dp))
    best = (float(for_d[i]), i, 0) if for_d[i] >= for_dp[j] else (float(for_dp[j]), j, 1)
    return BestEvent(epsilon=max(0.0, best[0]), candidate=best[1], favours=best[2])


CEILING_SHORTLIST = 256


def _pair_scores(k_d: np.ndarray, k_dp: np.ndarray, n: int, delta: float, alpha: float, keep: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The pair's bound of every candidate in each direction (favoured D: lo(k_d), hi(k_dp); favoured
    D′: lo(k_dp), hi(k_d)), exactly where the candidate may be among the ``keep`` best of its direction
    (ties broken by index, as a stable sort does) and -inf where it provably is not.

    Why it is exact: lo(k) = Beta⁻¹(α; k, n − k + 1) and hi(k) = Beta⁻¹(1 − α; k + 1, n − k) both
    increase with the (real) count k at fixed n (beta laws are stochastically ordered in their
    parameters), and log((lo − δ)/hi) increases in lo and decreases in hi.  Both are inverted at a few
    anchor counts; a count between two anchors a ≤ k ≤ b then has lo(a) ≤ lo(k) ≤ lo(b), and likewise hi,
    widened as :func:`dpaudit.engine.betainv.bracket` says (each checked answer is within a relative
    :data:`~dpaudit.engine.betainv.RELATIVE` of the true quantile), which gives a
    lower and an upper bound of each candidate's score.  At least ``keep`` candidates of a direction
    score at least its ``keep``-th largest lower bound F; one whose upper bound is below F −
    :data:`~dpaudit.engine.jointratio.PRUNE_MARGIN` scores strictly less than ``keep`` others, so it is
    neither in the shortlist nor tied with its last member.  Anchors get denser among the live
    candidates (:data:`~dpaudit.engine.betainv.BRACKET_STEPS`) until every live count is inverted, by
    the same element-wise calls as :func:`clopper_pearson` (a shift ceiling has 4·10⁵ candidates, of
    which a few thousand stay live)."""
    k_d, k_dp = np.broadcast_arrays(k_d, k_dp)
    counts, where = np.unique(np.concatenate([np.ravel(k_d), np.ravel(k_dp)]), return_inverse=True)
    where = where.reshape(-1)
    # a NaN count (bounds 0 and 1) is no point of the monotone order: then every count is inverted
    steps = (*betainv.BRACKET_STEPS, 1) if k_d.size > keep and np.isfinite(counts).all() else (1,)
    sides = ((where[:k_d.size], where[k_d.size:]), (where[k_d.size:], where[:k_d.size]))  # (lo's, hi's) per side
    live = [np.ones(k_d.size, dtype=bool), np.ones(k_d.size, dtype=bool)]
    value = {bound: np.zeros(len(counts)) for bound in (clopper_pearson_lower, clopper_pearson_upper)}
    known = {bound: np.zeros(len(counts), dtype=bool) for bound in value}
    for step in steps:
        for j, bound in enumerate(value):
            used = np.zeros(len(counts), dtype=bool)  # the counts of live candidates (np.unique hashes: slow)
            for fav_oth, on in zip(sides, live, strict=True):
                used[fav_oth[j][on]] = True
            wanted = np.flatnonzero(used)
            wanted = np.union1d(wanted[::step], wanted[-1:]) if step > 1 else wanted
            wanted = wanted[~known[bound][wanted]]
            value[bound][wanted], known[bound][wanted] = bound(counts[wanted], n, alpha), True
        if step == 1:
            break
        (lo_low, lo_high), (hi_low, hi_high) = (betainv.bracket(value[b], known[b]) for b in value)
        for (fav, oth), on in zip(sides, live, strict=True):
            low = epsilon_from_bounds(lo_low[fav[on]], hi_high[oth[on]], delta)
            high = epsilon_from_bounds(lo_high[fav[on]], hi_low[oth[on]], delta)
            floor = -np.partition(-low, keep - 1)[keep - 1] if low.size >= keep else -np.inf
            on[np.flatnonzero(on)[high < floor - PRUNE_MARGIN]] = False  # NaN never drops
    lo, hi = value[clopper_pearson_lower], value[clopper_pearson_upper]
    scores = []
    for (fav, oth), on in zip(sides, live, strict=True):
        score = np.full(k_d.shape, -np.inf)
        score.reshape(-1)[on] = epsilon_from_bounds(lo[fav[on]], hi[oth[on]], delta)
        scores.append(score)
    return scores[0], scores[1]


def _raised_on_shortlist(rough: np.ndarray, k_fav: np.ndarray, k_oth: np.ndarray, n: int, delta: float,
                         alpha: float) -> np.ndarray:
    """``rough`` (the pair's bound of every candidate) raised, on the :data:`CEILING_SHORTLIST` candidates
    best by it, to every other registered test's bound (the joint test's)."""
    rough = np.atleast_1d(rough)
    top = np.argsort(-rough, kind="stable")[:CEILING_SHORTLIST]
    best = rough
    for test in stattest.registered():
        if test is PAIR:  # rough is its bound already, of every candidate
            continue
        out = np.full(rough.shape, -np.inf)
        out[top] = test.bound(np.atleast_1d(k_fav)[top], n, np.atleast_1d(k_oth)[top], n, delta, alpha)
        best = np.maximum(best, out)
    return best


def ceiling(p_d: np.ndarray, p_dp: np.ndarray, n: int, delta: float, confidence: float,
            pair: bool | None = None) -> float:
    """The ε of :func:`best_event`."""
    return best_event(p_d, p_dp, n, delta, confidence, pair).epsilon


def all_subsets(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P[S] under each side for every non-empty set S of a finite output space with point
    probabilities ``p`` and ``q`` (2^K − 1 events: K ≤ 16)."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    k = len(p)
    if k > 16:
        raise ValueError(f"all_subsets enumerates 2^K sets: K = {k} is too many")
    masks = (np.arange(1, 1 << k)[:, None] >> np.arange(k)) & 1
    return masks @ p, masks @ q
