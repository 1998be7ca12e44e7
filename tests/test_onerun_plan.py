"""``plan`` for one-run audits: the canaries each claim of a design needs, and the generic
``plan --onerun --epsilon E`` (dpaudit.onerun.planner, dpaudit.cli.plan).

Statistical checks use fixed seeds; confidence of every bound 95 %.  The simulations draw the
Gaussian and RR fixtures' scores directly (their law is exact), so a plan is held to what a run
at the planned m really gives: the median ε_LB over 25 seeds reaches the target (to 0.15), and
half the planned canaries do not.
"""

import dataclasses
import functools
import json
import math

import numpy as np
import pytest

from dpaudit.core import Guarantee
from dpaudit.onerun import gdp, gdp_mu
from dpaudit.onerun.fdp import rejects_claim
from dpaudit.onerun.fixtures import gaussian_scores, rr_scores
from dpaudit.onerun.planner import (
    ScoreModel,
    estimate_model,
    model_epsilon,
    pilot_model,
    plan_canaries,
    plan_claim,
    plan_curve,
)
from dpaudit.onerun.rules import counts
from dpaudit.onerun.steinke import epsilon_lower
from tests.clirun import in_process
from tests.onerun_seeded import seeded

SEEDS = range(25)
TOLERANCE = 0.15  # the planner evaluates the bound at the median count of a threshold rule


def _simulated_median(m: int, k: int, draw) -> float:
    out = []
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        secret = rng.integers(0, 2, m)
        scores = draw(secret, rng)
        v = counts(scores, secret, k, k)
        out.append(epsilon_lower(m, 2 * k, v, delta=1e-5, alpha=0.05))
    return float(np.median(out))


