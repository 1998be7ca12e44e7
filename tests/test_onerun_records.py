"""One-run records complete and consistent end to end (issue 36, "could have caught"; issue 35, point 3).

* results.json's closed schema knows every key a one-run result writes: a claim's ``detectable``
  (one-run shape), ``isolated`` (the independent-canary test) and ``secret_source``; ``summary``
  re-checks them (a forged ``isolated`` count or a ``detectable`` inconsistent with its claim is
  refused, exit 2, naming the key), and a file written before them still loads.
* each holding one-run record carries ``detectable`` (``--json``), and the table words it.
* a user's one-run claim that states no expectation and is refuted is a finding (exit 1); a suite
  design's open claim is marked ``no_expectation`` and, refuted, is not (the slow twin test).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpaudit.onerun.curves import gdp_epsilon
from dpaudit.onerun.isolated import isolated_bound
from tests.clirun import in_process
from tests.plugins.training_runs import RR_GAME_CONFIG

PLUGIN = ("--allow-plugin", "tests.plugins.training_runs")


def _run(tmp: Path, config: str, name: str = "out") -> tuple[int, Path]:
    (tmp / f"{name}.toml").write_text(config)
    done = in_process("run", tmp / f"{name}.toml", "--quiet", "--out", tmp / name, *PLUGIN)
    return done.returncode, tmp / name / "results.json"


@pytest.fixture(scope="module")
def rr(tmp_path_factory) -> dict:
    code, path = _run(tmp_path_factory.mktemp("rr"), RR_GAME_CONFIG)
    assert code == 0
    return json.loads(path.read_text())


def _with_isolated(payload: dict) -> dict:
    """The file with the independent-canary test of its own stored game, as a design that declares
    the premise writes it (threshold 0.5 on the RR bits)."""
    out = json.loads(json.dumps(payload))
    sc = out["scenarios"][0]
    bound = isolated_bound(np.asarray(sc["scores"]), np.asarray(sc["secret"]), threshold=0.5, declared_by="design",
                           reason="each canary's bit is released alone", check="construction: test",
                           threshold_source="planned", deltas=[b["delta"] for b in sc["bounds"]], alpha=sc["alpha"])
    sc["isolated"] = bound.to_dict()
    return out


def _summary(tmp_path: Path, payload: dict) -> tuple[int, str]:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(payload))
    done = in_process("summary", path)
    return done.returncode, done.stderr + done.stdout


def test_a_holding_one_run_record_carries_detectable_and_the_table_words_it(rr, tmp_path):
    rec, = rr["records"]
    assert rec["verdict"] == "pass" and rec["detectable"] is not None
    assert rec["detectable"] == rr["scenarios"][0]["claims"][0]["detectable"]
    assert set(rec["detectable"]) == {"epsilon", "mu", "delta", "canaries_for_twice", "model"}
    assert rec["no_expectation"] is None and rr["scenarios"][0]["secret_source"] == "fresh entropy"
    code, text = _summary(tmp_path, rr)
    # a (4, 1e-5) claim at m = 200, k+ = k- = 50: even 100 of 100 right does not refute it (issue 41, item 14)
    assert code == 0 and "no test at this budget could refute this claim" in text, text
    assert "a scorer that reads it anyway voids the bound" in text, text  # the premise, beside the verdicts


def test_a_file_with_isolated_validates_and_loads(rr, tmp_path):
    code, text = _summary(tmp_path, _with_isolated(rr))
    assert code == 0, text


@pytest.mark.parametrize(("edit", "key"), [
    (lambda iso: iso.update(tp=iso["tp"] + 1), "isolated.tp"),
    (lambda iso: iso.update(tpr_lower=iso["tpr_lower"] * 1.1), "isolated.tpr_lower"),
    (lambda iso: iso["bounds"][0].update(epsilon_lower=iso["bounds"][0]["epsilon_lower"] + 1), "isolated.bounds[0]"),
    (lambda iso: iso["gdp_mu_lower"].update(mu=iso["gdp_mu_lower"]["mu"] + 1), "isolated.gdp_mu_lower.mu"),
    (lambda iso: iso.update(declared_by="nobody"), "isolated.declared_by"),
    (lambda iso: iso.update(extra=1), "isolated"),
])
def test_a_forged_isolated_reading_is_refused_naming_the_key(rr, tmp_path, edit, key):
    payload = _with_isolated(rr)
    edit(payload["scenarios"][0]["isolated"])
    code, text = _summary(tmp_path, payload)
    assert code == 2 and key in text, text


@pytest.mark.parametrize(("edit", "key"), [
    (lambda d: d.update(epsilon=1.0), "detectable.epsilon"),
    (lambda d: d.update(delta=0.5), "detectable.delta"),
    (lambda d: d.update(mu=0.01, epsilon=gdp_epsilon(0.01, d["delta"])), "detectable.mu"),
    (lambda d: d.update(canaries_for_twice=10**9), "detectable.canaries_for_twice"),
    (lambda d: d.update(samples_for_twice=5), "detectable"),
])
def test_a_forged_one_run_detectable_is_refused_naming_the_key(rr, tmp_path, edit, key):
    payload = json.loads(json.dumps(rr))
    for d in (payload["scenarios"][0]["claims"][0]["detectable"], payload["records"][0]["detectable"]):
        edit(d)
    code, text = _summary(tmp_path, payload)
    assert code == 2 and key in text, text


def test_a_record_whose_detectable_differs_from_its_scenario_is_refused(rr, tmp_path):
    payload = json.loads(json.dumps(rr))
    payload["records"][0]["detectable"]["model"] = "another model"
    code, text = _summary(tmp_path, payload)
    assert code == 2 and "records[0].detectable" in text, text


def test_a_file_written_before_the_new_keys_still_loads(rr, tmp_path):
    payload = json.loads(json.dumps(rr))
    for entry in (payload["records"][0], payload["scenarios"][0]["claims"][0]):
        entry.pop("detectable")
        entry.pop("no_expectation")
    payload["scenarios"][0]["secret_source"] = None
    code, text = _summary(tmp_path, payload)
    assert code == 0, text
    payload["scenarios"][0]["secret_source"] = "someone"
    code, text = _summary(tmp_path, payload)
    assert code == 2 and "secret_source" in text, text


def test_a_users_refuted_claim_without_expectation_is_a_finding(tmp_path):
    """A user's config: every claim is checked and a refutation is a finding (exit 1), even when
    another claim of the scenario states an expectation."""
    config = RR_GAME_CONFIG + '\n[[scenario.claim]]\nepsilon = 0.3\ndelta = 1e-5\nid = "user/tight"\n'
    config = config.replace('canaries = 200\n', 'canaries = 200\nexpected = { "user/claim" = "pass" }\n')
    code, path = _run(tmp_path, config)
    records = json.loads(path.read_text())["records"]
    tight, = [r for r in records if r["claim_id"] == "user/tight"]
    assert tight["verdict"] == "violation" and tight["no_expectation"] is None
    assert code == 1
    assert in_process("summary", path).returncode == 1


def test_the_one_run_page_shows_the_isolated_reading_and_what_a_holding_claim_could_have_caught(rr, tmp_path):
    pdfplumber = pytest.importorskip("pdfplumber")
    path = tmp_path / "results.json"
    payload = _with_isolated(rr)
    iso = payload["scenarios"][0]["isolated"]
    path.write_text(json.dumps(payload))
    assert in_process("report", path, "-o", tmp_path / "r.pdf").returncode == 0
    with pdfplumber.open(tmp_path / "r.pdf") as pdf:
        words = " ".join(" ".join((page.extract_text() or "").split()) for page in pdf.pages)
    # the row's label wraps in its cell: its words, then the reading with its premise
    assert all(w in words for w in ("independent", "(declared", "by the design)"))
    assert f"{iso['tp']}/{iso['n_in']} in and {iso['fp']}/{iso['n_out']} out above the threshold 0.5" in words
    assert "valid only under the premise: isolated" in words
    # a (4, 1e-5) claim at m = 200, k+ = k- = 50: no outcome refutes it, and the page says so (issue 41, item 14)
    # (on the claim's own row since the report's rework: the cell wraps beside the verdict column's words)
    assert "no test at this budget could refute this" in words
    assert "would not reject it at this confidence; this pass is no evidence" in words
    assert "What a claim that holds could have caught is the smallest GDP leak" in words
