"""Private policy optimisation (the PO slides): DP-PG's two reward conventions against the exact
Gaussian curve, DP-NPG and DP-REBEL exactly, one pass vs repeated users, vectorised runs."""

import math

import numpy as np
import pytest

from dpaudit import audit_mechanism
from dpaudit.catalog import policy_optimization as po
from dpaudit.core import InputError
from dpaudit.engine.exact import pure_epsilon
from dpaudit.mechanisms.curves import gauss_delta, gauss_epsilon, gauss_mu
from dpaudit.mechanisms.private_po import DPNPG, DPPG, PolicyEnv
from dpaudit.neighbors import Dataset

L = math.log(1.25 / 1e-5)


@pytest.mark.parametrize("eps,mu,tight,tight_delta", [
    (1, 1 / math.sqrt(L), 1.098, 3.7e-5), (4, 4 / math.sqrt(L), 5.24, 5.8e-4),       # rewards in [-R, R]
    (1, 1 / (2 * math.sqrt(L)), 0.514, 1.2e-13), (4, 4 / (2 * math.sqrt(L)), 2.37, 2.1e-12),  # |A| <= R
])
def test_spec_c2_table(eps, mu, tight, tight_delta):
    assert gauss_epsilon(1e-5, mu) == pytest.approx(tight, abs=0.005)
    assert gauss_delta(eps, mu) == pytest.approx(tight_delta, rel=0.05)


def test_gaussian_curve_matches_dp_accounting():
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    for mu in (0.3, 1.1675, 2.0):
        ref = pld.from_gaussian_mechanism(standard_deviation=1 / mu, sensitivity=1.0,
                                          value_discretization_interval=1e-4)
        assert gauss_epsilon(1e-5, mu) == pytest.approx(ref.get_epsilon_for_delta(1e-5), rel=1e-6)
        assert gauss_delta(1.0, mu) == pytest.approx(ref.get_delta_for_epsilon(1.0), rel=1e-6)
    assert gauss_delta(1.0, gauss_mu(1.0, 1e-6)) == pytest.approx(1e-6, rel=1e-6)


@pytest.mark.parametrize("convention,factor", [("advantage", 2), ("reward", 4)])
def test_dp_pg_sigma_and_sensitivity(convention, factor):
    mech = po.dppg(convention)
    assert mech.sigma == pytest.approx(4 * math.sqrt(L) * 1.0 * 2.0 / (2 * 4.0))
    assert mech.sensitivity == pytest.approx(factor * 2.0 * 1.0 / 2)


@pytest.mark.parametrize("convention,shift", [("advantage", 2.0), ("reward", 4.0)])
def test_the_worst_pair_attains_the_sensitivity(convention, shift):
    """Final θ under D and D′: Gaussians around θ_1 ± ηΔ/2 in e1 with the slides' σ (vectorised runs)."""
    mech, pair = po.dppg(convention), po.population(2, 1, 0)
    rng = np.random.default_rng(0)
    n = 400_000
    x, y = mech.sample(pair.d, n, rng), mech.sample(pair.d_prime, n, rng)
    se = mech.sigma / math.sqrt(n)  # tolerances are 5 standard errors
    assert (x.mean(axis=0) - y.mean(axis=0))[0] == pytest.approx(mech.sensitivity, abs=5 * math.sqrt(2) * se)
    assert mech.sensitivity == pytest.approx(shift)
    assert x[:, 0].std() == pytest.approx(mech.sigma, rel=0.01) and abs(x[:, 1].mean()) < 5 * se


def test_each_run_is_independent_of_the_batch_it_is_drawn_in():
    mech, pair = po.dppg("advantage", T=3, output="transcript"), po.population(2, 3, 1)
    a = mech.sample(pair.d, 100_000, np.random.default_rng(1))
    b = np.vstack([mech.sample(pair.d, 1_000, np.random.default_rng(s)) for s in range(100)])
    assert (np.allclose(a.mean(axis=0), b.mean(axis=0), atol=0.03)
            and np.allclose(a.std(axis=0), b.std(axis=0), rtol=0.03))


def test_dp_npg_and_dp_rebel_exact_loss_within_their_claims():
    base = po.batch()
    for mech in (po.npg(), po.rebel()):
        pairs = [(base, base.replace(i, c)) for i in range(len(base)) for c in po.user_candidates()]
        worst = max(pure_epsilon(mech.output_distribution(d), mech.output_distribution(dp)) for d, dp in pairs)
        assert 0.2 < worst <= mech.epsilon
        d, dp = max(pairs, key=lambda p: pure_epsilon(mech.output_distribution(p[0]), mech.output_distribution(p[1])))
        r = audit_mechanism(mech, d, dp, samples=400_000, seed=0, relation="user-level")
        assert r.verdict == "pass" and r.epsilon_lower <= r.epsilon_exact <= mech.epsilon


def test_dp_npg_without_its_condition_is_outside_its_claim_and_caught():
    """Unbounded candidates break DP-NPG's premise: its claim does not apply (a misuse, not an
    erratum), the record says the samples would refute it, and an explicit ε = 1 claim is refuted."""
    mech = po.npg(enforced=False)
    base = po.batch()
    pairs = [(base, base.replace(i, c)) for i in range(len(base)) for c in po.user_candidates()]
    d, dp = max(pairs, key=lambda p: pure_epsilon(mech.output_distribution(p[0]), mech.output_distribution(p[1])))
    r = audit_mechanism(mech, d, dp, samples=400_000, seed=0, relation="user-level")
    check = r.claims[0]
    assert check.finding == "not-applicable" and "outside the claim's premise" in check.premise_note
    assert "the samples would refute it" in check.premise_note
    explicit = audit_mechanism(mech, d, dp, samples=400_000, seed=0, relation="user-level", epsilon=1.0)
    assert explicit.claims[0].finding == "refuted (empirical)"
    with pytest.raises(InputError, match=r"needs sup \|w \. grad log pi\| <= R, i\.e\. \|\|w\|\| <= R/G"):
        DPNPG(po.ENV, po.disc(6.0 / po.ENV.G, 5), epsilon=1.0)


@pytest.mark.parametrize("kwargs,field", [({"m": 0}, "m"), ({"delta": 0.0}, "delta"),
                                          ({"convention": "x"}, "convention"), ({"epsilon": -1.0}, "epsilon")])
def test_dp_pg_validates(kwargs, field):
    with pytest.raises(InputError, match=field):
        DPPG(**{"env": po.ENV, "m": 2, "T": 1, "epsilon": 1.0, "delta": 1e-5, **kwargs})


def test_rewards_out_of_range_and_wrong_population_size_are_refused():
    mech = po.dppg("reward")
    with pytest.raises(InputError, match="reward"):
        mech.sample(Dataset({"prompt": [0, 1], "reward": [[2.0, 0.0], [0.0, 0.0]]}), 10, np.random.default_rng(0))
    with pytest.raises(InputError, match="m \\* T"):
        mech.sample(Dataset({"prompt": [0, 1, 1], "reward": np.zeros((3, 2))}), 10, np.random.default_rng(0))


def test_policy_env_gradient_bound():
    env = PolicyEnv(features=np.random.default_rng(0).normal(size=(3, 4, 5)))
    assert pytest.approx(2 * np.linalg.norm(np.asarray(env.features), axis=2).max()) == env.G
