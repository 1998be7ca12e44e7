"""`python -m audit`: the default suite, results.json, determinism, exit codes."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpaudit import reports
from dpaudit.cli import main
from tests.slow_shared import kl_family_at_1e5_fixture  # noqa: F401  (the fixture kl_family_at_1e5)

ROOT = Path(__file__).resolve().parents[1]
NUMBERS = ("delta", "epsilon_claim", "epsilon_lower", "epsilon_exact", "verdict", "exact_verdict", "event")


@pytest.fixture(scope="module")
def default_run(default_suite_run):
    """(exit code, results.json, out dir) of the session's one default-suite run (tests/conftest.py)."""
    return default_suite_run.code, default_suite_run.results, default_suite_run.out


@pytest.mark.slow  # the session's default-suite run (~60 s + ~30 s PDF)
def test_default_suite_exits_0_and_pins_every_expected_verdict(default_run):
    code, results, out = default_run
    assert code == 0 and results["as_expected"]
    got = {(r["scenario"], r["claim_id"]): r["verdict"] for r in results["records"]}
    assert got[("rr", "classic/rr")] == "pass"
    assert got[("laplace", "classic/laplace")] == "pass"
    assert got[("expmech", "expmech/def2")] == "pass"
    assert got[("kl-mab-worst", "kl-mab/thm1-pure")] == "pass"
    assert got[("kl-mab-swap", "kl-mab/thm1-swap")] == "pass"
    for row in ("kl-mab-a24-row3", "kl-mab-a24-row1"):
        assert got[(row, "kl-mab/thm1-approx")] == "violation"
        assert got[(row, "kl-mab/cor1")] == "violation"
        assert got[(row, "kl-mab/thm1-approx-corrected")] == "pass"
        assert got[(row, "kl-mab/thm1-pure")] == "not-applicable"
    assert "known erratum — caught" in (out / "summary.txt").read_text()


@pytest.mark.slow  # the session's default-suite run (~60 s + ~30 s PDF)
def test_default_suite_pins_the_kl_paper_fixtures(default_run):
    _, results, _ = default_run
    got = {(r["scenario"], r["claim_id"]): r for r in results["records"]}
    assert got[("kl-rlhf-label", "kl-rlhf/thm3-label")]["verdict"] == "violation"
    assert got[("kl-rlhf-label", "kl-rlhf/thm3-label")]["epsilon_lower"] >= 3.0
    assert got[("kl-rlhf-addremove", "kl-rlhf/thm4-addremove")]["verdict"] == "violation"
    for scenario, cid in [("kl-rlhf-label-tight", "kl-rlhf/thm3-label-corrected"),
                          ("kl-rlhf-addremove", "kl-rlhf/thm4-addremove-corrected")]:
        rec = got[(scenario, cid)]
        assert rec["verdict"] == "pass" and rec["epsilon_exact"] / rec["epsilon_claim"] >= 0.9
    tight = got[("kl-linear-tight", "kl-linear/thm2-pure")]
    assert tight["verdict"] == "pass" and tight["epsilon_exact"] / tight["epsilon_claim"] >= 0.98
    for lam0 in ("160000", "40000", "10000"):
        assert got[(f"kl-linear-a33-{lam0}", "kl-linear/thm2-approx")]["verdict"] == "violation"
        assert got[(f"kl-linear-a33-{lam0}", "kl-linear/thm2-pure")]["verdict"] == "pass"
    for lam0 in ("10000", "2500", "625"):
        assert got[(f"kl-rlhf-approx-{lam0}", "kl-rlhf/thm3-label-approx")]["verdict"] == "violation"
    assert got[("kl-linear-random", "kl-linear/thm2-pure")]["verdict"] == "pass"
    assert got[("kl-linear-random", "kl-linear/cor2-pure")]["verdict"] == "pass"
    for cid in ("kl/repeated-T", "kl/repeated-T-advanced"):
        assert got[("kl-repeated-T", cid)]["verdict"] == "pass"
    for cid in ("kl/inexact", "kl/inexact-corrected"):
        assert got[("kl-inexact", cid)]["verdict"] == "pass"


