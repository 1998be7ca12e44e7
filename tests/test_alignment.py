"""The alignment paper's mechanisms: curves, solvers, claims and audits.

Statistical tests use fixed seeds; each bound holds at confidence 0.95 unless stated.
"""

import math

import numpy as np
import pytest
from scipy import optimize

from dpaudit import audit_mechanism, audit_samples
from dpaudit.catalog import alignment as af
from dpaudit.core import Guarantee, InputError
from dpaudit.engine.results import ClaimCheck
from dpaudit.engine.verdicts import outcome
from dpaudit.mechanisms.align_covariance import PrivateCovariance
from dpaudit.mechanisms.align_mle import PrivateMLE, minimise_batch, objective_curve_1d
from dpaudit.mechanisms.align_policy import PessimisticPolicy, PrivateAlignment
from dpaudit.mechanisms.classic import on_grid
from dpaudit.mechanisms.curves import (
    chi_delta,
    chi_delta_array,
    chi_epsilon,
    compose_epsilon,
    gauss_delta,
    gauss_delta_array,
    gauss_epsilon,
    objective_sigma,
)
from dpaudit.mechanisms.faulty import PrivateMLEOnTenthNoise
from dpaudit.mechanisms.preferences import BradleyTerry, PlackettLuce, Trajectory
from dpaudit.neighbors import Dataset, zero_out
from dpaudit.neighbors.synthetic import preference_records, preferences

# --- reference curves ------------------------------------------------------------------


def test_chi_bound_for_one_dimension_is_twice_the_gaussian_curve():
    for eps, mu, ej in [(0.5, 0.1, 0.1), (1.0, 0.3, 0.0), (0.3, 0.05, 0.2)]:
        assert chi_delta(eps, mu, 1, ej) == pytest.approx(2 * gauss_delta(eps - ej, mu), rel=1e-8)


def test_chi_bound_reproduces_the_sanity_check_of_b13():
    mu, ej = 2 / 23.5, math.log1p(1 / 8.55)
    got = [chi_delta(e, mu, 1, ej) for e in (0.05, 0.1, 0.2)]
    assert got == pytest.approx([0.12, 0.078, 0.013], rel=0.05)  # reference values known to 2 digits
    assert chi_epsilon(got[1], mu, 1, ej) == pytest.approx(0.1, abs=1e-8)


@pytest.mark.parametrize("record, relation, lam, sigma_b", [
    (BradleyTerry(), "add-remove", 7.51, 34.4), (BradleyTerry(), "swap", 7.51, 74.6),
    (PlackettLuce(K=4), "add-remove", 24.0, 118.6), (PlackettLuce(K=4), "swap", 24.0, 267.7),
    (Trajectory(H=3), "add-remove", 67.6, 103.3), (Trajectory(H=3), "swap", 67.6, 223.9)])
def test_instantiation_reproduces_its_table_of_constants(record, relation, lam, sigma_b):
    mech = PrivateMLE(record, 1.0, 1e-6, calibration="instantiated", relation=relation)
    assert mech.regulariser(3) == pytest.approx(lam, abs=0.05)
    assert mech.sigma_b == pytest.approx(sigma_b, abs=0.05)
    assert mech.nu == pytest.approx(0.0645, abs=5e-5)
    # and the budget split certifies exactly (eps/2, delta/2) on its chain
    dg, k = mech.difference(relation)
    split = mech._split()
    assert chi_delta(split["eps_j"] + split["eps_g"], dg / mech.sigma_b, k, split["eps_j"]) == pytest.approx(
        split["delta_obj"], rel=1e-6)


def test_vectorised_curves_match_the_reference_and_composition_is_bracketed():
    eps = np.array([0.1, 0.4, 0.8, 1.5])
    for k in (1, 3):
        assert chi_delta_array(eps, 0.05, k, 0.1) == pytest.approx([chi_delta(e, 0.05, k, 0.1) for e in eps],
                                                                   rel=1e-4)
    assert gauss_delta_array(eps, 0.3) == pytest.approx([gauss_delta(e, 0.3) for e in eps], rel=1e-9)
    one = lambda e: gauss_delta_array(e, 0.3)
    both = compose_epsilon(1e-6, one, one)
    single = gauss_epsilon(1e-6, 0.3)
    # two identical Gaussians compose to mu*sqrt(2) exactly; basic composition lies between that and 2x
    assert gauss_epsilon(1e-6, 0.3 * math.sqrt(2)) <= both <= 2 * gauss_epsilon(5e-7, 0.3) + 0.01
    assert both >= single


