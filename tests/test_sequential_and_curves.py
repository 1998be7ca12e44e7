"""Sequential early stopping (α-spending over looks) and curve claims (Bonferroni over points)."""

import pytest

from dpaudit import Guarantee, audit_mechanism
from tests.zoo import Geometric, LaplaceOnCount


def claim(eps, delta=0.0, cid="test/claim"):
    return Guarantee(epsilon=eps, delta=delta, relation="add-remove", source="test", claim_id=cid)


def test_a_violation_stops_early_and_keeps_its_verdict():
    full = audit_mechanism(LaplaceOnCount(1.0), 0, 1, samples=4_000_000, seed=0, claims=[claim(0.5)])
    early = audit_mechanism(LaplaceOnCount(1.0), 0, 1, samples=4_000_000, seed=0, claims=[claim(0.5)],
                            sequential=True)
    assert full.verdict == early.verdict == "violation"
    used = early.samples - early.estimate.selection_samples
    assert used <= (full.samples - full.estimate.selection_samples) / 4  # stopped at the first or second look
    assert "stopped, violation certified" in early.sequential
    assert early.estimates[0].confidence > 0.95  # the look's share of alpha


def test_a_hopeless_claim_stops_for_futility_and_passes():
    r = audit_mechanism(LaplaceOnCount(1.0), 0, 1, samples=4_000_000, seed=0, claims=[claim(3.0)], sequential=True)
    assert r.verdict == "pass" and r.samples < 4_000_000 and "cannot be reached" not in (r.sequential or "x")
    assert "no claim can be reached" in r.sequential


@pytest.mark.slow  # over 4 s in the fast tier (issue #12: the fast tier within 180 s)
def test_sequential_validity_at_most_5_percent_false_violations():
    """200 seeded sequential audits of a mechanism exactly at its claim, confidence 0.95."""
    mech = Geometric(0.5)
    false = sum(audit_mechanism(mech, 0, 1, samples=40_000, seed=s, claims=[claim(0.5)], sequential=True).verdict
                == "violation" for s in range(200))
    assert false <= 10


def test_a_curve_claim_is_tested_at_bonferroni_levels():
    points = [claim(0.3, d, "test/curve") for d in (0.0, 0.05, 0.1, 0.2)]
    r = audit_mechanism(LaplaceOnCount(1.0), 0, 1, samples=400_000, seed=0, claims=points)
    assert [c.bound.confidence for c in r.claims] == pytest.approx([1 - 0.05 / 4] * 4)
    assert r.verdict == "violation"  # Laplace(1) is not 0.3-DP at any of these deltas
    single = audit_mechanism(LaplaceOnCount(1.0), 0, 1, samples=400_000, seed=0, claims=[claim(0.3, 0.1)])
    assert single.claims[0].bound.confidence == pytest.approx(0.95)
