"""One-run (canary) scenarios in a run: configs, results.json, the table, summary's re-check,
resume and identity, and the catalog's designs.

Statistical facts used (fixed seeds, 95 % confidence): randomized response per canary at ε = 1 is
1-DP towards each canary, so its (1, 1e-5) claim is rejected with probability ≤ 5 % over games (seed 0
and tie-break seed 2: not rejected).  RR's scores are binary, so a game's verdict also depends on the
random key that ranks its ties: for the single-run game, over tie-break seeds 0-299 one of its claims is
rejected for 59; tie-break seed 0 rejects it, seed 1 rejects the three-run grid game's, seed 2 (pinned
here) rejects none of this module's correct games.  A training run that outputs the inclusion bits
makes all 100 guesses of k₊ = k₋ = 50 right among 200 canaries, whose Steinke bound (≈ 3) exceeds
ε = 1 surely.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from dpaudit import catalog
from dpaudit.catalog.onerun import all_designs, family_of
from dpaudit.engine.verdicts import OK_OUTCOMES, finding, outcome
from dpaudit.results.schema import published
from dpaudit.runs import rundir
from dpaudit.runs.config import RunSettings, load
from tests.clirun import in_process
from tests.configs import RR, with_samples

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = "tests.plugins.training_runs"
CONTRACT = ("kind", "claim_id", "claim_kind", "claim_source", "claim_status", "claim_document", "claim_where",
            "claim_statement", "relation", "delta", "epsilon_claim", "epsilon_lower", "verdict", "finding",
            "expected_verdict", "as_expected", "scenario", "mechanism", "confidence", "seed", "seconds", "samples",
            "onerun")
ONERUN = ("m", "runs", "r", "v", "k_plus", "k_minus", "rule", "correction", "alpha", "secret_sha256", "claim_type",
          "curve", "gdp_mu_lower")

CONFIG = """
[run]
seed = {seed}

[[scenario]]
name = "{name}"
mechanism = "{plugin}:{attr}"
params = {params}
scorer = "{plugin}:score"
canaries = 200
rule = {rule}
{extra}
[[scenario.claim]]
epsilon = 1.0
delta = 1e-5
id = "user/claim"

