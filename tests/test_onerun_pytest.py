"""``assert_private_one_run``: a user's training function and scorer audited in one canary game.

The fixture is a per-canary Gaussian mechanism: canary j adds 1 to coordinate j of the output and
every coordinate gets N(0, σ²) noise, so the run is exactly (1/σ)-GDP towards each canary, hence
(ε, δ)-DP for σ = 1/gdp_mu(ε, δ).  Fixed seeds; the assertion's confidence is its default 0.99
(with a curve, two tests at 0.995 each): the correct mechanism fails with probability ≤ 1 %, and
its twins with half (or a tenth of) the noise must be caught.
"""

import numpy as np
import pytest

from dpaudit.core import InputError
from dpaudit.onerun import MU_LABEL, Fixed, gdp, gdp_mu
from dpaudit.testing import PrivacyViolation, assert_private_one_run, settings

EPS, DELTA, M = 2.0, 1e-5, 1000
MU = gdp_mu(EPS, DELTA)
# The f-DP one-run test's largest rejected mu is about half the true one at these sizes, so half
# the noise (mu doubled) is caught through the curve only with many canaries: the planner's median
# run rejects at m = 1270 (plan_curve(gdp(MU), mu = 2 MU, confidence 0.995)); at 10^4 the default
# rule caught the twin in 10 of 10 seeds (0-9) and passed the correct mechanism in 10 of 10.
M_CURVE = 10_000


def gaussian_training(sigma: float, m: int = M):
    def train(dataset, rng):
        out = np.zeros(m)
        out[np.asarray([int(c) for c in dataset], dtype=int)] = 1.0  # canary j's record touches coordinate j only
        return out + sigma * rng.standard_normal(m)
    return train


def score(output, canaries):
    return np.asarray(output)[np.asarray([int(c) for c in canaries], dtype=int)]


def test_a_correct_gaussian_training_passes_both_claims():
    result = assert_private_one_run(gaussian_training(1.0 / MU, M_CURVE), score, epsilon=EPS, delta=DELTA, m=M_CURVE,
                                    seed=0, curve=gdp(MU))
    assert result.m == M_CURVE and result.epsilon_at(DELTA) <= EPS
    assert [c.verdict for c in result.claims] == ["pass", "pass"]
    assert abs(result.confidence - 0.995) < 1e-12  # 0.99 over two tests (Bonferroni)
    assert result.rule["rule"] == "fixed" and result.rule["k_plus"] == result.rule["k_minus"]


def test_half_the_noise_is_caught_through_the_curve_and_the_message_says_so():
    with pytest.raises(PrivacyViolation) as caught:
        assert_private_one_run(gaussian_training(0.5 / MU, M_CURVE), score, epsilon=EPS, delta=DELTA, m=M_CURVE,
                               seed=0, curve=gdp(MU))
    text = str(caught.value)
    assert "refuted (empirical)" in text and f"{MU:.4g}-GDP" in text
    assert "Counts:" in text and "guesses (k+ = " in text and "fixed rule" in text and "chosen before the game" in text
    assert "GDP mu rejected up to" in text and MU_LABEL in text
    assert "Bonferroni" in text
    assert "eps_lower" not in text.split("GDP mu rejected")[1]  # the mu is never read as an (eps, delta) bound


def test_a_tenth_of_the_noise_is_caught_by_the_eps_delta_bound():
    with pytest.raises(PrivacyViolation) as caught:
        assert_private_one_run(gaussian_training(0.1 / MU), score, epsilon=EPS, delta=DELTA, m=M, seed=0)
    text = str(caught.value)
    assert "refuted (empirical)" in text and f"not ({EPS:g}, {DELTA:g})-DP" in text and "eps_lower = " in text
    assert "GDP mu" not in text  # no curve claim: no mu to label


def test_the_budget_confidence_and_a_given_rule_are_used():
    with settings(confidence=0.95):
        result = assert_private_one_run(gaussian_training(1.0 / MU), score, epsilon=EPS, delta=DELTA, m=200, seed=1,
                                        rule=Fixed(20, 20))
    assert result.confidence == 0.95 and result.k_plus == 20 and result.r == 40


def test_canaries_and_runs_make_one_game():
    cans = list(range(100))
    result = assert_private_one_run(gaussian_training(1.0 / MU, m=100), score, epsilon=EPS, delta=DELTA,
                                    canaries=cans, runs=3, seed=2)
    assert result.m == 300 and result.runs == 3 and result.canaries_per_run == 100


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"epsilon": -1.0}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"),
    ({"delta": 1.5}, "delta"),
    ({"confidence": 1.0}, "confidence"),
    ({"curve": "gdp"}, "curve"),
    ({"m": 1}, "m"),
    ({"runs": 0}, "runs"),
    ({"seed": -1}, "seed"),
    ({"relation": "swap"}, "relation"),
    ({"train": 42}, "train"),
    ({"score": None}, "score"),
    ({"canaries": [0]}, "canaries"),
])
def test_bad_inputs_raise_input_error_naming_the_field(kwargs, field):
    args = {"train": gaussian_training(1.0 / MU), "score": score, "epsilon": EPS, "delta": DELTA, "m": 100}
    args.update(kwargs)
    train, scorer = args.pop("train"), args.pop("score")
    with pytest.raises(InputError) as caught:
        assert_private_one_run(train, scorer, **args)
    assert field in str(caught.value)


def test_it_is_exported_lazily():
    import dpaudit.testing as testing

    assert "assert_private_one_run" in testing.__all__ and testing.assert_private_one_run is assert_private_one_run
