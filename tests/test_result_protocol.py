"""One protocol for both result types (issue 34): code that needs only the bounds and the verdict
takes a multi-run AuditResult or a one-run OneRunResult alike."""

import json
import re

import numpy as np
import pytest

import dpaudit
from dpaudit import Result
from dpaudit.mechanisms.classic import Laplace
from dpaudit.neighbors import Dataset
from dpaudit.onerun import Fixed, one_run_bound


@pytest.fixture(scope="module")
def multi():
    d = Dataset.from_columns(value=[0.0])
    return dpaudit.audit_mechanism(Laplace(1.0), d, d.add({"value": 1.0}), samples=20_000, seed=3,
                                   deltas=(0.0, 1e-5))


@pytest.fixture(scope="module")
def one():
    rng = np.random.default_rng(5)
    secret = rng.integers(0, 2, 1000)
    scores = rng.standard_normal(1000) + 2.0 * secret
    return one_run_bound(scores, secret, rule=Fixed(50, 50), deltas=(0.0, 1e-5), tiebreak=7)


def test_both_result_types_follow_the_protocol(multi, one):
    for result in (multi, one):
        assert isinstance(result, Result)
        assert list(result.bounds) == [0.0, 1e-5]
        for delta, eps in result.bounds.items():
            assert result.epsilon_at(delta) == eps
        assert result.bounds[0.0] > 0
        assert result.confidence == pytest.approx(0.95)
        assert result.verdict in ("pass", "violation", "not-applicable")
        assert str(result) == result.summary()
        json.dumps(result.to_dict())  # JSON-ready
    assert multi.epsilon_lower == multi.bounds[0.0] and one.epsilon_lowers[0] == one.bounds[0.0]


def test_a_delta_not_reported_names_the_ones_that_are(multi, one):
    words = re.escape("delta = 0.5 is not reported: the bounds are at delta = 0, 1e-05")
    for result in (multi, one):
        with pytest.raises(KeyError, match=words):
            result.epsilon_at(0.5)


def test_a_one_run_result_prints_a_line_not_its_arrays(one):
    text = repr(one)
    assert text.startswith("OneRunResult(m=1000, runs=1, verdict=") and len(text) < 400
    assert "array" not in text and "scores" not in text


def test_something_else_is_not_a_result():
    assert not isinstance(object(), Result)
    assert not isinstance({"bounds": {}}, Result)
