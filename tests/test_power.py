"""Power: broken mechanisms are reported as violations, with the exact loss shown."""

import pytest

from dpaudit import audit_mechanism
from dpaudit.mechanisms.classic import ExponentialMechanism
from dpaudit.mechanisms.faulty import ExponentialMechanismWithoutFactor2
from dpaudit.neighbors.synthetic import vote_record, votes

D = votes([6, 5, 5, 2])
D_PRIME = D.add(vote_record(3, 4))


def test_exponential_mechanism_without_factor_2_is_a_violation():
    r = audit_mechanism(ExponentialMechanismWithoutFactor2(1.0), D, D_PRIME, samples=1_000_000, seed=0)
    (check,) = r.claims
    assert check.claim.claim_id == "expmech/def2" and check.claim.epsilon == 1.0
    assert r.verdict == "violation" and check.exact_verdict == "violation"
    assert check.epsilon_exact == pytest.approx(2.0, abs=0.01)  # the factor 2 is attained
    assert 1.0 < r.epsilon_lower <= check.epsilon_exact
    assert r.to_dict()["claims"][0]["epsilon_exact"] == pytest.approx(check.epsilon_exact)


def test_twin_the_correct_exponential_mechanism_passes():
    r = audit_mechanism(ExponentialMechanism(1.0), D, D_PRIME, samples=1_000_000, seed=0)
    assert r.verdict == "pass" and r.claims[0].exact_verdict == "pass"
    assert 0.9 <= r.epsilon_lower <= r.epsilon_exact <= 1.0


def test_a_kl_policy_claiming_twice_its_eta_is_caught_where_the_analysis_is_tight():
    import numpy as np

    from dpaudit.mechanisms.faulty import ClaimsWithDoubledEta
    from dpaudit.mechanisms.kl_rlhf import KLRLHF
    from dpaudit.neighbors.synthetic import comparisons
    d = comparisons(np.full((10, 1), 2.0), [1] * 5 + [0] * 5)
    honest = KLRLHF(((1.0,), (-1.0,)), ridge=1.0, beta0=0.01, eta=0.1, pi0=(0.999, 0.001))
    r = audit_mechanism(ClaimsWithDoubledEta(honest), d, d.flip(0), samples=1_000_000, seed=0, relation="label-flip")
    assert {c.claim.claim_id: c.verdict for c in r.claims}["kl-rlhf/thm3-label-corrected"] == "violation"
    twin = audit_mechanism(honest, d, d.flip(0), samples=1_000_000, seed=0, relation="label-flip")
    assert {c.claim.claim_id: c.verdict for c in twin.claims}["kl-rlhf/thm3-label-corrected"] == "pass"


def test_a_gaussian_calibrated_on_half_the_sensitivity_is_caught():
    from dpaudit.mechanisms.classic import Gaussian
    from dpaudit.mechanisms.faulty import GaussianOnHalfSensitivity
    from dpaudit.neighbors import Dataset
    v = Dataset({"value": [0.5]})
    broken = audit_mechanism(GaussianOnHalfSensitivity(0.9, 1e-5), v, v.add({"value": 1.0}), samples=1_000_000,
                             seed=0)
    assert broken.verdict == "violation"
    honest = audit_mechanism(Gaussian(0.9, 1e-5), v, v.add({"value": 1.0}), samples=1_000_000, seed=0)
    assert honest.verdict == "pass"
