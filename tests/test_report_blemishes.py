"""The PDF's blemishes of issue 35, checked from text positions (pdfplumber) on reports drawn from a
small part of the saved default run (tests/data/report/default-results.json.gz: the scenarios with
the longest hyphenated claim ids and scenario names, a pair whose scenario table and claims differ
in delta, a refuted continuous output with its f-DP panels) and a DP-PG one-run game: no word broken
mid-word in a table cell, one delta per table stated in its header, no text under 7 pt (figures
included, as printed), eps = 0 at a labelled "0" past a log axis' break, the errata appendix's
formulas typeset, and no sampling-budget line for a run of one-run scenarios alone."""

import itertools
import re
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pdfplumber
import pytest
from matplotlib.text import Text

from dpaudit import reports
from dpaudit.cli.common import report_families
from dpaudit.reports import onerun_plots, plots
from dpaudit.reports.layout import WIDTH
from tests.test_report_onerun import honest, load, merged

# a line inside a cell may end after these (or at a space), never mid-word; the last five only inside
# a run too wide for its column without them (a vector written without spaces: "(phi=[" / "0.2457...")
BREAK_AFTER = "/-_" + "=[(,;"
MIN_POINTS = 7.0  # the smallest text the report may print (issue 35)
LINES = {"vertical_strategy": "lines", "horizontal_strategy": "lines"}  # a table found from its ruling lines
PICKED = ("kl-rlhf-label", "kl-rlhf-addremove", "kl-rlhf-approx-addremove-10000", "align-alg2-swap",
          "kl-linear-a33-10000", "kl-mab-a24-row3", "po-dp-pg")


def picked(name: str) -> bool:
    return name in PICKED


@pytest.fixture(scope="module")
def payload() -> dict:
    return merged(load("default"), [honest()], picked)


@pytest.fixture(scope="module")
def pdf(tmp_path_factory, payload) -> Path:
    path = tmp_path_factory.mktemp("blemishes") / "report.pdf"
    reports.write_pdf(payload, path, families=report_families())
    return path


@pytest.fixture(scope="module")
def doc(pdf):
    """The report opened once for the module's checks, which only read it (pdfplumber parses each
    page's objects once per open document)."""
    with pdfplumber.open(pdf) as opened:
        yield opened


def vocabulary(value: Any) -> set[str]:
    """Every whitespace-free token of every string in ``value`` (the words a cell may hold)."""
    if isinstance(value, str):
        return set(value.split())
    if isinstance(value, dict):
        return set().union(*(vocabulary(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(vocabulary(v) for v in value)) if value else set()
    return set()


def cell_lines(page_words: list[dict], cell: tuple[float, float, float, float]) -> list[list[str]]:
    """The words of one table cell, line by line (top to bottom), from its page's words."""
    words = [w for w in page_words if w["x0"] >= cell[0] - 0.6 and w["x1"] <= cell[2] + 0.6
             and w["top"] >= cell[1] - 0.6 and w["bottom"] <= cell[3] + 0.6]
    lines: list[list[dict]] = []
    for w in sorted(words, key=lambda w: (round(w["top"]), w["x0"])):
        if lines and abs(lines[-1][0]["top"] - w["top"]) < 2:
            lines[-1].append(w)
        else:
            lines.append([w])
    return [[w["text"] for w in sorted(line, key=lambda w: w["x0"])] for line in lines]


def mid_word_breaks(doc: Any, tokens: set[str]) -> list[str]:
    """Line breaks inside a table cell of an open pdfplumber document that cut a word: the line ends
    in a letter or digit, the next starts with one, and the two run together are part of one word
    of the payload."""
    found = []
    long_tokens = [t for t in tokens if len(t) >= 4]
    for n, page in enumerate(doc.pages, 1):
        page_words = page.extract_words()  # once a page: each cell takes its own from them
        for tab in page.find_tables(LINES):
            for cell in (c for c in tab.cells if c is not None):
                lines = cell_lines(page_words, cell)
                for above, below in itertools.pairwise(lines):
                    a, b = above[-1], below[0]
                    if a[-1] in BREAK_AFTER or not (a[-1].isalnum() and b[0].isalnum()):
                        continue
                    if any(a + b in t for t in long_tokens):
                        found.append(f"page {n}: {a!r} / {b!r}")
    return found


def test_no_word_is_broken_mid_word_in_any_table_cell(doc, payload):
    tokens = vocabulary(payload) | {"0.5838-GDP"}
    assert mid_word_breaks(doc, tokens) == []


def test_the_break_check_sees_a_word_cut_mid_word(tmp_path):
    """The twin: reportlab's own wrapping of a long claim id in a narrow cell is flagged."""
    from reportlab.platypus import Paragraph, Table, TableStyle

    from dpaudit.reports.layout import build, styles
    cells = [[Paragraph("kl-rlhf/thm3-label-corrected", styles()["cell"]), Paragraph("x", styles()["cell"])],
             [Paragraph("y", styles()["cell"]), Paragraph("z", styles()["cell"])]]
    t = Table(cells, colWidths=[96, 40])  # reportlab cuts it "...correct" / "ed" (7 pt, 6 pt padding)
    t.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.4, "grey")]))
    path = tmp_path / "cut.pdf"
    path.write_bytes(build([t], "cut"))
    with pdfplumber.open(path) as cut:
        assert mid_word_breaks(cut, {"kl-rlhf/thm3-label-corrected"})