@pytest.mark.slow  # the session's default-suite run (~60 s + ~30 s PDF)
def test_default_suite_pins_the_policy_optimisation_fixtures(default_run):
    _, results, _ = default_run
    got = {(r["scenario"], r["claim_id"]): r for r in results["records"]}
    reward, advantage = got[("po-dp-pg-reward", "po/dp-pg")], got[("po-dp-pg-advantage", "po/dp-pg")]
    # Rewards in [-R, R] break Theorem 1's premise |A| <= R: not applicable, and the samples would refute it.
    assert reward["verdict"] == "not-applicable" and reward["samples"] <= 10_000_000
    assert "would refute it" in reward["premise"] and reward["epsilon_lower"] > reward["epsilon_claim"]
    assert advantage["verdict"] == "pass"
    for scenario in ("po-dp-pg-reward", "po-dp-pg-advantage", "po-meta-one-pass", "po-meta-repeat"):
        tight = got[(scenario, "po/dp-pg-tight")]
        assert tight["verdict"] == "pass" and tight["epsilon_lower"] <= tight["epsilon_claim"]
    one_pass, one_round = got[("po-meta-one-pass", "po/dp-pg-tight")], got[("po-dp-pg-advantage", "po/dp-pg-tight")]
    assert one_pass["epsilon_claim"] == one_round["epsilon_claim"]  # one pass: the transcript loses one round's epsilon
    assert got[("po-meta-one-pass", "po/meta")]["verdict"] == "pass"
    repeat = got[("po-meta-repeat", "po/meta")]  # repeated users compose: outside the one-pass premise
    assert repeat["finding"] == "not-applicable" and "would refute it" in repeat["premise"]
    assert got[("po-meta-repeat", "po/dp-pg-tight")]["epsilon_claim"] > one_round["epsilon_claim"] * 2
    assert got[("po-dp-npg", "po/dp-npg")]["verdict"] == "pass"
    unenforced = got[("po-dp-npg-unenforced", "po/dp-npg")]  # unbounded candidates: outside ||w|| <= R/G
    assert unenforced["verdict"] == "not-applicable" and "would refute it" in unenforced["premise"]
    assert got[("po-dp-rebel", "po/dp-rebel")]["verdict"] == "pass"
    for cid, scenario in (("po/dp-npg", "po-dp-npg"), ("po/dp-rebel", "po-dp-rebel")):
        rec = got[(scenario, cid)]
        assert rec["epsilon_lower"] <= rec["epsilon_exact"] <= rec["epsilon_claim"]


@pytest.mark.slow  # the session's default-suite run (~60 s + ~30 s PDF)
def test_results_records_carry_the_schema_fields(default_run):
    _, results, _ = default_run
    required = {"mechanism", "relation", "pair", "claim_id", "claim_kind", "claim_source", "delta",
                "epsilon_claim", "epsilon_lower", "epsilon_exact", "verdict", "expected_verdict",
                "samples", "confidence", "seed", "seconds"}
    for rec in results["records"]:
        assert required <= set(rec)
        assert rec["claim_kind"] in ("printed", "corrected", "tight")


@pytest.mark.slow  # the session's default-suite run (~60 s + ~30 s PDF)
def test_valid_claims_hold_the_chain_on_the_searched_worst_pair(default_run):
    _, results, _ = default_run
    for rec in results["records"]:
        if rec["scenario"].startswith("kl-mab-") and rec["expected_verdict"] == "pass" and rec["delta"] == 0:
            assert rec["epsilon_lower"] <= rec["epsilon_exact"] <= rec["epsilon_claim"]


