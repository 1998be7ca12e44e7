"""The report of a large results file stays bounded (issue 41, item 7): a legal file of many
scenarios (a real run's, each scenario repeated under a new name, as a sweep of many seeds would
give) gets its first scenarios in full, the next ones one line each, the rest counted, and each
bounded part says what it left out and where it is.  The bounds are lowered here so that a small
file crosses all of them; a twin without the bounds shows the page count would otherwise grow."""

import copy
import gzip
import json
from pathlib import Path

import pdfplumber
import pytest

from dpaudit.cli import main
from dpaudit.reports import bounded

DATA = Path(__file__).resolve().parent / "data" / "report"
COPIES = 6


def repeated(copies: int) -> dict:
    """The saved default run (44 scenarios, 92 claim checks) with each scenario ``copies`` times, each
    copy renamed (a legal file: unique names, every record's scenario saved, the counts consistent)."""
    base = json.loads(gzip.decompress((DATA / "default-results.json.gz").read_bytes()))
    scenarios, records = [], []
    for i in range(copies):
        for sc in base["scenarios"]:
            scenarios.append({**copy.deepcopy(sc), "scenario": f"{sc['scenario']}-{i}"})
        for r in base["records"]:
            records.append({**copy.deepcopy(r), "scenario": f"{r['scenario']}-{i}"})
    return {**base, "scenarios": scenarios, "records": records, "scenarios_planned": len(scenarios)}


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    path = tmp_path_factory.mktemp("large") / "results.json"
    path.write_text(json.dumps(repeated(COPIES)))
    return path


def pages_and_text(pdf: Path) -> tuple[int, str]:
    with pdfplumber.open(pdf) as doc:
        return len(doc.pages), " ".join(" ".join((p.extract_text() or "").split()) for p in doc.pages)


def small_bounds(monkeypatch, scale: int = 1) -> None:
    for name, value in (("DETAIL_SCENARIOS", 12), ("DETAIL_ONE_RUN", 1), ("CLAIM_ROWS", 30),
                        ("ERRATA_ENTRIES", 4), ("COMPACT_ROWS", 60)):
        monkeypatch.setattr(bounded, name, value * scale)


def test_a_large_file_gets_a_bounded_report_that_says_what_it_summarised(large, tmp_path, monkeypatch):
    small_bounds(monkeypatch)
    assert main(["report", str(large), "-o", str(tmp_path / "r.pdf")]) == 0
    pages, text = pages_and_text(tmp_path / "r.pdf")
    scenarios = 44 * COPIES
    assert pages <= 22, pages
    assert f"Summarised: {scenarios - 12} more scenarios" in text
    assert f"This run holds {scenarios} scenarios: the sections above give the first 12 multi-run scenarios in full; " \
           f"the next 60 are summarised here, one line each" in text
    assert f"the last {scenarios - 12 - 60} are counted only" in text
    assert f"The other {scenarios - 12 - 60} scenarios: " in text
    assert f"{92 * COPIES - 30} more claim checks are not shown here. Every number is in results.json" in text
    assert "more refuted claims are not shown here" in text and "more entries are not shown here" in text


@pytest.mark.slow  # two reports of 264 scenarios
def test_without_the_bounds_the_same_file_would_print_many_more_pages(large, tmp_path, monkeypatch):
    """The twin: bounds ten times larger (past this file's size in every part but the claims table)."""
    small_bounds(monkeypatch)
    assert main(["report", str(large), "-o", str(tmp_path / "small.pdf")]) == 0
    small_bounds(monkeypatch, scale=10)
    assert main(["report", str(large), "-o", str(tmp_path / "large.pdf")]) == 0
    assert pages_and_text(tmp_path / "large.pdf")[0] >= 2 * pages_and_text(tmp_path / "small.pdf")[0]


def test_the_default_suite_is_within_every_bound():
    """The built-in default suite's report is not summarised (its 45 scenarios, 95 claim checks)."""
    assert bounded.DETAIL_SCENARIOS >= 45 and bounded.CLAIM_ROWS >= 95 and bounded.ERRATA_ENTRIES >= 19
