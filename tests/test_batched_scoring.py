"""Candidates of every family scored in one batch (dpaudit.engine.bounds.best_candidates) give the
numbers the family-by-family scoring gave, bit for bit: the batch is a speed-up, not a new statistic.
Fixed seeds; no confidence statement (identity of numbers)."""

import numpy as np

from dpaudit.engine.bounds import (
    NEAR,
    REFINE_SHORTLIST,
    Candidates,
    best_candidate,
    best_candidates,
    both_tests,
    clopper_pearson,
    epsilon_from_bounds,
    projected_counts,
    wilson,
)


def _reference(c: Candidates, delta: float, alpha: float, shortlist: int = 16) -> tuple[float, int]:
    """best_candidate as it was before the batch: one family, its own calls (kept here as the oracle)."""
    def projected(k_fav, k_oth, bounds, level):
        k1, k2 = projected_counts(k_fav, k_oth, c.n_sel, c.n_est, level, bounds)
        if bounds is clopper_pearson:
            return both_tests(k1, c.n_est[0], k2, c.n_est[1], delta, alpha)
        return epsilon_from_bounds(bounds(k1, c.n_est[0], alpha)[0], bounds(k2, c.n_est[1], alpha)[1], delta)

    rough = projected(c.k_fav, c.k_oth, wilson, c.alpha_sel)
    top = np.argsort(-rough, kind="stable")[:shortlist if c.refine_level is None else max(shortlist, REFINE_SHORTLIST)]
    exact = projected(c.k_fav[top], c.k_oth[top], clopper_pearson, c.alpha_sel)
    j = int(np.argmax(exact))
    score = float(exact[j])
    if c.refine_level is not None and np.isfinite(score):
        near = exact >= score - NEAR * abs(score)
        milder = projected(c.k_fav[top], c.k_oth[top], clopper_pearson, c.refine_level)
        j = int(np.argmax(np.where(near, milder, -np.inf)))
    return score, int(top[j])


def _family(rng: np.random.Generator) -> Candidates:
    size = int(rng.choice([1, 2, 3, 20, 90]))
    n_sel = (int(rng.integers(50, 200_000)), int(rng.integers(50, 200_000)))
    p = np.sort(rng.uniform(0, 1, size)) ** int(rng.integers(1, 4))
    ratio = np.exp(rng.uniform(-0.2, 3.0, size))
    k_fav = rng.binomial(n_sel[0], p).astype(float)
    k_oth = rng.binomial(n_sel[1], np.clip(p / ratio, 0, 1)).astype(float)
    n_est = (int(rng.integers(100, 5_000_000)),) * 2
    level = float(rng.choice([0.025, 0.005, 0.1587, 0.25]))
    return Candidates(k_fav, k_oth, n_sel, n_est, level, None if rng.random() < 0.5 else 0.1587)


def test_a_batch_of_families_scores_each_as_the_family_alone_bit_for_bit():
    rng = np.random.default_rng(20261127)
    for _ in range(40):
        families = [_family(rng) for _ in range(int(rng.integers(1, 12)))]
        delta = float(rng.choice([0.0, 0.0, 1e-5, 1e-3]))
        alpha = float(rng.choice([0.025, 0.0005]))
        batched = best_candidates(families, delta, alpha)
        assert batched == [_reference(f, delta, alpha) for f in families]
        assert batched == [best_candidate(f.k_fav, f.k_oth, f.n_sel, f.n_est, delta, alpha, alpha_sel=f.alpha_sel,
                                          refine_level=f.refine_level) for f in families]


def test_a_selection_and_a_pilot_score_are_unchanged_by_the_batch():
    """The pair search's pilot score (two δs, two selection levels) and the event a selection picks
    on report-noisy-max-like outputs: the batched path against the per-family oracle."""
    from dpaudit.engine import selection
    from dpaudit.engine.estimate import resolve_views
    rng = np.random.default_rng(7)
    x, y = rng.integers(0, 5, 4000), np.minimum(rng.integers(0, 6, 4000), 4)
    views = resolve_views(None, "auto")
    families, n_score = selection.candidate_views(x, y, views, np.random.default_rng(0))
    n_fit, alpha = (2000, 2000), 0.025
    for delta in (0.0, 1e-4):
        for level in (None, 0.25):
            expected = None
            for fam in families:
                k_fav, k_oth, n, at = selection._scored(fam, n_score, n_fit, alpha if level is None else level)
                got = _reference(Candidates(np.asarray(k_fav, float), np.asarray(k_oth, float), n,
                                            (5000, 5000), at, fam.refine_level), delta, alpha)
                if expected is None or got[0] > expected[0]:
                    expected = (got[0], fam, got[1])
            assert selection._best(families, n_score, (5000, 5000), delta, alpha, n_fit, level) == expected
    scores = selection.predicted_bound(x, y, (0.0, 0.0), (5000, 5000), 0.95, views, 0, (None, 0.25))
    assert scores[0] == scores[1] and scores[0][0] == selection._best(families, n_score, (5000, 5000), 0.0, alpha,
                                                                       n_fit)[0]
