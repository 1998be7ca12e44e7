"""Mechanisms that misbehave in the ways issue #29's hostile sweep found (each must be exit 2)."""

import sys

import numpy as np

from dpaudit.core import Guarantee
from dpaudit.mechanisms.classic import on_grid


def _laplace(data, size, rng):
    return on_grid(float(np.sum(data)) + rng.laplace(0.0, 1.0, size))


class _Plain:
    name = "plain"

    def sample(self, data, size, rng):
        return _laplace(data, size, rng)


class GeneratorExits(_Plain):
    name = "generator-exits"

    def sample(self, data, size, rng):
        raise GeneratorExit


class NoColumns(_Plain):
    name = "no-columns"

    def sample(self, data, size, rng):
        return np.zeros((size, 0))


class _BadArray:
    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("cannot be an array")

    def __len__(self):
        return 1


class BadArray(_Plain):
    name = "bad-array"

    def sample(self, data, size, rng):
        return _BadArray()


class RaisingName(_Plain):
    @property
    def name(self):
        raise RuntimeError("no name today")


class JunkGuarantees(_Plain):
    name = "junk-guarantees"

    def guarantees(self, data, relation):
        return 42


class JunkGuaranteeItems(_Plain):
    name = "junk-guarantee-items"

    def guarantees(self, data, relation):
        return ["one", {"epsilon": 1}]


class StringExact(_Plain):
    name = "string-exact"

    def guarantees(self, data, relation):
        return [Guarantee(epsilon=1.0, delta=0.0, relation=relation, source="test", claim_id="user/own")]

    def exact_epsilon(self, d, d_prime, delta):
        return "1.0"


class CountsExit:
    name = "counts-exit"

    def sample(self, data, size, rng):
        return rng.integers(0, 2, size)

    def sample_counts(self, data, size, rng):
        sys.exit(0)


class Mutates:
    """A Laplace count (true ε = 1) that shifts its dataset in place by −5 on every call: without
    read-only inputs, later chunks come from datasets the record does not name."""

    name = "mutates-dataset"

    def sample(self, data, size, rng):
        out = _laplace(data, size, rng)
        data -= 5
        return out


generator_exits = GeneratorExits()
no_columns = NoColumns()
bad_array = BadArray()
raising_name = RaisingName()
junk_guarantees = JunkGuarantees()
junk_guarantee_items = JunkGuaranteeItems()
string_exact = StringExact()
counts_exit = CountsExit()
mutates = Mutates()


class MutatesList(_Plain):
    """Appends to a list dataset (which cannot be made read-only): caught by the content check."""

    name = "mutates-list"

    def sample(self, data, size, rng):
        data.append(1.0)
        return _laplace(data, size, rng)


mutates_list = MutatesList()
