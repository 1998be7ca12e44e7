"""One-run bounds: the published constants, the ceilings, zero guesses, agreement of the two
bounds, and the regression that a GDP μ is never printed as an (ε, δ) bound."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from dpaudit.core import Guarantee, InputError
from dpaudit.onerun import Fixed, approx_dp, gdp, gdp_epsilon, gdp_mu, one_run_bound
from dpaudit.onerun.fdp import epsilon_lower_curve, largest_rejected_mu, rejects_claim
from dpaudit.onerun.fixtures import rr_scores
from dpaudit.onerun.steinke import epsilon_ceiling, epsilon_lower, p_value


@pytest.mark.parametrize(("m", "r", "v", "delta", "alpha", "expected"), [
    (20000, 3376, 2807, 1e-6, 0.05 / 386, 1.13346),
    (20000, 4666, 4499, 1e-6, 0.05 / 374, 2.311945),
    (20000, 8233, 8223, 1e-6, 0.05 / 140, 4.395568),
])
def test_steinke_published_constants(m, r, v, delta, alpha, expected):
    assert epsilon_lower(m, r, v, delta=delta, alpha=alpha) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(("m", "c_prime", "c", "tau", "expected"), [
    (20000, 406, 379, 0.05 / 386, 2.164749),
    (20000, 938, 934, 0.05 / 374, 4.7218075),
    (20000, 5436, 5436, 0.05 / 140, 9.133752),
])
def test_fdp_gdp_published_constants(m, c_prime, c, tau, expected):
    mu = largest_rejected_mu(m=m, c_prime=c_prime, c=c, tau=tau)
    assert gdp_epsilon(mu, 1e-6) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(("m", "expected"), [(100, 3.490), (1000, 5.782), (10000, 7.834)])
def test_ceiling_every_guess_right(m, expected):
    assert epsilon_ceiling(m, delta=1e-5, alpha=0.05) == pytest.approx(expected, abs=1e-3)


def test_zero_correct_guesses_give_zero():
    for m, r in ((10, 1), (1000, 1000), (1000, 3)):
        assert epsilon_lower(m, r, 0, delta=1e-5, alpha=0.05) == 0.0
        assert largest_rejected_mu(m=m, c_prime=r, c=0, tau=0.05) == 0.0


def test_chance_level_gives_zero_and_more_right_gives_more():
    assert epsilon_lower(1000, 200, 100, delta=1e-5, alpha=0.05) == 0.0
    values = [epsilon_lower(1000, 200, v, delta=1e-5, alpha=0.05) for v in (140, 160, 180, 200)]
    assert all(b > a for a, b in itertools.pairwise(values))


def test_p_value_is_the_binomial_tail_at_delta_zero():
    from scipy import stats
    q = math.exp(1.0) / (1 + math.exp(1.0))
    assert p_value(100, 50, 40, 1.0, 0.0)[0] == pytest.approx(stats.binom.sf(39, 50, q), rel=1e-12)


def _p_value_by_scipy_stats(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """p(ε, δ) as it was computed before issue #45's speed-up: the public stats.binom functions, one ε
    at a time (the window of ±40 sd around rq, the mass above it, the cdf below it)."""
    from scipy import stats
    q = float(np.exp(-np.logaddexp(0.0, -eps)))
    tail = stats.binom.sf(v - 1, r, q)
    if v == 0 or delta == 0:
        return float(min(tail, 1.0))
    sd = math.sqrt(r * q * (1.0 - q)) + 1.0
    lo, hi = max(0, math.floor(r * q - 40.0 * sd)), min(v - 1, math.ceil(r * q + 40.0 * sd))
    above = max(float(stats.binom.sf(hi, r, q) - stats.binom.sf(v - 1, r, q)) if hi < v - 1 else 0.0, 0.0)
    best = above
    if hi >= lo:
        k = np.arange(hi, lo - 1, -1)
        best = max(best, float(np.max((above + np.cumsum(stats.binom.pmf(k, r, q))) / (v - k))))
    if lo > 0:
        best = max(best, float(stats.binom.cdf(v - 1, r, q)) / (v - lo if hi >= lo else 1))
    return float(min(tail + 2.0 * m * delta * best, 1.0))


@pytest.mark.parametrize("m", [1, 40, 1000, 30000])
def test_p_value_is_bit_for_bit_the_one_of_the_public_scipy_functions(m):
    """p_value calls Boost's binomial routines without scipy.stats' generic wrapper and scores a whole
    vector of ε at once: every value must be the same float as the wrapper's, one ε at a time, over
    counts at 0, at r, at m, and in between, δ = 0 and not, ε from 0 to 60 (where q rounds to 1)."""
    rng = np.random.default_rng(m)
    counts = {(m, m, m), (m, m, 0), (m, 0, 0), (m, m, m - 1 if m > 1 else 0)}
    for _ in range(4):
        r = int(rng.integers(1, m + 1))
        counts.add((m, r, int(rng.integers(r // 2, r + 1))))
    eps = np.concatenate([[0.0], 10 ** np.linspace(-4, 1, 12), [15.0, 37.0, 38.0, 60.0]])
    for (m_, r, v), delta in itertools.product(sorted(counts), (0.0, 1e-6, 1e-2)):
        fast = p_value(m_, r, v, eps, delta)
        assert fast.tolist() == [_p_value_by_scipy_stats(m_, r, v, float(e), delta) for e in eps], (r, v, delta)


def test_p_value_at_the_bound_is_alpha():
    eps = epsilon_lower(1000, 300, 270, delta=1e-5, alpha=0.05)
    assert p_value(1000, 300, 270, eps, 1e-5)[0] < 0.05 <= p_value(1000, 300, 270, eps + 1e-6, 1e-5)[0]


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 1e-7, 1e-6])
def test_fdp_on_the_epsilon_delta_curve_agrees_with_steinke(delta):
    """Fed the (ε, δ) curve, the recursion matches Steinke's bound within 0.05 when 2mδ ≤ α/2.5
    (at larger mδ the recursion is the tighter of the two: Steinke's 2mδ term dominates α)."""
    worst = 0.0
    for m in (100, 1000, 10000):
        for frac_r in (0.1, 0.5, 1.0):
            r = int(m * frac_r)
            for frac_v in (0.6, 0.8, 0.95, 1.0):
                v = round(r * frac_v)
                s = epsilon_lower(m, r, v, delta=delta, alpha=0.05)
                f = epsilon_lower_curve(m=m, c_prime=r, c=v, tau=0.05, delta=delta)
                worst = max(worst, abs(s - f))
    assert worst <= 0.05


def test_fdp_epsilon_delta_curve_rejection_matches_its_bound():
    eps = epsilon_lower_curve(m=1000, c_prime=200, c=190, tau=0.05, delta=1e-5)
    assert rejects_claim(approx_dp(eps - 0.01, 1e-5), m=1000, c_prime=200, c=190, tau=0.05)
    assert not rejects_claim(approx_dp(eps + 0.01, 1e-5), m=1000, c_prime=200, c=190, tau=0.05)


def test_gdp_mu_calibration_round_trip():
    for eps in (1.0, 4.0, 8.0):
        assert gdp_epsilon(gdp_mu(eps, 1e-5), 1e-5) == pytest.approx(eps, abs=1e-8)


def test_rr_two_zero_gdp_mu_is_never_an_epsilon_delta_bound():
    """Randomized response that is exactly (2, 0)-DP, m = 1000, every canary guessed, the typical
    count v = 881 (= 1000 e²/(1+e²)).  The largest rejected GDP μ, read through GDP's profile,
    says ε ≈ 3.4 > 2, which is false; the (ε, δ) outputs must stay ≤ 2 and the μ must be labelled."""
    m = 1000
    v = int(m * math.exp(2) / (1 + math.exp(2)))
    mu = largest_rejected_mu(m=m, c_prime=m, c=v, tau=0.05)
    assert gdp_epsilon(mu, 1e-5) > 3.3  # what "mu read as epsilon" would print
    assert epsilon_lower(m, m, v, delta=1e-5, alpha=0.05) <= 2.0
    secret = np.random.default_rng(5).integers(0, 2, m)
    scores = rr_scores(secret, 2.0, np.random.default_rng(6))
    res = one_run_bound(scores, secret, rule=Fixed(500, 500), deltas=(0.0, 1e-5, 1e-6),
                        claims=[Guarantee(epsilon=2.0, delta=0.0, claim_id="rr/two"), approx_dp(2.0, 0.0)])
    assert 860 <= res.v <= 900  # a typical count
    misread = gdp_epsilon(res.gdp_mu_lower, 1e-5)
    assert misread > 3.3  # the invalid reading the shipped tools print (3.43 in the issue)
    assert max(res.epsilon_lowers) <= 2.0
    assert all(c.verdict == "pass" for c in res.claims)  # the true claim is not refuted by either bound
    doc = json.loads(res.to_json())
    assert all(b["epsilon_lower"] <= 2.0 for b in doc["bounds"])
    assert "GDP-family claims only" in doc["gdp_mu_lower"]["validity"]
    assert "epsilon" not in json.dumps(doc["gdp_mu_lower"]).replace("(epsilon, delta)", "")
    assert f"{misread:.3g}" not in res.to_json() and f"{misread:.3g}" not in res.summary()


def test_a_violated_claim_is_found():
    secret = np.random.default_rng(0).integers(0, 2, 1000)  # random order: an ordered one is refused
    res = one_run_bound(secret.astype(float), secret, rule=Fixed(400, 400),
                        claims=[Guarantee(epsilon=1.0, delta=1e-5, claim_id="x/weak"), gdp(0.5)])
    assert [c.verdict for c in res.claims] == ["violation", "violation"]
    assert res.claims[0].finding == "refuted (empirical)"


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"scores": [0.0, float("nan")], "secret": [0, 1]}, "scores"),
    ({"scores": [0.0, 1.0], "secret": [0, 2]}, "secret"),
    ({"scores": [0.0, 1.0, 2.0], "secret": [0, 1]}, "secret"),
    ({"scores": [0.0, 1.0], "secret": [0, 1], "confidence": 1.5}, "confidence"),
    ({"scores": [0.0, 1.0], "secret": [0, 1], "deltas": (-1.0,)}, "deltas"),
    ({"scores": [0.0, 1.0], "secret": [0, 1], "rule": Fixed(2, 1)}, "rule"),
])
def test_bad_inputs_name_the_field(kwargs, field):
    scores, secret = kwargs.pop("scores"), kwargs.pop("secret")
    with pytest.raises(InputError, match=field):
        one_run_bound(scores, secret, **kwargs)


