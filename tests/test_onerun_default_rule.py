"""With claims and no ``rule=``, a one-run audit plans its rule from the claims before the game;
``Split`` never falls back to a test that cannot reject.

Power: Gaussian canaries (each canary's score μ·S_i + N(0, 1), the fixture of
``test_onerun_power.py``), m = 1000, claims (8, 1e-5) and the GDP μ of that profile, medians over
seeds.  The default Bonferroni grid gave 2.581 (Steinke) and 3.744 (GDP μ read as ε) over 100
seeds; the rule planned from the claims gives the planner's fixed-k figures, 3.015 and 4.864."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpaudit.core import Guarantee, InputError
from dpaudit.onerun import audit_one_run, gdp, gdp_epsilon, gdp_mu, one_run_bound
from dpaudit.onerun.bound import bound_record
from dpaudit.onerun.claimrule import rule_from_claims
from dpaudit.onerun.fixtures import GaussianCanaries, coordinate_score, gaussian_scores
from dpaudit.onerun.game import CanaryGame
from dpaudit.onerun.rules import Split, smallest_capable_k
from dpaudit.onerun.steinke import epsilon_lower
from dpaudit.testing.one_run import ALTERNATIVE, planned_rule
from tests.clirun import in_process

M = 1000
DELTA = 1e-5
ALPHA = 0.05


def _game(seed: int, mu: float, stream: int = 23) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([seed, stream])
    secret = rng.integers(0, 2, M)
    return gaussian_scores(secret, mu, rng), secret


def _claims(eps: float) -> list[Guarantee | object]:
    return [Guarantee(epsilon=eps, delta=DELTA), gdp(gdp_mu(eps, DELTA))]


def _medians(eps: float, seeds: int) -> tuple[float, float]:
    mu = gdp_mu(eps, DELTA)
    st, read = [], []
    for seed in range(seeds):
        scores, secret = _game(seed, mu)
        res = one_run_bound(scores, secret, deltas=(DELTA,), claims=_claims(eps), tiebreak=seed)
        st.append(res.epsilon_lowers[0])
        read.append(gdp_epsilon(res.gdp_mu_lower, DELTA))  # a GDP-family reading, for this figure only
    return float(np.median(st)), float(np.median(read))


# --- the rule is planned from the claims alone -------------------------------------------------------

def test_claims_plan_one_fixed_rule_before_any_score_is_seen():
    claims = _claims(8.0)
    rules = []
    for seed in (0, 1):  # two different games, and scores that carry nothing: the same rule
        scores, secret = _game(seed, gdp_mu(8.0, DELTA))
        for s in (scores, np.zeros(M)):
            rules.append(one_run_bound(s, secret, deltas=(DELTA,), claims=claims, tiebreak=0).rule)
    assert all(r == rules[0] for r in rules)
    assert rules[0]["rule"] == "fixed" and rules[0]["planned_from"] == "claims"
    assert rules[0]["correction"] == "none"
    planned = rule_from_claims(M, claims, confidence=0.95, delta=DELTA)
    assert planned is not None and (rules[0]["k_plus"], rules[0]["k_minus"]) == (planned[0].k_plus, planned[0].k_minus)


def test_without_claims_the_default_grid_stays():
    scores, secret = _game(0, 1.0)
    res = one_run_bound(scores, secret, deltas=(DELTA,), tiebreak=0)
    assert res.rule["rule"] == "grid" and "planned_from" not in res.rule


def test_a_claim_for_another_relation_plans_nothing():
    scores, secret = _game(0, 1.0)
    other = Guarantee(epsilon=8.0, delta=DELTA, relation="user-level")
    res = one_run_bound(scores, secret, deltas=(DELTA,), claims=[other], relation="add-remove", tiebreak=0)
    assert res.rule["rule"] == "grid"


def test_audit_one_run_and_bound_record_plan_from_the_claims():
    mech, claims = GaussianCanaries(mu=gdp_mu(4.0, DELTA), m=200), [Guarantee(epsilon=4.0, delta=DELTA)]
    res = audit_one_run(mech, coordinate_score, m=200, claims=claims, seed=3, tiebreak=0)
    assert res.rule["planned_from"] == "claims" and res.rule["rule"] == "fixed"
    record = CanaryGame(m=200, seed=3).play(mech, coordinate_score, list(range(200)))
    again = bound_record(record, claims=claims, tiebreak=0)
    assert again.rule == res.rule


def test_assert_private_one_run_plans_with_the_same_function():
    for eps, curve in ((4.0, None), (8.0, gdp(gdp_mu(8.0, DELTA)))):
        claims = [Guarantee(epsilon=eps, delta=DELTA)] + ([curve] if curve else [])
        shared = rule_from_claims(M, claims, confidence=0.99, delta=DELTA, separation=ALTERNATIVE)
        assert shared is not None
        assert planned_rule(M, epsilon=eps, delta=DELTA, confidence=0.99, curve=curve) == shared[0]


# --- Split never falls back to a test that cannot reject ------------------------------------------------

def _eps(mm: int, r: int, v: int, a: float) -> float:
    return epsilon_lower(mm, r, v, delta=DELTA, alpha=a)


def test_split_without_signal_on_its_selection_part_keeps_a_test_that_can_reject():
    # All scores tied and counted worst-case: no fraction gives a right guess on the selection part.
    secret = np.random.default_rng([0, 31]).integers(0, 2, M)
    rule = Split(seed=4)
    (test,) = rule.tests(np.zeros(M), secret, ALPHA, _eps)
    assert _eps(test.m, test.r, test.r, ALPHA) > 0  # every guess right would reject eps = 0
    assert test.k_plus == smallest_capable_k(test.m, ALPHA, _eps)
    assert _eps(test.m, test.r - 2, test.r - 2, ALPHA) == 0  # and it is the smallest such k
    assert "fallback" in rule.to_dict()


def test_split_whose_bound_part_cannot_reject_is_refused():
    secret = np.array([0, 1, 0, 1, 1, 0])
    with pytest.raises(InputError, match=r"Split\.select"):
        Split(seed=0).tests(np.arange(6.0), secret, ALPHA, _eps)


# --- power and validity --------------------------------------------------------------------------------

@pytest.mark.parametrize(("eps", "floor_steinke", "floor_read"), [(8.0, 2.9, 4.7), (4.0, 1.5, 2.2)])
def test_planned_rule_medians_over_100_seeds(eps, floor_steinke, floor_read):
    """Medians over 100 seeds; the default grid gave 2.581 / 3.744 at ε = 8 and 1.361 / 1.856 at
    ε = 4, below every floor."""
    steinke, read = _medians(eps, 100)
    assert steinke >= floor_steinke
    assert read >= floor_read


@pytest.mark.parametrize("factor", [1.0, 2.0])
def test_claims_at_the_truth_are_rejected_at_most_alpha_and_a_leakier_mechanism_is_caught(factor):
    """200 seeds, claims (4, 1e-5) and its GDP μ: at the claim (factor 1) each claim is rejected in
    ≤ α + 3 s.e. of the seeds (a bound of the rule's level 0.05); at twice the μ (factor 2, the
    twin) the planned rule refutes the GDP claim in most seeds (the (4, 1e-5) claim stays out of
    the Steinke bound's reach at m = 1000 even then: its median is 3.16 over 50 of these seeds)."""
    seeds, mu = 200, gdp_mu(4.0, DELTA)
    claims = _claims(4.0)
    rejected = np.zeros((seeds, 2), dtype=bool)
    for seed in range(seeds):
        scores, secret = _game(seed, factor * mu, stream=29)
        res = one_run_bound(scores, secret, deltas=(DELTA,), claims=claims, tiebreak=seed)
        assert res.rule["planned_from"] == "claims"
        rejected[seed] = [bool(c.rejected) for c in res.claims]
    rate = rejected.mean(axis=0)
    if factor == 1.0:
        assert np.all(rate <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / seeds))
    else:
        assert rate[1] >= 0.8


