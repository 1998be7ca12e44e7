"""The planner's ranking is computed on fewer Clopper–Pearson inversions, never a different ranking
(issue #45): :func:`dpaudit.engine.jointratio.joint_score_best` against ``np.argmax`` of
:func:`~dpaudit.engine.jointratio.joint_score` on random counts of every regime (small exact
windows, large ones, ties, rows with nothing certified), the planner's simulated tail pilot against
the full scoring, and twins showing the comparisons catch a ranking that drops a winner.  No test
here measures a time."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from dpaudit.engine import jointratio, streaming
from dpaudit.engine.jointratio import clopper_pearson_lower, clopper_pearson_upper, joint_score, joint_score_best
from dpaudit.engine.plan import SIMULATIONS, Candidates

LEVELS = (0.025, 0.00025)  # per-side alpha of confidence 0.95 and 0.9995


def _counts(rng: np.random.Generator, rows: int, width: int, n: float) -> tuple[np.ndarray, np.ndarray]:
    """Random projected counts of nested-looking candidates: p from 1e-7 to 1e-2, q below p by a random
    ratio, both with noise (real-valued, as the planner projects them)."""
    p = np.sort(10 ** rng.uniform(-7, -2, (rows, width)), axis=1)
    k1 = np.maximum(p * n * (1 + 0.05 * rng.standard_normal((rows, width))), 0.0)
    k2 = k1 * np.exp(-rng.uniform(0.0, 1.2, (rows, width)))
    k2 = np.maximum(k2 + 2 * np.sqrt(k2) * rng.standard_normal((rows, width)), 0.0)
    return k1, k2


def _reference(k1, n1, k2, n2, delta, alpha):
    score = joint_score(k1, n1, k2, n2, delta, alpha)
    best = np.argmax(score, axis=-1)
    return best, np.take_along_axis(score, best[..., None], axis=-1)[..., 0]


@pytest.mark.parametrize("n", [2e4, 1e6, 1e8, 2e9])
@pytest.mark.parametrize("delta", [0.0, 5e-7, 1e-4])
def test_pruned_ranking_is_the_full_one(n, delta):
    rng = np.random.default_rng(int(n) % 1000 + int(delta * 1e7))
    for alpha in LEVELS:
        k1, k2 = _counts(rng, 12, 150, n)
        best, value = joint_score_best(k1, n, k2, n, delta, alpha)
        ref_best, ref_value = _reference(k1, n, k2, n, delta, alpha)
        assert np.array_equal(best, ref_best)
        assert np.array_equal(value, ref_value)  # bit for bit, -inf included


def test_ties_rows_without_a_certified_candidate_and_other_shapes():
    rng = np.random.default_rng(7)
    n = 3e8
    k1, k2 = _counts(rng, 6, 80, n)
    k1[:, 40:] = k1[:, :40]  # every candidate twice: the first of equal maxima wins
    k2[:, 40:] = k2[:, :40]
    k1[2], k2[2] = 0.0, 1e5  # a row where nothing is certified (all -inf): index 0, as np.argmax
    for delta in (0.0, 5e-7):
        best, value = joint_score_best(k1, n, k2, n, delta, 0.00025)
        ref_best, ref_value = _reference(k1, n, k2, n, delta, 0.00025)
        assert np.array_equal(best, ref_best) and np.array_equal(value, ref_value)
        assert (best < 40).all() and best[2] == 0 and value[2] == -np.inf
    one_best, _ = joint_score_best(k1[0], n, k2[0], n, 0.0, 0.025)  # one row: scalars back
    assert one_best.shape == () and one_best == _reference(k1[0], n, k2[0], n, 0.0, 0.025)[0]
    cube = np.stack([k1, k1])  # more leading axes
    assert np.array_equal(joint_score_best(cube, n, np.stack([k2, k2]), n, 0.0, 0.025)[0],
                          _reference(cube, n, np.stack([k2, k2]), n, 0.0, 0.025)[0])
    with pytest.raises(ValueError, match="candidate axis"):
        joint_score_best(np.float64(5.0), n, np.float64(1.0), n, 0.0, 0.025)


def test_it_inverts_fewer_counts_than_it_ranks(monkeypatch):
    """The point of it, checked by counting: far fewer Clopper–Pearson inversions than candidates."""
    inverted = []
    real = jointratio.clopper_pearson_upper
    monkeypatch.setattr(jointratio, "clopper_pearson_upper",
                        lambda k, n, a: inverted.append(np.size(k)) or real(k, n, a))
    rng = np.random.default_rng(3)
    n = 5e8  # p from 3e-4 to 3e-2: every window above SCREEN_TERMS (the small-window test inverts its own)
    k1 = np.sort(10 ** rng.uniform(-3.5, -1.5, (12, 400)), axis=1) * n * (1 + 0.05 * rng.standard_normal((12, 400)))
    k2 = k1 * np.exp(-rng.uniform(0.0, 1.2, (12, 400)))
    assert (jointratio.window_terms(k1, n, k2, n, jointratio.ODDS_SHARE * 0.0005) > jointratio.SCREEN_TERMS).all()
    best, _ = joint_score_best(k1, n, k2, n, 5e-7, 0.00025)
    assert 0 < sum(inverted) < k1.size / 4
    assert np.array_equal(best, _reference(k1, n, k2, n, 5e-7, 0.00025)[0])


def test_a_pruning_that_drops_a_winner_is_caught(monkeypatch):
    """The twin: with a margin of the wrong sign (candidates dropped up to 1 nat above the floor) the
    same comparison as above fails, so it can fail."""
    monkeypatch.setattr(jointratio, "PRUNE_MARGIN", -1.0)
    rng = np.random.default_rng(11)
    k1, k2 = _counts(rng, 12, 150, 1e8)
    best, value = joint_score_best(k1, 1e8, k2, 1e8, 5e-7, 0.00025)
    ref_best, ref_value = _reference(k1, 1e8, k2, 1e8, 5e-7, 0.00025)
    assert not (np.array_equal(best, ref_best) and np.array_equal(value, ref_value))


@pytest.mark.parametrize("n", [1e6, 1e9, 3e10])
def test_computed_clopper_pearson_bounds_are_monotone_in_k(n):
    """The one property of the inversions the pruning leans on: at fixed n both bounds do not decrease
    with k, up to a relative 10⁻¹² (far less than the brackets' widening), on consecutive counts (999 and 1000
    included, where scipy's own inversions are not monotone: dpaudit.engine.betainv checks them) and on
    a wide spread of them.  Should an inversion answer wrongly elsewhere, this fails and says where."""
    rng = np.random.default_rng(int(np.log10(n)))
    spread = np.unique(np.round(10 ** rng.uniform(0, np.log10(n) - 0.01, 3000)))
    k = np.unique(np.concatenate([np.arange(0, 3000), spread, spread + 1])).astype(float)
    k = k[k < n]
    nn = np.full(k.shape, n)
    for alpha in (0.0025, 0.000025):
        for bound in (clopper_pearson_upper(k, nn, alpha), clopper_pearson_lower(k, nn, alpha)):
            drop = bound[:-1] - bound[1:]  # positive where a larger k got a smaller bound
            bad = k[:-1][drop > bound[1:] * 1e-12]
            assert bad.size == 0, f"non-monotone Clopper-Pearson bounds at k = {bad[:5]} (n = {n:g}, alpha = {alpha})"


def test_the_ranking_around_1000_counts_is_exact():
    """At n = 10⁹ scipy alone put p_lo(1000) at twice its neighbours' (the row's winner by that error);
    with the checked inversions, and every window scored in closed form (SCREEN_TERMS 0), the pruned
    ranking equals the full one and the winner is not 1000 counts; the twin: an inversion wrong there
    as scipy 1.17's is would have made it the winner."""
    n, delta = 1e9, 5e-7
    k1 = np.tile(np.arange(900.0, 1100.0), (3, 1))
    k2 = np.full(k1.shape, 60.0)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(jointratio, "SCREEN_TERMS", 0)
        ref_best, ref_value = _reference(k1, n, k2, n, delta, 0.00025)
        best, value = joint_score_best(k1, n, k2, n, delta, 0.00025)
        assert np.array_equal(best, ref_best) and np.array_equal(value, ref_value)
        assert (k1[0, ref_best] != 1000.0).all()
        # scipy 1.17's own inverse at a = 1000 (about twice the quantile at n = 10⁹), whatever scipy runs here
        m.setattr(jointratio.betainv, "betaincinv",
                  lambda a, b, p: special.betaincinv(a, b, p) * np.where(np.asarray(a) == 1000.0, 2.0, 1.0))
        wrong_best, _ = _reference(k1, n, k2, n, delta, 0.00025)
        assert (k1[0, wrong_best] == 1000.0).all()