def header_deltas(doc: Any, seen: list[str] | None = None) -> list[tuple[int, str]]:
    """(page, header) of every table whose header names an eps column but not the delta it is at:
    one "delta = x" (a single delta), or "the row's delta" / "the claim's delta" with a delta per row
    (every such header is appended to ``seen``)."""
    bad = []
    for n, page in enumerate(doc.pages, 1):
        for tab in page.find_tables(LINES):
            head = " ".join(" ".join((c or "").split()) for c in tab.extract()[0])
            if "eps_lower" not in head and "eps_exact" not in head:
                continue
            if seen is not None:
                seen.append(head)
            single = set(re.findall(r"delta = (\S+)", head))
            per_row = "the row's delta" in head or "the claim's delta" in head
            if not ((len(single) == 1 and not per_row) or (per_row and not single)):
                bad.append((n, head))
    return bad


def test_every_table_states_its_one_delta_in_its_header(doc):
    heads: list[str] = []
    assert header_deltas(doc, heads) == []
    # align-alg2-swap: its scenario row at delta 0 (eps_exact inf) says so; its claims at 5e-07 say theirs
    assert any("delta = 0" in h for h in heads) and any("the row's delta" in h for h in heads)


def test_no_text_under_7_points(doc):
    small = {(n, round(c["size"], 2)) for n, page in enumerate(doc.pages, 1) for c in page.chars
             if c["size"] < MIN_POINTS - 0.01}
    assert small == set()


@pytest.fixture
def drawn(monkeypatch):
    """The matplotlib figures the report's plot functions draw, kept open for inspection."""
    figures = []
    real = plots.png

    def keep(fig, width, height):
        figures.append(fig)
        fig.canvas.draw()
        return b"", width, height
    monkeypatch.setattr(plots, "png", keep)
    yield figures
    monkeypatch.setattr(plots, "png", real)
    for fig in figures:
        plt.close(fig)


def printed_sizes(fig: Any) -> list[tuple[str, float]]:
    """(text, size in points as printed on the page) of every visible text of a figure: a figure
    wider than the frame is scaled down to it (dpaudit.reports.layout.figure)."""
    scale = min(1.0, WIDTH / (fig.get_figwidth() * 72))
    return [(t.get_text(), t.get_fontsize() * scale) for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip()]


def test_every_figure_prints_its_text_at_7_points_or_more(drawn, payload):
    by_scenario: dict[str, list] = {}
    for r in payload["records"]:
        by_scenario.setdefault(r["scenario"], []).append(r)
    multi = [s for s in payload["scenarios"] if s.get("kind") != "one-run"]
    rows = [(f"{r['scenario']}: {r['claim_id']}", r) for r in payload["records"]
            if r["claim_id"] and r.get("kind") != "one-run" and r["finding"] != "not-applicable"]
    plots.chain(rows)
    plots.convergence([s for s in multi if plots.looks(s) >= plots.MIN_LOOKS])
    meaningful = [(s, by_scenario[s["scenario"]]) for s in multi
                  if plots.tradeoff_meaningful(s, by_scenario[s["scenario"]])]
    assert meaningful
    plots.tradeoff(meaningful)
    onerun_plots.page_figure(next(s for s in payload["scenarios"] if s.get("kind") == "one-run"))
    assert len(drawn) == 4
    small = [(text, round(size, 2)) for fig in drawn for text, size in printed_sizes(fig) if size < MIN_POINTS - 0.01]
    assert small == []


def test_eps_zero_on_a_log_axis_sits_at_a_labelled_zero_past_a_break(drawn):
    rows = [("a: zero exact", {"epsilon_lower": 0.0, "epsilon_exact": 0.0, "epsilon_claim": 1.0, "finding": "holds"}),
            ("b: large", {"epsilon_lower": 90.0, "epsilon_exact": 120.0, "epsilon_claim": 200.0, "finding": "holds"})]
    plots.chain(rows)
    ax = drawn[0].axes[0]
    assert ax.get_xscale() == "log"
    labels = {t.get_text(): t.get_position()[0] for t in ax.get_xticklabels() if t.get_text()}
    assert "0" in labels
    zero = labels["0"]
    positive = min(v for k, v in labels.items() if k != "0")
    left = ax.get_xlim()[0]
    assert left < zero < positive  # not at the axis' edge, and left of every positive tick
    exact = [line for line in ax.lines if line.get_marker() == "o" and len(line.get_xdata())]
    assert exact and min(exact[0].get_xdata()) == pytest.approx(zero)


def test_the_errata_appendix_typesets_its_formulas(doc):
    start = next(i for i, p in enumerate(doc.pages) if "Appendix A: errata" in (p.extract_text() or ""))
    pages = doc.pages[start:]
    text = " ".join(" ".join((p.extract_text() or "").split()) for p in pages)
    for ascii_math in ("Σ_D", "^{", "_{", "P_lower", "Q_upper", "eps_lower =", "(epsilon, delta)", "- delta"):
        assert ascii_math not in text, ascii_math
    assert "log((P" in text and "δ) / Q" in text
    # the scripts are set smaller than their line and off its baseline
    scripts = [c for p in pages for c in p.chars if c["text"] in "D" and round(c["size"], 2) == MIN_POINTS]
    assert scripts


def test_a_run_of_one_run_scenarios_alone_has_no_sampling_budget(tmp_path):
    alone = merged(load("default"), [honest()], lambda name: False)
    path = tmp_path / "onerun.pdf"
    reports.write_pdf(alone, path, families=report_families())
    with pdfplumber.open(path) as doc:
        text = " ".join(" ".join((p.extract_text() or "").split()) for p in doc.pages)
    assert "samples per side" not in text and "Budget:" not in text
    assert "one training run per one-run scenario" in text
