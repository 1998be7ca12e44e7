"""The joint exact test of the ratio (dpaudit.engine.jointratio): exact against scipy, valid at its
stated confidence on simulated binomial counts, and tighter than the Clopper–Pearson pair on rare
events (issue #36, point 1).

Validity tests count how often the bound lands above the true ε over many independent draws and
assert the rate is at most α + 3 standard errors of a rate α (a false alarm probability of about
0.1 % per cell for a valid test)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats.contingency import odds_ratio

from dpaudit import audit_samples
from dpaudit.engine import jointratio
from dpaudit.engine.bounds import better_test, both_tests, joint_epsilon, pair_epsilon
from dpaudit.engine.jointratio import ODDS_SHARE, epsilon_lower, odds_ratio_lower
from dpaudit.results.recheck import recomputed_lower

ALPHA = 0.05  # total level: confidence 0.95; the callers' per-side convention is ALPHA / 2


def _ceiling_rate(draws: int) -> float:
    return ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / draws)


def test_the_odds_ratio_bound_is_scipys_exact_conditional_interval():
    rng = np.random.default_rng(1)
    tables = [(5, 1000, 0, 1000), (1, 10, 0, 10), (10, 10, 3, 10), (3, 5, 3, 5), (2000, 100000, 1810, 100000),
              (23, 199, 191, 194), (93, 290, 64, 65), (30, 30, 0, 100)]
    for _ in range(12):
        n1, n2 = rng.integers(1, 300, 2)
        tables.append((int(rng.integers(0, n1 + 1)), int(n1), int(rng.integers(0, n2 + 1)), int(n2)))
    k1, n1, k2, n2 = (np.array(c, dtype=float) for c in zip(*tables, strict=True))
    ours = odds_ratio_lower(k1, n1, k2, n2, 0.045)  # all at once
    for i, (a, n, b, m) in enumerate(tables):
        ref = odds_ratio([[a, n - a], [b, m - b]], kind="conditional").confidence_interval(
            confidence_level=0.955, alternative="greater").low
        assert ours[i] == pytest.approx(ref, rel=1e-9, abs=1e-300)
        assert float(odds_ratio_lower(a, n, b, m, 0.045)) == ours[i]  # one at a time (or cached): the same number


def test_the_summed_window_gives_the_whole_supports_bound(monkeypatch):
    k1, n1 = np.array([2000.0, 2e5, 3, 40, 900]), np.array([1e5, 1e6, 1e6, 1e6, 1e3])
    k2 = np.array([1810.0, 1.81e5, 0, 2, 200])
    windowed = odds_ratio_lower(k1, n1, k2, n1, 0.045)
    monkeypatch.setattr(jointratio, "WINDOW_SD", 1e9)
    monkeypatch.setattr(jointratio, "_CACHE", {})  # solved again, not read back
    np.testing.assert_allclose(windowed, odds_ratio_lower(k1, n1, k2, n1, 0.045), rtol=1e-10)


def test_the_correction_is_a_lower_bound_of_the_ratio_whenever_its_two_bounds_hold():
    """p/q = ψ(1 − p) + p: for every ψ_lo ≤ ψ and p_hi ≥ p, ψ_lo − p_hi·max(0, ψ_lo − 1) ≤ p/q."""
    rng = np.random.default_rng(2)
    p, q = rng.uniform(1e-4, 1, 100_000), rng.uniform(1e-4, 1, 100_000)
    psi = p * (1 - q) / (q * (1 - p))
    psi_lo, p_hi = psi * rng.uniform(0, 1, p.size), p + (1 - p) * rng.uniform(0, 1, p.size)
    assert np.all(psi_lo - p_hi * np.maximum(0, psi_lo - 1) <= p / q * (1 + 1e-12))


def _above_rate(p: float, eps: float, n: int, draws: int, seed: int, delta: float = 0.0) -> float:
    rng = np.random.default_rng(seed)
    q = (p - delta) / math.exp(eps)  # the event's own (p - delta)/q is e^eps
    k1, k2 = rng.binomial(n, p, draws), rng.binomial(n, q, draws)
    return float(np.mean(epsilon_lower(k1, n, k2, n, delta, ALPHA) > eps))


@pytest.mark.parametrize("p,eps", [(0.02, 0.1), (0.02, 1.0), (0.2, 0.1), (0.2, 3.0)])
def test_validity_small_grid(p, eps):
    """400 draws per cell at n = 10^4 per side (the heavy grid is in the slow tier)."""
    assert _above_rate(p, eps, 10_000, 400, seed=11) <= _ceiling_rate(400)


@pytest.mark.slow  # ~1 min: 12 cells of 2,000 exact bounds
@pytest.mark.parametrize("n", [10**5, 10**6])
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("p", [0.02, 0.2])
def test_validity_issue_grid_2000_draws(p, eps, n):
    assert _above_rate(p, eps, n, 2000, seed=7) <= _ceiling_rate(2000)


@pytest.mark.parametrize("p,eps,delta", [(0.02, 1.0, 0.005), (0.2, 0.5, 0.05), (0.002, 2.0, 1e-4)])
def test_validity_with_delta(p, eps, delta):
    """δ > 0: (p − δ)/q ≥ r_lo(1 − δ/p_lo), 1,000 draws at n = 10^5."""
    assert _above_rate(p, eps, 100_000, 1000, seed=13, delta=delta) <= _ceiling_rate(1000)


# The Gaussian ceiling's best events at δ = 10⁻⁵ (σ for ε(10⁻⁵) = 1; dpaudit.engine.bounds.best_event):
# deep tails, where the joint test gains most (0.753 → 0.809 at 8·10⁵, 0.884 → 0.919 at 8·10⁶).
GAUSSIAN_TAILS = [(8.860847747e-4, 3.443663182e-4, 800_000), (3.119859831e-4, 1.125573017e-4, 8_000_000)]


@pytest.mark.parametrize("p,q,n", GAUSSIAN_TAILS)
def test_validity_with_delta_in_the_gaussian_tails(p, q, n):
    """(p − δ)/q of the event itself is the truth held against (≤ the mechanism's ε(δ) = 1)."""
    draws = 600
    rng = np.random.default_rng(17)
    k1, k2 = rng.binomial(n, p, draws), rng.binomial(n, q, draws)
    truth = math.log((p - 1e-5) / q)
    assert np.mean(epsilon_lower(k1, n, k2, n, 1e-5, ALPHA) > truth) <= _ceiling_rate(draws)


def test_validity_twin_a_leak_above_the_tested_epsilon_is_seen():
    """A leak of ε = 1.5 held against ε = 1 (p = 0.02, n = 10^5): the bound exceeds 1 in ≥ 90 % of draws."""
    rng = np.random.default_rng(3)
    k1, k2 = rng.binomial(100_000, 0.02, 400), rng.binomial(100_000, 0.02 / math.exp(1.5), 400)
    assert np.mean(epsilon_lower(k1, 100_000, k2, 100_000, 0.0, ALPHA) > 1.0) >= 0.9


# The table of issue #36, point 1 (CP pair median, joint median), 2,000 draws each there.
TABLE = [(0.02, 0.1, 10**5, 0.0111, 0.0457), (0.02, 0.1, 10**6, 0.0715, 0.0824), (0.2, 0.1, 10**5, 0.0745, 0.0840),
         (0.02, 1.0, 10**5, 0.884, 0.926), (0.02, 3.0, 10**5, 2.763, 2.826)]


@pytest.mark.parametrize("p,eps,n,pair_median,joint_median", TABLE)
def test_power_the_issue_table_is_reproduced(p, eps, n, pair_median, joint_median):
    """Medians over 300 draws (the median's s.e. is about 1.25·σ/√300 ≈ 0.07σ of the bound's spread)."""
    rng = np.random.default_rng(5)
    k1, k2 = rng.binomial(n, p, 300), rng.binomial(n, p / math.exp(eps), 300)
    joint = np.median(np.maximum(joint_epsilon(k1, n, k2, n, 0.0, ALPHA / 2), 0))
    pair = np.median(np.maximum(pair_epsilon(k1, n, k2, n, 0.0, ALPHA / 2), 0))
    spread = (joint_median - pair_median) / 2 + 0.01 * eps  # well under the gain itself
    assert pair == pytest.approx(pair_median, abs=spread)
    assert joint == pytest.approx(joint_median, abs=spread)
    assert joint > pair


def test_power_through_the_public_api_a_rare_event_gets_the_joint_test():
    """Outputs 1 with probability 0.02 under D and 0.02/e^0.5 under D′, 250,000 per side."""
    rng = np.random.default_rng(0)
    n = 250_000
    x, y = (rng.random(n) < 0.02).astype(int), (rng.random(n) < 0.02 / math.exp(0.5)).astype(int)
    b = audit_samples(x, y, discrete=True).bounds[0]
    (k1, n1), (k2, n2) = ((b.counts[0], b.counts[1]), (b.counts[2], b.counts[3]))
    assert b.test == "joint" and "odds ratio" in b.witness()
    assert b.epsilon_lower == pytest.approx(float(joint_epsilon(k1, n1, k2, n2, 0.0, ALPHA / 2)))
    assert b.epsilon_lower > float(pair_epsilon(k1, n1, k2, n2, 0.0, ALPHA / 2)) + 0.02


def test_a_common_event_keeps_the_pair_which_is_tighter_there():
    """Randomized response at ε = 1 (p = 0.73): the odds ratio is noisier than the ratio; the test is
    chosen with the event on the selection split, so the estimator's bound is the pair's."""
    assert better_test(0.731 * 80_000, 80_000, 0.269 * 80_000, 80_000, 0.0, 0.025) == "clopper-pearson"
    assert better_test(0.02 * 80_000, 80_000, 0.012 * 80_000, 80_000, 0.0, 0.025) == "joint"
    k = np.array([0.731 * 80_000, 1600.0])
    o = np.array([0.269 * 80_000, 960.0])
    np.testing.assert_array_equal(both_tests(k, 80_000, o, 80_000, 0.0, 0.025),
                                  np.maximum(joint_epsilon(k, 80_000, o, 80_000, 0.0, 0.025),
                                             pair_epsilon(k, 80_000, o, 80_000, 0.0, 0.025)))


def test_the_odds_share_is_ninety_percent():
    assert ODDS_SHARE == 0.9


def test_a_saved_bound_is_rechecked_with_its_own_test():
    event = {"counts": {"D": [2000, 100_000], "D'": [1600, 100_000]}, "event": {"favours": "D"},
             "confidence": 0.95, "delta": 0.0}
    joint = max(0.0, float(joint_epsilon(2000, 100_000, 1600, 100_000, 0.0, 0.025)))
    pair = max(0.0, float(pair_epsilon(2000, 100_000, 1600, 100_000, 0.0, 0.025)))
    assert joint > pair
    assert recomputed_lower(event) == pytest.approx(pair)  # a record from before the joint test
    assert recomputed_lower({**event, "test": "joint"}) == pytest.approx(joint)


SEEDS = 200  # 200 audits at confidence 0.95: at most 5 % + 3 s.e. (≈ 19) above the truth


@pytest.mark.slow  # 200 audits of 10^5 outputs per side (~20 s)
def test_validity_randomized_response_eps1_through_the_public_api():
    from dpaudit import audit_mechanism
    from dpaudit.mechanisms.classic import RandomizedResponse
    from dpaudit.neighbors import Dataset
    bit = Dataset({"bit": [0]})
    above = sum(audit_mechanism(RandomizedResponse(1.0), bit, bit.add({"bit": 1}), samples=100_000,
                                seed=s).epsilon_lower > 1.0 for s in range(SEEDS))
    assert above <= SEEDS * _ceiling_rate(SEEDS)


def _rare(seed: int, eps: float) -> float:
    """A rare output: 1 with probability 0.02 under D and 0.02/e^eps under D′ (true ε = eps at δ = 0)."""
    rng = np.random.default_rng(seed)
    x, y = (rng.random(100_000) < 0.02).astype(int), (rng.random(100_000) < 0.02 / math.exp(eps)).astype(int)
    return audit_samples(x, y, discrete=True, seed=seed).epsilon_lower


@pytest.mark.slow  # 200 audits (~15 s)
def test_validity_a_rare_event_through_the_public_api():
    assert sum(_rare(s, 1.0) > 1.0 for s in range(SEEDS)) <= SEEDS * _ceiling_rate(SEEDS)


def test_validity_twin_a_rare_leak_above_its_claim_is_caught_through_the_public_api():
    """True ε = 1.6 held against 1: caught (ε_lower > 1) in at least 18 of 20 audits."""
    assert sum(_rare(s, 1.6) > 1.0 for s in range(20)) >= 18


@pytest.mark.parametrize("samples,new,old", [(1_000_000, 0.809, 0.753), (10_000_000, 0.919, 0.884)])
def test_the_bench_prints_the_old_clopper_pearson_ceiling_beside_the_new_one(samples, new, old):
    """Analytic Gaussian, ε(10⁻⁵) = 1: the pair's ceiling is issue #16's figure, the joint test's above it."""
    from dpaudit.catalog import classic
    from dpaudit.runs import bench
    case = next(c for c in classic.bench() if c.name.startswith("gaussian"))
    n = bench.estimation_samples(samples)
    assert bench.pair_ceiling(case.ceiling, n) == pytest.approx(old, abs=5e-4)
    assert case.ceiling(n, 0.95).epsilon == pytest.approx(new, abs=5e-4)
    row = {"family": "gaussian", "view": "auto", "samples_per_side": samples, "ceiling": new, "ceiling_pair": old,
           "median": 0.97, "min": 0.9, "seeds": 1, "same_sample_median": None, "same_sample_min": None,
           "median_over_pair": 1.04}
    text = bench.table({"throughput": [], "views": [row], "tightness": []})
    assert "CP ceil" in text and f"{old:8.4f}" in text and "1.0400" in text


def test_scores_use_the_exact_test_on_small_windows_and_a_close_approximation_on_large_ones():
    """Counts of 10⁵–10⁸ outputs: where a window exceeds SCREEN_TERMS (every cell > 10,000) Woolf's
    closed form is within 10⁻⁴ of the exact bound; elsewhere the score is the exact bound."""
    from dpaudit.engine.bounds import SCREEN_TERMS, joint_score
    rng = np.random.default_rng(0)
    n = 10 ** rng.uniform(5, 8, 300)
    p = 10 ** rng.uniform(-2.5, -0.05, 300)
    k1, k2 = np.rint(n * p), np.rint(n * p * np.exp(-rng.uniform(0, 3, 300)))
    big = jointratio.window_terms(k1, n, k2, n, ODDS_SHARE * ALPHA) > SCREEN_TERMS
    assert 50 < big.sum() < 250
    exact = epsilon_lower(k1, n, k2, n, 0.0, ALPHA)
    score = joint_score(k1, n, k2, n, 0.0, ALPHA / 2)
    np.testing.assert_array_equal(score[~big], exact[~big])
    np.testing.assert_allclose(score[big], exact[big], atol=1e-4)
