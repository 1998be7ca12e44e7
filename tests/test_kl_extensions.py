"""§4.4 extensions: repeated sampling (exact T-fold loss) and inexact policies."""

import itertools
import math
from collections import defaultdict

import numpy as np
import pytest

from dpaudit import audit_mechanism
from dpaudit.catalog.kl import _kl_search
from dpaudit.core import InputError
from dpaudit.engine.exact import delta_for_epsilon, pure_epsilon
from dpaudit.mechanisms.kl_bandits import KLBandit
from dpaudit.mechanisms.kl_extensions import InexactPolicy, RepeatedSampling

KL = KLBandit(3, eta=0.25, beta0=0.5, pi0=(0.02, 0.49, 0.49))
PAIR = _kl_search(KL, "add-remove")


def pld_delta(p, q, eps, t):
    """δ_T(ε) = E_{p^T}[(1 − e^{ε − Σ L})_+] by convolving the privacy-loss distribution T times."""
    loss = defaultdict(float)
    loss[0.0] = 1.0
    step = {round(math.log(pa / qa), 12): 0.0 for pa, qa in zip(p, q, strict=True)}
    for pa, qa in zip(p, q, strict=True):
        step[round(math.log(pa / qa), 12)] += pa
    for _ in range(t):
        nxt = defaultdict(float)
        for l1, w1 in loss.items():
            for l2, w2 in step.items():
                nxt[round(l1 + l2, 12)] += w1 * w2
        loss = nxt
    return sum(w * max(0.0, 1 - math.exp(eps - lv)) for lv, w in loss.items())


@pytest.mark.parametrize("t", [1, 3, 10])
def test_t_fold_exact_curve_matches_privacy_loss_convolution(t):
    rep = RepeatedSampling(KL, t)
    p1, q1 = KL.output_distribution(PAIR.d), KL.output_distribution(PAIR.d_prime)
    p, q = rep.output_distribution(PAIR.d), rep.output_distribution(PAIR.d_prime)
    assert p.sum() == pytest.approx(1.0) and len(p) == math.comb(t + 2, 2)
    assert pure_epsilon(p, q) == pytest.approx(t * pure_epsilon(p1, q1), rel=1e-9)
    for eps in (0.5, 1.0, 2.0):
        ref = max(pld_delta(p1, q1, eps, t), pld_delta(q1, p1, eps, t))
        assert delta_for_epsilon(p, q, eps) == pytest.approx(ref, abs=1e-10)


def test_repeated_sampling_outputs_are_indices_distributed_as_claimed():
    rep = RepeatedSampling(KL, 4)
    out = rep.sample(PAIR.d, 200_000, np.random.default_rng(0))
    freq = np.bincount(out, minlength=len(rep.compositions(3))) / len(out)
    assert np.abs(freq - rep.output_distribution(PAIR.d)).max() < 0.005


def test_repeated_sampling_claims_pass_and_name_the_typo():
    r = audit_mechanism(RepeatedSampling(KL, 10), PAIR.d, PAIR.d_prime, samples=200_000, seed=0)
    by = {c.claim.claim_id: c for c in r.claims}
    assert by["kl/repeated-T"].claim.epsilon == pytest.approx(10 * KL.epsilon0(PAIR.d))
    assert "T delta" in by["kl/repeated-T-advanced"].claim.note
    assert all(c.verdict == "pass" and c.exact_verdict == "pass" for c in r.claims)


def test_inexact_policy_converges_and_its_claim_holds():
    gaps = [InexactPolicy(KL, iterations=k, step=1.0).gap(PAIR.d) for k in (0, 2, 5, 20)]
    assert all(a > b for a, b in itertools.pairwise(gaps)) and gaps[-1] < 1e-2
    inexact = InexactPolicy(KL, iterations=3, step=1.0)
    exact_loss = pure_epsilon(inexact.output_distribution(PAIR.d), inexact.output_distribution(PAIR.d_prime))
    claims = {g.claim_id: g for g in inexact.pair_guarantees(PAIR.d, PAIR.d_prime, "add-remove")}
    gap = max(inexact.gap(PAIR.d), inexact.gap(PAIR.d_prime))
    assert claims["kl/inexact"].epsilon == pytest.approx(KL.epsilon0(PAIR.d) + 2 * gap)
    assert exact_loss <= claims["kl/inexact"].epsilon
    # and the bound it rests on: the inexact loss is within 2 eps_hat of the exact policy's
    exact_policy = pure_epsilon(KL.output_distribution(PAIR.d), KL.output_distribution(PAIR.d_prime))
    assert abs(exact_loss - exact_policy) <= 2 * gap + 1e-12


