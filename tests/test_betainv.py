"""Checked inverses of the incomplete beta function (``dpaudit.engine.betainv``): scipy 1.17's
``betaincinv`` / ``betainccinv`` are wrong at a parameter of exactly 1000 (a Clopper–Pearson bound of
1000 or 999 counts among 10⁸–10¹⁰ off by up to ×2.8, anti-conservatively); every answer is checked
against ``betainc`` and re-solved where it fails."""

import numpy as np
import pytest
from scipy import optimize, special

from dpaudit.engine import betainv
from dpaudit.engine.bounds import clopper_pearson_lower, clopper_pearson_upper


def _quantile(a: float, b: float, p: float) -> float:
    """I⁻¹(p; a, b) by bisection on betainc alone (no inverse of scipy's)."""
    return optimize.brentq(lambda x: special.betainc(a, b, x) - p, 0.0, 1.0, xtol=1e-300, rtol=1e-15)


@pytest.mark.parametrize("n", [1e8, 1e9, 1e10])
@pytest.mark.parametrize("alpha", [0.05, 0.0025, 5e-7])
def test_clopper_pearson_at_1000_and_999_counts_is_the_true_quantile(n, alpha):
    """The lower bound of 1000 successes and the upper bound of 999 are the quantiles betainc itself
    solves for, to 1e-12 relative (scipy's inverse is off by up to 179 % there)."""
    lower = clopper_pearson_lower(1000.0, n, alpha)
    assert lower == pytest.approx(_quantile(1000, n - 999, alpha), rel=1e-12)
    upper = clopper_pearson_upper(999.0, n, alpha)
    assert upper == pytest.approx(_quantile(1000, n - 999, 1 - alpha), rel=1e-9)
    assert special.betaincc(1000, n - 999, upper) == pytest.approx(alpha, rel=1e-9)


def test_the_check_catches_a_wrong_inverse(monkeypatch):
    """The twin: an inverse that answers 1.5 times the quantile for one argument is caught and
    re-solved; the other answers are kept as scipy gave them (bit for bit)."""
    real = special.betaincinv
    a = np.array([3.0, 50.0, 1000.0, 7.0])
    b, p = 1e6 - a + 1, np.full(4, 0.01)
    wrong = real(a, b, p)
    wrong[1] *= 1.5
    monkeypatch.setattr(betainv.special, "betaincinv", lambda *args: wrong.copy())
    got = betainv.betaincinv(a, b, p)
    assert got[1] == pytest.approx(_quantile(50.0, b[1], 0.01), rel=1e-12)
    assert got[0] == wrong[0] and got[3] == wrong[3]


def test_answers_scipy_gets_right_are_kept_bit_for_bit():
    """Over 20,000 random (k, n, α) with n up to 10¹⁰, every answer that is not at k = 1000 (lower)
    or 999 (upper) equals scipy's exactly, and every answer solves betainc to 1e-7 relative."""
    rng = np.random.default_rng(3)
    n = np.round(10 ** rng.uniform(1, 10, 20_000))
    k = np.minimum(np.floor(rng.uniform(0, 1, n.size) * n) + 1, n - 1)
    alpha = rng.choice([0.05, 0.0025, 5e-5], n.size)
    lo, hi = betainv.betaincinv(k, n - k + 1, alpha), betainv.betainccinv(k + 1, n - k, alpha)
    keep_lo, keep_hi = k != 1000, k != 999
    assert np.array_equal(lo[keep_lo], special.betaincinv(k, n - k + 1, alpha)[keep_lo])
    assert np.array_equal(hi[keep_hi], special.betainccinv(k + 1, n - k, alpha)[keep_hi])
    assert np.allclose(special.betainc(k, n - k + 1, lo), alpha, rtol=1e-6)
    assert np.allclose(special.betaincc(k + 1, n - k, hi), alpha, rtol=1e-6)


def test_scalars_stay_scalars():
    x = betainv.betaincinv(1000.0, 1e9 - 999, 0.0025)
    assert np.ndim(x) == 0 and float(x) == pytest.approx(_quantile(1000, 1e9 - 999, 0.0025), rel=1e-12)


def test_a_quantile_below_the_smallest_normal_double_is_rounded_to_the_safe_end(monkeypatch):
    """At a ceiling's expected counts (a = 0.0053) scipy answers 2.2e-308, the smallest normal double,
    where the quantile is smaller (betainc there is 0.0251 > 0.025): the lower bound is 0 (an
    interval [0, 2.2e-308] holds the quantile), without a solve among subnormals; the twin: the
    same answer for an upper bound is kept only where the quantile is below it, and solved for otherwise."""
    solves = []
    monkeypatch.setattr("scipy.optimize.brentq", lambda *a, **k: solves.append(a) or 0.5)  # read at call time
    a, b, p = 0.005306737064774206, 800000.994693263, 0.025
    assert special.betaincinv(a, b, p) <= np.finfo(float).tiny and special.betainc(a, b, np.finfo(float).tiny) > p
    assert betainv.betaincinv(a, b, p) == 0.0 and not solves
    monkeypatch.setattr(betainv.special, "betainccinv", lambda *args: np.finfo(float).tiny)
    assert betainv.betainccinv(a, b, 0.975) == np.finfo(float).tiny and not solves  # 1 - I(tiny) < 0.975: kept
    betainv.betainccinv(a, b, 0.9)  # 1 - I(tiny) = 0.9749 > 0.9: the quantile is above tiny, solved for
    assert len(solves) == 1


@pytest.mark.parametrize("n", [1e9, 1e10])
def test_the_mirror_case_near_1_is_checked_in_1_minus_x(n):
    """The same error of scipy's at the other parameter: the upper bound of k = n − 1000 (b = 1000)
    has 1 − x off by up to 179 %, inside a window relative to x (1e-7 of x is 1e-7 absolute, wider
    than 1 − x itself).  Checked in t = 1 − x, the bound's tail, I_{1−x}(n − k, k + 1), is α; so is
    the lower bound's at n − k = 999."""
    k, alpha = n - 1000, 0.0025
    upper = clopper_pearson_upper(k, n, alpha)
    assert special.betainc(n - k, k + 1, 1 - upper) == pytest.approx(alpha, rel=1e-6)
    k = n - 999
    lower = clopper_pearson_lower(k, n, alpha)
    assert special.betaincc(n - k + 1, k, 1 - lower) == pytest.approx(alpha, rel=1e-6)


def test_the_check_near_1_catches_a_wrong_complement(monkeypatch):
    """The twin: an inverse whose 1 − x is 1.6 times the truth near 1 (as scipy 1.17's at b = 1000)
    is caught and solved again in 1 − x; a check relative to x alone would have kept it."""
    real = special.betainccinv
    a, b, p = 6189660000.0, 1000.0, 0.025
    truth = betainv.betainccinv(a, b, p)
    monkeypatch.setattr(betainv.special, "betainccinv", lambda *args: 1 - 1.6 * (1 - real(*args)))
    assert 1 - special.betainccinv(a, b, p) == pytest.approx(1.6 * (1 - real(a, b, p)))
    got = betainv.betainccinv(a, b, p)
    assert (1 - got) == pytest.approx(1 - truth, rel=1e-6)
    assert special.betainc(b, a, 1 - got) == pytest.approx(p, rel=1e-6)