@pytest.mark.parametrize(("target", "model", "draw"), [
    (2.0, ScoreModel("gaussian", gdp_mu(4.0, 1e-5)), lambda s, rng: gaussian_scores(s, gdp_mu(4.0, 1e-5), rng)),
    (1.0, ScoreModel("rr", 2.0), lambda s, rng: rr_scores(s, 2.0, rng)),
])
def test_the_planned_m_reaches_the_target_in_the_median_run_and_half_of_it_does_not(target, model, draw):
    plan = plan_canaries(target, model=model)
    assert plan is not None and plan.expected_epsilon_lower >= target
    at_plan = _simulated_median(plan.m, plan.rule.k_plus, draw)
    assert at_plan >= target - TOLERANCE, (plan.describe(), at_plan)
    half = plan_canaries(target, model=model, max_canaries=plan.m // 2)
    assert half is None  # the planner's own answer: half the canaries do not reach
    k_half = max(1, round(plan.rule.k_plus / 2))
    assert _simulated_median(plan.m // 2, k_half, draw) < target, "the plan is not the fewest canaries"


def test_a_planned_curve_rejection_happens_in_about_half_the_runs_or_more():
    model, claim = ScoreModel("gaussian", 1.6), gdp(0.8, claim_id="x/half-mu")
    plan = plan_curve(claim, model)
    assert plan is not None and plan.m < 1000
    k = plan.rule.k_plus
    rejected = []
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        secret = rng.integers(0, 2, plan.m)
        v = counts(gaussian_scores(secret, 1.6, rng), secret, k, k)
        rejected.append(rejects_claim(claim, m=plan.m, c_prime=2 * k, c=v, tau=0.05))
    assert np.mean(rejected) >= 0.4, plan.describe()  # median counts reject: P[v >= median] >= 1/2
    # The twin: a claim the model's own curve satisfies is never planned as refutable.
    assert plan_curve(gdp(1.7), model) is None


def test_unreachable_targets_say_why():
    mu = 1.0
    own = model_epsilon(ScoreModel("gaussian", mu), 1e-5)
    assert 3.0 < own < 5.0
    assert plan_canaries(own + 0.1, mu=mu) is None  # above the model mechanism's own eps: never
    assert plan_canaries(own / 3, mu=mu) is not None
    assert plan_canaries(1.0, mu=0.0) is None
    assert model_epsilon(ScoreModel("rr", 2.0), 0.0) == 2.0


def test_the_auc_estimate_recovers_a_known_separation():
    rng = np.random.default_rng(5)
    secret = rng.integers(0, 2, 4000)
    scores = gaussian_scores(secret, 1.2, rng)
    model = estimate_model(scores, secret)
    assert model.kind == "gaussian" and model.interval is not None
    assert model.interval[0] < 1.2 < model.interval[1] and abs(model.parameter - 1.2) < 0.1
    # Ranks only: a monotone change of the scorer changes nothing.
    assert estimate_model(np.exp(scores / 3), secret).parameter == model.parameter
    assert estimate_model(np.random.default_rng(6).standard_normal(4000), secret).parameter < 0.1  # no signal


@pytest.fixture(scope="module")
def wrong_relation():
    from dpaudit.catalog.designs.policy import dppg_design

    return dppg_design(bug="wrong-relation")


def test_a_refuted_designs_plan_is_within_its_m_when_the_suite_refutes_it_there(wrong_relation):
    design = wrong_relation
    audited = seeded(design, 0)
    assert design.as_expected(audited)  # the suite's seed refutes the curve at m = 500
    model, v, r = pilot_model(design)
    assert model.kind == "gaussian" and "pilot" in model.source and r == 4 * 200 and 0.5 * r < v <= r
    plans = {p.claim_id: p for p in (plan_claim(c, design, model) for c in design.claims)}
    curve = plans["po/dp-pg-tight"]
    assert curve.expected == "violation" and curve.canaries is not None
    assert curve.canaries <= design.m and curve.runs == 1
    assert "rejected" in curve.at_design


def test_a_printed_eps_beyond_any_one_run_bound_is_reported_out_of_reach(wrong_relation):
    design = wrong_relation
    printed = next(c for c in design.claims if isinstance(c, Guarantee))
    twin = dataclasses.replace(design, expected={printed.claim_id: "violation"})  # as if it were to be refuted
    model = ScoreModel("gaussian", 1.2, "test")  # 1.2-GDP is (5.41, 1e-5)-DP: eps = 6 cannot be shown
    assert model_epsilon(model, printed.delta) < printed.epsilon
    p = plan_claim(printed, twin, model)
    assert p.canaries is None and p.runs is None and "itself" in p.note
    leaky = plan_claim(printed, twin, ScoreModel("gaussian", 3.0, "test"))  # 3-GDP is (16.7, 1e-5)-DP
    assert leaky.canaries is not None and leaky.canaries > twin.m


def test_cli_plans_a_design_and_its_json(wrong_relation, monkeypatch):
    from dpaudit.cli import plan as cli_plan

    # a stand-in cached as the real one is (the verb asks its cache whether the designs are built)
    monkeypatch.setattr(cli_plan, "_designs", functools.lru_cache(maxsize=1)(lambda: (wrong_relation,)))
    text = in_process("plan", wrong_relation.name, "--pilots", "2")
    assert text.returncode == 0, text.stderr
    first, *rest = text.stdout.splitlines()
    n = int(first.removeprefix("canaries="))
    assert 1 <= n <= wrong_relation.m
    assert any("po/dp-pg-tight" in line and "violation" in line for line in rest)
    assert any("model:" in line and "pilot" in line for line in rest)
    js = in_process("plan", wrong_relation.name, "--pilots", "2", "--json", "--epsilon", "1.5")
    assert js.returncode == 0, js.stderr
    doc = json.loads(js.stdout)
    assert doc["canaries"] >= n and doc["design"] == wrong_relation.name and doc["target"]["epsilon"] == 1.5
    jsonschema = pytest.importorskip("jsonschema")
    from dpaudit.results.schema import plan_schema
    schema = plan_schema()
    jsonschema.Draft202012Validator(schema).validate(doc)


def test_cli_generic_plan_and_its_unreachable_twin():
    ok = in_process("plan", "--onerun", "--epsilon", "2", "--mu", str(gdp_mu(4.0, 1e-5)),
                    "--canaries-per-run", "1000")
    assert ok.returncode == 0, ok.stderr
    n = int(ok.stdout.splitlines()[0].removeprefix("canaries="))
    assert n == plan_canaries(2.0, mu=gdp_mu(4.0, 1e-5)).m
    assert "runs of 1000" in ok.stdout
    far = in_process("plan", "--onerun", "--epsilon", "5", "--mu", "1")
    assert far.returncode == 0 and far.stdout.startswith("canaries=unreachable\n")
    assert "out of reach" in far.stdout and "itself" in far.stdout
    perfect = in_process("plan", "--onerun", "--epsilon", "3.49", "--delta", "1e-5")
    assert perfect.returncode == 0 and "perfect scorer" in perfect.stdout
    assert 50 <= int(perfect.stdout.splitlines()[0].removeprefix("canaries=")) <= 100  # ceiling 3.490 at m = 100


@pytest.mark.parametrize(("argv", "flag"), [
    (["--onerun", "--epsilon", "2", "--mu", "-1"], "--mu"),
    (["--onerun", "--epsilon", "2", "--mu", "nan"], "--mu"),
    (["--onerun", "--epsilon", "2", "--rr-epsilon", "0"], "--rr-epsilon"),
    (["--onerun", "--epsilon", "inf"], "--epsilon"),
    (["--onerun", "--epsilon", "-2"], "--epsilon"),
    (["--onerun", "--epsilon", "2", "--delta", "1.5"], "--delta"),
    (["--onerun"], "--epsilon"),
    (["--onerun", "--epsilon", "2", "--canaries-per-run", "1"], "--canaries-per-run"),
    (["rr", "--onerun", "--epsilon", "2"], "--onerun"),
    (["rr", "--mu", "1"], "--mu"),
    (["--onerun", "--epsilon", "2", "--mu", "1", "--rr-epsilon", "1"], "--rr-epsilon"),
    (["--pilots", "0", "--onerun", "--epsilon", "2"], "--pilots"),
])
def test_bad_plan_flags_exit_2_naming_the_flag(argv, flag):
    res = in_process("plan", *argv)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert flag in res.stderr, res.stderr
    assert not res.stdout


def test_planned_rule_is_a_fixed_symmetric_rule_chosen_before_any_game():
    plan = plan_canaries(1.5, mu=2.0)
    assert plan is not None and plan.rule.k_plus == plan.rule.k_minus and 2 * plan.rule.k_plus <= plan.m
    assert math.isclose(plan.target, 1.5)
