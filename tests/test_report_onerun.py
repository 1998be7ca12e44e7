"""The PDF's one-run pages, drawn from a payload holding real canary audits (DP-PG at toy size, the
honest design and its wrong-relation twin) merged into saved multi-run results: one page per
scenario with its design, counts, bound, the labelled GDP mu and the verdicts; the "what one run
buys" table exactly when both kinds check one claim; no text overlaps; the same bytes twice; and
a payload without one-run scenarios renders as the multi-run report does."""

import gzip
import json
from pathlib import Path

import numpy as np
import pdfplumber
import pytest
from pypdf import PdfReader

from dpaudit import reports
from dpaudit.catalog.designs.policy import dppg_design
from dpaudit.cli.common import report_families
from dpaudit.core import Guarantee
from dpaudit.engine.verdicts import OK_OUTCOMES, outcome
from dpaudit.onerun import Grid, gdp, gdp_epsilon, one_run_bound
from dpaudit.onerun.family import strongest_rejected
from dpaudit.onerun.result import MU_LABEL
from dpaudit.reports import onerun_page
from dpaudit.reports.layout import MARGIN
from dpaudit.reports.text import fmt
from tests import pdfcheck
from tests.onerun_seeded import seeded

DATA = Path(__file__).resolve().parent / "data" / "report"


def load(name: str) -> dict:
    return json.loads(gzip.decompress((DATA / f"{name}-results.json.gz").read_bytes()))


def entries(design, seed: int, registry: list[dict]) -> tuple[dict, list[dict]]:
    """The results.json scenario entry and flat records of one one-run audit, in the shape the
    run writes (the one-run contract): the claim's registry fields from a multi-run record of the
    same id where there is one."""
    res = seeded(design, seed)
    sc = {"kind": "one-run", "scenario": design.name, "mechanism": "DPPG", "description": design.description,
          "seconds": 0.1, **res.to_dict(include_scores=True)}
    known = {r["claim_id"]: r for r in registry if r.get("claim_id")}
    keys = registry[0].keys()
    records = []
    for c in sc["claims"]:
        curve = c["claim_type"] == "curve"
        reg = known.get(c["claim_id"], {})
        rec = dict.fromkeys(keys)
        rec.update(
            kind="one-run", scenario=sc["scenario"], mechanism=sc["mechanism"], relation=sc["relation"],
            samples=sc["runs"], confidence=sc["confidence"], seed=sc["seed"], seconds=sc["seconds"], seeded=True,
            claim_id=c["claim_id"], claim_kind=reg.get("claim_kind", "printed"), claim_source=c["source"],
            claim_status=reg.get("claim_status", c.get("status")), claim_document=reg.get("claim_document"),
            claim_where=reg.get("claim_where"), claim_statement=reg.get("claim_statement"),
            delta=None if curve else c["delta"], epsilon_claim=None if curve else c["epsilon_claim"],
            epsilon_lower=None if curve else c["epsilon_lower"], verdict=c["verdict"], finding=c["finding"],
            expected_verdict=design.expected.get(c["claim_id"]),
            onerun={k: sc[k] for k in ("m", "runs", "r", "v", "k_plus", "k_minus", "rule", "correction", "alpha",
                                       "secret_sha256", "gdp_mu_lower")}
            | {"claim_type": c["claim_type"], "curve": {k: v for k, v in c.items() if k not in (
                "claim_type", "verdict", "finding", "note")} if curve else None})
        rec["as_expected"] = outcome(rec) in OK_OUTCOMES
        records.append(rec)
    return sc, records


def merged(base: dict, designs: list, keep=lambda name: True) -> dict:
    """``base``'s scenarios kept by ``keep``, plus the one-run audits of ``designs``, as read back
    from a results.json."""
    scenarios = [s for s in base["scenarios"] if keep(s["scenario"])]
    records = [r for r in base["records"] if keep(r["scenario"])]
    payload = {**base, "scenarios": scenarios, "records": records}
    for design in designs:
        sc, recs = entries(design, 0, base["records"])
        payload["scenarios"].append(sc)
        payload["records"] += recs
    return json.loads(json.dumps(payload))


def honest():
    return dppg_design(m=200, d=16, rounds=20, per_round=30, epsilon=4.0)


