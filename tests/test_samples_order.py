"""``audit_samples`` splits at random: the order samples are handed over in cannot fake a finding.

Before the split was random, the first 20 % of each array chose the event, so samples sorted
(or rebuilt from a count table with ``np.repeat``) gave confident false violations: a correct
ε = 1 Laplace sorted descending reported ε_lower 7.58, randomized response (true ln 3) 2.3.
Validity: with confidence 0.95 a correct mechanism may exceed its true ε in at most 5 % of
runs; 200 seeded runs allow ≤ 5 exceedances in these tests' acceptance (≤ 10/200 elsewhere).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit import audit_samples
from dpaudit.mechanisms.classic import on_grid

N = 20_000


def sorted_laplace(seed: int, epsilon: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Laplace(1/ε) around 0 and 1 (sensitivity 1), each sorted descending."""
    rng = np.random.default_rng(seed)
    x = on_grid(rng.laplace(0.0, 1 / epsilon, N))  # on one grid: no floating-point leak (dpaudit.mechanisms.classic)
    y = on_grid(1.0 + rng.laplace(0.0, 1 / epsilon, N))
    return np.sort(x)[::-1], np.sort(y)[::-1]


def count_table_rr(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Randomized response keeping the bit with probability 3/4 (ε = ln 3), drawn as counts and
    rebuilt with ``np.repeat`` (all ones first)."""
    rng = np.random.default_rng(seed)
    k1, k0 = rng.binomial(N, 0.75), rng.binomial(N, 0.25)
    return np.repeat([1, 0], [k1, N - k1]), np.repeat([1, 0], [k0, N - k0])


def test_sorted_samples_give_a_valid_bound():
    x, y = sorted_laplace(0)
    assert audit_samples(x, y, seed=0).epsilon_lower <= 1.0


def test_count_table_samples_give_a_valid_bound():
    x, y = count_table_rr(0)
    assert audit_samples(x, y, seed=0).epsilon_lower <= math.log(3)


def test_sorted_samples_of_a_leaky_mechanism_are_still_caught():
    """The twin: Laplace at ε = 2 handed over sorted is caught against a claim of 1."""
    x, y = sorted_laplace(1, epsilon=2.0)
    assert audit_samples(x, y, seed=0).epsilon_lower > 1.0


@pytest.mark.slow
@pytest.mark.parametrize("make, truth", [(sorted_laplace, 1.0), (count_table_rr, math.log(3))],
                         ids=["sorted-laplace", "count-table-rr"])
def test_order_never_inflates_the_bound_over_200_seeds(make, truth):
    ordered, shuffled = [], []
    for seed in range(200):
        x, y = make(seed)
        ordered.append(audit_samples(x, y, seed=seed).epsilon_lower)
        rng = np.random.default_rng(10_000 + seed)
        shuffled.append(audit_samples(rng.permutation(x), rng.permutation(y), seed=seed).epsilon_lower)
    assert sum(e > truth for e in ordered) <= 5
    assert sum(e > truth for e in shuffled) <= 5
    # Same distribution whatever the order (two-sample Kolmogorov–Smirnov, fixed seeds).
    assert stats.ks_2samp(ordered, shuffled).pvalue > 0.01