[[scenario.claim]]
gdp_mu = {mu}
id = "user/gdp"
"""


def config(tmp_path: Path, attr: str = "RandomizedResponse", params: str = "{ m = 200, epsilon = 1.0 }",
           rule: str = '{ kind = "fixed", k_plus = 50, k_minus = 50 }', extra: str = "", mu: float = 1.5,
           seed: int = 0, name: str = "rr-training") -> Path:
    path = tmp_path / "onerun.toml"
    path.write_text(CONFIG.format(seed=seed, name=name, plugin=PLUGIN, attr=attr, params=params, rule=rule,
                                  extra=extra, mu=mu), encoding="utf-8")
    return path


def run(path: Path, out: Path | None = None, *more: str):
    args = ["run", str(path), "--allow-plugin", PLUGIN, "--quiet", *more]
    return in_process(*args, *(["--out", str(out)] if out else []))


def validate(name: str, document: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = published(name)
    jsonschema.Draft202012Validator(schema).validate(document)


@pytest.fixture(scope="module", autouse=True)
def seeded_secret():
    """The statistical facts above are those of one fixed secret and tie-break: the game's fresh-entropy
    draws are replaced, in this test process only, by the stream the secret once came from (seed 0) and
    the tie-break seed 2, so the numbers stay those the module docstring states
    (tests/test_onerun_secret.py and tests/test_onerun_tiebreak.py check the draws)."""
    import numpy as np

    def draw(size: int):
        return np.random.default_rng(np.random.SeedSequence(0, spawn_key=(0,))).integers(0, 2, size=size,
                                                                                         dtype=np.int8)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("dpaudit.onerun.game.fresh_secret", draw)
        mp.setattr("dpaudit.onerun.bound.fresh_tiebreak", lambda: 2)
        yield


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    """A correct training run (randomized response at ε = 1) audited from one run, saved."""
    tmp = tmp_path_factory.mktemp("honest")
    out = tmp / "run"
    done = run(config(tmp), out)
    return done, out, json.loads((out / "results.json").read_text(encoding="utf-8"))


# --- a config's one-run scenario ---------------------------------------------------------------

def test_a_correct_training_run_exits_0_and_its_results_carry_the_contract(honest):
    done, out, payload = honest
    assert done.returncode == 0, done.stderr
    validate("run", payload)
    records = payload["records"]
    assert [r["claim_id"] for r in records] == ["user/claim", "user/gdp"]
    for r in records:
        assert set(CONTRACT) <= set(r) and r["kind"] == "one-run" and set(ONERUN) <= set(r["onerun"])
        assert r["samples"] == 1 and r["onerun"]["m"] == 200 and r["onerun"]["r"] == 100
        assert r["verdict"] == "pass" and outcome(r) in OK_OUTCOMES and r["claim_status"] is None
        assert r["claim_kind"] in ("printed", "corrected", "tight")  # the type of claim is onerun.claim_type
    eps, curve = records
    assert eps["onerun"]["claim_type"] == "epsilon-delta" and eps["delta"] == 1e-5 and eps["epsilon_lower"] < 1.0
    # a curve claim has no (ε, δ) lower bound: a μ is never printed as one
    assert curve["onerun"]["claim_type"] == "curve" and curve["epsilon_lower"] is None and curve["delta"] is None
    assert curve["onerun"]["curve"]["mu"] == 1.5
    sc = payload["scenarios"][0]
    assert sc["kind"] == "one-run" and len(sc["scores"]) == len(sc["secret"]) == 200 and sc["mechanism"] == \
        "user-rr-training"
    summary = in_process("summary", out, "--json")
    assert summary.returncode == 0, summary.stderr
    validate("summary", json.loads(summary.stdout))


def test_a_leaky_training_run_exits_1(tmp_path):
    done = run(config(tmp_path, attr="Leaky", params="{ m = 200 }"))
    assert done.returncode == 1, done.stderr
    assert "UNEXPECTED violation" in done.stdout and "curve rejected" in done.stdout


def test_the_table_shows_the_game_and_the_curve_in_words(honest):
    done, _, _ = honest
    assert "one-run: " in done.stdout and "of m=200 canaries" in done.stdout and "fixed rule" in done.stdout
    assert "curve claim 1.5-GDP: curve not rejected by the one-run f-DP test" in done.stdout
    table = done.stdout.split("\n\n")[0]  # the footer is one line, as for every run
    assert max(len(line) for line in table.splitlines()) <= 100
    assert "1 one-run scenario (one training run each)" in done.stdout


MIXED = with_samples(2000, RR.replace('name = "rr"', 'name = "rr-multi"'))


def test_a_config_holds_multi_run_and_one_run_scenarios_side_by_side(tmp_path):
    path = config(tmp_path)
    path.write_text(MIXED + path.read_text(encoding="utf-8").replace("[run]\nseed = 0\n", ""), encoding="utf-8")
    done = run(path, None, "--json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    validate("run", payload)
    assert [(r["scenario"], r["kind"]) for r in payload["records"]] == [
        ("rr-multi", "multi-run"), ("rr-training", "one-run"), ("rr-training", "one-run")]
    assert payload["scenarios_planned"] == 2 and "kind" not in payload["scenarios"][0]


def test_several_runs_and_a_grid_rule_are_one_game(tmp_path):
    done = run(config(tmp_path, rule='{ kind = "grid", pairs = [[10, 10], [50, 50]] }', extra="runs = 3\n"),
               tmp_path / "out")
    assert done.returncode == 0, done.stderr
    rec = json.loads((tmp_path / "out" / "results.json").read_text())["records"][0]
    assert rec["onerun"]["m"] == 600 and rec["onerun"]["runs"] == 3 and rec["samples"] == 3
    assert [t["alpha"] for t in rec["onerun"]["tests"]] == pytest.approx([0.025, 0.025])
    assert rec["onerun"]["correction"].startswith("bonferroni")


@pytest.mark.parametrize("change, field", [
    (dict(rule='{ kind = "best" }'), "scenario[0].rule.kind"),
    (dict(rule='{ kind = "fixed", k_plus = 150, k_minus = 100 }'), "scenario[0].rule.k_plus"),
    (dict(rule='{ kind = "fixed", k_plus = 50 }'), "scenario[0].rule.k_minus"),
    (dict(rule='{ kind = "fixed", k_plus = 5, k_minus = 5, k = 3 }'), "scenario[0].rule.k"),
    (dict(rule='{ kind = "grid", pairs = [[10]] }'), "scenario[0].rule.pairs[0]"),
    (dict(rule='{ kind = "split", select = 1.5 }'), "scenario[0].rule.select"),
    (dict(extra="runs = 0\n"), "scenario[0].runs"),
    (dict(extra="relation = \"swap\"\n"), "scenario[0].relation"),
    (dict(extra="samples_factor = 2\n"), "scenario[0].samples_factor"),
    (dict(extra="expected = { \"user/other\" = \"pass\" }\n"), "scenario[0].expected.user/other"),
    (dict(extra="expected = { \"user/claim\" = \"fine\" }\n"), "scenario[0].expected.user/claim"),
    (dict(extra="deltas = [1.5]\n"), "scenario[0].deltas[0]"),
    (dict(mu=-1), "scenario[0].claim[1].gdp_mu"),
    (dict(attr="nothing"), "scenario[0].mechanism"),
])
def test_a_bad_one_run_key_exits_2_naming_the_field(tmp_path, change, field):
    done = run(config(tmp_path, **change))
    assert done.returncode == 2, done.stdout
    assert f"{field} = " in done.stderr, done.stderr


def test_a_plugin_the_command_line_does_not_allow_is_refused(tmp_path):
    done = in_process("run", str(config(tmp_path)), "--quiet")
    assert done.returncode == 2 and "--allow-plugin tests.plugins.training_runs" in done.stderr


def test_a_training_function_that_raises_is_the_user_s_input_exit_2(tmp_path):
    done = run(config(tmp_path, attr="raises", params="{}"))
    assert done.returncode == 2 and "the training diverged" in done.stderr and "rr-training" in done.stderr


# --- summary re-checks a one-run record from its own tests ------------------------------------------

def _consistent(rec: dict) -> None:
    rec["finding"] = finding(rec["verdict"], None, rec["claim_status"])
    rec["as_expected"] = outcome(rec) in OK_OUTCOMES


def tamper_lower(p):
    p["records"][0]["epsilon_lower"] += 0.3
    return "records[0].epsilon_lower"


def tamper_counts(p):
    p["records"][0]["onerun"]["v"] += 1
    p["records"][0]["onerun"]["tests"][0]["v"] += 1
    return "records[0].onerun.v"  # held to its scenario's game first (before its bound is recomputed)


def tamper_curve(p):
    rec = p["records"][1]
    rec["verdict"] = "violation"
    _consistent(rec)
    p["as_expected"] = all(r["as_expected"] for r in p["records"])
    return "records[1].verdict"


def tamper_mu(p):
    p["records"][1]["onerun"]["gdp_mu_lower"]["mu"] = 3.0
    return "records[1].onerun.gdp_mu_lower.mu"


def tamper_level(p):
    p["records"][0]["onerun"]["tests"][0]["alpha"] = 0.5
    return "records[0].onerun.tests"


def tamper_scenario(p):
    p["scenarios"][0]["bounds"][0]["epsilon_lower"] = 2.5
    return "scenarios[0].bounds[0].epsilon_lower"


@pytest.mark.parametrize("tamper", [tamper_lower, tamper_counts, tamper_curve, tamper_mu, tamper_level,
                                    tamper_scenario])
def test_summary_refuses_a_tampered_one_run_record(honest, tmp_path, tamper):
    _, _, payload = honest
    broken = copy.deepcopy(payload)
    field = tamper(broken)
    (tmp_path / "results.json").write_text(json.dumps(broken), encoding="utf-8")
    done = in_process("summary", tmp_path / "results.json")
    assert done.returncode == 2 and field in done.stderr, done.stderr


def test_summary_accepts_the_honest_one_run_record(honest, tmp_path):  # the twin: the check can pass
    _, _, payload = honest
    (tmp_path / "results.json").write_text(json.dumps(payload), encoding="utf-8")
    done = in_process("summary", tmp_path / "results.json")
    assert done.returncode == 0, done.stderr
    assert "curve not rejected" in done.stdout


# --- resume and identity -----------------------------------------------------------------------------

def test_resume_recomputes_a_one_run_scenario_to_the_same_result(honest):
    _, out, payload = honest
    again = in_process("run", "--resume", out, "--allow-plugin", PLUGIN, "--quiet")
    assert again.returncode == 0, again.stderr
    resumed = json.loads((out / "results.json").read_text(encoding="utf-8"))
    keep = ("epsilon_lower", "verdict", "onerun")
    assert [{k: r[k] for k in keep} for r in resumed["records"]] == [{k: r[k] for k in keep}
                                                                      for r in payload["records"]]


def test_the_identity_holds_the_one_run_designs(tmp_path):
    plans = [load(config(tmp_path / str(k), rule=rule), (PLUGIN,)) for k, rule in enumerate(
        ('{ kind = "fixed", k_plus = 50, k_minus = 50 }', '{ kind = "fixed", k_plus = 40, k_minus = 40 }',
         '{ kind = "fixed", k_plus = 50, k_minus = 50 }')) if (tmp_path / str(k)).mkdir() is None]
    prints = [rundir.fingerprint(rundir.identity(RunSettings(), [], [], [], p.onerun)) for p in plans]
    assert prints[0] == prints[2] != prints[1]
    assert "onerun" not in rundir.identity(RunSettings(), [], [], [])  # a multi-run run's identity is unchanged


# --- the catalog ---------------------------------------------------------------------------------------

def test_the_default_suite_holds_a_small_dp_pg_one_run_fixture_at_the_multi_run_claim():
    (fixture,) = catalog.onerun_suite("default")
    multi = {sc.name: sc for sc in catalog.suite("default", ["policy-optimization"])}["po-dp-pg-advantage"]
    printed = next(c for c in fixture.claims if getattr(c, "claim_id", "") == "po/dp-pg")
    assert (printed.epsilon, printed.delta) == (4.0, 1e-5) == (multi.mechanism.epsilon, multi.mechanism.delta)
    assert fixture.expected["po/dp-pg"] == "pass" and fixture.expected["po/dp-pg-tight"] == "pass"
    assert catalog.onerun_suite("full") == catalog.onerun_suite("errata") == [] == catalog.suite("onerun")
    assert catalog.onerun_suite("default", ["classic"]) == []


def test_the_dp_sgd_family_is_listed_and_a_training_mechanism_is_not_audited_from_samples():
    assert "dpsgd-reward-model" in catalog.mechanisms()
    assert {"dpsgd/accountant", "dpsgd/curve", "po/dp-pg-curve-if-premise"} <= set(catalog.claims())
    done = in_process("run", "--mechanism", "dpsgd-reward-model", "--param", "noise_multiplier=1.0", "--param",
                      "sampling_probability=0.02", "--param", "steps=10", "--search", "records")
    assert done.returncode == 2 and "audited in one run" in done.stderr


@pytest.mark.slow  # builds every design of the onerun suite (~10 s)
def test_every_design_is_filed_under_one_family_and_its_claims_are_registered():
    registry = catalog.claims()
    designs = all_designs()
    own = {f.name: {c.id for c in f.claims} for f in catalog.families()}
    assert designs and all(family_of(d) == d.family in own for d in designs)
    # the family a design names is the one whose registry entries its claims are
    assert all({getattr(c, "claim_id", "") for c in d.claims} <= own[str(d.family)] for d in designs)
    ids = {getattr(c, "claim_id", "") for d in designs for c in d.claims}
    assert ids <= set(registry), sorted(ids - set(registry))
    filed = [d.name for f in catalog.families() for d in f.onerun()]
    assert sorted(filed) == sorted(d.name for d in designs)


@pytest.mark.slow  # three DP-PG training runs at d = 256, T = 100, m = 500 (~20 s)
def test_run_suite_onerun_of_one_family_exits_0(tmp_path):
    done = in_process("run", "--suite", "onerun", "--family", "policy-optimization", "--quiet", "--out",
                      tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    payload = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    validate("run", payload)
    names = {sc["scenario"] for sc in payload["scenarios"]}
    assert names == {"dppg-whitebox", "dppg-whitebox-wrong-relation", "dppg-whitebox-reward-convention"}
    assert all(r["kind"] == "one-run" for r in payload["records"])
    assert in_process("summary", tmp_path / "out").returncode == 0
