"""Start-up that fits the work: a local worker pool starts only with more than one chunk per
worker and when running the rest in process would cost more than the pool's start-up; the
numbers never depend on where chunks ran."""

import pytest

from dpaudit import audit_mechanism
from dpaudit.engine.api import RunContext
from dpaudit.mechanisms.classic import RandomizedResponse
from dpaudit.neighbors import Dataset
from dpaudit.runtime import execution
from dpaudit.runtime.execution import Execution

BIT = Dataset({"bit": [0]})


@pytest.fixture
def pools(monkeypatch):
    """Counts the worker pools Execution.map starts (each call of joblib's Parallel)."""
    started = []
    real = execution.Parallel

    def spy(*args, **kwargs):
        started.append(kwargs.get("n_jobs"))
        return real(*args, **kwargs)

    monkeypatch.setattr(execution, "Parallel", spy)
    monkeypatch.setattr(execution, "_pool_started", False)
    return started


def square(x):
    return x * x


def test_at_most_one_chunk_per_worker_runs_in_process(pools):
    assert list(Execution(n_jobs=4).map(square, [(i,) for i in range(4)])) == [0, 1, 4, 9]
    assert list(Execution(n_jobs=1).map(square, [(i,) for i in range(9)])) == [i * i for i in range(9)]
    assert pools == []


def test_cheap_chunks_stay_in_process_however_many(pools):
    assert list(Execution(n_jobs=2).map(square, [(i,) for i in range(50)])) == [i * i for i in range(50)]
    assert pools == []


def test_costly_chunks_go_to_the_pool_in_order(pools, monkeypatch):
    monkeypatch.setattr(execution, "POOL_STARTUP_SECONDS", -1.0)  # as if every chunk were slow
    assert list(Execution(n_jobs=2).map(square, [(i,) for i in range(6)])) == [i * i for i in range(6)]
    assert pools == [2]


def test_a_small_audit_with_all_cores_starts_no_pool_and_matches_one_job(pools):
    mech, d_prime = RandomizedResponse(1.0), BIT.add({"bit": 1})
    one = audit_mechanism(mech, BIT, d_prime, samples=500_000, seed=3)
    every = audit_mechanism(mech, BIT, d_prime, samples=500_000, seed=3, n_jobs=-1)
    assert pools == []
    assert [b.counts for b in one.estimates] == [b.counts for b in every.estimates]


def test_a_forced_pool_gives_the_same_numbers(pools, monkeypatch):
    mech, d_prime = RandomizedResponse(1.0), BIT.add({"bit": 1})
    here = audit_mechanism(mech, BIT, d_prime, samples=1_200_000, seed=5)
    monkeypatch.setattr(execution, "POOL_STARTUP_SECONDS", -1.0)
    pooled = audit_mechanism(mech, BIT, d_prime, samples=1_200_000, seed=5,
                             context=RunContext(execution=Execution(n_jobs=2)))
    assert pools, "the estimation chunks went to a pool"
    assert [(b.epsilon_lower, b.counts) for b in here.estimates] == [(b.epsilon_lower, b.counts)
                                                                     for b in pooled.estimates]