@pytest.mark.slow  # over 4 s in the fast tier (issue #12: the fast tier within 180 s)
def test_b2_table_tight_epsilons_and_dp_accounting_agree():
    mu0 = lambda eps, delta: eps / (2 * math.sqrt(math.log(1 / delta)))
    rows = [(0.1, 1e-5, 1, 0.045), (0.1, 1e-10, 1, 0.057), (0.5, 1e-6, 1, 0.271), (1.0, 1e-6, 1, 0.566),
            (1.0, 1e-6, math.sqrt(2), 0.819), (1.0, 1e-10, math.sqrt(2), 0.876)]
    for eps, delta, factor, tight in rows:
        assert gauss_epsilon(delta / 2, factor * mu0(eps, delta)) == pytest.approx(tight, abs=6e-4)
    assert gauss_delta(0.5, math.sqrt(2) * mu0(1.0, 1e-6)) == pytest.approx(3.3e-4, rel=0.02)
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    mu = math.sqrt(2) * mu0(1.0, 1e-6)
    ref = pld.from_gaussian_mechanism(1.0 / mu, sensitivity=1.0, value_discretization_interval=1e-5)
    assert ref.get_epsilon_for_delta(5e-7) == pytest.approx(gauss_epsilon(5e-7, mu), abs=1e-3)


# --- Algorithm 1 -------------------------------------------------------------------------


def _scipy_minimiser(model, data, lam, b):
    terms = model.loss_terms(data)

    def f(th):
        return float(model.objective(th[None], terms)[0] + 0.5 * lam * th @ th + b @ th)

    def g(th):
        return model.gradient_hessian(th[None], terms, hessian=False)[0][0] + lam * th + b

    return optimize.minimize(f, np.zeros(len(b)), jac=g, method="BFGS", options={"gtol": 1e-11}).x


@pytest.mark.parametrize("kind", ["pairwise", "kwise", "trajectory"])
def test_batched_newton_matches_scipy(kind):
    rng = np.random.default_rng(5)
    model = af.record_model(kind)
    data = preference_records(kind, 40, 3, rng)
    b = 20 * rng.standard_normal((6, 3))
    terms = model.loss_terms(data)
    got = minimise_batch(model, terms, 3.0, b, np.zeros_like(b), 1e-10)
    for row, bb in zip(got, b, strict=True):
        assert row == pytest.approx(_scipy_minimiser(model, data, 3.0, bb), abs=1e-6)


def test_plackett_luce_gradient_and_hessian_match_finite_differences():
    rng = np.random.default_rng(2)
    model, data = PlackettLuce(K=4), preference_records("kwise", 7, 3, rng)
    terms, theta, h = model.loss_terms(data), rng.normal(size=(1, 3)), 1e-6
    grad, hess = model.gradient_hessian(theta, terms)
    for j in range(3):
        e = np.eye(3)[j] * h
        fd = (model.objective(theta + e, terms) - model.objective(theta - e, terms))[0] / (2 * h)
        assert grad[0, j] == pytest.approx(fd, rel=1e-6, abs=1e-8)
        gd = (model.gradient_hessian(theta + e, terms, False)[0] - model.gradient_hessian(theta - e, terms, False)[0])
        assert hess[0, :, j] == pytest.approx(gd[0] / (2 * h), rel=1e-5, abs=1e-7)
    assert np.linalg.matrix_rank(model.gradient_hessian(theta, (terms[0][:1],))[1][0]) <= 3  # rank <= K - 1


def test_approximate_solver_stays_within_the_accuracy_radius():
    pair = af.mle_pair("pairwise")
    exact = af.mle("pairwise")
    approx = af.mle("pairwise", solver="approximate", accuracy=0.05)
    b = exact.sigma_b * np.random.default_rng(0).standard_normal((500, 2))
    gap = np.linalg.norm(exact.minimiser(pair.d, b) - approx.minimiser(pair.d, b), axis=1)
    assert gap.max() <= 0.05 and gap.max() > 1e-6  # it stops early, but never farther than r0
    assert approx.chi_epsilon(2, "add-remove", 5e-7) > exact.chi_epsilon(2, "add-remove", 5e-7)


