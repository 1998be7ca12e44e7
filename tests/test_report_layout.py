"""The PDF report's layout, from text positions: no two words overlap and no table cell's text
leaves its cell on the default, errata and user-mechanism reports; the default report is at most
25 pages with no page under 30 % full except a section's last; a user's mechanism is described in
the user's words.  The reports are drawn from saved results (tests/data/report/*.json.gz: the
default suite at 1e6 samples, the errata suite at 20000, a user's leaky noisy count at 200000)."""

import gzip
import json
from pathlib import Path

import pdfplumber
import pytest
from pypdf import PdfReader
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen.canvas import Canvas

from dpaudit import reports
from dpaudit.cli.common import report_families
from dpaudit.reports import plots
from dpaudit.reports.layout import MARGIN
from tests import pdfcheck

DATA = Path(__file__).resolve().parent / "data" / "report"
FORBIDDEN_FOR_USERS = ("erratum of the source", "Printed statement", "Source: config", "()")


def load(name: str) -> dict:
    return json.loads(gzip.decompress((DATA / f"{name}-results.json.gz").read_bytes()))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """Each fixture's report, rendered once per module on first use."""
    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            path = tmp_path_factory.mktemp("reports") / f"{name}.pdf"
            reports.write_pdf(load(name), path, families=report_families())
            cache[name] = path
        return cache[name]
    return get


def words(path: Path) -> str:
    """The PDF's text with all whitespace removed (table cells wrap their words across lines)."""
    return "".join("".join(page.extract_text() for page in PdfReader(path).pages).split())


@pytest.mark.parametrize("name", [
    pytest.param("default", marks=pytest.mark.slow),  # ~5 s to render, ~5 s to check 18 pages
    pytest.param("errata", marks=pytest.mark.slow),
    "user",
    "config-user",
])
def test_no_text_overlaps_and_no_cell_text_leaves_its_cell(rendered, name):
    assert pdfcheck.offences(rendered(name)) == {}


def test_the_checker_catches_overlapping_text_and_text_leaving_its_cell(tmp_path):
    """The twin of the layout test: a page with a heading printed over a paragraph and a table cell
    whose text runs past its border is flagged on both counts."""
    path = tmp_path / "broken.pdf"
    canvas = Canvas(str(path), pagesize=A4)
    canvas.setFont("Helvetica", 9)
    canvas.drawString(60, 700, "Sources: a long paragraph line that the heading covers")
    canvas.setFont("Helvetica-Bold", 12)
    canvas.drawString(60, 697, "Every claim")
    canvas.setFont("Helvetica", 8)
    for x in (60, 160, 260):
        canvas.line(x, 500, x, 560)
    for y in (500, 530, 560):
        canvas.line(60, y, 260, y)
    canvas.drawString(64, 540, "kl-rlhf/thm4-addremove-corrected")  # wider than its 100 pt column
    canvas.drawString(164, 510, "fits")
    canvas.save()
    found = pdfcheck.offences(path)
    assert "page 1: overlap" in found and "page 1: cell" in found
    assert not any("fits" in str(item) for item in found["page 1: cell"])


@pytest.mark.slow  # renders the default suite's report (~5 s)
def test_without_the_catalogs_families_every_scenario_flows_in_one_section(tmp_path):
    """One section of 44 scenarios: the chain (92 rows) and convergence (41 lines) are split into
    figures that each fit a page (a single figure taller than the frame stopped the build)."""
    reports.write_pdf(load("default"), tmp_path / "flat.pdf")
    text = words(tmp_path / "flat.pdf")
    assert "Otherscenarios" in text and "Familykl" not in text
    assert pdfcheck.offences(tmp_path / "flat.pdf") == {}


@pytest.mark.slow  # renders the default suite's report (~5 s)
def test_default_report_is_short_and_its_pages_are_full(rendered):
    text = words(rendered("default"))
    for section in ("Claims", "Familyclassic", "Familykl", "Familypolicy-optimization", "Familyalignment",
                    "AppendixA:errata", "Reproducibility"):
        assert section in text, section
    with pdfplumber.open(rendered("default")) as pdf:
        pages = pdf.pages
        assert len(pages) <= 25
        for n, page in enumerate(pages):
            last_of_section = n + 1 == len(pages) or pdfcheck.starts_section(pages[n + 1])
            if not last_of_section:
                assert pdfcheck.fullness(page, MARGIN) >= 0.3, f"page {n + 1} is under 30 % full"


