"""The report's own sentences are true and said once (issue 41, items 15-17): what the PDF says of
a one-run secret is what results.json records; an accent of a formula is visible on the page (the
tilde of Σ̃ once vanished, printing "Σ_D = Σ_D + G"); no paragraph outside a table repeats; what a
claim could have caught stands only beside a claim that holds; the page count the README states
is the real one."""

import copy
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pdfplumber
import pypdfium2 as pdfium
import pytest

from dpaudit import reports
from dpaudit.cli.common import report_families
from dpaudit.engine.verdicts import HOLDS, UNVERIFIED_HOLDS
from dpaudit.reports.layout import build, kv_table
from dpaudit.reports.mathtext import typeset
from tests.test_report_onerun import honest, load, merged

ROOT = Path(__file__).resolve().parents[1]
REPEATS_ALLOWED = 1  # a sentence of 60+ characters outside the tables appears once (table cells may repeat)


def _kept(name: str) -> bool:
    """A small default payload: classic and the KL bandits (holding and refuted claims), DP-PG."""
    return name in ("laplace", "expmech", "kl-mab-worst", "kl-mab-a24-row2") or name.startswith("po-dp-pg")


MODEL = "the witness event fixed, q = 1163/800000 on the other side, p = q*e^eps + delta on the favoured side"
ONE_RUN_MODEL = "GDP canaries (in N(mu, 1), out N(0, 1), secret Bernoulli(1/2)) at m = 200 under this rule's tests"


@pytest.fixture(scope="module")
def payload():
    """The saved default results (written before the ``detectable`` key) with what each holding claim
    could have caught, as a run writes it now."""
    found = merged(load("default"), [honest()], _kept)
    for r in found["records"]:
        if r["finding"].startswith("holds") and r.get("kind") == "one-run":
            r["detectable"] = {"epsilon": 5.9, "mu": 1.3, "delta": 1e-5, "canaries_for_twice": 1220,
                               "model": ONE_RUN_MODEL}
        elif r["finding"].startswith("holds"):
            r["detectable"] = {"epsilon": 5.844, "samples_for_twice": 19_172, "model": MODEL}
    return found


@pytest.fixture(scope="module")
def pdf(tmp_path_factory, payload) -> Path:
    """The payload's report, rendered once for the tests that read it (they only read it)."""
    return render(payload, tmp_path_factory.mktemp("words") / "small.pdf")


def render(payload: dict, path: Path) -> Path:
    reports.write_pdf(payload, path, families=report_families())
    return path


def flat(text: str) -> str:
    return " ".join(text.split())


def text_outside_tables(doc) -> str:
    """The page text of an open pdfplumber document with every table's words left out (a table's
    cells may repeat by design)."""
    out = []
    for page in doc.pages:
        boxes = [t.bbox for t in page.find_tables()]

        def outside(obj, boxes=boxes):
            if obj.get("object_type") != "char":
                return True
            return not any(x0 - 1 <= obj["x0"] and obj["x1"] <= x1 + 1 and top - 1 <= obj["top"]
                           and obj["bottom"] <= bottom + 1 for x0, top, x1, bottom in boxes)
        out.append(page.filter(outside).extract_text() or "")
    return "\n".join(out)


def tables(doc) -> list[list[list[str]]]:
    found = []
    for page in doc.pages:
        found += [[[flat(c or "") for c in row] for row in t] for t in page.extract_tables()]
    return found


def secret_sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.;])\s+|\(|\)", flat(text)) if "secret" in s.lower()]


def check_secret_words(pdf: Path, results: dict) -> None:
    """Every sentence of the PDF about a one-run secret agrees with the scenario's ``secret_source``:
    none says it is drawn from a seed; a secret dpaudit drew is said to come from fresh entropy, a
    caller's as the caller's, and a stored one as stored."""
    text = flat("\n".join(p.extract_text() or "" for p in pdfplumber.open(pdf).pages))
    sources = {sc.get("secret_source") for sc in results["scenarios"] if sc.get("kind") == "one-run"}
    assert sources, "no one-run scenario: nothing to check"
    for sentence in secret_sentences(text):
        drawn_from_seed = re.search(r"(drawn|derived) from (the|its own|a) [\w' ]*seed", sentence) \
            or "seeded stream" in sentence
        assert not drawn_from_seed, sentence
    if "fresh entropy" in sources:
        assert "drawn by dpaudit from fresh entropy (not from the seed), stored in results.json" in text
    if "supplied by the caller" in sources:
        assert "the caller's own secret (supplied by the caller, not drawn by dpaudit)" in text
    if "fresh entropy" not in sources:
        assert not any("fresh entropy" in s for s in secret_sentences(text)), "a caller's secret said to be ours"