def twin():
    """σ drawn for the add-remove sensitivity under user-level neighbours: its exact curve is refuted
    in one run at this size (5 of 5 seeds in a check of seeds 0-4)."""
    return dppg_design(m=400, d=32, rounds=20, per_round=40, epsilon=8.0, bug="wrong-relation")


def po(name: str) -> bool:
    return name.startswith("po-")


@pytest.fixture(scope="module")
def po_payload():
    return merged(load("default"), [honest(), twin()], po)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, po_payload):
    path = tmp_path_factory.mktemp("onerun") / "po.pdf"
    reports.write_pdf(po_payload, path, families=report_families())
    return path


@pytest.fixture(scope="module")
def texts(rendered) -> list[str]:
    """The rendered report's text page by page (:func:`pages`), read once for the tests that read it."""
    return pages(rendered)


def squeezed(text: str) -> str:
    return "".join(text.split())


def pages(path: Path) -> list[str]:
    return [squeezed(p.extract_text()) for p in PdfReader(path).pages]


def page_of(texts: list[str], phrase: str) -> int:
    found = [i for i, t in enumerate(texts) if squeezed(phrase) in t]
    assert len(found) == 1, (phrase, found)
    return found[0]


def test_each_scenario_has_its_page_with_design_counts_bound_mu_label_and_verdicts(rendered, texts, po_payload):
    ones = onerun_page.scenarios(po_payload)
    assert len(ones) == 2
    with pdfplumber.open(rendered) as pdf:
        images = [page.images for page in pdf.pages]
    seen = set()
    for sc in ones:
        n = page_of(texts, f"One-run scenario {sc['scenario']}{sc['description'][:12]}")
        seen.add(n)
        page = texts[n]
        for phrase in (f"m = {sc['m']}", f"r = {sc['r']} guesses, v = {sc['v']} right",
                       f"k+ = {sc['k_plus']} in, k- = {sc['k_minus']} out", sc["secret_sha256"],
                       f"alpha = {fmt(sc['alpha'])}", f"eps_lower = {fmt(sc['bounds'][0]['epsilon_lower'])}",
                       f"delta = {fmt(sc['bounds'][0]['delta'])}",
                       f"largest rejected mu = {fmt(sc['gdp_mu_lower']['mu'])}",
                       MU_LABEL, "user-level", "fixed in advance"):
            assert squeezed(phrase) in page, (sc["scenario"], phrase)
        for c in sc["claims"]:
            assert squeezed(c["claim_id"]) in page and squeezed(c["finding"]) in page
        # The GDP mu is never printed as an (epsilon, delta) lower bound.
        assert squeezed(f"eps_lower = {fmt(sc['gdp_mu_lower']['mu'])}") not in page
        assert squeezed(f"eps_lower {fmt(sc['gdp_mu_lower']['mu'])}") not in page
        assert images[n], f"no figure on the page of {sc['scenario']}"
    assert len(seen) == 2  # one page each


def test_the_twin_is_refuted_in_one_run_and_said_so_in_the_summary_and_claims_table(texts, po_payload):
    refuted = [r for r in po_payload["records"] if onerun_page.is_onerun(r) and r["finding"].startswith("refuted")]
    assert [r["claim_id"] for r in refuted] == ["po/dp-pg-tight"]  # the twin's exact curve, as the design expects
    assert all(r["as_expected"] for r in po_payload["records"] if onerun_page.is_onerun(r))
    summary = texts[0]
    assert squeezed("Refuted in one run") in summary and squeezed("curve test rejects") in summary
    assert squeezed("po/dp-pg-tight [dppg-whitebox-wrong-relation]") in summary
    assert squeezed(outcome(refuted[0])) in summary and outcome(refuted[0]) in OK_OUTCOMES
    multi = sum(not onerun_page.is_onerun(s) for s in po_payload["scenarios"])
    checks = sum(r["claim_id"] is not None for r in po_payload["records"])
    assert squeezed("budget 1000000 samples per side and scenario (one training run of its canaries per one-run "
                    "scenario)") in summary
    assert squeezed(f"{multi + 2} scenarios (policy-optimization {multi}; 2 one-run (canary) scenarios of 200 to "
                    f"400 canaries), {checks} claim checks") in summary
    claims = "".join(texts[1:3])
    assert squeezed("dppg-whitebox-wrong-relation (one run)") in claims
    curve = next(r for r in refuted)["onerun"]["curve"]["curve"]
    assert squeezed(curve) in claims and "Appendix" not in "".join(texts)  # no multi-run erratum here


