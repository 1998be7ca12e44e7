"""DP-PG (one pass, user-level) audited in one run with m = 500 canary users at d = 256, T = 100.

Seeds 0–4 (and 2000–2099 in the slow tier); the rule k₊ = k₋ = 100 was fixed from a planning
simulation on seeds 100–109.  Confidence 95 %."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.catalog.designs.policy import DPPG_RULE, dppg_design, dppg_rule
from dpaudit.core import InputError
from dpaudit.onerun.design import refuted
from tests.onerun_seeded import seeded


def test_canary_slots_are_the_worst_user_pair():
    design = dppg_design()
    pop = design.mechanism
    with_j, without = pop.population({3}), pop.population(set())
    diff = np.flatnonzero(np.any(with_j["reward"] != without["reward"], axis=1))
    assert diff.tolist() == [3 // 5 * 50 + 3 % 5]       # one user changes: canary 3's slot in round 0
    assert with_j["reward"][diff[0]].tolist() == [1.0, -1.0]
    assert without["reward"][diff[0]].tolist() == [-1.0, 1.0]
    assert design.claims[-1].mu == pytest.approx(pop.mech.sensitivity / pop.mech.sigma)


def test_bad_design_inputs():
    with pytest.raises(InputError, match="bug"):
        dppg_design(bug="typo")
    with pytest.raises(InputError, match="m"):
        dppg_design(m=499)


def test_rule_keeps_the_planned_fraction():
    assert dppg_rule(500) == DPPG_RULE and dppg_design().rule == DPPG_RULE
    assert dppg_rule(100).k_plus == dppg_rule(100).k_minus == 20


def test_toy_size_runs_and_passes():
    # The default suite's fixture size (m = 100 canary users, d = 16, T = 10): about 0.01 s a run.
    toy = dppg_design(m=100, d=16, rounds=10, per_round=20, epsilon=4.0)
    assert toy.m == 100 and toy.rule.k_plus == 20
    assert all(toy.as_expected(seeded(toy, seed)) for seed in range(5))
    with pytest.raises(InputError, match="per_round"):
        dppg_design(m=100, d=16, rounds=10, per_round=10, epsilon=4.0)   # 10 canary slots fill the round


def test_correct_dppg_passes_on_five_seeds():
    design = dppg_design()
    assert all(design.as_expected(seeded(design, seed)) for seed in range(5))


@pytest.mark.parametrize("bug", ["wrong-relation", "reward-convention"])
def test_faulty_dppg_twins_are_refuted(bug):
    design = dppg_design(bug=bug)
    results = [seeded(design, seed) for seed in range(5)]
    assert sum(design.as_expected(r) for r in results) >= 4
    if bug == "reward-convention":  # outside the premise: not-applicable, evidence beside it
        assert all(c.verdict == "not-applicable" for r in results for c in r.claims[:2])
        assert sum(bool(r.claims[-1].rejected) for r in results) >= 4
    else:
        assert sum(refuted(r) for r in results) >= 4


@pytest.mark.slow
def test_correct_dppg_never_refuted_over_100_seeds():
    design = dppg_design()
    assert sum(refuted(seeded(design, seed)) for seed in range(2000, 2100)) == 0
