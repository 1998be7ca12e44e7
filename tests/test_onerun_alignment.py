"""Algorithm 1 (objective-perturbed MLE) audited in one run: 10^5 Bradley-Terry comparisons,
m = 1000 random-direction canaries with residual-gradient scores (d = 16 < m).  Confidence 95 %."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dpaudit.onerun import Fixed
from dpaudit.onerun.designs import refuted
from dpaudit.onerun.designs.alignment import mle_design


@pytest.fixture(scope="module")
def small():
    return mle_design(n=5000, m=200, d=8, epsilon=1.0)


def test_canaries_are_norm_bound_unit_directions(small):
    dirs = np.asarray(small.canaries)[:, :-1]
    assert np.allclose(np.linalg.norm(dirs, axis=1), 2.0)   # ||x|| = 2L, the model's bound
    assert {g.claim_id for g in small.claims} == {"align/alg1-instantiated", "align/alg1-chi"}


def test_scores_see_the_canaries_when_they_can():
    # d >> m (little overlap between canary directions) and almost no noise (eps = 200, no output
    # noise): the residual-gradient scorer finds the canaries, so it can fail a leaky run.
    leaky = replace(mle_design(n=2000, m=40, d=160, epsilon=200.0, output_noise=False), rule=Fixed(10, 10))
    assert leaky.audit(0).epsilon_lower[0] > 1.0


def test_correct_mle_passes_on_five_seeds(small):
    assert all(small.as_expected(small.audit(seed)) for seed in range(5))


@pytest.mark.slow
def test_mle_at_full_size_never_refuted_over_100_seeds():
    design = mle_design()  # n = 10^5, m = 1000
    assert sum(refuted(design.audit(seed)) for seed in range(3000, 3100)) == 0