@pytest.mark.slow  # a 1.6e6-point curve and 4e5 MLE samples per side (~10 s)
def test_exact_one_dimensional_curve_reproduces_b13_and_the_audit_stays_under_it():
    pair = af.mle_pair_1d()
    mech = af.mle("pairwise", lambda_r=8.55, output_noise=False)
    assert mech.sigma_b == pytest.approx(23.5, abs=0.01)
    curve = objective_curve_1d(mech, pair.d, pair.d_prime)
    exact = [curve.delta(e) for e in (0.05, 0.1, 0.2)]
    assert exact == pytest.approx([1.3e-2, 5.1e-3, 3.0e-4], rel=0.02)  # reference values known to 2 digits
    mu, ej = 2 / mech.sigma_b, mech.jacobian_epsilon(1)
    assert all(chi_delta(e, mu, 1, ej) >= x
               for e, x in zip((0.05, 0.1, 0.2), exact, strict=True))  # the bound is an upper bound
    # a finer grid changes nothing that matters
    finer = objective_curve_1d(mech, pair.d, pair.d_prime, points=1_600_001)
    assert finer.epsilon(1e-3) == pytest.approx(curve.epsilon(1e-3), rel=1e-6)
    result = audit_mechanism(mech, pair.d, pair.d_prime, samples=400_000, deltas=(1e-3, 1e-2), seed=1)
    for delta in (1e-3, 1e-2):
        assert result.estimate.at(delta).epsilon_lower <= result.exact[delta]
    assert result.estimate.at(1e-2).epsilon_lower >= 0.5 * result.exact[1e-2]  # and it is not vacuous


@pytest.mark.slow  # over 4 s in the fast tier (issue #12: the fast tier within 180 s)
def test_instantiated_mle_passes_and_a_tenth_of_the_noise_is_caught():
    pair = af.mle_pair("pairwise")
    good = audit_mechanism(af.mle("pairwise", "instantiated"), pair.d, pair.d_prime, samples=100_000, seed=0)
    assert {c.claim.claim_id: c.verdict for c in good.claims} == {"align/alg1-instantiated": "pass",
                                                                  "align/alg1-chi": "pass"}
    broken = PrivateMLEOnTenthNoise(BradleyTerry(), 1.0, 1e-6)
    bad = audit_mechanism(broken, pair.d, pair.d_prime, samples=100_000, seed=0)
    printed = next(c for c in bad.claims if c.claim.claim_id == "align/alg1-printed")
    assert printed.verdict == "violation" and printed.epsilon_lower > 1.0


def test_instantiated_claims_follow_the_calibrated_relation():
    data = af.mle_pair("pairwise").d
    add = af.mle("pairwise", "instantiated")
    swap = af.mle("pairwise", "instantiated", "swap")
    ids = lambda m, rel: {c.claim_id: c.applicable for c in m.guarantees(data, rel)}
    assert ids(add, "add-remove")["align/alg1-instantiated"] and ids(add, "zero-out")["align/alg1-instantiated"]
    assert not ids(add, "swap")["align/alg1-instantiated"]
    assert ids(swap, "add-remove")["align/alg1-instantiated"] and ids(swap, "swap")["align/alg1-instantiated"]
    assert add.guarantees(data, "label-flip") == []


# --- Algorithm 2 -------------------------------------------------------------------------


def test_covariance_sampler_and_sensitivities():
    pair = af.covariance_pair("pairwise", "swap", n=20)
    mech = af.covariance("pairwise")
    out = mech.sample(pair.d, 200_000, np.random.default_rng(0))
    sigma = mech.sigma(20)
    assert out.mean(axis=0) == pytest.approx(mech.covariance(pair.d).ravel(), abs=5 * sigma / math.sqrt(200_000))
    assert out.std(axis=0) == pytest.approx(np.full(4, sigma), rel=0.01)
    shift = np.linalg.norm(mech.covariance(pair.d) - mech.covariance(pair.d_prime))
    assert shift == pytest.approx(BradleyTerry().sensitivity("swap", 20), rel=1e-12)  # the worst swap pair
    zero = af.covariance_pair("trajectory", "zero-out")
    traj = af.covariance("trajectory")
    assert np.linalg.norm(traj.covariance(zero.d) - traj.covariance(zero.d_prime)) == pytest.approx(
        Trajectory(H=3).sensitivity("zero-out", 20), rel=1e-12)


def test_printed_covariance_exact_check_under_zero_out_and_swap():
    for relation, tight in (("zero-out", 0.566), ("swap", 0.819)):
        pair = af.covariance_pair("pairwise", relation)
        mech = af.covariance("pairwise")
        assert mech.exact_epsilon(pair.d, pair.d_prime, 5e-7) == pytest.approx(tight, abs=1e-3)
        claims = {c.claim_id: c for c in mech.guarantees(pair.d, relation)}
        assert claims["align/alg2-printed"].epsilon == 0.5
        check = ClaimCheck(claims["align/alg2-printed"], None, mech.exact_epsilon(pair.d, pair.d_prime, 5e-7),
                           "exact-violation")
        assert check.exact_verdict == "violation" and check.as_expected
    fixed = af.covariance("pairwise", "tight", "swap")
    pair = af.covariance_pair("pairwise", "swap")
    assert fixed.exact_epsilon(pair.d, pair.d_prime, 5e-7) == pytest.approx(0.5, abs=1e-9)


