"""dpaudit.engine.tradeoff: the claimed f-DP curve, (FPR, FNR) boxes from counts, and the μ-GDP fit.

The statistical checks use fixed seeds; where a check is a confidence statement the
docstring says at what confidence it holds for a fresh seed.
"""

import math

import numpy as np
import pytest
from scipy.stats import beta, norm

from dpaudit import Event, audit_mechanism
from dpaudit.engine.tradeoff import claimed_fnr, gdp_estimate, tradeoff_points, violates
from dpaudit.mechanisms.classic import on_grid


class GaussianShift:
    """q(D) + N(0, 1) on an integer count: for the pair (0, 1) the trade-off curve is G_1 (1-GDP)."""

    name = "gaussian-shift"

    def __init__(self, mu):
        self.mu = mu

    def sample(self, data, size, rng):
        return on_grid(data * self.mu + rng.normal(0.0, 1.0, size))


class LaplaceShift:
    """q(D) + Lap(1/ε): ε-DP, and its trade-off curve is not Gaussian."""

    name = "laplace-shift"

    def __init__(self, epsilon):
        self.epsilon = epsilon

    def sample(self, data, size, rng):
        return on_grid(float(data) + rng.laplace(0.0, 1.0 / self.epsilon, size))


def gaussian_curve(alpha, mu):
    return norm.cdf(norm.isf(alpha) - mu)


def test_claimed_fnr_is_the_three_piece_curve_of_dong_roth_su():
    e = math.exp(math.log(2.0))
    assert claimed_fnr(0.1, math.log(2.0), 0.0) == pytest.approx(max(0.0, 1 - e * 0.1, (1 - 0.1) / e))  # 0.8
    assert claimed_fnr(0.6, math.log(2.0), 0.0) == pytest.approx(0.2)                                 # (1-a)/e
    assert claimed_fnr(0.1, 1.0, 0.3) == pytest.approx(max(0.0, 0.7 - math.e * 0.1, 0.6 / math.e))
    assert claimed_fnr(0.99, 1.0, 0.05) == pytest.approx(0.0)                                         # clipped at 0
    assert claimed_fnr(np.array([0.0, 1.0]), 0.5, 0.0).tolist() == pytest.approx([1.0, 0.0])
    assert np.isfinite(claimed_fnr(0.2, 1e6, 0.0))  # e^ε is capped, no overflow


def test_tradeoff_points_are_clopper_pearson_boxes_bonferroni_over_four_bounds_per_point():
    events = [Event("D", "threshold", threshold=1.0), Event("D'", "threshold", threshold=0.0, upper=False)]
    k_d, k_dp, n = np.array([900, 50]), np.array([100, 700]), 1000
    points = tradeoff_points(events, k_d, n, k_dp, n, 0.95)
    a = 0.05 / (4 * 2)
    # event 0 favours D: FPR = P_D'(S), FNR = 1 - P_D(S); event 1 favours D': roles swap
    want = [
        (100 / n, beta.ppf(a, 100, 901), beta.isf(a, 101, 900), 0.1, 1 - beta.isf(a, 901, 100),
         1 - beta.ppf(a, 900, 101)),
        (50 / n, beta.ppf(a, 50, 951), beta.isf(a, 51, 950), 0.3, 1 - beta.isf(a, 701, 300),
         1 - beta.ppf(a, 700, 301)),
    ]
    got = sorted(points, key=lambda p: p.fnr)
    for p, w in zip(got, want, strict=True):
        assert (p.fpr, p.fpr_lower, p.fpr_upper, p.fnr, p.fnr_lower, p.fnr_upper) == pytest.approx(w, rel=1e-9)
    assert [p.fpr for p in points] == sorted(p.fpr for p in points)  # sorted by FPR
    assert set(points[0].to_dict()) == {"fpr", "fpr_lower", "fpr_upper", "fnr", "fnr_lower", "fnr_upper"}
    assert tradeoff_points([], [], n, [], n, 0.95) == ()
    assert tradeoff_points(events, k_d, 0, k_dp, n, 0.95) == ()


def test_violates_needs_a_box_entirely_below_the_curve():
    (p,) = tradeoff_points([Event("D", "threshold")], np.array([900]), 100_000, np.array([10]), 100_000, 0.95)
    # FPR ~ 1e-4, FNR ~ 0.991: far below 1 - e^0.1 * 1e-4, so (0.1, 0)-DP is refuted ...
    assert violates([p], 0.1, 0.0)
    # ... but not (ε, δ) with δ = 0.01: 1 - δ - e^ε α < 0.99 < the box's upper FNR
    assert not violates([p], 0.1, 0.01)
    assert not violates([], 0.1, 0.0)


@pytest.fixture(scope="module")
def gaussian_audit():
    return audit_mechanism(GaussianShift(1.0), 0, 1, samples=400_000, seed=0)


def test_gaussian_boxes_straddle_the_true_curve(gaussian_audit):
    """Threshold tests are optimal for a Gaussian shift, so each (FPR, FNR) lies on G_1; the
    boxes hold simultaneously at 95 %, so the true curve crosses every box (seed 0)."""
    points = gaussian_audit.estimate.tradeoff
    assert len(points) >= 20
    for p in points:
        assert p.fpr_lower <= p.fpr <= p.fpr_upper and p.fnr_lower <= p.fnr <= p.fnr_upper
        assert gaussian_curve(p.fpr_upper, 1.0) <= p.fnr_upper + 1e-12
        assert gaussian_curve(p.fpr_lower, 1.0) >= p.fnr_lower - 1e-12
    # 1-GDP is (1, δ(1))-DP with δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2): that claim is not refuted,
    # while pure (1, 0)-DP and a much smaller ε are
    delta_1 = norm.cdf(-0.5) - math.e * norm.cdf(-1.5)
    assert not violates(points, 1.0, delta_1)
    assert violates(points, 0.2, 0.0)


def test_gdp_fit_on_a_gaussian_with_mu_1_contains_mu_and_is_consistent(gaussian_audit):
    """4e5 samples per side, seed 0: the fit's interval (95 %, simultaneous boxes) contains μ = 1."""
    gdp = gaussian_audit.estimate.gdp
    assert gdp is not None and gdp.consistent and gdp.points >= 20
    assert gdp.lower <= 1.0 <= gdp.upper
    assert gdp.mu == pytest.approx(1.0, abs=0.03)
    assert gdp.upper - gdp.lower < 0.1
    assert gdp.to_dict()["assumption"].startswith("Gaussian")


def test_gdp_fit_tracks_mu():
    """μ = 0.5 at seed 1 is told apart from μ = 1: the intervals are disjoint."""
    half = audit_mechanism(GaussianShift(0.5), 0, 1, samples=400_000, seed=1).estimate.gdp
    assert half.consistent and half.lower <= 0.5 <= half.upper and half.upper < 0.9


def test_laplace_is_rejected_as_gaussian():
    """Laplace(1): the points' μ intervals do not intersect at 2e5 samples (seed 0; also seeds 1, 2
    when written), so the fit reports consistent=False and no upper end."""
    gdp = audit_mechanism(LaplaceShift(1.0), 0, 1, samples=200_000, seed=0).estimate.gdp
    assert gdp is not None and gdp.consistent is False and gdp.upper is None
    assert gdp.to_dict()["upper"] is None


def test_gdp_estimate_without_informative_points_is_none():
    (p,) = tradeoff_points([Event("D", "threshold")], np.array([0]), 1000, np.array([0]), 1000, 0.95)
    assert gdp_estimate([p]) is None  # FPR = 0 and FNR = 1: no μ can be read off
    assert gdp_estimate([]) is None