def test_inexact_corrected_delta_differs_only_for_approximate_claims():
    kl = KLBandit(2, eta=0.001, beta0=0.95, n0=1000, k=3)
    from dpaudit.neighbors.synthetic import bandit_log
    d = bandit_log([[1.0, 0.5], [0.067345] * 3000])
    inexact = InexactPolicy(kl, iterations=2, step=500.0)
    claims = {g.claim_id: g for g in inexact.pair_guarantees(d, d.remove(1), "add-remove")}
    assert claims["kl/inexact"].delta == 0.0 == claims["kl/inexact-corrected"].delta  # base: Thm 1 pure


def test_inexact_over_a_tight_approximate_claim_needs_the_corrected_delta():
    """For δ > 0 the printed (ε + 2ε̂, δ) is wrong, e^ε̂ δ is right.  Base claim: the corrected
    approximate statement of Theorem 1, which holds and is tight on this pair (b empty in D, D′ adds
    (b, R): δ_c = π̃(b; D′))."""
    from dpaudit.catalog.kl import _inexact_delta
    sc = _inexact_delta()
    inexact, d, dp = sc.mechanism, sc.pair.d, sc.pair.d_prime
    base = inexact.base
    base_claim = next(g for g in base.guarantees(d, "add-remove") if g.claim_id == "kl-mab/thm1-approx-corrected")
    p, q = base.output_distribution(d), base.output_distribution(dp)
    assert base_claim.epsilon == pytest.approx((0.5 + (1 - 1 / math.sqrt(2))) / 0.5)  # N0 = 1, R = 1, β0 = 1
    assert base_claim.delta == pytest.approx(q[0], rel=1e-12) and p[0] == 0.0
    assert delta_for_epsilon(p, q, base_claim.epsilon) == pytest.approx(base_claim.delta, rel=1e-9)  # tight
    gap = max(inexact.gap(d), inexact.gap(dp))
    claims = {g.claim_id: g for g in inexact.pair_guarantees(d, dp, "add-remove")}
    printed, corrected = claims["kl/inexact"], claims["kl/inexact-corrected"]
    assert not printed.applicable and printed.broken_premise and "δ = 0" in printed.note
    assert printed.epsilon == corrected.epsilon == pytest.approx(base_claim.epsilon + 2 * gap)
    assert printed.delta == base_claim.delta and corrected.delta == pytest.approx(math.exp(gap) * base_claim.delta)
    ph, qh = inexact.output_distribution(d), inexact.output_distribution(dp)
    actual = delta_for_epsilon(ph, qh, printed.epsilon)
    assert printed.delta == pytest.approx(0.0772, abs=5e-4) and corrected.delta == pytest.approx(0.1395, abs=5e-4)
    assert actual == pytest.approx(0.1078, abs=5e-4)
    assert printed.delta * 1.3 < actual < corrected.delta * 0.9  # the printed δ is too small, e^ε̂ δ is not
    r = audit_mechanism(inexact, d, dp, samples=200_000, seed=0, expected=sc.expected)
    by = {c.claim.claim_id: c for c in r.claims}
    assert by["kl/inexact"].finding == "not-applicable" and by["kl/inexact"].as_expected
    assert "the samples would refute it" in by["kl/inexact"].premise_note
    assert by["kl/inexact-corrected"].verdict == by["kl/inexact-corrected"].exact_verdict == "pass"
    assert by["kl/inexact-corrected"].as_expected


def test_inexact_base_claim_by_id_must_be_stated_and_applicable():
    kl = KLBandit(2, eta=0.5, beta0=1.0, n0=1)
    from dpaudit.neighbors.synthetic import bandit_log
    d = bandit_log([[], [1.0] * 5])
    missing = InexactPolicy(kl, iterations=2, step=1.0, base_claim="kl-mab/no-such-claim")
    gs = missing.pair_guarantees(d, d.add({"action": 0, "reward": 1.0}), "add-remove")
    assert all(not g.applicable and "states no kl-mab/no-such-claim" in g.note for g in gs)
    pure = InexactPolicy(kl, iterations=2, step=1.0, base_claim="kl-mab/thm1-pure")
    gs = pure.pair_guarantees(d, d.add({"action": 0, "reward": 1.0}), "add-remove")
    assert all(not g.applicable and not g.broken_premise and "min_a N(a;D) = 0" in g.note for g in gs)


@pytest.mark.parametrize("kwargs,field", [({"T": 0}, "T"), ({"delta_prime": 0.0}, "delta_prime")])
def test_repeated_sampling_validates(kwargs, field):
    with pytest.raises(InputError, match=field):
        RepeatedSampling(KL, **{"T": 2, **kwargs})


def test_inexact_step_must_keep_the_iteration_contractive():
    with pytest.raises(InputError, match="step"):
        InexactPolicy(KL, iterations=3, step=4.0)  # step * eta = 1
