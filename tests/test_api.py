"""audit.audit_mechanism: input validation, which claims are held against the bound, expected
verdicts, curve claims at Bonferroni levels, and the white-box exact loss."""

import math
import re

import numpy as np
import pytest

from dpaudit import Guarantee, InputError, audit_mechanism
from dpaudit.engine.api import RunContext
from dpaudit.mechanisms.classic import on_grid

SMALL = 20_000


def claim(eps, delta=0.0, cid="test/claim", relation="add-remove", **kw):
    return Guarantee(epsilon=eps, delta=delta, relation=relation, source="test", claim_id=cid, **kw)


class Coin:
    """A finite mechanism: P[M(0)] = (0.8, 0.2), P[M(1)] = (0.4, 0.6).

    ε(0) = log(0.6/0.2) = log 3; ε(0.1) = max(log((0.6-0.1)/0.2), log((0.8-0.1)/0.4)) = log 2.5."""

    name = "coin"

    def output_distribution(self, data):
        return np.array([0.8, 0.2]) if data == 0 else np.array([0.4, 0.6])

    def sample(self, data, size, rng):
        return (rng.random(size) >= self.output_distribution(data)[0]).astype(np.int64)

    def guarantees(self, data, relation):
        return [Guarantee(epsilon=math.log(3), delta=0.0, relation=relation, source="coin", claim_id="coin/exact"),
                Guarantee(epsilon=0.5, delta=0.0, relation=relation, source="coin", claim_id="coin/understated")]


class Shift:
    """q + Lap(1/ε) on an integer count: no output distribution, but a known exact curve."""

    name = "shift"

    def __init__(self, epsilon=1.0, table=None):
        self.epsilon = epsilon
        self.table = table if table is not None else {0.0: epsilon, 0.05: 0.9 * epsilon}

    def sample(self, data, size, rng):
        return on_grid(float(data) + rng.laplace(0.0, 1.0 / self.epsilon, size))

    def exact_epsilon(self, d, d_prime, delta):
        return self.table.get(delta)


class BothWhiteBoxes(Coin):
    def exact_epsilon(self, d, d_prime, delta):
        return 123.0


class PairClaims(Coin):
    def pair_guarantees(self, d, d_prime, relation):
        return [Guarantee(epsilon=2.0, delta=0.0, relation=relation, source="pair", claim_id=f"pair/{d}-{d_prime}")]


@pytest.mark.parametrize("kwargs,field", [
    ({"mechanism": object()}, "mechanism"),
    ({"samples": 10}, "samples"),
    ({"samples": 1.5e6}, "samples"),
    ({"samples": True}, "samples"),
    ({"seed": -1}, "seed"),
    ({"n_jobs": 0}, "n_jobs"),
    ({"relation": "neighbours"}, "relation"),
    ({"confidence": 1.0}, "confidence"),
    ({"confidence": 0.3}, "confidence"),
    ({"deltas": (0.0, 1.5)}, "delta"),
    ({"deltas": ()}, "deltas"),
    ({"expected": {"coin/exact": "maybe"}}, "expected['coin/exact']"),
    ({"claims": [(1.0, 0.0)]}, "claims[0]"),
])
def test_bad_arguments_raise_an_input_error_naming_the_field(kwargs, field):
    args = {"mechanism": Coin(), "samples": SMALL, **kwargs}
    mechanism = args.pop("mechanism")
    with pytest.raises(InputError, match="^" + re.escape(f"{field} = ")):
        audit_mechanism(mechanism, 0, 1, **args)


def test_an_explicit_claim_for_another_relation_is_an_input_error_naming_both():
    with pytest.raises(InputError, match=r"claims\[0\]\.relation = 'swap'.*the audit's pair is add-remove"):
        audit_mechanism(Coin(), 0, 1, samples=SMALL, relation="add-remove",
                        claims=[claim(math.log(3), relation="swap", cid="user/swap"), claim(math.log(3))])
    same = audit_mechanism(Coin(), 0, 1, samples=SMALL, relation="add-remove", claims=[claim(math.log(3))])
    assert same.claims[0].verdict == "pass" and same.claims[0].bound is not None


def test_claims_default_to_the_pair_guarantees_then_the_guarantees():
    assert [c.claim.claim_id for c in audit_mechanism(Coin(), 0, 1, samples=SMALL).claims] == \
        ["coin/exact", "coin/understated"]
    assert [c.claim.claim_id for c in audit_mechanism(PairClaims(), 0, 1, samples=SMALL).claims] == ["pair/0-1"]
    assert audit_mechanism(Shift(), 0, 1, samples=SMALL).claims == ()  # neither: no claims, no verdict
    assert audit_mechanism(Shift(), 0, 1, samples=SMALL).verdict == "not-applicable"