def test_what_one_run_buys_sits_in_the_one_run_section_when_both_kinds_check_a_claim(texts, po_payload):
    rows = onerun_page.side_by_side(po_payload)
    assert [cid for cid, _, _ in rows] == ["po/dp-pg", "po/dp-pg-tight", "po/meta"]
    for cid, multi, ones in rows:
        assert multi and all(m["finding"] != "not-applicable" and m["claim_id"] == cid for m in multi)
        assert [o["scenario"] for o in ones] == ["dppg-whitebox", "dppg-whitebox-wrong-relation"]
    n = page_of(texts, "What one run buys")
    assert n == page_of(texts, onerun_page.TITLE + "One training run each")
    _, multi, ones = rows[0]
    advantage = next(m for m in multi if m["scenario"] == "po-dp-pg-advantage")
    assert squeezed(f"po-dp-pg-advantage: (4, 1e-05), eps_lower {fmt(advantage['epsilon_lower'])} (2e6 samples per "
                    "side): holds at this budget") in texts[n]
    assert squeezed(f"dppg-whitebox: (4, 1e-05), eps_lower {fmt(ones[0]['epsilon_lower'])} at delta 1e-05 (200 "
                    "canaries, 1 run): holds at this budget") in texts[n]
    assert squeezed("curve 1.168-GDP, curve test: rejected at confidence 0.95: refuted (empirical)") in texts[n]


def test_no_side_by_side_table_when_no_claim_is_checked_both_ways(tmp_path):
    """The twin: the same one-run audit beside a multi-run scenario of another family's claims."""
    base = load("default")
    other = next(s["scenario"] for s in base["scenarios"] if not po(s["scenario"]))
    payload = merged(base, [honest()], lambda name: name == other)
    assert not {r["claim_id"] for r in payload["records"] if not onerun_page.is_onerun(r)} & \
        {r["claim_id"] for r in payload["records"] if onerun_page.is_onerun(r)}
    assert onerun_page.side_by_side(payload) == []
    reports.write_pdf(payload, tmp_path / "one.pdf", families=report_families())
    text = "".join(pages(tmp_path / "one.pdf"))
    assert squeezed("One-run scenario dppg-whitebox") in text and "Whatonerunbuys" not in text
    assert pdfcheck.offences(tmp_path / "one.pdf") == {}


def test_no_text_overlaps_and_no_cell_text_leaves_its_cell(rendered):
    assert pdfcheck.offences(rendered) == {}


def test_a_scenario_saved_without_its_scores_says_it_has_no_figures(po_payload):
    sc = onerun_page.scenarios(po_payload)[0]
    bare = {k: v for k, v in sc.items() if k not in ("scores", "secret")}
    said = [getattr(f, "text", "") for f in onerun_page.page(bare, [], False)]
    assert any("No figures" in t for t in said)
    assert not any("No figures" in getattr(f, "text", "") for f in onerun_page.page(sc, [], False))


