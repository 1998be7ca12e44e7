"""Every verdict true and visible: one finding per claim, read the same by every output.

The default suite's records (slow tier, the session's one run) are checked against the claim
registry; the fast tests cover the CLI's exit codes, a run with no claim, and a claim stated for
another relation than the audit's.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dpaudit import audit_mechanism
from dpaudit.catalog import claims as registry
from dpaudit.core import Guarantee, InputError
from dpaudit.engine.verdicts import REFUTED_EMPIRICAL, REFUTED_WHITE_BOX
from dpaudit.mechanisms.classic import RandomizedResponse
from dpaudit.neighbors import Dataset
from tests.clirun import CliRun, in_process
from tests.configs import RR

ROOT = Path(__file__).resolve().parents[1]
PAIR = ["--pair", "tests.plugins.user_mechanisms:pair"]


def run_cli(*args: str) -> CliRun:
    """The command line in this process: these tests read what it says and returns."""
    return in_process(*args)


def test_summary_exits_like_the_run_that_wrote_it_on_an_unexpected_violation(tmp_path):
    run = run_cli("run", "--mechanism", "tests.plugins.user_mechanisms:leaky", *PAIR, "--epsilon", "1",
                  "--samples", "200000", "--quiet", "--out", str(tmp_path))
    assert run.returncode == 1 and "UNEXPECTED violation" in run.stdout
    summary = run_cli("summary", str(tmp_path / "results.json"))
    assert summary.returncode == run.returncode == 1


@pytest.mark.slow  # two CLI subprocesses; the default suite's twin is in the slow tier too
def test_summary_exits_like_the_run_that_wrote_it_when_all_is_as_expected(tmp_path):
    run = run_cli("run", "--mechanism", "tests.plugins.user_mechanisms:correct", *PAIR, "--epsilon", "1",
                  "--samples", "200000", "--quiet", "--out", str(tmp_path))
    summary = run_cli("summary", str(tmp_path / "results.json"))
    assert run.returncode == summary.returncode == 0


def test_a_run_with_no_claim_says_so_instead_of_as_expected():
    run = run_cli("run", "--mechanism", "tests.plugins.user_mechanisms:correct", *PAIR, "--samples", "100000",
                  "--quiet")
    assert run.returncode == 0
    assert "no claim checked: eps_lower measured only" in run.stdout
    assert "every verdict as expected" not in run.stdout


def test_an_explicit_claim_for_another_relation_is_an_input_error():
    d = Dataset({"bit": [0]})
    with pytest.raises(InputError, match="stated for swap neighbours but the audit's pair is add-remove"):
        audit_mechanism(RandomizedResponse(1.0), d, d.add({"bit": 1}), samples=1000,
                        claims=[Guarantee(epsilon=1.0, relation="swap", claim_id="user/c")])


def test_a_config_claim_for_another_relation_exits_2(tmp_path):
    config = RR.replace("params = { epsilon = 1.0 }", 'params = { epsilon = 1.0 }\nrelation = "add-remove"')
    config += '[[scenario.claim]]\nepsilon = 1.0\nrelation = "swap"\n'
    (tmp_path / "c.toml").write_text(config, encoding="utf-8")
    run = run_cli("run", str(tmp_path / "c.toml"), "--quiet")
    assert run.returncode == 2
    assert "scenario[0].claim[0].relation = 'swap' is invalid" in run.stderr and "add-remove" in run.stderr


def test_a_mechanisms_own_claim_for_another_relation_is_not_applicable_with_the_premise_named():
    class SwapOnly(RandomizedResponse):
        def guarantees(self, data, relation):
            return [Guarantee(epsilon=0.5, relation="swap", claim_id="user/swap-only")]

    d = Dataset({"bit": [0]})
    r = audit_mechanism(SwapOnly(1.0), d, d.add({"bit": 1}), samples=200_000, seed=0)
    check = r.claims[0]
    assert check.finding == "not-applicable"
    assert "stated for swap neighbours" in check.premise_note and "would refute it" in check.premise_note


def test_an_unverified_claim_that_holds_is_not_a_bare_pass():
    from dpaudit.engine.api import RunContext
    d = Dataset({"bit": [0]})
    unverified = next(c for c in registry().values() if c.status == "unverified")
    r = audit_mechanism(RandomizedResponse(1.0), d, d.add({"bit": 1}), samples=100_000, seed=0,
                        claims=[Guarantee(epsilon=2.0, claim_id=unverified.id)],
                        context=RunContext(registry=registry()))
    assert r.claims[0].finding == "not refuted — unverified claim"
    assert r.claims[0].to_dict()["claim_status"] == "unverified"


# --- the default suite (the session's one run) ----------------------------------------------

@pytest.fixture(scope="module")
def default_records(default_suite_run):
    return default_suite_run.results["records"], default_suite_run


@pytest.mark.slow
def test_no_proven_claim_is_refuted_and_every_record_carries_status_and_source(default_records):
    records, _ = default_records
    known = registry()
    for r in records:
        assert r["claim_id"] in known, r["claim_id"]
        info = known[r["claim_id"]]
        assert r["claim_status"] == info.status and r["claim_document"] == info.document
        if info.status == "proven":
            assert r["finding"] not in (REFUTED_EMPIRICAL, REFUTED_WHITE_BOX), (r["scenario"], r["claim_id"])


@pytest.mark.slow
def test_summary_of_the_default_run_exits_as_the_run_did(default_records):
    _, run = default_records
    summary = run_cli("summary", str(run.out / "results.json"))
    assert summary.returncode == run.code == 0


@pytest.mark.slow
def test_the_pdf_counts_lists_and_words(default_records):
    pypdf = pytest.importorskip("pypdf")
    records, run = default_records
    text = "\n".join(page.extract_text() for page in pypdf.PdfReader(run.out / "report.pdf").pages)
    white = sum(r["finding"] == REFUTED_WHITE_BOX for r in records)
    empirical = sum(r["finding"] == REFUTED_EMPIRICAL for r in records)
    flat = " ".join(text.split())  # the summary's verdict table: one row per kind of finding with its count
    assert white >= 2 and f"{REFUTED_EMPIRICAL} {empirical} " in flat and f"{REFUTED_WHITE_BOX} {white} " in flat
    errata = text[text.index("Appendix A: errata"):text.index("Reproducibility")]
    heads = [line.split(" ", 1)[1] for line in errata.splitlines() if re.match(r"A\.\d+ ", line)]
    assert len(heads) == len(set(heads)), "an erratum appears twice"
    assert "align/alg2-printed [align-alg2-zero-out]" in heads
    assert "align/trajectory-cov [align-trajectory-h1-cov]" in heads
    assert "po/meta" not in errata and "po/dp-pg " not in errata
    flat = " ".join(text.split()).lower()
    assert "unverified" in flat and "vacuous" in flat
    assert "arxiv" in flat  # the sources are cited in full


def test_printed_claims_refuted_only_by_the_white_box_still_fail_an_expected_empirical_violation():
    """The finding's twin: an expectation of an empirical violation is missed when only the white box refutes."""
    from dpaudit.engine.verdicts import outcome
    assert outcome({"finding": REFUTED_WHITE_BOX, "expected_verdict": "violation"}) == "MISSED expected violation"
    assert outcome({"finding": REFUTED_EMPIRICAL, "expected_verdict": "pass"}) == "UNEXPECTED violation"
