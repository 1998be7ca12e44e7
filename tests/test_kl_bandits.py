"""The KL-regularized bandit of eq. (8): its claims reproduce the reference computations, valid ones hold
exactly on every neighbour, and the printed approximate ones are caught."""

import math

import numpy as np
import pytest

from dpaudit import audit_mechanism
from dpaudit.core import InputError
from dpaudit.engine.exact import delta_for_epsilon, pure_epsilon
from dpaudit.mechanisms.kl_bandits import KLBandit
from dpaudit.neighbors import Dataset, add_remove
from dpaudit.neighbors.search import worst_pair
from dpaudit.neighbors.synthetic import bandit_candidates, bandit_log

# Witnesses against Theorem 1's approximate part (two arms, uniform pi0, R = 1):
# (D, D', mechanism, claimed eps, claimed delta, exact delta, Cor. 1 delta)
ROW1 = bandit_log([[], [0.0] * 1_000_000])
ROW2 = bandit_log([[1.0, 0.0], [0.081736] * 10_000])
ROW3 = bandit_log([[1.0], [0.067345] * 3000])
A24 = [
    (ROW1, ROW1.add({"action": 0, "reward": 1.0}), KLBandit(2, eta=0.003, beta0=0.7, n0=100, k=10_000),
     13.57, 1.45e-4, 1.000, 2.4e-10),
    (ROW2, ROW2.remove(0), KLBandit(2, eta=0.002, beta0=0.6, n0=100, k=100), 20.30, 2.5e-3, 0.500, 5.3e-12),
    (ROW3, ROW3.remove(0), KLBandit(2, eta=0.001, beta0=0.95, n0=1000, k=3), 4.03, 3.4e-4, 0.500, 6.3e-6),
]


def claim(mech, data, cid, relation="add-remove"):
    return next(g for g in mech.guarantees(data, relation) if g.claim_id == cid)


@pytest.mark.parametrize("d,dp,mech,eps,delta,exact_delta,cor1_delta", A24)
def test_a24_witnesses_reproduce_the_spec(d, dp, mech, eps, delta, exact_delta, cor1_delta):
    printed = claim(mech, d, "kl-mab/thm1-approx")
    assert printed.epsilon == pytest.approx(eps, abs=0.005)
    assert printed.delta == pytest.approx(delta, rel=0.03)
    cor1 = claim(mech, d, "kl-mab/cor1")
    assert cor1.epsilon == pytest.approx(eps, abs=0.005)
    assert cor1.delta == pytest.approx(cor1_delta, rel=0.03)
    p, q = mech.output_distribution(d), mech.output_distribution(dp)
    assert delta_for_epsilon(p, q, printed.epsilon) == pytest.approx(exact_delta, abs=1e-3)
    assert delta_for_epsilon(p, q, printed.epsilon) > printed.delta  # the printed claim is false
    corrected = claim(mech, d, "kl-mab/thm1-approx-corrected")
    assert delta_for_epsilon(p, q, corrected.epsilon) <= corrected.delta + 1e-12


def test_row3_printed_claims_are_caught_empirically_and_corrected_passes():
    d, dp, mech = A24[2][:3]
    r = audit_mechanism(mech, d, dp, samples=1_000_000, seed=0)
    verdicts = {c.claim.claim_id: (c.verdict, c.exact_verdict) for c in r.claims}
    assert verdicts["kl-mab/thm1-approx"] == ("violation", "violation")
    assert verdicts["kl-mab/cor1"] == ("violation", "violation")
    assert verdicts["kl-mab/thm1-approx-corrected"] == ("pass", "pass")
    assert verdicts["kl-mab/thm1-pure"] == ("not-applicable", "not-applicable")
    pure = next(c for c in r.claims if c.claim.claim_id == "kl-mab/thm1-pure")
    assert "min_a N(a;D) = 1" in pure.claim.note


def test_eq9_and_its_exact_supremum():
    mech = KLBandit(3, eta=0.25, beta0=0.5, pi0=(1e-6, 0.5 - 5e-7, 0.5 - 5e-7))
    d = bandit_log([[1.0, 0.0, 0.0, 0.0], [0.5] * 20, [0.3] * 30])
    n_min = 4
    assert mech.epsilon0(d) == pytest.approx((4 / 3 + 0.5 / 3 ** 1.5) / 0.25)
    star = (1 / n_min + 0.5 * (1 / math.sqrt(3) - 1 / 2)) / 0.25
    assert mech.epsilon_star(d) == pytest.approx(star)
    found = worst_pair(mech, add_remove(d, bandit_candidates(3)), pure_epsilon)
    pair, loss = found.pair, found.loss
    assert "remove record 0" in pair.description  # the reward-R point of the least-covered arm
    assert 0.999 * star <= loss <= star * (1 + 1e-9)


