"""ρ-zCDP and (α, ε)-RDP claims (dpaudit.claims): their (ε, δ) conversion against dp-accounting's
and closed forms, validation, and their path through audit_mechanism, the records and the re-checker.
Deterministic (the one audit is seeded and checked for its record's shape, not a rate)."""

import json
import math

import numpy as np
import pytest

from dpaudit.claims import RDP, ZCDP, delta_from_zcdp, from_dict
from dpaudit.core import Guarantee, InputError
from dpaudit.engine.api import audit_mechanism
from dpaudit.mechanisms.curves import gauss_delta, gauss_epsilon
from dpaudit.results.document import dumps
from dpaudit.results.recheck import check_record

rdp_accountant = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")


@pytest.mark.parametrize("delta", [0.1, 1e-2, 1e-4, 1e-6, 1e-10])
@pytest.mark.parametrize("rho", [0.01, 0.125, 0.5, 2.0])
def test_zcdp_epsilon_is_dp_accountings_on_a_dense_order_grid(rho, delta):
    """Same proposition (CKS 2020 Prop. 12): over a dense grid of orders dp-accounting's ε is ours up to
    the grid's coarseness, never below ours (our continuous optimum is at least as tight)."""
    orders = np.concatenate([np.linspace(1.011, 10, 4000), np.geomspace(10, 1e5, 4000)])
    theirs, _ = rdp_accountant.compute_epsilon(orders, rho * orders, delta)
    ours = ZCDP(rho).epsilon_at(delta)
    assert ours <= theirs + 1e-9
    assert ours == pytest.approx(theirs, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("orders,taus", [((2.0,), (0.25,)), ((1.5, 2.0, 4.0, 8.0, 32.0), (0.1, 0.2, 0.5, 1.0, 3.0))])
@pytest.mark.parametrize("delta", [0.05, 1e-3, 1e-8])
def test_rdp_epsilon_and_delta_are_dp_accountings(orders, taus, delta):
    claim = RDP(orders, taus)
    theirs, _ = rdp_accountant.compute_epsilon(orders, taus, delta)
    assert claim.epsilon_at(delta) == pytest.approx(theirs, rel=1e-8, abs=1e-8)
    their_delta, _ = rdp_accountant.compute_delta(orders, taus, 1.0)
    assert claim.delta_at(1.0) == pytest.approx(their_delta, rel=1e-9)


def test_zcdp_is_never_looser_than_the_classical_conversion_and_never_tighter_than_the_gaussian():
    """ρ + 2√(ρ log 1/δ) (Bun & Steinke 2016, Prop. 1.3) is an upper bound of the CKS conversion, and the
    exact curve of the Gaussian with μ = √(2ρ), which is ρ-zCDP, is a lower one (the claim must cover it)."""
    for rho in (0.05, 0.125, 0.5):
        for delta in (0.1, 1e-3, 1e-6):
            eps = ZCDP(rho).epsilon_at(delta)
            assert eps <= rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1e-9
            assert eps >= gauss_epsilon(delta, math.sqrt(2 * rho)) - 1e-9


def test_the_gaussian_reading_is_the_exact_gaussian_curve():
    claim = ZCDP(0.5, conversion="gaussian")
    assert claim.epsilon_at(0.1) == pytest.approx(gauss_epsilon(0.1, 1.0), abs=1e-8)
    assert claim.delta_at(2.0) == pytest.approx(gauss_delta(2.0, 1.0))


def test_delta_is_monotone_and_inverts_epsilon():
    claim = ZCDP(0.125)
    eps = [claim.epsilon_at(d) for d in (0.1, 1e-2, 1e-3, 1e-6)]
    assert eps == sorted(eps)
    for d, e in zip((0.1, 1e-2, 1e-3, 1e-6), eps, strict=True):
        assert claim.delta_at(e) <= d * (1 + 1e-6)
        assert claim.delta_at(e - 1e-4) > d
    assert delta_from_zcdp(0.125, 0.0) < 1 and delta_from_zcdp(0.125, 50.0) == 0.0


def test_the_tradeoff_curve_is_a_valid_lower_envelope():
    """β(α) of ρ-zCDP lies below the Gaussian μ = √(2ρ) trade-off Φ(Φ⁻¹(1−α) − μ): the Gaussian is
    ρ-zCDP, so its tests must be allowed."""
    from scipy.stats import norm
    fpr = np.array([1e-3, 0.01, 0.1, 0.3, 0.5, 0.9])
    claimed = ZCDP(0.125).tradeoff(fpr)
    gaussian = norm.cdf(norm.isf(fpr) - math.sqrt(0.25))
    assert np.all(claimed <= gaussian + 1e-9) and np.all(claimed >= 0)
    assert claimed[0] > 0.5  # and says something


@pytest.mark.parametrize("make,field", [
    (lambda: ZCDP(-1.0), "rho"), (lambda: ZCDP(math.inf), "rho"), (lambda: ZCDP(True), "rho"),
    (lambda: ZCDP(0.1, conversion="best"), "conversion"), (lambda: ZCDP(0.1, relation="friends"), "relation"),
    (lambda: ZCDP(0.1, deltas=(0.0,)), "deltas"), (lambda: ZCDP(0.1, deltas=()), "deltas"),
    (lambda: RDP(1.0, 0.5), "orders"), (lambda: RDP((2.0, 3.0), (0.5,)), "epsilons"),
    (lambda: RDP(2.0, -0.1), "epsilons"), (lambda: from_dict({"kind": "gdp"}), "stated_as")])
def test_bad_claims_name_their_field(make, field):
    with pytest.raises(InputError, match=field):
        make()


def test_a_zcdp_claim_is_a_curve_of_guarantees_with_one_id():
    claim = ZCDP(0.125, claim_id="lib/gauss", source="a library", relation="swap", deltas=(0.1, 1e-6))
    points = claim.guarantees()
    assert [g.delta for g in points] == [0.1, 1e-6]
    assert {g.claim_id for g in points} == {"lib/gauss"} and all(g.relation == "swap" for g in points)
    assert all(g.stated_as is claim for g in points)
    assert points[1].epsilon == pytest.approx(claim.epsilon_at(1e-6))
    assert claim.label() == "rho = 0.125 zCDP" and claim.implies().startswith("implies eps(1e-06) <= 2.4")
    assert from_dict(json.loads(json.dumps(claim.to_dict()))) == ZCDP(0.125, deltas=(0.1, 1e-6))
    single = RDP(2.0, 0.5)
    assert single.orders == (2.0,) and single.label() == "(alpha = 2, eps = 0.5)-RDP"
    assert from_dict(single.to_dict()) == single


class Gaussian:
    """A scalar Gaussian query release: μ = Δ/σ with Δ = 1, so it is exactly (μ²/2)-zCDP."""

    name = "gaussian-release"

    def __init__(self, sigma):
        self.sigma = sigma

    def sample(self, data, size, rng):
        return float(np.sum(data)) + self.sigma * rng.standard_normal(size)


def test_audit_mechanism_checks_a_zcdp_claim_and_its_record_rechecks():
    result = audit_mechanism(Gaussian(1.0), np.zeros(3), np.array([0.0, 0.0, 1.0]), samples=200_000, seed=1,
                             claims=[ZCDP(0.5 / 4, claim_id="user/understated")])
    assert {c.claim.claim_id for c in result.claims} == {"user/understated"}
    assert len(result.claims) == 6 and result.verdict == "violation"
    records = json.loads(dumps(result.records()))
    for i, rec in enumerate(records):
        assert rec["stated_as"]["kind"] == "zcdp" and rec["stated_as"]["rho"] == 0.125
        check_record(rec, f"records[{i}]", "test")
    forged = {**records[0], "epsilon_claim": records[0]["epsilon_claim"] * 2}
    with pytest.raises(InputError, match="implies eps"):
        check_record(forged, "records[0]", "test")
    flipped = {**records[0], "verdict": "pass"}
    with pytest.raises(InputError, match="verdict"):
        check_record(flipped, "records[0]", "test")


def test_a_claim_of_another_relation_is_refused_as_a_guarantee_would_be():
    with pytest.raises(InputError, match="relation"):
        audit_mechanism(Gaussian(1.0), np.zeros(2), np.ones(2), samples=1000,
                        claims=[ZCDP(0.5, relation="swap")])
    with pytest.raises(InputError, match="ZCDP or RDP"):
        audit_mechanism(Gaussian(1.0), np.zeros(2), np.ones(2), samples=1000, claims=[0.5])
    assert isinstance(ZCDP(0.5).guarantees()[0], Guarantee)