def test_pilot_best_is_the_argmax_of_pilot_scores():
    rng = np.random.default_rng(5)
    pilot, n_est = 1_000_000, 400_000_000
    k_fav = np.cumsum(rng.poisson(3.0, (SIMULATIONS, 300)), axis=1).astype(float)
    k_oth = np.cumsum(rng.poisson(1.5, (SIMULATIONS, 300)), axis=1).astype(float)
    for delta in (0.0, 5e-7):
        score = streaming.pilot_scores(k_fav, k_oth, pilot, n_est, delta, 0.00025)
        j, top = streaming.pilot_best(k_fav, k_oth, pilot, n_est, delta, 0.00025)
        assert np.array_equal(j, np.argmax(score, axis=1))
        assert np.array_equal(top, score[np.arange(SIMULATIONS), j])


def _grid_like(rng: np.random.Generator) -> Candidates:
    """Threshold-grid candidates as the planner builds them: two nested families (both directions)."""
    p = np.sort(10 ** rng.uniform(-8, -0.5, 250))
    q = np.minimum(p * np.exp(-0.6), p - 1e-7).clip(min=0.0)
    families = (np.argsort(p, kind="stable"), 250 + np.argsort(q, kind="stable"))
    return Candidates(np.concatenate([p, q]), np.concatenate([q, p]), "test", families)


