"""``summary`` recomputes a one-run record from its game: the stored scores, rule and secret (issue 37,
items 11 and 12).  A consistently forged record — v raised with every bound, verdict and finding
recomputed, the secret's hash zeroed, the seed changed — is refused naming the field (exit 2), and
a record claiming a game past what a run can play (m = r = 10^12) is refused before anything is
counted.  The honest record is the twin that passes.

The game is a leak-free training run (randomized response at ε = 1 on 200 canaries, rule k₊ = k₋ = 50)
against a (4, 1e-5) claim, which no Steinke bound of 100 guesses reaches (the largest, v = 100, is
below 4), so the honest verdict is "pass" for every secret.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from dpaudit.engine.verdicts import OK_OUTCOMES, finding, outcome
from dpaudit.onerun.fdp import largest_rejected_mu
from dpaudit.onerun.steinke import epsilon_lower
from tests.clirun import in_process
from tests.plugins.training_runs import RR_GAME_CONFIG

PLUGIN = "tests.plugins.training_runs"
CONFIG = """
[run]
seed = 3
""" + RR_GAME_CONFIG


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("recheck")
    (tmp / "c.toml").write_text(CONFIG, encoding="utf-8")
    done = in_process("run", tmp / "c.toml", "--allow-plugin", PLUGIN, "--quiet", "--out", tmp / "run")
    assert done.returncode == 0, done.stderr
    return json.loads((tmp / "run" / "results.json").read_text(encoding="utf-8"))


def summary(tmp_path: Path, payload: dict):
    (tmp_path / "results.json").write_text(json.dumps(payload), encoding="utf-8")
    return in_process("summary", tmp_path / "results.json")


def forge_v(payload: dict, dv: int) -> dict:
    """v raised by ``dv`` in the scenario and its records, every number derived from v recomputed."""
    p = copy.deepcopy(payload)
    sc = p["scenarios"][0]
    m, r, alpha = sc["m"], sc["r"], sc["alpha"]
    v = sc["v"] + dv
    mu = largest_rejected_mu(m=m, c_prime=r, c=v, tau=alpha)
    sc["v"] = sc["tests"][0]["v"] = v
    for b in sc["bounds"]:
        b["epsilon_lower"] = epsilon_lower(m, r, v, delta=b["delta"], alpha=alpha)
    sc["gdp_mu_lower"]["mu"] = mu
    for entry in [*sc["claims"], *p["records"]]:
        eps = epsilon_lower(m, r, v, delta=entry["delta"], alpha=alpha)
        entry["epsilon_lower"] = eps
        entry["verdict"] = "violation" if eps > entry["epsilon_claim"] else "pass"
        entry["finding"] = finding(entry["verdict"], None, entry.get("claim_status"))
    for rec in p["records"]:
        rec["onerun"]["v"] = rec["onerun"]["tests"][0]["v"] = v
        rec["onerun"]["gdp_mu_lower"]["mu"] = mu
        rec["slack"] = rec["epsilon_claim"] - rec["epsilon_lower"]
        rec["tightness"] = rec["epsilon_lower"] / rec["epsilon_claim"]
        rec["as_expected"] = outcome(rec) in OK_OUTCOMES
    for entry, rec in zip(sc["claims"], p["records"], strict=True):
        entry["as_expected"] = rec["as_expected"]
    p["as_expected"] = all(rec["as_expected"] for rec in p["records"])
    return p


def zero_hash(payload: dict) -> dict:
    p = copy.deepcopy(payload)
    p["scenarios"][0]["secret_sha256"] = "0" * 64
    for rec in p["records"]:
        rec["onerun"]["secret_sha256"] = "0" * 64
    return p


def change_seed(payload: dict) -> dict:
    p = copy.deepcopy(payload)
    p["scenarios"][0]["seed"] += 1
    for rec in p["records"]:
        rec["seed"] += 1
    return p


def forge_records_only(payload: dict) -> dict:
    """v raised in the records alone (consistently), the scenario's game left as it was."""
    forged = forge_v(payload, 4)
    forged["scenarios"] = copy.deepcopy(payload["scenarios"])
    return forged


@pytest.mark.parametrize(("forge", "field"), [
    (lambda p: forge_v(p, 4), "scenarios[0].tests[0].v"),
    (zero_hash, "scenarios[0].secret_bits"),
    (change_seed, "scenarios[0].seed"),
    (forge_records_only, "records[0].onerun.v"),
], ids=["v-raised", "hash-zeroed", "seed-changed", "records-only"])
def test_a_consistently_forged_one_run_record_is_refused_naming_the_field(honest, tmp_path, forge, field):
    done = summary(tmp_path, forge(honest))
    assert done.returncode == 2, (done.returncode, done.stdout[-300:])
    assert f"{field} = " in done.stderr, done.stderr


def test_the_honest_record_is_accepted(honest, tmp_path):  # the twin
    done = summary(tmp_path, honest)
    assert done.returncode == 0, done.stderr


def test_a_forged_v_would_otherwise_pass_every_other_check(honest):
    """The forgery is consistent: its bounds and verdicts are those its (forged) counts give."""
    forged = forge_v(honest, 4)
    sc = forged["scenarios"][0]
    assert sc["v"] == honest["scenarios"][0]["v"] + 4
    assert sc["bounds"][0]["epsilon_lower"] >= honest["scenarios"][0]["bounds"][0]["epsilon_lower"]


def claim_game_size(results: dict, big: int) -> None:
    """Make the game and every record of ``results`` claim ``big`` canaries (m = r =
    v = big, k_plus = big − k_minus), in place, leaving the stored scores as they are."""
    for info in [results["scenarios"][0], *(rec["onerun"] for rec in results["records"])]:
        info["m"] = info["r"] = info["v"] = big
        info["k_plus"] = info["rule"]["k_plus"] = big - info["k_minus"]
        info["tests"][0].update(m=big, r=big, k_plus=big - info["k_minus"], v=big)


def test_a_game_larger_than_any_run_is_refused_at_once(honest, tmp_path):
    p = copy.deepcopy(honest)
    claim_game_size(p, 10**12)
    done = summary(tmp_path, p)
    assert done.returncode == 2 and "1e+08" in done.stderr and ".m = 1000000000000" in done.stderr, done.stderr


def test_a_game_whose_scores_are_fewer_than_m_is_refused(honest, tmp_path):
    p = copy.deepcopy(honest)
    p["scenarios"][0]["scores"] = p["scenarios"][0]["scores"][:-1]
    done = summary(tmp_path, p)
    assert done.returncode == 2 and "scenarios[0].scores = " in done.stderr, done.stderr


def test_the_records_and_the_game_state_what_the_bound_assumes(honest):
    sc = honest["scenarios"][0]
    assert "does not read the secret" in sc["premise"] and sc["secret_source"] == "fresh entropy"
    assert all("does not read the secret" in rec["onerun"]["assumes"] for rec in honest["records"])


def test_a_record_claiming_more_canaries_than_its_game_holds_is_refused_first(honest, tmp_path):
    """m = r = 10^6 (under the limit) on 200 stored scores: refused naming the scores, before the
    record's bounds (minutes at that m) are recomputed."""
    p = copy.deepcopy(honest)
    claim_game_size(p, 10**6)
    done = summary(tmp_path, p)
    assert done.returncode == 2 and "scenarios[0].scores = '<200>'" in done.stderr, done.stderr
