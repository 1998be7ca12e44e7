"""RLHF with the Bradley–Terry MLE (eq. (11)): the MLE, separation, spec A.4.2 tables and the
corrected A.4.3 bounds.  The printed Theorems 3 and 4 are caught; the corrected bounds pass."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logit

from audit import audit_mechanism
from audit.exact import delta_for_epsilon, pure_epsilon
from dpcore import InputError
from mechanisms.kl_rlhf import KLRLHF, MLEUndefined, bradley_terry_mle, separation
from neighbors.synthetic import comparisons

PM = ((1.0,), (-1.0,))


def canon(n, k):
    return comparisons(np.full((n, 1), 2.0), [1] * k + [0] * (n - k))


def claims(mech, d, dp, relation):
    return {g.claim_id: g for g in mech.pair_guarantees(d, dp, relation)}


def test_mle_matches_closed_form_and_an_independent_optimiser():
    assert bradley_terry_mle(np.full((10, 1), 2.0), np.array([1.0] * 4 + [0.0] * 6))[0] == pytest.approx(
        0.5 * logit(0.4), rel=1e-12)
    rng = np.random.default_rng(0)
    z = rng.normal(size=(200, 3))
    z /= np.maximum(0.5, np.linalg.norm(z, axis=1, keepdims=True)) / 2
    y = (rng.random(200) < 1 / (1 + np.exp(-z @ np.array([0.5, -1.0, 0.2])))).astype(float)
    nll = lambda t: np.sum(np.logaddexp(0, -(2 * y - 1) * (z @ t)))  # noqa: E731
    ref = minimize(nll, np.zeros(3), method="BFGS", options={"gtol": 1e-10}).x
    assert np.allclose(bradley_terry_mle(z, y), ref, atol=1e-6)


@pytest.mark.parametrize("z,y,kind", [
    ([[2.0], [2.0]], [1, 1], "completely separated"),
    ([[2.0], [0.0], [-2.0]], [1, 1, 0], "completely separated"),
    ([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0]], [1, 0, 1], "separated"),
    ([[2.0, 0.0], [2.0, 0.0]], [1, 0], "span only 1 of 2"),
])
def test_separation_is_detected_and_claims_become_not_applicable(z, y, kind):
    z, y = np.array(z), np.array(y, dtype=float)
    assert kind in separation(z, y)
    with pytest.raises(MLEUndefined):
        bradley_terry_mle(z, y)
    mech = KLRLHF(((0.6, 0.8), (0.0, 0.0)) if z.shape[1] > 1 else PM, ridge=1.0, beta0=0.1, eta=1.0)
    d = comparisons(z, y)
    gs = mech.pair_guarantees(d, d, "label-flip")
    assert gs and all(not g.applicable and "does not exist" in g.note for g in gs)


def test_no_separation_on_mixed_labels():
    assert separation(np.array([[2.0], [2.0]]), np.array([1.0, 0.0])) is None


# spec A.4.2 canonical table at η = 1: (pair builder, relation, B, ε_sup, printed, corrected)
TABLE = [
    (lambda: (canon(10, 5), canon(10, 5).flip(0)), "label-flip", 0.203, 0.405, 0.125, 0.417),
    (lambda: (canon(200, 100), canon(200, 100).flip(0)), "label-flip", 0.010, 0.0200, 0.0051, 0.0200),
    (lambda: (canon(11, 5), canon(11, 5).remove(10)), "add-remove", 0.091, 0.182, 0.050, 0.200),
    (lambda: (canon(200, 100), canon(200, 100).remove(0)), "add-remove", 0.005, 0.0101, 0.0025, 0.0101),
]


@pytest.mark.parametrize("build,relation,b,sup,printed,corrected", TABLE)
def test_canonical_family_reproduces_spec_a42(build, relation, b, sup, printed, corrected):
    d, dp = build()
    mech = KLRLHF(PM, ridge=1.0, beta0=0.01, eta=1.0)
    g = claims(mech, d, dp, relation)
    n, k = len(d), int(d["label"].sum())
    n2, k2 = len(dp), int(dp["label"].sum())
    theta, theta2 = 0.5 * logit(k / n), 0.5 * logit(k2 / n2)
    b_exact = max(abs(theta), abs(theta2))
    assert float(g[next(iter(g))].note.split("= ")[1]) == pytest.approx(b_exact, rel=1e-5)
    assert b_exact == pytest.approx(b, abs=6e-4)
    m = 4 * n  # λ_min(Σ_D) − λ for n comparisons with z = 2
    gamma = 1 / (2 + math.exp(2 * b_exact) + math.exp(-2 * b_exact))
    lev = min(1, 2 / math.sqrt(m)) / math.sqrt(m)
    if relation == "label-flip":
        assert g["kl-rlhf/thm3-label"].epsilon == pytest.approx((2 + 2 * math.exp(2 * b_exact)) / m, rel=1e-9)
        assert g["kl-rlhf/thm3-label-corrected"].epsilon == pytest.approx(2 / gamma * lev, rel=1e-9)
        pid, cid = "kl-rlhf/thm3-label", "kl-rlhf/thm3-label-corrected"
        sup_exact = 2 * abs(theta2 - theta)  # Δu(±1) = ±Δθ: Γ cancels under a label flip
        assert mech.epsilon_sup_pi0(d, dp) == pytest.approx(sup_exact, rel=1e-9)
    else:
        pid, cid = "kl-rlhf/thm4-addremove", "kl-rlhf/thm4-addremove-corrected"
    assert g[pid].epsilon == pytest.approx(printed, rel=0.02)
    assert g[cid].epsilon == pytest.approx(corrected, rel=0.02)
    sup_found = mech.epsilon_sup_pi0(d, dp)
    assert sup_found == pytest.approx(sup, rel=0.02)
    assert sup_found / g[pid].epsilon > 3.2  # printed bound broken by more than 3x
    assert 0.9 <= sup_found / g[cid].epsilon <= 1.0  # corrected bound tight and valid


def test_same_instance_uniform_pi0_exact_numbers():
    d, dp = canon(10, 5), canon(10, 5).flip(0)
    for eta, exact, claimed, delta in [(0.1, 3.38, 1.25, 0.44), (0.02, 19.58, 6.25, 0.50)]:
        mech = KLRLHF(PM, ridge=1.0, beta0=0.01, eta=eta)
        p, q = mech.output_distribution(d), mech.output_distribution(dp)
        closed = math.log(0.5 * (1 + math.exp(-2 * 0.5 * logit(0.4) / eta)))  # log(p(+)/q(+)), θ(D) = 0
        assert pure_epsilon(p, q) == pytest.approx(closed, rel=1e-6)
        assert pure_epsilon(p, q) == pytest.approx(exact, abs=0.005)
        assert claims(mech, d, dp, "label-flip")["kl-rlhf/thm3-label"].epsilon == pytest.approx(claimed, rel=0.01)
        assert delta_for_epsilon(p, q, claimed) == pytest.approx(delta, abs=0.005)


def test_theorem3_is_caught_empirically_at_1e6_samples_and_the_corrected_bound_passes():
    d, dp = canon(10, 5), canon(10, 5).flip(0)
    r = audit_mechanism(KLRLHF(PM, ridge=1.0, beta0=0.01, eta=0.1), d, dp, samples=1_000_000, seed=0,
                        relation="label-flip")
    by = {c.claim.claim_id: c for c in r.claims}
    assert by["kl-rlhf/thm3-label"].verdict == "violation" and r.epsilon_lower >= 3.0
    assert by["kl-rlhf/thm3-label-corrected"].verdict == "pass"
    assert r.epsilon_lower <= r.epsilon_exact


def test_theorem4_is_caught_empirically_and_the_corrected_bound_is_tight():
    d, dp = canon(11, 5), canon(11, 5).remove(10)
    r = audit_mechanism(KLRLHF(PM, ridge=1.0, beta0=0.01, eta=0.1, pi0=(1e-3, 1 - 1e-3)), d, dp,
                        samples=1_000_000, seed=0)
    by = {c.claim.claim_id: c for c in r.claims}
    assert by["kl-rlhf/thm4-addremove"].verdict == "violation"
    corrected = by["kl-rlhf/thm4-addremove-corrected"]
    assert corrected.verdict == "pass" and corrected.exact_verdict == "pass"
    assert corrected.epsilon_exact / corrected.claim.epsilon >= 0.9


@pytest.mark.parametrize("lambda0,eps,delta,exact_delta", [(1e4, 1.16, 2e-6, 0.4999), (2500, 2.33, 2e-12, 0.4996),
                                                           (625, 4.66, 2e-24, 0.4960)])
def test_approximate_label_dp_is_caught(lambda0, eps, delta, exact_delta):
    from audit.catalog.kl import _rlhf_approx
    sc = _rlhf_approx(lambda0)
    mech, d, dp = sc.mechanism, sc.pair.d, sc.pair.d_prime
    g = claims(mech, d, dp, "label-flip")["kl-rlhf/thm3-label-approx"]
    assert g.epsilon == pytest.approx(eps, abs=0.006) and g.delta == pytest.approx(delta, rel=0.05)
    p, q = mech.output_distribution(d), mech.output_distribution(dp)
    assert p[0] == pytest.approx(0.5, rel=1e-9)
    assert delta_for_epsilon(p, q, g.epsilon) == pytest.approx(exact_delta, abs=2e-4)
    r = audit_mechanism(mech, d, dp, samples=1_000_000, seed=2, relation="label-flip")
    assert {c.claim.claim_id: c.verdict for c in r.claims}["kl-rlhf/thm3-label-approx"] == "violation"


def test_corrected_bounds_are_never_exceeded_on_random_small_datasets():
    rng = np.random.default_rng(31)
    checked = 0
    for _ in range(60):
        d = int(rng.integers(1, 3))
        n = int(rng.integers(4, 12))
        z = rng.normal(size=(n, d))
        z = 2 * z / np.maximum(1.0, np.linalg.norm(z, axis=1, keepdims=True))
        y = rng.integers(0, 2, n)
        data = comparisons(z, y)
        if separation(z, y.astype(float)) is not None:
            continue
        acts = rng.normal(size=(3, d))
        acts /= np.linalg.norm(acts, axis=1, keepdims=True)
        mech = KLRLHF(acts, ridge=float(rng.uniform(0.5, 3)), beta0=float(rng.uniform(0, 1)), eta=1.0)
        for i in range(n):
            for relation, dp in (("label-flip", data.flip(i)), ("add-remove", data.remove(i))):
                if separation(dp["z"], dp["label"].astype(float)) is not None:
                    continue
                g = claims(mech, data, dp, relation)
                cid = [k for k in g if k.endswith("corrected")][0]
                if g[cid].applicable:
                    assert mech.epsilon_sup_pi0(data, dp) <= g[cid].epsilon * (1 + 1e-9)
                    checked += 1
    assert checked > 100


@pytest.mark.parametrize("columns,field", [
    ({"z": [[2.0], [2.0]], "label": [1, 2]}, "label"),
    ({"z": [[3.0], [2.0]], "label": [1, 0]}, "z"),
])
def test_malformed_comparisons_name_the_column(columns, field):
    from neighbors import Dataset
    with pytest.raises(InputError, match=field):
        KLRLHF(PM, ridge=1.0, beta0=0.1, eta=1.0).output_distribution(Dataset(columns))


def test_lambda0_must_exceed_lambda():
    with pytest.raises(InputError, match="lambda0"):
        KLRLHF(PM, ridge=2.0, beta0=0.1, eta=1.0, lambda0=1.0)