def test_the_fullness_check_sees_a_near_empty_page(tmp_path):
    path = tmp_path / "empty.pdf"
    canvas = Canvas(str(path), pagesize=A4)
    canvas.drawString(MARGIN, A4[1] - MARGIN - 10, "one line at the top")
    canvas.save()
    with pdfplumber.open(path) as pdf:
        assert pdfcheck.fullness(pdf.pages[0], MARGIN) < 0.05


def test_a_users_mechanism_is_described_in_the_users_words(rendered):
    text = " ".join("".join(page.extract_text() for page in PdfReader(rendered("user")).pages).split())
    for phrase in FORBIDDEN_FOR_USERS:
        assert phrase not in text, phrase
    assert "your claim" in text and "Your mechanism" in text and "Mechanism user-noisy-count-leaky" in text
    assert "Errata" not in text and "source" not in text.lower()


def test_a_users_claims_on_built_in_mechanisms_are_the_users_too(rendered):
    """A config's own claims (one with a reference of the user's, one without) on built-in randomized
    response and Laplace: no family's sources, the mechanisms by name and parameters, the user's
    reference where given, and the exact loss where the outputs are finite."""
    text = " ".join("".join(page.extract_text() for page in PdfReader(rendered("config-user")).pages).split())
    for phrase in (*FORBIDDEN_FOR_USERS, "Dwork", "Family classic", "Errata"):
        assert phrase not in text, phrase
    assert "Mechanism randomized-response (epsilon=1, column=bit)" in text
    assert "your reference my notes" in text and "εexact = 1 at δ = 0" in text  # ε with its subscript, typeset


@pytest.mark.slow  # renders the errata report (~3 s)
def test_errata_appendix_gives_claim_source_witness_and_computation(rendered):
    text = words(rendered("errata"))
    payload = load("errata")
    refuted = {r["claim_id"] for r in payload["records"]
               if r["claim_kind"] == "printed" and r["finding"].startswith("refuted")}
    assert refuted
    for claim in refuted:
        assert claim in text, claim
    for key in ("source", "witnesspair", "witnessevent", "refutedfromthesamples", "exactloss(whitebox)",
                "εlower=log((Plower−δ)/Qupper)"):  # typeset: the scripts run into their words here
        assert key in text, key


def test_same_results_give_the_same_bytes(tmp_path):
    payload = load("user")
    reports.write_pdf(payload, tmp_path / "a.pdf", families=report_families())
    reports.write_pdf(load("user"), tmp_path / "b.pdf", families=report_families())
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()


def test_ticks_read_like_numbers_and_lines_are_told_apart():
    assert [plots.tick(v) for v in (1e6, 2e6, 152000, 0.5, 20, 1000, 0, 2.5e-5, 1e-4)] == \
        ["1e6", "2e6", "1.5e5", "0.5", "20", "1000", "0", "2.5e-5", "1e-4"]
    styles = [tuple(sorted(plots.style(i).items())) for i in range(32)]
    assert len(set(styles)) == 32
    assert len({(s["ls"], s["marker"]) for s in map(plots.style, range(8))}) == 8  # apart without colour


def test_convergence_needs_three_looks_and_the_tradeoff_panel_a_continuous_output():
    payload = load("default")
    scenarios = {s["scenario"]: s for s in payload["scenarios"]}
    assert plots.looks(scenarios["align-alg1-paper"]) < plots.MIN_LOOKS
    claims = {}
    for r in payload["records"]:
        claims.setdefault(r["scenario"], []).append(r)
    assert plots.tradeoff_meaningful(scenarios["align-alg2-swap"], claims["align-alg2-swap"])  # refuted there
    assert not plots.tradeoff_meaningful(scenarios["align-alg2-tight"], claims["align-alg2-tight"])  # all hold
    refuted_discrete = [r for r in claims["kl-rlhf-label"] if r["finding"].startswith("refuted")]
    assert refuted_discrete and not plots.tradeoff_meaningful(scenarios["kl-rlhf-label"], refuted_discrete)
