"""The DP-SGD reward model audited in one run: the accountant's numbers, the mechanism's inputs,
the family search, the white-box design at ε = 8 and its faulty twins.

Seeds 0–4 (and 1000–1099 in the slow tier) are the audited runs; the rule k₊ = k₋ = 50 was fixed
from seeds 100–104 of a planning simulation, none of which is used here.  Confidence 95 %
throughout (α = 0.05): a correct claim is rejected by one run with probability ≤ 0.05.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("dp_accounting", reason="the onerun extra (dp-accounting) is not installed")

from dpaudit.catalog.designs.dpsgd import blackbox_design, family_rejection, noise_for_epsilon, whitebox_design
from dpaudit.core import InputError
from dpaudit.mechanisms.dpsgd import DPSGD, accountant_epsilon, preference_data, records
from dpaudit.onerun import gdp, gdp_epsilon
from dpaudit.onerun.design import refuted
from dpaudit.onerun.family import strongest_rejected
from dpaudit.onerun.fdp import largest_rejected_mu
from dpaudit.onerun.rules import Test as RuleTest
from tests.onerun_seeded import seeded


def test_accountant_numbers_of_the_issue():
    # q = 0.02, T = 500: sigma 1.19 claims eps ~ 2 at delta 1e-5; half the noise is eps ~ 10.5.
    assert accountant_epsilon(1.19, 0.02, 500, 1e-5) == pytest.approx(1.986, abs=0.01)
    assert accountant_epsilon(0.595, 0.02, 500, 1e-5) == pytest.approx(10.53, abs=0.05)
    sigma = noise_for_epsilon(8.0, 0.02, 500)
    assert sigma == pytest.approx(0.656, abs=0.002)
    assert 7.9 < accountant_epsilon(sigma, 0.02, 500, 1e-5) <= 8.0


@pytest.mark.parametrize(("field", "kwargs"), [
    ("noise_multiplier", {"noise_multiplier": 0.0}),
    ("sampling_probability", {"sampling_probability": 1.5}),
    ("steps", {"steps": 0}),
    ("clip", {"clip": -1.0}),
    ("bug", {"bug": "typo"}),
])
def test_bad_inputs_name_the_field(field, kwargs):
    args = {"noise_multiplier": 1.0, "sampling_probability": 0.1, "steps": 3, **kwargs}
    with pytest.raises(InputError, match=field):
        DPSGD(**args)


def test_clipping_and_noise_are_what_the_claim_assumes():
    # One canary carrying a gradient of norm 4 in a dataset of its own, q = 1, tiny noise:
    # each update is the clipped canary gradient (norm C = 1) unless the canary skips clipping.
    canary = records(np.array([[4.0, 0.0]]), np.array([0.0]), kind=1)
    rng = np.random.default_rng(0)
    for bug, expected in (("none", 1.0), ("no-clip-canaries", 4.0)):
        out = DPSGD(noise_multiplier=1e-6, sampling_probability=1.0, steps=5, bug=bug).run(canary, rng)
        assert np.allclose(out.updates[:, 0], expected, atol=1e-4)
    noise = DPSGD(noise_multiplier=2.0, sampling_probability=1.0, steps=4000, bug="noise-halved")
    sd = noise.run(records(np.zeros((1, 2)), np.zeros(1)), rng).updates.std()
    assert sd == pytest.approx(1.0, rel=0.05)  # sigma/2 applied while sigma = 2 is claimed


def test_batches_poisson_versus_shuffled():
    data = preference_data(1000, 4, 4, np.random.default_rng(1))
    rng = np.random.default_rng(2)
    sizes = [len(b) for b in DPSGD(noise_multiplier=1.0, sampling_probability=0.1, steps=200)._batches(1000, rng)]
    assert np.std(sizes) > 3  # Poisson: binomial batch sizes
    shuffled = list(DPSGD(noise_multiplier=1.0, sampling_probability=0.1, steps=20, bug="shuffle-batches")
                    ._batches(1000, rng))
    assert {len(b) for b in shuffled} == {100}
    assert np.array_equal(np.sort(np.concatenate(shuffled[:10])), np.arange(1000))  # each record once per epoch
    assert data.shape == (1000, 6)


def test_family_search_matches_the_gdp_mu_search():
    # The GDP family ordered by privacy (parameter p = 1/mu): the least private rejected member
    # must be the engine's largest rejected mu, to the search tolerance.
    tests = [RuleTest(m=1000, k_plus=50, k_minus=50, v=95, alpha=0.05)]
    mu = largest_rejected_mu(m=1000, c_prime=100, c=95, tau=0.05)
    fam = strongest_rejected(tests, lambda p: gdp(1.0 / p), lower=0.01, upper=100.0, tolerance=1e-4,
                             read=lambda p: gdp_epsilon(1.0 / p, 1e-5), delta=1e-5, family="GDP")
    assert fam.parameter is not None
    assert 1.0 / fam.parameter == pytest.approx(mu, rel=2e-3)
    assert "not an (epsilon, delta) lower bound" in fam.validity
    none = strongest_rejected([RuleTest(m=1000, k_plus=50, k_minus=50, v=50, alpha=0.05)], lambda p: gdp(1.0 / p),
                              lower=0.01, upper=100.0, read=lambda p: 0.0, delta=1e-5, family="GDP")
    assert none.parameter is None and none.epsilon == 0.0


@pytest.mark.slow
def test_whitebox_dpsgd_at_eps8_acceptance():
    """m = 1000 gradient canaries, accountant eps = 8 at 1e-5; medians over seeds 0-4."""
    design = whitebox_design(epsilon=8.0)
    results = [seeded(design, seed) for seed in range(5)]
    steinke = np.median([r.epsilon_at(1e-5) for r in results])
    family = np.median([family_rejection(r, design.mechanism).epsilon for r in results])
    assert steinke >= 1.8
    assert family >= 2.4
    assert all(design.as_expected(r) for r in results)  # own (eps, delta) and own curve: pass on 5 of 5


@pytest.mark.slow
@pytest.mark.parametrize("bug", ["noise-halved", "no-clip-canaries"])
def test_faulty_twins_are_refuted(bug):
    design = whitebox_design(noise_multiplier=1.19, bug=bug)  # claims the accountant's eps ~ 2
    results = [seeded(design, seed) for seed in range(5)]
    assert sum(refuted(r) for r in results) >= 4
    if bug == "noise-halved":
        assert sum(bool(r.claims[1].rejected) for r in results) >= 4  # through the curve test


@pytest.mark.slow
def test_correct_dpsgd_never_refuted_over_100_seeds():
    """The full training, 100 seeds: the accountant's (eps, delta) and curve claims are rejected at
    most alpha of the time each; we require 0 refutations, which a 5 % per-run level makes likely
    (the curve is a lower envelope and the Steinke bound sits far below 8).  The twin above shows
    the same test does refute a broken mechanism."""
    design = whitebox_design(epsilon=8.0)
    hits = sum(refuted(seeded(design, seed)) for seed in range(1000, 1100))
    assert hits == 0


def test_blackbox_input_canaries_pass_their_claims():
    design = blackbox_design(m=200, steps=100, n_base=500)
    assert all(design.as_expected(seeded(design, seed)) for seed in range(3))
