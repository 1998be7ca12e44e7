"""Power on the Gaussian fixture (isolated canaries, m = 1000), 100 seeds, medians.

k is fixed in advance by the planner from the model (never from the run): the Steinke rule
maximises the median (ε, δ) bound, the GDP rule the median rejected μ."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.onerun import gdp, gdp_epsilon, gdp_mu, one_run_bound
from dpaudit.onerun.fixtures import gaussian_scores
from dpaudit.onerun.planner import best_fixed_rule

pytestmark = pytest.mark.slow
SEEDS = 100
M = 1000
DELTA = 1e-5


def _runs(mu: float):
    for seed in range(SEEDS):
        rng = np.random.default_rng([seed, 23])
        secret = rng.integers(0, 2, M)
        yield gaussian_scores(secret, mu, rng), secret


def power(eps: float) -> dict[str, float]:
    """Medians and rejection rates at one ε of the fixture (also used by the report)."""
    mu = gdp_mu(eps, DELTA)
    steinke_rule, _ = best_fixed_rule(M, delta=DELTA, mu=mu)
    mu_rule, _ = best_fixed_rule(M, delta=DELTA, mu=mu, objective="gdp-mu")
    st, mus, true_rej, half_rej = [], [], [], []
    for scores, secret in _runs(mu):
        st.append(one_run_bound(scores, secret, rule=steinke_rule, deltas=(DELTA,)).epsilon_lowers[0])
        res = one_run_bound(scores, secret, rule=mu_rule, deltas=(DELTA,), claims=[gdp(mu), gdp(mu / 2)])
        mus.append(gdp_epsilon(res.gdp_mu_lower, DELTA))  # a GDP-family reading, for this figure only
        true_rej.append(res.claims[0].verdict == "violation")
        half_rej.append(res.claims[1].verdict == "violation")
    return {"steinke": float(np.median(st)), "mu_as_eps": float(np.median(mus)),
            "true_rejected": float(np.mean(true_rej)), "half_rejected": float(np.mean(half_rej)),
            "k_steinke": steinke_rule.k_plus, "k_mu": mu_rule.k_plus}


@pytest.fixture(scope="module")
def at4():
    return power(4.0)


@pytest.fixture(scope="module")
def at8():
    return power(8.0)


def test_steinke_power(at4, at8):
    assert at4["steinke"] >= 1.5
    assert at8["steinke"] >= 2.85


def test_gdp_curve_power_at_8(at8):
    assert at8["true_rejected"] <= 0.05
    assert at8["half_rejected"] >= 0.90


def test_largest_rejected_mu_power(at4, at8):
    assert at4["mu_as_eps"] >= 2.2
    assert at8["mu_as_eps"] >= 4.5
