"""The query-vector mechanisms of the classic auditing benchmark (:mod:`dpaudit.mechanisms.vector`)."""

import numpy as np
import pytest

from dpaudit.core import InputError
from dpaudit.engine.api import audit_mechanism
from dpaudit.mechanisms.vector import ABORTED, NoisyHistogram, SparseVector


def test_sparse_vector_stops_after_the_cutoff():
    out = SparseVector(1.0, cutoff=2).sample(np.full(8, 5.0), 2000, np.random.default_rng(0))
    assert out.shape == (2000, 8)
    tops = (out == 1).sum(axis=1)
    assert tops.max() == 2
    # Everything after the second ⊤ is aborted, nothing before it is.
    for row in out[:50]:
        second = np.flatnonzero(row == 1)[1]
        assert (row[second + 1:] == ABORTED).all() and (row[: second + 1] != ABORTED).all()


def test_sparse_vector_without_query_noise_compares_each_answer_with_one_noisy_threshold():
    out = SparseVector(1.0, cutoff=None, query_scale=0).sample(np.array([2.0, 0.0, -2.0]), 5000,
                                                              np.random.default_rng(1))
    # One shared threshold: an answer above never loses to a smaller answer.
    assert ((out[:, 0] >= out[:, 1]) & (out[:, 1] >= out[:, 2])).all()


def test_noisy_histogram_is_centred_on_the_counts():
    out = NoisyHistogram(2.0).sample(np.arange(5.0), 200_000, np.random.default_rng(2))
    assert np.allclose(out.mean(axis=0), np.arange(5.0), atol=0.02)


def test_bad_parameters_name_the_field():
    with pytest.raises(InputError, match="threshold_share"):
        SparseVector(1.0, threshold_share=1.5)
    with pytest.raises(InputError, match="cutoff"):
        SparseVector(1.0, cutoff=0)
    with pytest.raises(InputError, match="queries"):
        SparseVector(1.0).sample(np.array([]), 3, np.random.default_rng(0))


PAIR = (np.zeros(10), np.r_[np.ones(5), -np.ones(5)])


def test_correct_sparse_vector_holds_its_claim():
    # confidence 0.95: the bound exceeds the true ε with probability ≤ 5 %; seed fixed.
    r = audit_mechanism(SparseVector(1.0), *PAIR, samples=200_000, seed=0)
    assert r.verdict == "pass" and 0.5 < r.epsilon_lower <= 1.0


def test_sparse_vector_without_query_noise_is_caught():
    # The twin: no query noise and no cutoff (Lyu, Su & Li 2017, Alg. 5/6 style) is not ε-DP.
    r = audit_mechanism(SparseVector(1.0, cutoff=None, query_scale=0), *PAIR, samples=200_000, seed=0)
    assert r.verdict == "violation" and r.epsilon_lower > 1.0
