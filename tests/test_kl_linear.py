"""The linear contextual bandit of eq. (10): Theorem 2's tight family and the witnesses against its approximate part."""

import math

import numpy as np
import pytest

from dpaudit import audit_mechanism
from dpaudit.core import InputError
from dpaudit.engine.exact import delta_for_epsilon, pure_epsilon
from dpaudit.mechanisms.kl_linear import KLLinearBandit
from dpaudit.neighbors.synthetic import linear_log

EMPTY = linear_log([], [], d=1)
ONE = EMPTY.add({"phi": [1.0], "reward": 1.0})
A33 = linear_log(np.ones((99, 1)), [1.0] * 10 + [0.0] * 89)


@pytest.mark.parametrize("lam,ratio", [(2, 0.478), (10, 0.862), (100, 0.985), (1e4, 0.9999)])
def test_tight_family_matches_spec_a32(lam, ratio):
    mech = KLLinearBandit(((1.0,), (-1.0,)), ridge=lam, beta0=0.0, eta=1.0, pi0=(1e-6, 1 - 1e-6))
    sup = mech.epsilon_sup_pi0(EMPTY, ONE)
    assert sup == pytest.approx(2 / (lam + 1), rel=1e-9)  # closed form 2R/((λ+1)η)
    bound = min(mech.guarantees(EMPTY, "add-remove")[0].epsilon, mech.guarantees(ONE, "add-remove")[0].epsilon)
    eps0_empty = 2 / math.sqrt(lam * (lam - 1))  # ε0(∅) = 2R/(η√(λ(λ−1)))
    eps0_one = 2 * (1 + math.sqrt(1 / lam)) / math.sqrt(lam) / math.sqrt(lam + 1)  # n = d = 1, λ_min = λ + 1
    assert bound == pytest.approx(min(eps0_empty, eps0_one), rel=1e-9)
    assert sup / bound == pytest.approx(ratio, abs=6e-4)
    exact = pure_epsilon(mech.output_distribution(EMPTY), mech.output_distribution(ONE))
    assert exact <= sup * (1 + 1e-12) and exact == pytest.approx(sup, rel=1e-5)


def test_tight_family_audit_at_lambda_100_is_within_2_percent_of_the_claim():
    mech = KLLinearBandit(((1.0,), (-1.0,)), ridge=100.0, beta0=0.0, eta=0.02, pi0=(1e-3, 1 - 1e-3))
    r = audit_mechanism(mech, EMPTY, ONE, samples=1_000_000, seed=0)
    (check,) = r.claims
    assert check.verdict == "pass" and check.exact_verdict == "pass"
    assert check.epsilon_exact / check.claim.epsilon >= 0.98
    assert r.epsilon_lower <= check.epsilon_exact


@pytest.mark.parametrize("lambda0,eps,delta", [(1.6e5, 2.06, 0.106), (4e4, 4.12, 5.6e-3), (1e4, 8.24, 1.6e-5)])
def test_a33_witness_breaks_the_approximate_part(lambda0, eps, delta):
    mech = KLLinearBandit(((1.0,), (0.0,)), ridge=1.0, beta0=1.0, eta=5e-4, lambda0=lambda0)
    d_prime = A33.remove(0)
    p, q = mech.output_distribution(A33), mech.output_distribution(d_prime)
    assert p[0] == pytest.approx(0.5, rel=1e-9)  # θ = 0.1 = β0/√Σ makes u(a1) = u(a0)
    # closed form on D′: u(a1) = 9/99 − 1/√99, π(a1) = 1/(1 + e^{−u/η})
    assert q[0] == pytest.approx(1 / (1 + math.exp(-(9 / 99 - 1 / math.sqrt(99)) / 5e-4)), rel=1e-6)
    assert q[0] == pytest.approx(4.6e-9, rel=0.01)
    claim = next(g for g in mech.guarantees(A33, "add-remove") if g.claim_id == "kl-linear/thm2-approx")
    assert claim.epsilon == pytest.approx(eps, abs=0.005) and claim.delta == pytest.approx(delta, rel=0.03)
    assert delta_for_epsilon(p, q, claim.epsilon) == pytest.approx(0.5, abs=1e-4)
    r = audit_mechanism(mech, A33, d_prime, samples=1_000_000, seed=1)
    verdicts = {c.claim.claim_id: c.verdict for c in r.claims}
    assert verdicts == {"kl-linear/thm2-pure": "pass", "kl-linear/thm2-approx": "violation"}


def test_theorem2_pure_holds_on_random_logs_with_feature_candidates():
    """Theorem 2 pure part: max ε_sup/ε0 over random logs is about 0.77; it must stay below 1."""
    from dpaudit.neighbors import add_remove
    rng = np.random.default_rng(21)
    worst = 0.0
    for _ in range(40):
        d = int(rng.integers(1, 4))
        n = int(rng.integers(0, 6))
        phi = rng.normal(size=(n, d))
        phi /= np.maximum(1.0, np.linalg.norm(phi, axis=1, keepdims=True))
        log = linear_log(phi, rng.uniform(0, 1, n))
        acts = rng.normal(size=(3, d))
        acts /= np.linalg.norm(acts, axis=1, keepdims=True)
        mech = KLLinearBandit(acts, ridge=float(rng.uniform(1.5, 20)), beta0=float(rng.uniform(0, 1)), eta=1.0)
        eps0 = mech.guarantees(log, "add-remove")[0].epsilon
        cands = [{"phi": (s * v).tolist(), "reward": r} for v in np.eye(d) for s in (1, -1) for r in (0.0, 1.0)]
        for pair in add_remove(log, cands):
            worst = max(worst, mech.epsilon_sup_pi0(pair.d, pair.d_prime) / eps0)
    assert 0.05 < worst < 1.0


