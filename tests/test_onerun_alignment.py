"""Algorithm 1 (objective-perturbed MLE) audited in one run: 10^5 Bradley-Terry comparisons,
m = 1000 random-direction canaries with residual-gradient scores (d = 16 < m), and m canary
comparisons on dedicated coordinates (d = d0 + m) scored by their fitted coordinate.
Confidence 95 %."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dpaudit.catalog.designs.alignment import mle_design
from dpaudit.catalog.designs.mle_dedicated import CoordinateComparison, mle_dedicated_design
from dpaudit.core import InputError
from dpaudit.onerun import Fixed
from dpaudit.onerun.design import refuted
from tests.onerun_seeded import own_and_direct, seeded


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
    # The secret seed 0 drew before the secret came from fresh entropy (tests/onerun_seeded.py); with a
    # fresh secret this design exceeds 1.0 in about 4 of 20 games: the claim is one game's.
    leaky = replace(mle_design(n=2000, m=40, d=160, epsilon=200.0, output_noise=False), rule=Fixed(10, 10))
    assert seeded(leaky, 0).epsilon_lowers[0] > 1.0


def test_correct_mle_passes_on_five_seeds(small):
    assert all(small.as_expected(seeded(small, seed)) for seed in range(5))


@pytest.mark.slow
def test_mle_never_refuted_over_100_seeds():
    # m = 1000 canaries on 10^4 base comparisons (the slow tier's CPU budget); the full size,
    # 10^5 comparisons, is the one-run suite's scenario and was measured once (0 of 100).
    design = mle_design(n=10_000)
    assert sum(refuted(seeded(design, seed)) for seed in range(3000, 3100)) == 0


# --- dedicated coordinates (d >= m): one canary comparison per coordinate, score = its coordinate ---

@pytest.fixture(scope="module")
def dedicated():
    return mle_dedicated_design(n=5000, m=200, d0=6, epsilon=1.0)


@pytest.mark.parametrize("calibration", ["instantiated", "paper"])
def test_separable_solve_is_the_mechanisms_own_output(calibration):
    # The block solve returns what PrivateMLE.sample returns on the full d-dimensional data, from
    # the same stream (a dense solve is affordable at this size only).
    design = mle_dedicated_design(n=300, m=6, d0=3, calibration=calibration)
    ours, theirs = own_and_direct(design, (0, 2, 3))
    assert ours.shape == (9,)
    assert np.allclose(ours, theirs, rtol=0, atol=1e-9)
    without_3 = design.mechanism.run([design.canaries[i] for i in (0, 2)], np.random.default_rng(5))
    assert not np.allclose(ours, without_3)  # canary 3 moves its coordinate


def test_dedicated_canaries_and_claims(dedicated):
    cans = dedicated.canaries
    assert [c.coordinate for c in cans] == list(range(6, 206))     # d = d0 + m >= m
    assert all(c.value == 2.0 and c.y == 1 for c in cans)           # ||x|| = 2L, the model's bound
    assert {g.claim_id for g in dedicated.claims} == {"align/alg1-instantiated", "align/alg1-chi"}
    paper = mle_dedicated_design(n=500, m=4, d0=2, calibration="paper")
    assert {g.claim_id for g in paper.claims} == {"align/alg1-printed", "align/alg1-chi"}


def test_dedicated_rejects_records_off_their_coordinates(dedicated):
    w = dedicated.mechanism
    with pytest.raises(InputError, match="dedicated coordinate"):
        w.run([CoordinateComparison(0, 2.0)], np.random.default_rng(0))
    with pytest.raises(InputError, match="one canary per"):
        w.run([dedicated.canaries[0], dedicated.canaries[0]], np.random.default_rng(0))
    with pytest.raises(InputError, match="2L"):
        w.run([CoordinateComparison(7, 3.0)], np.random.default_rng(0))


def test_dedicated_scores_find_the_canaries_when_the_noise_allows():
    # The catalog's faulty sigma_b / 10 at eps = 8 (per-canary mu about 3.4): the coordinate
    # scores find the canaries, so the same scorer can fail a leaky run.
    leaky = mle_dedicated_design(n=5000, m=200, d0=6, epsilon=8.0, calibration="paper", bug="tenth-noise",
                                 rule=Fixed(20, 20))
    assert leaky.expected == {}
    assert seeded(leaky, 0).epsilon_lowers[0] > 1.0


def test_correct_dedicated_mle_passes_on_five_seeds(dedicated):
    assert all(dedicated.as_expected(seeded(dedicated, seed)) for seed in range(5))


@pytest.mark.slow
def test_dedicated_mle_never_refuted_over_100_seeds():
    # m = 1000 canaries (the game) on 10^4 base comparisons to keep the slow tier's CPU small
    # (about 0.02 s a run); the full size, 10^5 comparisons, is the one-run suite's scenario.
    for calibration in ("instantiated", "paper"):
        design = mle_dedicated_design(n=10_000, m=1000, calibration=calibration)
        assert sum(refuted(seeded(design, seed)) for seed in range(3000, 3100)) == 0
