"""dpaudit.testing.check_mechanism: every built-in mechanism keeps the contract of dpaudit.mechanisms.base,
and a twin broken in one way fails the check that names that way."""

from dataclasses import dataclass

import numpy as np
import pytest

from dpaudit import catalog
from dpaudit.core import Guarantee
from dpaudit.mechanisms.base import sample_categorical
from dpaudit.mechanisms.classic import RandomizedResponse
from dpaudit.neighbors import Dataset
from dpaudit.testing import MechanismCheckError, check_mechanism


def _builtin_cases():
    """One scenario per mechanism type of the default suite (its pair and its relation)."""
    seen = {}
    for sc in catalog.suite("default"):
        seen.setdefault(type(sc.mechanism), sc)
    return list(seen.values())


BUILTIN = _builtin_cases()
BIT, BIT_PRIME = Dataset({"bit": [0]}), Dataset({"bit": [0, 1]})
RR = RandomizedResponse(1.0)
SAMPLE_CHECKS = ["name", "sample-shape", "sample-dtype", "sample-finite", "seeded", "seed-varies", "vectorised"]


@pytest.mark.parametrize("scenario", BUILTIN, ids=[type(sc.mechanism).__name__ for sc in BUILTIN])
def test_every_builtin_mechanism_keeps_the_contract(scenario):
    mechanism = scenario.mechanism
    passed = check_mechanism(mechanism, scenario.pair.d, scenario.pair.d_prime, samples=20_000)
    assert passed[:len(SAMPLE_CHECKS)] == SAMPLE_CHECKS
    declared = {"output_distribution": "output-distribution", "exact_epsilon": "exact-epsilon",
                "guarantees": "guarantees", "pair_guarantees": "pair-guarantees", "epsilon_sup_pi0": "epsilon-sup-pi0"}
    for method, check in declared.items():
        assert (check in passed) == callable(getattr(mechanism, method, None)), check


def test_randomized_response_passes_every_applicable_check_with_the_default_budget():
    assert check_mechanism(RR, BIT, BIT_PRIME) == [*SAMPLE_CHECKS, "output-distribution", "guarantees"]


def test_the_same_seed_gives_the_same_verdict():
    assert check_mechanism(RR, BIT, seed=5) == check_mechanism(RR, BIT, seed=5)


# --- broken twins: each breaks one rule ----------------------------------------------------

@dataclass(frozen=True)
class Twin:
    """Randomized response, with one method overridden by a subclass to break one rule."""

    name: str = "twin"

    def output_distribution(self, data):
        return RR.output_distribution(data)

    def sample(self, data, size, rng):
        return sample_categorical(self.output_distribution(data), size, rng)


class WrongShape(Twin):
    def sample(self, data, size, rng):
        return super().sample(data, size, rng).reshape(1, size)  # (1, size), not (size,)


class Scalar(Twin):
    def sample(self, data, size, rng):
        return int(super().sample(data, 1, rng)[0])


class Strings(Twin):
    def sample(self, data, size, rng):
        return super().sample(data, size, rng).astype(str)


class SometimesNaN(Twin):
    def sample(self, data, size, rng):
        out = super().sample(data, size, rng).astype(float)
        out[rng.random(size) < 0.01] = np.nan
        return out


class Unseeded(Twin):
    def sample(self, data, size, rng):
        return super().sample(data, size, np.random.default_rng())  # ignores the rng it is given


class FixedSeed(Twin):
    def sample(self, data, size, rng):
        return super().sample(data, size, np.random.default_rng(0))  # the same stream for every rng


class Broadcast(Twin):
    def sample(self, data, size, rng):
        return np.full(size, super().sample(data, 1, rng)[0])  # one draw copied to the whole batch


class WrongDistribution(Twin):
    def output_distribution(self, data):
        return RandomizedResponse(1.2).output_distribution(data)  # samples at ε = 1, declares ε = 1.2

    def sample(self, data, size, rng):
        return RR.sample(data, size, rng)


class OutsideSupport(Twin):
    def output_distribution(self, data):
        return np.array([0.5, 0.5, 0.0])

    def sample(self, data, size, rng):
        return sample_categorical(np.array([0.5, 0.49, 0.01]), size, rng)  # output 2 has declared probability 0


class NotAProbabilityVector(Twin):
    def output_distribution(self, data):
        return np.array([0.7, 0.7])


class NegativeExactEpsilon(Twin):
    def exact_epsilon(self, d, d_prime, delta):
        return -1.0


class GuaranteesAsDicts(Twin):
    def guarantees(self, data, relation):
        return [{"epsilon": 1.0, "delta": 0.0}]


class NaNSup(Twin):
    def epsilon_sup_pi0(self, d, d_prime):
        return float("nan")


class Raises(Twin):
    def sample(self, data, size, rng):
        raise RuntimeError("boom")


@pytest.mark.parametrize("twin, check", [
    (Twin(name=""), "name"),
    (WrongShape(), "sample-shape"),
    (Scalar(), "sample-shape"),
    (Raises(), "sample-shape"),
    (Strings(), "sample-dtype"),
    (SometimesNaN(), "sample-finite"),
    (Unseeded(), "seeded"),
    (FixedSeed(), "seed-varies"),
    (Broadcast(), "vectorised"),
    (WrongDistribution(), "output-distribution"),
    (OutsideSupport(), "output-distribution"),
    (NotAProbabilityVector(), "output-distribution"),
    (NegativeExactEpsilon(), "exact-epsilon"),
    (GuaranteesAsDicts(), "guarantees"),
    (NaNSup(), "epsilon-sup-pi0"),
], ids=lambda v: v if isinstance(v, str) else type(v).__name__)
def test_a_broken_twin_fails_the_check_it_breaks(twin, check):
    with pytest.raises(MechanismCheckError) as err:
        check_mechanism(twin, BIT, BIT_PRIME)
    assert isinstance(err.value, AssertionError)
    assert err.value.check == check
    label = twin.name or type(twin).__name__
    assert f"mechanism {label!r} fails check {check!r}" in str(err.value)


def test_the_healthy_twin_passes():
    assert "output-distribution" in check_mechanism(Twin(), BIT, BIT_PRIME)


@dataclass(frozen=True)
class Constant:
    """A degenerate mechanism: always outputs 0 (it ignores the rng, legitimately)."""

    name: str = "constant"

    def sample(self, data, size, rng):
        return np.zeros(size, dtype=np.int64)

    def guarantees(self, data, relation):
        return [Guarantee(epsilon=0.0, relation=relation, claim_id="constant/zero")]


def test_a_constant_mechanism_skips_the_seed_variation_check_and_passes_the_rest():
    passed = check_mechanism(Constant(), BIT, BIT_PRIME)
    assert "seed-varies" not in passed and {"seeded", "vectorised", "guarantees"} <= set(passed)