def test_kwise_and_trajectory_variants_as_in_the_b2_table():
    verdicts = {}
    for kind, shape in (("pairwise", {}), ("kwise", {"K": 3}), ("kwise", {"K": 4}), ("trajectory", {"H": 1}),
                        ("trajectory", {"H": 2}), ("trajectory", {"H": 3})):
        pair = af.covariance_pair(kind, "zero-out", **shape)
        mech = af.covariance(kind, **shape)
        claim = mech.guarantees(pair.d, "zero-out")[0]
        # the worst-case sensitivity of the table (the pair attains it except for K >= 3)
        mu = mech.model.sensitivity("zero-out", 20) / mech.sigma(20)
        verdicts[(kind, tuple(shape.values()))] = "violation" if gauss_epsilon(5e-7, mu) > claim.epsilon else "pass"
    assert verdicts == {("pairwise", ()): "violation", ("kwise", (3,)): "pass", ("kwise", (4,)): "pass",
                        ("trajectory", (1,)): "violation", ("trajectory", (2,)): "pass",
                        ("trajectory", (3,)): "pass"}


@pytest.mark.slow  # 1e7 samples per side (~15 s)
def test_gaussian_profile_never_exceeds_the_exact_curve_and_is_tight_at_1e_3():
    """One audit of Algorithm 2 (tight calibration, swap) with 10^7 samples per side."""
    pair = af.covariance_pair("pairwise", "swap")
    mech = af.covariance("pairwise", "tight", "swap")
    deltas = (1e-1, 1e-2, 1e-3, 1e-5)
    result = audit_mechanism(mech, pair.d, pair.d_prime, samples=10_000_000, deltas=deltas, seed=3,
                             relation="swap", n_jobs=2)
    for delta in deltas:
        assert result.estimate.at(delta).epsilon_lower <= result.exact[delta]
    assert result.estimate.at(1e-3).epsilon_lower >= 0.85 * result.exact[1e-3]
    assert all(c.verdict == "pass" for c in result.claims)
    gdp = result.estimate.gdp
    true_mu = BradleyTerry().sensitivity("swap", 20) / mech.sigma(20)
    assert gdp.consistent and gdp.lower <= true_mu <= gdp.upper


# --- released pair and Algorithm 3 ---------------------------------------------------------


class LeakyPolicy(PessimisticPolicy):
    """A 'policy' that reads the dataset (not post-processing): it picks action 0 whenever the
    first record is not zero, else samples honestly."""

    def sample(self, data, size, rng):
        honest = super().sample(data, size, rng)
        leak = bool(np.any(np.asarray(data["x"])[0] != 0))
        return np.where(rng.random(size) < 0.5, 0 if leak else 1, honest)


@pytest.mark.slow  # three 1e5-sample audits of the MLE + covariance release (~10-20 s)
def test_pessimistic_policy_is_post_processing_and_a_leaky_one_is_caught():
    pair = af.covariance_pair("pairwise", "zero-out")
    release = PrivateAlignment(af.mle("pairwise"), af.covariance("pairwise"))
    actions = ((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.5, 0.5))
    composed = release.composed_epsilon(pair.d, "zero-out", 1e-6)
    assert 1.0 < composed < 1.3
    honest = audit_mechanism(PessimisticPolicy(release, actions), pair.d, pair.d_prime, samples=100_000,
                             relation="zero-out", seed=0)
    inputs = audit_mechanism(release, pair.d, pair.d_prime, samples=100_000, relation="zero-out", seed=0)
    assert honest.epsilon_lower <= composed and inputs.epsilon_lower <= composed
    assert all(c.verdict == "pass" for c in honest.claims)
    leaky = audit_mechanism(LeakyPolicy(release, actions), pair.d, pair.d_prime, samples=100_000,
                            relation="zero-out", seed=0)
    assert {c.claim.claim_id: c.verdict for c in leaky.claims} == {"align/thm41": "violation",
                                                                   "align/thm41-composed": "violation"}