def test_a_users_own_game_with_a_grid_rule_and_a_family_rejection(tmp_path):
    """A user's one-run audit (their claims, no registry): two runs of 300 canaries, a Bonferroni
    grid, and a family's strongest rejected member (the DP-SGD designs' shape), labelled valid
    against that family only and never printed as an eps_lower."""
    secret = np.random.default_rng(5).integers(0, 2, 600)
    scores = 3.0 * secret + np.random.default_rng(6).standard_normal(600)
    mine = (Guarantee(epsilon=1.0, delta=1e-5, claim_id="my-eps"), gdp(1.0, claim_id="my-curve"))
    res = one_run_bound(scores, secret, rule=Grid.symmetric([20, 60, 150]), claims=mine, runs=2, seed=3,
                        relation="add-remove")
    family = strongest_rejected(res.tests, lambda s: gdp(2.0 / s), lower=0.2, upper=50.0, delta=1e-5,
                                read=lambda s: gdp_epsilon(2.0 / s, 1e-5), family="Gaussian (sigma varied)")
    sc = {"kind": "one-run", "scenario": "my-training", "mechanism": "MyTrainer", "description": "my own game",
          "seconds": 0.2, **res.to_dict(include_scores=True), "family_rejection": family.to_dict()}
    records = []
    for c in sc["claims"]:
        curve = c["claim_type"] == "curve"
        records.append({
            "kind": "one-run", "scenario": "my-training", "mechanism": "MyTrainer", "relation": "add-remove",
            "samples": 2, "confidence": 0.95, "seed": 3, "seconds": 0.2, "claim_id": c["claim_id"],
            "claim_kind": None, "claim_source": "command line", "claim_status": None, "claim_document": None,
            "delta": None if curve else c["delta"], "epsilon_claim": None if curve else c["epsilon_claim"],
            "epsilon_lower": None if curve else c["epsilon_lower"], "epsilon_exact": None, "pair": None,
            "verdict": c["verdict"], "finding": c["finding"], "expected_verdict": None,
            "onerun": {k: sc[k] for k in ("m", "runs", "r", "v", "k_plus", "k_minus", "rule", "correction", "alpha",
                                          "secret_sha256", "gdp_mu_lower")}
            | {"claim_type": c["claim_type"], "curve": c if curve else None}})
    assert {r["finding"] for r in records} == {"refuted (empirical)"}  # 3 sigma apart: both claims fall
    payload = json.loads(json.dumps({"schema": 1, "seed": 3, "samples": 0, "confidence": 0.95, "complete": True,
                                     "scenarios": [sc], "records": records}))
    reports.write_pdf(payload, tmp_path / "mine.pdf", families=report_families())
    text = " ".join(pages(tmp_path / "mine.pdf"))
    assert pdfcheck.offences(tmp_path / "mine.pdf") == {}
    read = family.to_dict()
    for phrase in ("your mechanism MyTrainer: 1 one-run (canary) scenario of 600 canaries", "Refuted in one run",
                   "your claim my-eps [my-training]", "your claim my-curve [my-training]",
                   "m = 600: 2 training runs of 300 canaries", "grid of 3 (k+, k-) pairs",
                   "budget one training run of its canaries per one-run scenario, confidence 0.95",
                   "bonferroni over 3 pairs", f"sigma = {fmt(read['parameter']['sigma'])}",
                   f"reads {fmt(read['epsilon_read'])}", read["validity"], "1-GDP"):
        assert squeezed(phrase) in text, phrase
    assert squeezed(f"eps_lower = {fmt(read['epsilon_read'])}") not in text
    assert "Appendix" not in text and "Errata" not in text and "&gt;" not in text and "&amp;" not in text


def test_same_payload_same_bytes_and_without_one_run_no_trace_of_it(tmp_path, rendered, po_payload):
    reports.write_pdf(json.loads(json.dumps(po_payload)), tmp_path / "b.pdf", families=report_families())
    assert rendered.read_bytes() == (tmp_path / "b.pdf").read_bytes()
    plain = onerun_page.multi_run(po_payload)
    assert onerun_page.multi_run(plain) is plain and onerun_page.section(plain, False) == []
    reports.write_pdf(plain, tmp_path / "plain.pdf", families=report_families())
    text = " ".join(pages(tmp_path / "plain.pdf"))
    for phrase in ("one run", "One-run", "canary", "Whatonerunbuys"):
        assert squeezed(phrase) not in text, phrase


@pytest.mark.slow  # renders and checks the default suite's report with one one-run scenario (~15 s)
def test_default_report_with_its_one_run_fixture_stays_within_the_page_limit(tmp_path):
    payload = merged(load("default"), [honest()])
    path = tmp_path / "default.pdf"
    reports.write_pdf(payload, path, families=report_families())
    with pdfplumber.open(path) as pdf:
        assert len(pdf.pages) <= 25
        for n, page in enumerate(pdf.pages):
            last_of_section = n + 1 == len(pdf.pages) or pdfcheck.starts_section(pdf.pages[n + 1])
            if not last_of_section:
                assert pdfcheck.fullness(page, MARGIN) >= 0.3, f"page {n + 1} is under 30 % full"
    assert pdfcheck.offences(path) == {}
    text = "".join(pages(path))
    for r in payload["records"]:
        for key in ("delta", "epsilon_claim", "epsilon_lower"):
            if r[key] is not None:
                assert squeezed(fmt(r[key])) in text, (r["claim_id"], key)
