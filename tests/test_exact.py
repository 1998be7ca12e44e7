"""Exact ε(δ) and δ(ε) against closed forms and a brute force over every event."""

import itertools
import math

import numpy as np
import pytest

from dpaudit.core import InputError
from dpaudit.engine.exact import delta_for_epsilon, epsilon_for_delta, pure_epsilon


def brute_delta(p, q, eps):
    """sup over all events S of max(p(S) − e^ε q(S), q(S) − e^ε p(S))."""
    best = 0.0
    for r in range(len(p) + 1):
        for s in itertools.combinations(range(len(p)), r):
            s = list(s)
            best = max(best, p[s].sum() - math.exp(eps) * q[s].sum(), q[s].sum() - math.exp(eps) * p[s].sum())
    return best


def test_randomized_response_closed_form():
    keep = math.e / (1 + math.e)
    p, q = np.array([keep, 1 - keep]), np.array([1 - keep, keep])
    assert pure_epsilon(p, q) == pytest.approx(1.0, rel=1e-12)
    assert delta_for_epsilon(p, q, 0.5) == pytest.approx(keep - math.exp(0.5) * (1 - keep), rel=1e-12)
    assert epsilon_for_delta(p, q, delta_for_epsilon(p, q, 0.5)) == pytest.approx(0.5, rel=1e-9)


def test_matches_brute_force_over_all_events():
    rng = np.random.default_rng(1)
    for _ in range(200):
        k = rng.integers(2, 7)
        p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        if rng.random() < 0.3:  # some atoms missing on one side
            q[rng.integers(k)] = 0
            q /= q.sum()
        for eps in (0.0, 0.1, 0.7, 2.0):
            assert delta_for_epsilon(p, q, eps) == pytest.approx(brute_delta(p, q, eps), abs=1e-12)
        for delta in (0.0, 0.01, 0.2):
            e = epsilon_for_delta(p, q, delta)
            if math.isfinite(e):
                assert brute_delta(p, q, e) <= delta + 1e-9
                if e > 1e-9:  # and e is the smallest such epsilon
                    assert brute_delta(p, q, e * (1 - 1e-6) - 1e-9) > delta - 1e-9
            else:
                assert brute_delta(p, q, 50.0) > delta


def test_different_supports_give_infinite_pure_loss_and_the_mass_as_delta():
    p, q = np.array([0.3, 0.7, 0.0]), np.array([0.3, 0.5, 0.2])
    assert pure_epsilon(p, q) == math.inf
    assert epsilon_for_delta(p, q, 0.1) == math.inf
    assert math.isfinite(epsilon_for_delta(p, q, 0.2))
    assert delta_for_epsilon(p, q, 30.0) == pytest.approx(0.2)


@pytest.mark.parametrize("bad", [[0.5, 0.6], [1.2, -0.2], [np.nan, 1.0]])
def test_rejects_non_distributions(bad):
    with pytest.raises(InputError, match="p"):
        pure_epsilon(np.array(bad), np.array([0.5, 0.5]))