def test_a_small_claim_never_plans_a_rule_that_cannot_reject():
    """At a small claimed μ the median bound is 0 for every k and the planner's argmax was k = 1:
    two guesses, which no outcome makes significant (the old assert_private_one_run rule at
    ε = 0.5, m = 1000)."""
    rule = planned_rule(M, epsilon=0.5, delta=DELTA, confidence=0.99)
    assert _eps(M, 2 * rule.k_plus, 2 * rule.k_plus, 0.01) > 0
    scores, secret = _game(0, 0.1)
    res = one_run_bound(scores, secret, deltas=(DELTA,), claims=[Guarantee(epsilon=0.2, delta=DELTA)], tiebreak=0)
    assert res.rule["planned_from"] == "claims"
    assert _eps(M, 2 * res.rule["k_plus"], 2 * res.rule["k_plus"], ALPHA) > 0


def test_split_with_a_claim_and_no_signal_keeps_a_test_that_can_reject_the_claim():
    secret = np.random.default_rng([1, 31]).integers(0, 2, M)
    claim = Guarantee(epsilon=2.0, delta=DELTA)
    res = one_run_bound(np.zeros(M), secret, rule=Split(seed=4), deltas=(DELTA,), claims=[claim],
                        tiebreak="worst-case")
    (test,) = res.tests
    assert res.rule["fallback_floor"] == 2.0
    assert _eps(test.m, test.r, test.r, ALPHA) > 2.0  # every guess right would refute the claim
    assert _eps(test.m, test.r - 2, test.r - 2, ALPHA) <= 2.0  # the smallest such k
    assert res.claims[0].rejected is False


SPLIT_RUN = """
[run]
seed = 5

[[scenario]]
name = "null-split"
mechanism = "tests.plugins.training_runs:RandomizedResponse"
params = { m = 400, epsilon = 0.0 }
scorer = "tests.plugins.training_runs:score"
canaries = 400
rule = { kind = "split", seed = 2 }

[[scenario.claim]]
epsilon = 0.5
delta = 1e-5
id = "user/claim"
"""


def test_a_split_run_with_a_claim_records_its_floor_and_rechecks(tmp_path):
    """A leak-free run (RR at ε = 0): the selection part mostly finds nothing, so the bound part's k
    is the smallest that can refute the 0.5 claim; ``summary`` recounts the game with the stored
    floor and accepts it (before the floor was stored, it would recount a smaller k)."""
    (tmp_path / "c.toml").write_text(SPLIT_RUN, encoding="utf-8")
    plugin = "tests.plugins.training_runs"
    done = in_process("run", tmp_path / "c.toml", "--allow-plugin", plugin, "--quiet", "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "run" / "results.json").read_text(encoding="utf-8")
    assert '"fallback_floor": 0.5' in text
    again = in_process("summary", tmp_path / "run" / "results.json")
    assert again.returncode == 0, again.stderr
    assert json.loads(text)
