"""The report's size, bounded on any legal results file: full detail for the run's first scenarios,
one line each for the next ones, and counts for the rest.

A results file may hold up to 20,000 records; laying all of them out in full (a table row per
scenario with its witness event, a caught note per claim, a page per one-run game, an appendix entry
per erratum) once took more than 20 minutes and would print thousands of pages.  The report gives
every section its first :data:`DETAIL_SCENARIOS` multi-run and :data:`DETAIL_ONE_RUN` one-run
scenarios in full, the claims table its first :data:`CLAIM_ROWS` rows (refutations first), the
errata their first :data:`ERRATA_ENTRIES` entries, and a section that summarises the other
scenarios in one line each (at most :data:`COMPACT_ROWS`) and counts the rest; each place that
leaves something out says so and where it is (results.json, ``dpaudit summary``).  Every step is
one pass over the records (grouping by scenario), so the time grows linearly with the file.  The
default suite (44 scenarios, 95 claim checks) is far below every bound: its report is unchanged.
"""

from __future__ import annotations

from typing import Any

from reportlab.platypus import Flowable

from dpaudit.engine.verdicts import OK_OUTCOMES, outcome
from dpaudit.reports.layout import heading, para, section_break, table, text
from dpaudit.reports.text import fmt
from dpaudit.reports.wording import REFUTED

DETAIL_SCENARIOS = 60  # multi-run scenarios in full detail (families' tables, figures, caught tables)
DETAIL_ONE_RUN = 10  # one-run scenarios with a page of their own
CLAIM_ROWS = 200  # rows of the claims table
ERRATA_ENTRIES = 40  # errata in the summary's table and in the appendix
COMPACT_ROWS = 400  # scenarios past the detailed ones, one line each; past these, counts only
ELSEWHERE = "Every number is in results.json (and in `dpaudit summary`)."


def _is_onerun(item: dict[str, Any]) -> bool:
    return item.get("kind") == "one-run"


def split(payload: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the payload of the scenarios shown in full, the scenarios left out of it, in the run's order):
    the first :data:`DETAIL_SCENARIOS` multi-run and :data:`DETAIL_ONE_RUN` one-run scenarios with
    their records.  The payload itself when nothing is left out."""
    multi = one = 0
    shown: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for sc in payload["scenarios"]:
        if _is_onerun(sc):
            one += 1
            (shown if one <= DETAIL_ONE_RUN else rest).append(sc)
        else:
            multi += 1
            (shown if multi <= DETAIL_SCENARIOS else rest).append(sc)
    if not rest:
        return payload, []
    names = {sc["scenario"] for sc in shown}
    records = [r for r in payload["records"] if r["scenario"] in names]
    return {**payload, "scenarios": shown, "records": records}, rest


def left_out(count: int, what: str) -> str:
    """The sentence that says what a bounded table leaves out and where it is."""
    return f"{count} more {what} {'is' if count == 1 else 'are'} not shown here. {ELSEWHERE}"


def _line(sc: dict[str, Any], records: list[dict[str, Any]]) -> list[str]:
    refuted = sum(r["finding"] in REFUTED for r in records)
    unexpected = sum(outcome(r) not in OK_OUTCOMES for r in records)
    bounds = (sc.get("estimate") or {}).get("bounds") or sc.get("bounds") or [{}]
    kind = "one run" if _is_onerun(sc) else "multi-run"
    return [text(sc["scenario"]), text(f"{sc['mechanism']} ({kind})"), str(len(records)), str(refuted),
            fmt(bounds[0].get("epsilon_lower")), str(unexpected)]


def _detailed(payload: dict[str, Any]) -> str:
    """Which scenarios the detailed sections hold, in words ("60 multi-run and 10 one-run scenarios")."""
    one = sum(_is_onerun(sc) for sc in payload["scenarios"])
    parts = [f"{min(len(payload['scenarios']) - one, DETAIL_SCENARIOS)} multi-run"] + \
        ([f"{min(one, DETAIL_ONE_RUN)} one-run"] if one else [])
    return " and ".join(parts) + " scenarios"


def section(rest: list[dict[str, Any]], payload: dict[str, Any]) -> list[Flowable]:
    """The scenarios :func:`split` left out of the detailed sections: one line each for the first
    :data:`COMPACT_ROWS`, and counts of the others (nothing when none is left out)."""
    if not rest:
        return []
    names = {sc["scenario"] for sc in rest}
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for r in payload["records"]:
        if r["scenario"] in names:
            by_scenario.setdefault(r["scenario"], []).append(r)
    shown = rest[:COMPACT_ROWS]
    flow: list[Flowable] = [
        section_break(), heading(f"Summarised: {len(rest)} more scenarios"),
        para(f"This run holds {len(payload['scenarios'])} scenarios: the sections above give the first "
             f"{_detailed(payload)} in full; the next {len(shown)} are summarised here, one line each (eps_lower "
             "at the scenario's first delta)"
             + (f", and the last {len(rest) - len(shown)} are counted only" if len(rest) > len(shown) else "")
             + f". {ELSEWHERE}"),
        table(["scenario", "mechanism", "claim checks", "refuted", "eps_lower", "not as expected"],
              [_line(sc, by_scenario.get(sc["scenario"], [])) for sc in shown], [130, 150, 50, 45, 55, 60],
              shaded=[any(r["finding"] in REFUTED for r in by_scenario.get(sc["scenario"], [])) for sc in shown],
              align_right=[2, 3, 4, 5]),
    ]
    counted = rest[len(shown):]
    if counted:
        records = [r for sc in counted for r in by_scenario.get(sc["scenario"], [])]
        unexpected = sum(outcome(r) not in OK_OUTCOMES for r in records)
        flow.append(para(f"The other {len(counted)} scenarios: {len(records)} claim checks, "
                         f"{sum(r['finding'] in REFUTED for r in records)} refuted, {unexpected} not as expected. "
                         f"{ELSEWHERE}"))
    return flow
