"""A secret the caller drew with a mild bias never gives a false finding.

``one_run_bound`` refuses a secret whose count of ones is implausible under Bernoulli(½) (p-value
< 1e-6), but a mild bias passes that check: P[in] = 0.55 at m = 1000 does in ≈ 95 % of draws.
Under ε-DP with Bernoulli(p) bits an "in" guess is right with probability ≤ σ(ε + logit p), an
"out" guess ≤ σ(ε − logit p); a one-sided rule then finds a leak in null scores (on the old code,
``Fixed(100, 0)`` at p = 0.55: ε_LB > 0 in 25.7 % of seeds), a balanced one (k₊ = k₋) cannot
(Hoeffding 1956, Thm 4: ``dpaudit.onerun.bound.check_rule_for_secret``).

Statistical facts used (fixed seeds, α = 0.05):

* Null validity: scores N(0, 1) independent of a secret drawn Bernoulli(p) per canary, 400 seeds
  per (rule, p).  For every rule ``one_run_bound`` accepts with a caller's secret, P[ε_LB > 0] and
  P[GDP μ_LB > 0] must be ≤ α + 3 s.e. = 0.05 + 3·0.0109 = 0.083 (a secret refused by the fairness
  check counts as no finding).  At p = 0.6 the fairness check refuses ≈ 95 % of secrets, so the
  statistic itself is tested there with the check switched off (the balanced bound holds whatever
  the bias).  Unbalanced rules must be refused; on the old code they were accepted and this test
  fails (Fixed(100, 0): ≈ 26 % at p = 0.55).
* Twin: scores that leak (N(2, 1) for included canaries) with the same biased secret and a balanced
  rule give ε_LB > 0 in > 90 % of 100 seeds.

Most of each bound's work is the same few values of Steinke's ε_LB and of the largest rejected GDP μ
on every seed (``Split`` looks up the smallest capable k of its 500-canary bound part by bisection on
every call): both are memoised where they are defined (dpaudit.onerun.steinke, dpaudit.onerun.fdp:
pure functions, so no figure changes; all 400 seeds kept).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpaudit.onerun.bound as bound_module
from dpaudit.core import InputError
from dpaudit.onerun import Fixed, Grid, Split, audit_one_run, gdp, one_run_bound
from dpaudit.onerun.claimrule import rule_from_claims
from dpaudit.onerun.fixtures import GaussianCanaries, coordinate_score
from dpaudit.onerun.rules import default_rule

M = 1000
ALPHA = 0.05
SEEDS = 400
LIMIT = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / SEEDS)
PLANNED = rule_from_claims(M, [gdp(1.0)], confidence=0.95, delta=1e-5)
assert PLANNED is not None
RULES = {"fixed-balanced": Fixed(50, 50), "default-grid": default_rule(M), "split": Split(),
         "planned": PLANNED[0], "fixed-one-sided": Fixed(100, 0), "fixed-unbalanced": Fixed(70, 30),
         "grid-unbalanced": Grid(((20, 20), (50, 0)))}
BALANCED = ("fixed-balanced", "default-grid", "split", "planned")


def _games(p_in: float, seeds: int, *, leak: float = 0.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``seeds`` games at once: secrets Bernoulli(p_in) per canary, scores leak·S + N(0, 1)."""
    rng = np.random.default_rng([seed, round(100 * p_in)])
    secrets = (rng.random((seeds, M)) < p_in).astype(np.int8)
    return leak * secrets + rng.standard_normal((seeds, M)), secrets


def _false_findings(rule, p_in: float) -> tuple[int, int]:
    """(ε_LB > 0, μ_LB > 0) counts over SEEDS null games; a refused secret is no finding."""
    eps = mu = 0
    for scores, secret in zip(*_games(p_in, SEEDS), strict=True):
        try:
            res = one_run_bound(scores, secret, rule=rule, tiebreak=0)
        except InputError as exc:
            assert "secret = " in str(exc), exc  # the fairness check, never anything else
            continue
        eps += res.epsilon_lowers[0] > 0
        mu += res.gdp_mu_lower > 0
    return eps, mu


def _accepted(rule) -> bool:
    scores, secret = _games(0.5, 1)
    try:
        one_run_bound(scores[0], secret[0], rule=rule, tiebreak=0)
    except InputError as exc:
        assert str(exc).startswith("rule = "), exc
        return False
    return True


@pytest.mark.parametrize("name", list(RULES))
def test_every_accepted_rule_is_valid_with_a_secret_biased_to_055(name):
    if not _accepted(RULES[name]):
        assert name not in BALANCED
        return
    eps, mu = _false_findings(RULES[name], 0.55)
    assert eps / SEEDS <= LIMIT and mu / SEEDS <= LIMIT, (name, eps, mu, SEEDS)


@pytest.mark.parametrize("name", list(RULES))
def test_every_accepted_rule_is_valid_with_a_secret_biased_to_06_past_the_fairness_check(name, monkeypatch):
    monkeypatch.setattr(bound_module, "_check_secret_fair", lambda b, runs: None)
    if not _accepted(RULES[name]):
        assert name not in BALANCED
        return
    eps, mu = _false_findings(RULES[name], 0.6)
    assert eps / SEEDS <= LIMIT and mu / SEEDS <= LIMIT, (name, eps, mu, SEEDS)