def test_bad_counts_name_the_field():
    with pytest.raises(InputError, match="v"):
        epsilon_lower(10, 5, 6, delta=0.0, alpha=0.05)
    with pytest.raises(InputError, match="alpha"):
        epsilon_lower(10, 5, 5, delta=0.0, alpha=0.0)
    with pytest.raises(InputError, match="k_plus"):
        Fixed(-1, 2)


def test_sampled_profile_is_a_lower_envelope_of_the_true_curve():
    """A profile sampled on a grid (here dp-accounting's PLD of one unsubsampled Gaussian, which
    is 1/σ-GDP) gives a curve at or below the true one: a weaker claim, the safe direction."""
    pytest.importorskip("dp_accounting", reason="the onerun extra (dp-accounting) is not installed")
    from dpaudit.onerun import subsampled_gaussian_profile

    sigma = 0.8
    claim = subsampled_gaussian_profile(sigma, 1.0, 1, np.linspace(0.0, 8.0, 33))
    x = np.linspace(0.0, 1.0, 201)
    true = gdp(1 / sigma).tradeoff(x)
    envelope = claim.tradeoff(x)
    assert np.all(envelope <= true + 1e-9)
    assert np.max(true - envelope) < 0.05  # and close to it on a fine grid
    coarse = subsampled_gaussian_profile(sigma, 1.0, 1, [0.0, 4.0])
    assert np.all(coarse.tradeoff(x) <= envelope + 1e-12)  # fewer points, lower envelope