def test_expected_verdicts_decide_as_expected():
    """Coin at 2e4 samples, seed 0: 'coin/understated' (0.5 < log 3) is a violation, empirically
    and exactly; 'coin/exact' passes both."""
    plain = audit_mechanism(Coin(), 0, 1, samples=SMALL, seed=0)
    got = {c.claim.claim_id: c for c in plain.claims}
    assert got["coin/exact"].verdict == "pass" and got["coin/understated"].verdict == "violation"
    assert got["coin/understated"].exact_verdict == "violation"
    assert not plain.as_expected  # an unexpected violation

    pinned = audit_mechanism(Coin(), 0, 1, samples=SMALL, seed=0, expected={"coin/understated": "violation"})
    assert pinned.as_expected and pinned.verdict == "violation"

    exact_only = audit_mechanism(Coin(), 0, 1, samples=SMALL, seed=0,
                                 expected={"coin/understated": "exact-violation"})
    assert exact_only.as_expected

    wrong = audit_mechanism(Coin(), 0, 1, samples=SMALL, seed=0,
                            expected={"coin/understated": "violation", "coin/exact": "violation"})
    assert not wrong.as_expected
    assert [c.expected_verdict for c in wrong.claims] == ["violation", "violation"]
    assert not audit_mechanism(Coin(), 0, 1, samples=SMALL, seed=0,
                               expected={"coin/understated": "violation", "coin/exact": "exact-violation"}
                               ).as_expected  # its exact loss is the claim: no exact violation


def test_a_curve_claim_is_tested_at_bonferroni_levels_and_other_ids_are_not():
    curve = [claim(0.3, d, "test/curve") for d in (0.0, 0.05, 0.1)]
    off = Guarantee.not_applicable("out of range", relation="add-remove", claim_id="test/curve")
    r = audit_mechanism(Shift(1.0), 0, 1, samples=100_000, seed=0,
                        claims=[*curve, off, claim(0.3, 0.0, "test/single")])
    confidences = [None if c.bound is None else c.bound.confidence for c in r.claims]
    assert confidences == pytest.approx([1 - 0.05 / 3] * 3 + [None, 0.95])  # K = 3 applicable points
    assert [c.verdict for c in r.claims] == ["violation"] * 3 + ["not-applicable", "violation"]
    # the requested delta keeps its own level; the claim at the same delta gets a separate, stricter bound
    assert r.estimates[0].delta == 0.0 and r.estimates[0].confidence == 0.95
    assert {(b.delta, b.confidence) for b in r.estimates} == {(0.0, 0.95), (0.0, 1 - 0.05 / 3),
                                                             (0.05, 1 - 0.05 / 3), (0.1, 1 - 0.05 / 3)}


def test_white_box_exact_loss_from_output_distribution():
    r = audit_mechanism(Coin(), 0, 1, samples=SMALL, seed=0, deltas=(0.0, 0.1))
    assert r.exact == pytest.approx({0.0: math.log(3), 0.1: math.log(2.5)})
    assert r.epsilon_exact == pytest.approx(math.log(3))
    assert r.distributions == ([0.8, 0.2], [0.4, 0.6])
    assert all(c.epsilon_exact == pytest.approx(math.log(3)) for c in r.claims)
    assert r.epsilon_lower <= r.epsilon_exact
    assert audit_mechanism(BothWhiteBoxes(), 0, 1, samples=SMALL).epsilon_exact == pytest.approx(math.log(3))


def test_white_box_exact_loss_from_exact_epsilon():
    r = audit_mechanism(Shift(1.0), 0, 1, samples=SMALL, seed=0, deltas=(0.0, 0.05),
                        claims=[claim(0.95, 0.0), claim(0.95, 0.05, "test/b")])
    assert r.exact == {0.0: 1.0, 0.05: 0.9}
    assert [c.epsilon_exact for c in r.claims] == [1.0, 0.9]
    assert [c.exact_verdict for c in r.claims] == ["violation", "pass"]
    assert r.distributions is None
    # one delta without an exact value: no white box at all
    partial = audit_mechanism(Shift(1.0, table={0.0: 1.0}), 0, 1, samples=SMALL, deltas=(0.0, 0.05))
    assert partial.exact is None and partial.epsilon_exact is None
    assert audit_mechanism(Shift(1.0, table={0.0: 1.0}), 0, 1, samples=SMALL, deltas=(0.0, 0.05),
                           claims=[claim(0.5)]).claims[0].exact_verdict is None


def test_the_result_records_its_inputs():
    r = audit_mechanism(Coin(), 0, 1, samples=SMALL, seed=3, confidence=0.9, relation="swap",
                        context=RunContext(pair="0 vs 1", scenario="coin-test"), claims=[claim(2.0, relation="swap")])
    assert (r.mechanism, r.relation, r.pair, r.seed, r.scenario) == ("coin", "swap", "0 vs 1", 3, "coin-test")
    assert r.samples == SMALL and r.confidence == 0.9
    (rec,) = r.records()
    assert rec["relation"] == "swap" and rec["claim_id"] == "test/claim" and rec["verdict"] == "pass"