def test_every_sentence_about_a_dpaudit_secret_matches_results_json(payload, pdf):
    check_secret_words(pdf, payload)


def test_a_callers_secret_is_said_to_be_the_callers(payload, tmp_path):
    caller = copy.deepcopy(payload)
    for sc in caller["scenarios"]:
        if sc.get("kind") == "one-run":
            sc["secret_source"] = "supplied by the caller"
    check_secret_words(render(caller, tmp_path / "caller.pdf"), caller)


def _ink_top(image: np.ndarray, x0: float, x1: float, scale: float) -> int:
    """The first row (from the top) with ink in the columns x0..x1 (points) of a rendered strip."""
    cols = image[:, int(x0 * scale):int(x1 * scale) + 1]
    rows = np.nonzero((cols < 128).any(axis=1))[0]
    return int(rows[0])


def test_the_tilde_of_sigma_is_drawn_above_it(tmp_path):
    """Σ̃_D = Σ_D + G: the accented Σ's ink reaches at least a point higher than the plain Σ's (the
    accent drawn above the letter, not inside it), and the text still reads Σ̃."""
    path = tmp_path / "tilde.pdf"
    path.write_bytes(build([kv_table([["claim", typeset("Σ̃_D = Σ_D + G")]], style="math")], "t"))
    with pdfplumber.open(path) as doc:
        chars = [c for c in doc.pages[0].chars if c["text"] in ("Σ", "\u0303")]
        text = doc.pages[0].extract_text()
    assert "Σ̃" in text
    sigmas = [c for c in chars if c["text"] == "Σ"]
    assert len(sigmas) == 2
    scale = 8.0
    page = pdfium.PdfDocument(str(path))[0]
    image = np.asarray(page.render(scale=scale).to_pil().convert("L"))
    accented, plain = (_ink_top(image, c["x0"], c["x1"], scale) for c in sigmas)
    assert plain - accented >= 1.0 * scale, (accented, plain)


def test_typeset_raises_an_accent_only_over_a_tall_letter():
    assert "rise" in typeset("Σ̃").split("Σ")[1]
    assert typeset("ã") == "ã"  # a lowercase letter's accent is drawn in place by the font


def test_could_have_caught_stands_only_beside_a_claim_that_holds_and_no_paragraph_repeats(pdf):
    check_said_once(pdf)


def check_said_once(pdf: Path) -> None:
    """"could have caught" only in a table whose every row is a claim that holds, or a one-run claims
    row that holds; no sentence of 60 characters or more repeats outside the tables."""
    seen = 0
    with pdfplumber.open(pdf) as doc:  # one parse of the pages for both reads
        found, outside = tables(doc), flat(text_outside_tables(doc))
    for rows in found:
        head = " ".join(rows[0])
        for row in rows[1:]:
            cells = " ".join(row)
            if "could have caught" in head or "could have caught" in cells:
                seen += 1
                assert any(c in (HOLDS, UNVERIFIED_HOLDS) for c in row), row  # the row's verdict cell
                assert not any(c.startswith("refuted (") for c in row), row
    assert seen, "no could-have-caught row to check"
    # a claim's own note ("could have caught: a leak of eps >= ...") never stands in a paragraph, under
    # whatever table came last
    notes = re.findall(r"could have caught: (?:a leak|no leak|no GDP|GDP canaries)", outside)
    assert not notes, notes
    sentences = Counter(s for s in re.split(r"(?<=[.:;])\s+", outside) if len(s) >= 60)
    repeated = {s: n for s, n in sentences.items() if n > REPEATS_ALLOWED}
    assert not repeated, repeated


def stated_pages() -> tuple[int, int]:
    found = re.search(r"The default suite's report is (\d+)(?:[–-](\d+))? pages", flat(
        (ROOT / "README.md").read_text(encoding="utf-8")))
    assert found, "the README states the default report's page count"
    return int(found[1]), int(found[2] or found[1])


@pytest.mark.slow  # the session's default-suite run
def test_the_default_report_says_each_thing_once_and_has_the_pages_the_readme_states(default_suite_run):
    pdf = default_suite_run.out / "report.pdf"
    low, high = stated_pages()
    with pdfplumber.open(pdf) as doc:
        assert low <= len(doc.pages) <= high, (len(doc.pages), (low, high))
    check_said_once(pdf)
    check_secret_words(pdf, default_suite_run.results)