def test_corollary2_needs_its_coverage_assumption():
    log = linear_log(np.tile(np.eye(2), (10, 1)), np.zeros(20))  # Σ = 2I + 10I
    ok = KLLinearBandit(((1.0, 0.0), (0.0, 1.0)), ridge=2.0, beta0=0.1, eta=1.0, k1=1.0)
    cor2 = next(g for g in ok.guarantees(log, "add-remove") if g.claim_id == "kl-linear/cor2-pure")
    assert cor2.applicable and cor2.epsilon == pytest.approx(2 / 20 * (2 * 3 + 0.1 * math.sqrt(0.1)))
    short = KLLinearBandit(((1.0, 0.0), (0.0, 1.0)), ridge=2.0, beta0=0.1, eta=1.0, k1=0.5)
    cor2 = next(g for g in short.guarantees(log, "add-remove") if g.claim_id == "kl-linear/cor2-pure")
    assert not cor2.applicable and "Corollary 2 needs" in cor2.note


def test_corollary2_approximate_part_reproduces_its_witness_and_is_refuted():
    """Registry witness of kl-linear/cor2-approx: d = 2, 1000 reward-0 points on e1, two reward-1 points on
    e2, actions {e2, 0}, β0 = 100, η = 1, π̃(e2; D) = 1/2, k1 = 250.5, c = 0.05: claimed (3.40, 7.1e-4),
    exact δ(3.40) = 0.50."""
    from dpaudit.catalog.kl import _linear_cor2_approx
    sc = _linear_cor2_approx()
    mech, d, dp = sc.mechanism, sc.pair.d, sc.pair.d_prime
    sigma, _ = mech.statistics(d)
    assert np.linalg.eigvalsh(sigma)[0] == pytest.approx(3.0) and len(d) == 1002
    assert 1 + len(d) / (mech.k1 * 2) == pytest.approx(3.0)  # k1 = 250.5 is the smallest admissible
    g = {c.claim_id: c for c in mech.guarantees(d, "add-remove")}
    eps0 = 250.5 * 2 / 1002 * (2 * (1 + math.sqrt(250.5) * 2) + 100 * math.sqrt(250.5 * 2 / 1002))
    assert g["kl-linear/cor2-pure"].epsilon == pytest.approx(eps0, rel=1e-12)
    approx = g["kl-linear/cor2-approx"]
    assert approx.epsilon == pytest.approx(0.05 * eps0, rel=1e-12)
    assert approx.epsilon == pytest.approx(3.40, abs=0.005) and approx.delta == pytest.approx(7.1e-4, rel=0.01)
    p, q = mech.output_distribution(d), mech.output_distribution(dp)
    assert p[0] == pytest.approx(0.5, rel=1e-9)
    assert delta_for_epsilon(p, q, approx.epsilon) == pytest.approx(0.50, abs=1e-3)
    # on D′ the coverage assumption fails (λ_min = 2 < 2.998): D's claims are the ones tested
    on_dp = {c.claim_id: c for c in mech.guarantees(dp, "add-remove")}
    assert not on_dp["kl-linear/cor2-approx"].applicable and "Corollary 2 needs" in on_dp["kl-linear/cor2-approx"].note
    r = audit_mechanism(mech, d, dp, samples=200_000, seed=0, expected=sc.expected)
    by = {c.claim.claim_id: c for c in r.claims}
    cor2 = by["kl-linear/cor2-approx"]
    assert cor2.verdict == cor2.exact_verdict == "violation"
    assert all(c.as_expected for c in r.claims)
    assert by["kl-linear/cor2-pure"].exact_verdict == by["kl-linear/thm2-pure"].exact_verdict == "pass"


@pytest.mark.parametrize("kwargs", [{"k1": 1.0, "c": 1.0}, {"k1": 1.0, "c": 0.0}, {"c": 0.5}])
def test_corollary2_c_must_be_in_0_1_and_needs_k1(kwargs):
    with pytest.raises(InputError, match="c"):
        KLLinearBandit(((1.0,), (0.0,)), ridge=2.0, beta0=0.1, eta=1.0, **kwargs)


def test_theorem2_is_not_applicable_without_coverage():
    mech = KLLinearBandit(((1.0,), (0.0,)), ridge=0.5, beta0=0.1, eta=1.0)
    (g,) = mech.guarantees(EMPTY, "add-remove")
    assert not g.applicable and "lambda_min" in g.note


@pytest.mark.parametrize("kwargs,field", [
    ({"ridge": 0.0}, "ridge"), ({"eta": -1.0}, "eta"), ({"beta0": -1.0}, "beta0"),
    ({"features": ((2.0,), (0.0,))}, "features"), ({"reward_range": 0.0}, "reward_range"),
])
def test_invalid_hyperparameters_name_the_field(kwargs, field):
    base = {"features": ((1.0,), (0.0,)), "ridge": 1.0, "beta0": 0.1, "eta": 1.0}
    with pytest.raises(InputError, match=field):
        KLLinearBandit(**{**base, **kwargs})


def test_features_of_norm_above_one_in_the_log_are_rejected():
    mech = KLLinearBandit(((1.0,), (0.0,)), ridge=1.0, beta0=0.1, eta=1.0)
    with pytest.raises(InputError, match="phi"):
        mech.output_distribution(linear_log([[1.5]], [0.5]))