@pytest.mark.parametrize("name", [n for n in RULES if n not in BALANCED])
def test_an_unbalanced_rule_with_a_callers_secret_is_refused_naming_rule_value_and_what_is_allowed(name):
    scores, secret = _games(0.5, 1)
    with pytest.raises(InputError) as err:
        one_run_bound(scores[0], secret[0], rule=RULES[name])
    said = str(err.value)
    assert said.startswith(f"rule = {RULES[name]!r} is invalid") and "k_plus != k_minus" in said
    assert "balanced rule (k_plus == k_minus)" in said and "let dpaudit draw the secret" in said


def test_audit_one_run_refuses_it_before_training_and_keeps_every_rule_for_its_own_secret():
    calls = []

    def mechanism(dataset, rng):
        calls.append(1)
        return rng.standard_normal(40)

    with pytest.raises(InputError, match=r"^rule = Fixed\(k_plus=10, k_minus=0\) is invalid"):
        audit_one_run(mechanism, coordinate_score, m=40, rule=Fixed(10, 0), secret=np.tile([0, 1], 20))
    assert calls == []  # refused before the first training run
    res = audit_one_run(mechanism, coordinate_score, m=40, rule=Fixed(10, 0))  # dpaudit draws the secret
    assert res.secret_source == "fresh entropy" and res.k_plus == 10 and res.k_minus == 0


def test_a_leak_is_still_caught_with_a_biased_callers_secret_and_a_balanced_rule():
    scores, secrets = _games(0.55, 100, leak=2.0, seed=1)
    hits = sum(one_run_bound(s, b, rule=Fixed(50, 50), tiebreak=0).epsilon_lowers[0] > 0
               for s, b in zip(scores, secrets, strict=True)
               if bound_module.fair_p_value(int(b.sum()), M) >= bound_module.FAIR_P_MIN)
    assert hits > 90, hits


def test_the_record_says_who_drew_the_secret():
    scores, secret = _games(0.5, 1)
    mine = one_run_bound(scores[0], secret[0], rule=Fixed(50, 50), tiebreak=0)
    assert mine.secret_source == mine.to_dict()["secret_source"] == "supplied by the caller"
    assert "secret supplied by the caller" in mine.summary()
    ours = audit_one_run(GaussianCanaries(1.0, 200), coordinate_score, m=200, rule=Fixed(20, 20))
    assert ours.secret_source == "fresh entropy" and ours.to_dict()["secret_source"] == "fresh entropy"
    assert "secret drawn by dpaudit (fresh entropy)" in ours.summary()


def test_the_guard_keeps_a_balanced_rejection_where_hoeffding_applies():
    """At α = 0.4 a balanced test could reject below v = r·σ(ε) + 1, where the comparison with the
    Bernoulli(½) tail is not proved for a biased prior: with the caller's secret the bound stops there
    (2 of 2 right: ε_LB = 0, not 0.54); a secret dpaudit drew keeps 0.54."""
    scores, secret = np.array([0.0, 1.0, 0.5, 0.5]), np.array([0, 1, 0, 1])
    mine = one_run_bound(scores, secret, rule=Fixed(1, 1), confidence=0.6, tiebreak=0, deltas=(0.0,))
    assert (mine.v, mine.r) == (2, 2) and mine.epsilon_lowers[0] == 0.0
    assert bound_module.prior_guard(mine.tests[0]) == 0.0


# --- an unbalanced rule smuggled in (red team): a record that says "fresh entropy" without being
# one CanaryGame.play made, and a rule subclass whose tests differ from its parameters ---

def _played_record():
    from dpaudit.onerun.game import CanaryGame

    return CanaryGame(m=40, seed=0).play(lambda dataset, rng: rng.standard_normal(40), coordinate_score,
                                         list(range(40)), ())


def test_a_record_that_only_says_fresh_entropy_is_bounded_as_the_callers():
    import dataclasses

    from dpaudit.onerun.bound import bound_record
    from dpaudit.onerun.game import GameRecord

    played = _played_record()
    assert played.secret_source == "fresh entropy"
    assert bound_record(played, rule=Fixed(10, 0), tiebreak=0).k_minus == 0  # dpaudit's own secret: any rule
    by_hand = GameRecord(scores=played.scores, secret=played.secret, canaries_per_run=40, runs=1, seed=0,
                         relation="add-remove", secret_source="fresh entropy")
    for forged in (by_hand, dataclasses.replace(played, scores=played.scores + 0.0)):
        with pytest.raises(InputError, match=r"^rule = Fixed\(k_plus=10, k_minus=0\) is invalid"):
            bound_record(forged, rule=Fixed(10, 0), tiebreak=0)


@pytest.mark.parametrize("base", [Split, Grid], ids=["split", "grid"])
def test_a_rule_subclass_that_produces_unbalanced_tests_is_refused(base):
    class Sneaky(base):  # type: ignore[misc, valid-type]
        def tests(self, scores, secret, alpha, objective, keys, **kwargs):
            return Fixed(100, 0).tests(scores, secret, alpha, objective, keys)

    rule = Sneaky() if base is Split else Sneaky(pairs=((50, 50),))
    scores, secrets = _games(0.5, 1)
    with pytest.raises(InputError, match="produced unbalanced tests"):
        one_run_bound(scores[0], secrets[0], rule=rule, tiebreak=0)
