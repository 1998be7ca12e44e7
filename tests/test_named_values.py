"""Named values instead of anonymous tuples where they cross modules (issue #42, item 4): a confidence
level is a frozen :class:`Level`, verdicts are :class:`dpaudit.core.Verdict` members, the ceiling's and
the selection's answers are named, and ``epsilon_lower`` is one float on every result type (the one-run
results' tuple is ``epsilon_lowers``; the old spelling warns for one release)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from dpaudit import audit_mechanism
from dpaudit.core import Verdict
from dpaudit.engine import bounds, runner
from dpaudit.engine.estimate import Level, unmeasured
from dpaudit.mechanisms.classic import Laplace
from dpaudit.neighbors import Dataset
from dpaudit.onerun import Fixed, one_run_bound
from dpaudit.onerun.isolated import declare

D = Dataset({"value": [0.0]})
D_PRIME = D.add({"value": 1.0})


def test_a_level_is_frozen_and_named_and_the_old_pairs_still_enter():
    level = Level(delta=1e-5, confidence=0.95)
    with pytest.raises(dataclasses.FrozenInstanceError):
        level.delta = 0.0  # type: ignore[misc]
    assert Level.of((1e-5, 0.95)) == level and Level.of(level) is level
    est = unmeasured([level, (0.0, 0.99)], 0, "stopped")
    assert [(b.delta, b.confidence) for b in est.bounds] == [(1e-5, 0.95), (0.0, 0.99)]


def test_an_estimate_takes_levels_and_pairs_alike():
    by_level = runner.estimate(Laplace(1.0), D, D_PRIME, samples=20_000, levels=[Level(delta=0.0, confidence=0.95)],
                               seed=0)
    by_pair = runner.estimate(Laplace(1.0), D, D_PRIME, samples=20_000, levels=[(0.0, 0.95)], seed=0)
    assert by_level.to_dict() == by_pair.to_dict()


def test_the_ceilings_answer_is_named_and_still_unpacks():
    p, q = np.array([0.02, 0.3, 0.6]), np.array([0.01, 0.2, 0.6])
    best = bounds.best_event(p, q, 10_000, 0.0, 0.95)
    eps, index, favours = best
    assert (best.epsilon, best.candidate, best.favours) == (eps, index, favours) and best.epsilon > 0


def _one_run() -> object:
    rng = np.random.default_rng(1)
    secret = rng.integers(0, 2, 400)
    return one_run_bound(1.5 * secret + rng.standard_normal(400), secret, rule=Fixed(20, 20), deltas=(0.0, 1e-5),
                         tiebreak=0)


def test_one_run_bounds_are_epsilon_lowers_and_the_old_spelling_warns():
    res = _one_run()
    assert isinstance(res.epsilon_lowers, tuple) and len(res.epsilon_lowers) == 2
    assert res.epsilon_lowers == tuple(res.bounds.values()) and res.epsilon_lowers[0] > 0
    with pytest.warns(DeprecationWarning, match="use epsilon_lowers"):
        assert res.epsilon_lower == res.epsilon_lowers
    record = json.loads(res.to_json())
    assert [b["epsilon_lower"] for b in record["bounds"]] == list(res.epsilon_lowers)  # the file is unchanged


def test_the_isolated_bounds_tuple_is_epsilon_lowers_and_the_old_spelling_warns():
    iso = declare(_one_run(), threshold=1.0, isolated_canaries=True, reason="simulated canaries").isolated
    assert isinstance(iso.epsilon_lowers, tuple) and len(iso.epsilon_lowers) == 2
    with pytest.warns(DeprecationWarning, match="IsolatedBound.epsilon_lower"):
        assert iso.epsilon_lower == iso.epsilon_lowers


def test_verdicts_are_verdict_members_and_write_as_before():
    """Laplace(ε = 2) against a claim of ε = 1 at 50,000 samples per side (seed 0): refuted."""
    result = audit_mechanism(Laplace(2.0), D, D_PRIME, samples=50_000, seed=0, epsilon=1.0)
    check = result.claims[0]
    assert check.verdict is Verdict.VIOLATION and result.verdict is Verdict.VIOLATION
    assert check.to_dict()["verdict"] == "violation" and json.dumps(check.verdict) == '"violation"'
