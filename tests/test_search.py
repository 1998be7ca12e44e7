"""Worst-pair search in feature space (linear bandit and RLHF records)."""

import numpy as np
import pytest

from dpaudit.engine.exact import pure_epsilon
from dpaudit.mechanisms.kl_rlhf import KLRLHF
from dpaudit.neighbors import label_flip
from dpaudit.neighbors.relations import Pair
from dpaudit.neighbors.search import feature_directions, search_feature_pairs, worst_pair
from dpaudit.neighbors.synthetic import comparisons, unit_vectors


def record(v, label):
    return {"z": (2 * v).tolist(), "label": label}


@pytest.mark.slow  # a dense enumeration of RLHF pairs (~7 s)
def test_rlhf_search_reaches_95_percent_of_a_dense_enumeration():
    """d = 3, n = 50: the search, from random directions, against 1200 enumerated additions and all removals."""
    rng = np.random.default_rng(4)
    z = 2 * unit_vectors(50, 3, rng) * rng.uniform(0.2, 1, (50, 1))
    y = (rng.random(50) < 1 / (1 + np.exp(-z @ rng.normal(size=3)))).astype(int)
    data = comparisons(z, y)
    mech = KLRLHF(tuple(map(tuple, 0.9 * unit_vectors(4, 3, rng))), ridge=1.0, beta0=0.5, eta=0.05)
    theta, sigma = mech.fit(data)
    found = search_feature_pairs(mech, data, "add-remove", record, (0, 1),
                                 feature_directions(sigma, theta, np.random.default_rng(5)), pure_epsilon,
                                 np.random.default_rng(6))
    dense = unit_vectors(600, 3, np.random.default_rng(7))
    pairs = [Pair(data, data.add(record(v, lab)), "") for lab in (0, 1) for v in dense]
    pairs += [Pair(data, data.remove(i), "") for i in range(len(data))]
    best = worst_pair(mech, pairs, pure_epsilon)
    assert found.loss >= 0.95 * best.loss
    assert found.loss == pure_epsilon(mech.output_distribution(found.pair.d),
                                      mech.output_distribution(found.pair.d_prime))


def test_canonical_family_search_finds_the_spec_witness():
    data = comparisons(np.full((10, 1), 2.0), [1] * 5 + [0] * 5)
    mech = KLRLHF(((1.0,), (-1.0,)), ridge=1.0, beta0=0.01, eta=0.1)
    witness = pure_epsilon(mech.output_distribution(data), mech.output_distribution(data.flip(0)))
    assert worst_pair(mech, label_flip(data), pure_epsilon).loss >= witness * (1 - 1e-12)
    theta, sigma = mech.fit(data)
    found = search_feature_pairs(mech, data, "add-remove", record, (0, 1),
                                 feature_directions(sigma, theta, np.random.default_rng(0)), pure_epsilon,
                                 np.random.default_rng(1))
    added = data.add({"z": [2.0], "label": 0})
    assert found.loss >= pure_epsilon(mech.output_distribution(data), mech.output_distribution(added)) * (1 - 1e-12)


def test_pairs_where_the_mechanism_is_undefined_are_skipped_and_counted():
    data = comparisons([[2.0], [2.0]], [1, 0])
    mech = KLRLHF(((1.0,), (-1.0,)), ridge=1.0, beta0=0.0, eta=1.0)
    result = worst_pair(mech, [Pair(data, data.remove(0), "separates"),
                               Pair(data, data.add(record(np.ones(1), 0)), "ok")],
                        pure_epsilon)
    assert result.skipped == 1 and result.evaluated == 1 and result.pair.description == "ok"


def test_swap_search_replaces_a_record_and_keeps_the_size():
    from dpaudit.mechanisms.kl_linear import KLLinearBandit
    from dpaudit.neighbors.synthetic import linear_log
    rng = np.random.default_rng(2)
    log = linear_log(unit_vectors(8, 2, rng), rng.uniform(0, 1, 8))
    mech = KLLinearBandit(tuple(map(tuple, unit_vectors(3, 2, rng))), ridge=2.0, beta0=0.2, eta=0.1)
    sigma, theta = mech.statistics(log)
    found = search_feature_pairs(mech, log, "swap", lambda v, r: {"phi": v.tolist(), "reward": r}, (0.0, 1.0),
                                 feature_directions(sigma, theta, rng), pure_epsilon, rng, refine_steps=50)
    assert len(found.pair.d_prime) == len(log) and found.pair.relation == "swap"
    assert found.evaluated == 8 * 2 * (2 * 2 + 2 + 16)  # records x rewards x (± eigenvectors, ± theta, random)
    dense = [Pair(log, log.replace(i, {"phi": v.tolist(), "reward": r}), "", "swap")
             for i in range(8) for r in (0.0, 1.0) for v in unit_vectors(100, 2, np.random.default_rng(3))]
    assert found.loss >= 0.95 * worst_pair(mech, dense, pure_epsilon).loss