def test_policy_choice_is_the_closed_form_pessimistic_value():
    release = PrivateAlignment(af.mle("pairwise"), af.covariance("pairwise"))
    policy = PessimisticPolicy(release, ((1.0, 0.0), (0.0, 1.0)), reference=(0.0, 0.0), radius=2.0, ridge=0.5)
    theta = np.array([[1.0, 0.9], [0.2, 0.1]])
    cov = np.array([np.diag([0.0, 10.0]), np.diag([10.0, 0.0])])
    # value_a = theta_a - F / sqrt(cov_aa + ridge): well-covered directions have narrow confidence sets, so
    # pessimism picks the covered action even with the lower estimate (1 - 2.83 < 0.9 - 0.62; 0.2 - 0.62 > 0.1 - 2.83)
    assert policy.choose(theta, cov).tolist() == [1, 0]
    optimistic = PessimisticPolicy(release, ((1.0, 0.0), (0.0, 1.0)), radius=0.0)
    assert optimistic.choose(theta, cov).tolist() == [0, 0]  # F = 0: plain argmax of the estimate


# --- relations, validation, bookkeeping ----------------------------------------------------


def test_zero_out_relation_keeps_n_and_zeroes_features():
    base = preferences([[1.0, 0.0], [0.0, 0.0], [0.5, 0.5]], [1, 0, 1])
    pairs = list(zero_out(base, ["x"]))
    assert len(pairs) == 2  # the already-zero record has no zero-out neighbour
    assert all(len(p.d_prime) == 3 and p.relation == "zero-out" for p in pairs)
    assert pairs[0].d_prime["x"][0].tolist() == [0.0, 0.0] and pairs[0].d_prime["y"][0] == 1


@pytest.mark.parametrize("build, field", [
    (lambda: BradleyTerry().features(preferences([[3.0, 0.0]], [1])), "column 'x' record 0"),
    (lambda: BradleyTerry().signed(preferences([[1.0, 0.0]], [2])), "column 'y'"),
    (lambda: PlackettLuce(K=4).features(Dataset({"phi": np.zeros((2, 3, 2))})), "column 'phi'"),
    (lambda: Trajectory(H=0), "H"),
    (lambda: PrivateMLE(BradleyTerry(), 1.0, 1e-6, calibration="magic"), "calibration"),
    (lambda: PrivateMLE(BradleyTerry(), 1.0, 1.5), "delta"),
    (lambda: PrivateCovariance(BradleyTerry(), 1.0, 1e-6, relation="add-remove"), "relation"),
    (lambda: PrivateAlignment(af.mle("pairwise"), af.covariance("kwise")), "covariance.model"),
    (lambda: PessimisticPolicy(PrivateAlignment(af.mle("pairwise"), af.covariance("pairwise")), ((1.0,),)),
     "actions"),
])
def test_bad_inputs_name_the_field(build, field):
    with pytest.raises(InputError, match=field.replace("(", r"\(").replace(")", r"\)")):
        build()


def test_objective_sigma_is_the_smallest_noise_meeting_the_target():
    sigma = objective_sigma(0.375, 2.3e-7, 2.0, 1, 0.125)
    assert chi_delta(0.375, 2.0 / sigma, 1, 0.125) == pytest.approx(2.3e-7, rel=1e-6)
    assert chi_delta(0.375, 2.0 / (0.99 * sigma), 1, 0.125) > 2.3e-7


def test_gdp_estimate_covers_a_gaussian_and_rejects_a_laplace_pair():
    rng = np.random.default_rng(0)
    x, y = on_grid(rng.normal(size=1_000_000)), on_grid(0.5 + rng.normal(size=1_000_000))  # no float leak
    gdp = audit_samples(x, y, deltas=(1e-3,)).gdp
    assert gdp.consistent and gdp.lower <= 0.5 <= gdp.upper and abs(gdp.mu - 0.5) < 0.02
    lx, ly = on_grid(rng.laplace(size=1_000_000)), on_grid(1 + rng.laplace(size=1_000_000))
    assert not audit_samples(lx, ly).gdp.consistent


def test_exact_violation_expectation_and_its_outcome_text():
    claim = Guarantee(epsilon=0.5, delta=5e-7, relation="zero-out", claim_id="align/alg2-printed")
    caught = ClaimCheck(claim, None, 0.566, "exact-violation")
    missed = ClaimCheck(claim, None, 0.45, "exact-violation")
    assert caught.as_expected and not missed.as_expected
    rec = {"finding": "refuted (white box)", "expected_verdict": "exact-violation"}
    assert outcome(rec) == "known erratum — caught by the white box"
    assert outcome({**rec, "finding": "holds at this budget"}) == "MISSED expected violation"
    assert outcome({**rec, "expected_verdict": "violation"}) == "MISSED expected violation"
    pair = af.covariance_pair("pairwise", "swap")
    with pytest.raises(InputError, match="expected"):
        audit_mechanism(af.covariance("pairwise"), pair.d, pair.d_prime, samples=100,
                        expected={"align/alg2-printed": "maybe"}, relation="swap")