@pytest.mark.slow  # two families twice at 2e5 samples
def test_same_seed_same_numbers_for_one_and_two_jobs(tmp_path, no_pdf, monkeypatch):
    """The classic family (finite and real outputs, exact and black-box) and the alignment family
    (vector outputs, sequential looks) at a smaller budget (verdicts may then differ from the
    default's): every number the same with one job and with two.

    At 2e5 the alignment family may miss an expected refutation, and a run then plans the budget it
    would need (dpaudit.cli.expectations.missed_notes): ~90 s of CPU per run, the same with any
    --jobs (the planner runs with one job by construction), in a note this test never reads
    (tests/test_voice.py checks it).  The notes are left out here; the missed scenarios they
    would be computed for still have to agree."""
    from dpaudit.cli.expectations import MISSED
    from dpaudit.engine.verdicts import outcome
    asked = []

    def missed(records, scenarios, **_):
        asked.append(sorted(r["scenario"] for r in records if outcome(r) == MISSED))
        return []

    monkeypatch.setattr("dpaudit.cli.run.missed_notes", missed)
    runs, codes = [], []
    for jobs in ("1", "2"):
        out = tmp_path / jobs
        codes.append(main(["run", "--seed", "7", "--samples", "200000", "--jobs", jobs, "--family", "classic",
                           "--family", "alignment", "--out", str(out), "--quiet"]))
        records = json.loads((out / "results.json").read_text())["records"]
        runs.append([{k: r[k] for k in NUMBERS} for r in records])
    assert codes[0] == codes[1] and runs[0] == runs[1]
    # with the joint test of the ratio nothing is missed at 2e5 and seed 7 (the pair missed align-alg2-swap):
    # whatever is missed, one job and two miss the same
    assert len(asked) in (0, 2) and (not asked or asked[0] == asked[1]) and codes[0] in (0, 1)


@pytest.mark.slow  # the KL family at 1e5 samples, the run tests/test_voice.py reads too (tests/slow_shared.py)
def test_a_budget_too_small_for_a_known_erratum_is_reported_missed(kl_family_at_1e5):
    """Theorem 1 witness row 1 needs about 3e6 samples; at 1e5 x 5 the run must say so and exit 1."""
    assert kl_family_at_1e5.returncode == 1
    assert "MISSED expected violation" in (kl_family_at_1e5.out / "summary.txt").read_text()


def test_a_different_seed_gives_different_numbers(tmp_path, no_pdf):
    lows = []
    for seed in ("1", "2"):
        main(["run", "--samples", "20000", "--seed", seed, "--family", "classic", "--out", str(tmp_path / seed),
              "--quiet"])
        lows.append([r["epsilon_lower"] for r in json.loads((tmp_path / seed / "results.json").read_text())["records"]])
    assert lows[0] != lows[1]


@pytest.fixture
def no_pdf(monkeypatch):
    """For runs whose tests read results.json and summary.txt only: skip each run's PDF render
    (~30 s, more than the 2e5-sample audits); the report tests check the default run's PDF."""
    rendered = []
    monkeypatch.setattr(reports, "write_pdf", lambda payload, path, sweeps=(), **_: rendered.append(path))
    return rendered


def run_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "audit", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)


@pytest.mark.parametrize("args,message", [
    (["run", "--samples", "lots"], "--samples"),
    (["run", "--confidence", "1.5"], "--confidence"),
    (["run", "--jobs", "0"], "--jobs"),
    (["run", "--bogus"], "--bogus"),
    (["run", "--mechanism", "no.such.module:thing", "--pair", "x:y"], "no.such.module"),
    (["run", "--mechanism", "tests.plugins.user_mechanisms:not_a_mechanism",
      "--pair", "tests.plugins.user_mechanisms:pair"], "sample"),
    (["run", "--mechanism", "tests.plugins.user_mechanisms:correct"], "pair"),
    (["run", "--mechanism", "kl-bandit", "--param", "n_actions=2", "--param", "eta=-1",
      "--param", "beta0=0.1", "--pair", "tests.plugins.user_mechanisms:pair"], "eta"),
    (["run", "--mechanism", "kl-bandit", "--param", "n_actions=2", "--param", "eta=1",
      "--param", "beta0=-0.1", "--pair", "tests.plugins.user_mechanisms:pair"], "beta0"),
    (["run", "--mechanism", "kl-bandit", "--param", "n_actions=2", "--param", "eta=1", "--param", "beta0=0.1",
      "--param", "reward_range=0", "--pair", "tests.plugins.user_mechanisms:pair"], "reward_range"),
    (["run", "--mechanism", "tests.plugins.user_mechanisms:crashes",
      "--pair", "tests.plugins.user_mechanisms:pair", "--samples", "1000"], "ZeroDivisionError"),
])
def test_bad_usage_or_input_exits_2_with_a_message_and_no_traceback(args, message, cli):
    proc = cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_real_process_exits_2_with_a_message_and_no_traceback():
    """The same contract through a new interpreter (``python -m audit``), once."""
    proc = run_cli("run", "--samples", "-5")
    assert proc.returncode == 2 and "--samples" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("columns,message", [
    ({"action": np.array([0, 1]), "reward": np.array([0.5])}, "lengths"),
    ({"action": np.array([0, 1]), "reward": np.array([0.5, np.nan])}, "non-finite"),
    ({"action": np.array([0, 1]), "reward": np.array([0.5, 7.0])}, "reward"),
])
def test_malformed_dataset_file_exits_2(tmp_path, columns, message, cli):
    good = tmp_path / "good.npz"
    bad = tmp_path / "bad.npz"
    np.savez(good, action=np.array([0, 1]), reward=np.array([0.5, 0.5]))
    np.savez(bad, **columns)
    proc = cli("run", "--mechanism", "kl-bandit", "--param", "n_actions=2", "--param", "eta=1",
               "--param", "beta0=0.1", "--data", str(good), "--data-prime", str(bad), "--samples", "1000")
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_a_users_correct_mechanism_passes_and_its_leaky_twin_exits_1(cli):
    ok = cli("run", "--mechanism", "tests.plugins.user_mechanisms:correct",
                 "--pair", "tests.plugins.user_mechanisms:pair", "--epsilon", "1.0", "--samples", "200000")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    leaky = cli("run", "--mechanism", "tests.plugins.user_mechanisms:leaky",
                    "--pair", "tests.plugins.user_mechanisms:pair", "--epsilon", "1.0", "--samples", "200000")
    assert leaky.returncode == 1 and "UNEXPECTED violation" in leaky.stdout