def test_theorem1_pure_holds_on_every_neighbour_of_random_logs():
    """Eq. (9) has a factor-2 margin (ε⋆/ε0 < 1/2): max ε_pair/ε0 over random logs is about 0.33."""
    rng = np.random.default_rng(11)
    worst = 0.0
    for _ in range(150):
        k = int(rng.integers(2, 5))
        counts = rng.integers(2, 8, k)
        d = bandit_log([rng.choice([0.0, 1.0, rng.random()], c) for c in counts])
        mech = KLBandit(k, eta=float(rng.uniform(0.05, 2)), beta0=float(rng.uniform(0, 2)),
                        pi0=tuple(rng.dirichlet(np.ones(k) * 0.3)))
        eps0 = mech.epsilon0(d)
        for pair in add_remove(d, bandit_candidates(k)):
            worst = max(worst, pure_epsilon(mech.output_distribution(pair.d),
                                             mech.output_distribution(pair.d_prime)) / eps0)
    assert 0.1 < worst < 0.5


def test_corrected_statement_holds_with_zero_coverage_arms():
    """The corrected (ε_c, δ_c) of Theorem 1 is never exceeded, uncovered arms included."""
    rng = np.random.default_rng(12)
    for _ in range(150):
        k = int(rng.integers(2, 4))
        counts = rng.integers(0, 6, k)
        d = bandit_log([rng.random(c) for c in counts])
        mech = KLBandit(k, eta=float(rng.uniform(0.01, 1)), beta0=float(rng.uniform(0, 1)),
                        pi0=tuple(rng.dirichlet(np.ones(k))), n0=float(rng.integers(1, 6)))
        c = claim(mech, d, "kl-mab/thm1-approx-corrected")
        for pair in add_remove(d, bandit_candidates(k)):
            p, q = mech.output_distribution(pair.d), mech.output_distribution(pair.d_prime)
            assert delta_for_epsilon(p, q, c.epsilon) <= c.delta + 1e-9


def test_empty_log_samples_from_pi0():
    mech = KLBandit(3, eta=1.0, beta0=0.1, pi0=(0.2, 0.3, 0.5))
    empty = bandit_log([[], [], []])
    assert np.allclose(mech.output_distribution(empty), [0.2, 0.3, 0.5])


@pytest.mark.parametrize("kwargs,field", [
    ({"eta": 0.0}, "eta"), ({"eta": -1.0}, "eta"), ({"reward_range": 0.0}, "reward_range"),
    ({"beta0": -0.1}, "beta0"), ({"pi0": (0.5, 0.6)}, "pi0"), ({"n_actions": 1}, "n_actions"),
    ({"eta": float("nan")}, "eta"),
])
def test_invalid_hyperparameters_name_the_field(kwargs, field):
    base = {"n_actions": 2, "eta": 1.0, "beta0": 0.1}
    with pytest.raises(InputError, match=field):
        KLBandit(**{**base, **kwargs})


@pytest.mark.parametrize("columns,field", [
    ({"action": [0, 1], "reward": [0.5, 1.5]}, "reward"),
    ({"action": [0, 2], "reward": [0.5, 0.5]}, "action"),
    ({"action": [0.5, 1.0], "reward": [0.5, 0.5]}, "action"),
    ({"action": [0, 1]}, "reward"),
])
def test_malformed_logs_name_the_column(columns, field):
    with pytest.raises(InputError, match=field):
        KLBandit(2, eta=1.0, beta0=0.1).output_distribution(Dataset(columns))


def test_row2_is_an_exact_only_fixture_of_the_default_suite():
    """Witness row 2 (b = {1, 0}, c = 10^4 rewards 0.081736, remove (b, 1)): claimed (20.30, 2.5e-3),
    exact δ 0.50.  From samples the event {b} bounds ε
    by about log(0.5 n/3), so refuting 20.30 needs n ≈ 2.4e9 per side: only the white box reaches it."""
    from dpaudit.catalog.kl import mab_scenarios
    sc = next(s for s in mab_scenarios() if s.name == "kl-mab-a24-row2")
    assert sc.expected["kl-mab/thm1-approx"] == sc.expected["kl-mab/cor1"] == "exact-violation"
    assert sc.samples_factor <= 0.1
    d, dp, mech = A24[1][:3]
    assert sc.mechanism == mech and sc.pair.d.fingerprint == d.fingerprint
    assert sc.pair.d_prime.fingerprint == dp.fingerprint
    p, q = mech.output_distribution(d), mech.output_distribution(dp)
    assert p[0] == pytest.approx(0.5, abs=1e-4) and q[0] < 1e-100
    r = audit_mechanism(mech, d, dp, samples=100_000, seed=0, expected=sc.expected)
    by = {c.claim.claim_id: c for c in r.claims}
    for cid in ("kl-mab/thm1-approx", "kl-mab/cor1"):
        assert by[cid].claim.epsilon == pytest.approx(20.30, abs=0.005)
        assert by[cid].exact_verdict == "violation" and by[cid].verdict == "pass"
        assert by[cid].finding == "refuted (white box)" and by[cid].as_expected
        assert by[cid].epsilon_lower < 12  # far below 20.30 at this budget
    # the pure claim applies on D (min N = 2) and holds: 2300 vs an exact 337
    assert by["kl-mab/thm1-pure"].claim.epsilon == pytest.approx(2300.0)
    assert by["kl-mab/thm1-pure"].exact_verdict == "pass" and by["kl-mab/thm1-pure"].as_expected
    corrected = by["kl-mab/thm1-approx-corrected"]
    assert corrected.claim.delta == 1.0 and corrected.exact_verdict == "pass" and corrected.as_expected