def _piloted_unpruned(cands: Candidates, pilot: int, n: int, delta: float, confidence: float) -> np.ndarray:
    """The planner's simulated tail pilot as it was: the same simulated counts
    (:meth:`Candidates.simulated_counts`, same noise stream), every candidate scored, then np.argmax."""
    alpha = (1 - confidence) / 2
    rows = np.arange(SIMULATIONS)
    picks, best = np.zeros(SIMULATIONS, dtype=np.int64), np.full(SIMULATIONS, -np.inf)
    noise = np.random.default_rng(0)
    for family in cands.families:
        k_fav, k_oth = cands.simulated_counts(family, pilot, noise)
        score = streaming.pilot_scores(k_fav, k_oth, pilot, n, delta, alpha)
        j = np.argmax(score, axis=1)
        better = score[rows, j] > best
        best[better], picks[better] = score[rows, j][better], family[j][better]
    return picks


@pytest.mark.parametrize("delta", [0.0, 5e-7])
def test_the_planners_simulated_pilot_picks_what_full_scoring_picks(delta):
    cands = _grid_like(np.random.default_rng(2))
    for pilot, n in ((2_000_000, 10**8), (40_000_000, 5 * 10**8), (100_000, 10**6)):
        assert np.array_equal(cands.piloted(pilot, n, delta, 0.9995), _piloted_unpruned(cands, pilot, n, delta, 0.9995))


def test_bounds_at_an_index_are_the_full_bounds_there():
    cands = _grid_like(np.random.default_rng(4))
    index = np.array([3, 3, 499, 0, 250, 260, 17, 17, 120, 420, 77, 5])
    for n, delta in ((10**6, 0.0), (10**9, 5e-7)):
        assert np.array_equal(cands.bounds(n, delta, 0.9995, index), cands.bounds(n, delta, 0.9995)[index])


def test_small_windows_that_cannot_reach_the_best_large_one_are_not_solved(monkeypatch):
    """Tables scored by the exact conditional test (windows up to SCREEN_TERMS) are solved only where one
    evaluation of their tail cannot rule them out; the ranking stays the full one."""
    solved = []
    real = jointratio.joint_epsilon
    monkeypatch.setattr(jointratio, "joint_epsilon", lambda *a: solved.append(np.size(a[0])) or real(*a))
    rng = np.random.default_rng(9)
    n = 4e8  # p from 1e-6 (small windows, k ~ 400) to 1e-3 (large ones), the favoured side well ahead at the top
    k1 = np.sort(10 ** rng.uniform(-6, -3, (12, 300)), axis=1) * n
    k2 = k1 * np.exp(-np.linspace(0.1, 0.9, 300)) * (1 + 0.02 * rng.standard_normal((12, 300)))
    small = jointratio.window_terms(k1, n, k2, n, jointratio.ODDS_SHARE * 0.0005) <= jointratio.SCREEN_TERMS
    assert 0.2 < small.mean() < 0.8
    best, value = joint_score_best(k1, n, k2, n, 5e-7, 0.00025)
    assert sum(solved) < small.sum() / 4
    monkeypatch.setattr(jointratio, "joint_epsilon", real)
    ref_best, ref_value = _reference(k1, n, k2, n, 5e-7, 0.00025)
    assert np.array_equal(best, ref_best) and np.array_equal(value, ref_value)