@pytest.mark.slow  # the session's default-suite run
def test_python_m_audit_run_defaults_exit_0(default_suite_run):
    """The README's `python -m audit run` (the session's one run, in a subprocess)."""
    proc = default_suite_run
    assert proc.code == 0, proc.stdout + proc.stderr
    assert "every verdict as expected" in proc.stdout


def test_list_shows_mechanisms_and_suite(cli, listed_json):
    proc = cli("list")
    assert proc.returncode == 0 and "\n  kl-bandit " in proc.stdout and "default (" in proc.stdout
    listed = listed_json  # `list --json`: the suites' scenarios, one by one
    assert listed.returncode == 0 and "kl-mab-a24-row3" in listed.stdout


@pytest.mark.slow  # the session's default-suite run (~60 s + ~30 s PDF)
def test_default_suite_pins_the_alignment_fixtures(default_run):
    _, results, out = default_run
    got = {(r["scenario"], r["claim_id"]): r for r in results["records"]}
    swap = got[("align-alg2-swap", "align/alg2-printed")]
    assert swap["verdict"] == "violation" and swap["samples"] <= 10_000_000  # empirical alone, <= 1e7 per side
    assert swap["epsilon_exact"] == pytest.approx(0.819, abs=1e-3)
    for scenario, cid in (("align-alg2-zero-out", "align/alg2-printed"),
                          ("align-trajectory-h1-cov", "align/trajectory-cov")):
        assert got[(scenario, cid)]["exact_verdict"] == "violation"
        assert got[(scenario, cid)]["epsilon_exact"] == pytest.approx(0.566, abs=1e-3)
    for scenario, cid in (("align-kwise-cov", "align/kwise-cov"), ("align-trajectory-cov", "align/trajectory-cov"),
                          ("align-alg2-tight", "align/alg2-corrected"), ("align-alg1-paper", "align/alg1-printed"),
                          ("align-alg1-instantiated", "align/alg1-instantiated"),
                          ("align-alg1-instantiated-swap", "align/alg1-instantiated"),
                          ("align-release-pairwise", "align/thm41"), ("align-pessimistic", "align/thm41")):
        assert got[(scenario, cid)]["verdict"] == "pass" and got[(scenario, cid)]["exact_verdict"] != "violation"
    for (_scenario, cid), rec in got.items():
        if cid == "align/alg2-tight":
            assert rec["verdict"] == "pass" and rec["epsilon_lower"] <= rec["epsilon_exact"]
    one_d = got[("align-alg1-exact-1d", "align/alg1-chi")]
    assert one_d["epsilon_lower"] <= one_d["epsilon_exact"] <= one_d["epsilon_claim"]
    assert "caught by the white box" in (out / "summary.txt").read_text()
