"""Section 3 of the report: one section per family, its scenarios grouped by mechanism.

Each family gets one table of its scenarios (per mechanism: parameters, pair, samples, eps_lower,
eps_exact and the witness event), then its figures where they say something: the chain
eps_lower <= eps_exact <= eps_claim of every applicable claim check, the convergence of eps_lower
over the scenarios with at least three looks (one line says which have fewer), and the f-DP
trade-off panels of the scenarios where a Gaussian trade-off curve is a meaningful description.
"""

from __future__ import annotations

import math
from typing import Any

from reportlab.platypus import Flowable

from dpaudit.engine.verdicts import HOLDS, NOT_APPLICABLE, NOT_REPRODUCIBLE, UNVERIFIED_HOLDS
from dpaudit.reports import plots
from dpaudit.reports.layout import figure, gap, heading, keep, para, section_break, table, text
from dpaudit.reports.onerun_page import is_onerun
from dpaudit.reports.text import caught_note, fmt, value_views_note
from dpaudit.reports.wording import (
    OTHER_SECTION,
    REFUTED,
    USER_SECTION,
    Families,
    claim_name,
    count,
    family_of,
    mechanism_label,
    params_label,
    sequential_parts,
)

Groups = dict[str, list[dict[str, Any]]]
HOLDING = (HOLDS, UNVERIFIED_HOLDS)
CHAIN_ROWS, LINES, PANELS = 40, 16, 9  # per figure: each fits one page, and 16 lines keep distinct styles


def grouped(payload: dict[str, Any], families: Families, *, user: bool = False) -> list[tuple[str, str, Groups]]:
    """(family, about, {mechanism: scenarios}) of the multi-run scenarios, in the order the families
    first appear in the run (``user``: a user's run, no family: see :func:`family_of`)."""
    by_scenario = _records_by_scenario(payload)
    out: dict[str, tuple[str, Groups]] = {}
    for sc in payload["scenarios"]:
        if is_onerun(sc):  # a one-run scenario has its own page (dpaudit.reports.onerun_page)
            continue
        name, about = family_of(sc, by_scenario.get(sc["scenario"], []), families, user=user)
        out.setdefault(name, (about, {}))[1].setdefault(sc["mechanism"], []).append(sc)
    return [(name, about, groups) for name, (about, groups) in out.items()]


def _records_by_scenario(payload: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for r in payload["records"]:
        found.setdefault(r["scenario"], []).append(r)
    return found


def _gdp(sc: dict[str, Any]) -> str:
    """The mu-GDP fit where a Gaussian trade-off curve is meaningful (continuous outputs, three or
    more tests), labelled with its assumption; nothing for discrete outputs."""
    gdp = sc["estimate"].get("gdp")
    if not gdp or sc.get("distributions") or gdp.get("points", 0) < 3:
        return ""
    if not gdp["consistent"]:
        return " mu-GDP: the trade-off points reject a Gaussian trade-off curve (no mu reported)."
    upper = fmt(gdp["upper"]) if gdp.get("upper") is not None else "-"
    return (f" mu-GDP fit, ASSUMING a Gaussian trade-off curve: mu = {fmt(gdp['mu'])} [{fmt(gdp['lower'])}, "
            f"{upper}] from {gdp['points']} tests.")


def _common(group: list[dict[str, Any]]) -> dict[str, Any]:
    """The parameters every scenario of a mechanism's group shares (said once, in its heading)."""
    first = group[0].get("params") or {}
    return {k: v for k, v in first.items() if all((sc.get("params") or {}).get(k, None) == v for sc in group)}


def delta_of(sc: dict[str, Any]) -> float:
    """The delta of a scenario's table row: its first bound's (every number of the row is at it)."""
    return float(sc["estimate"]["bounds"][0]["delta"])


def exact_at(sc: dict[str, Any], delta: float) -> Any:
    """The pair's exact epsilon at ``delta`` (None where it was not computed there): the scenario's
    ``exact`` list holds one per delta; ``epsilon_exact`` is its first."""
    listed = sc.get("exact")
    if listed is None:
        return sc.get("epsilon_exact")
    return next((e["epsilon"] for e in listed if e["delta"] == delta), None)


def by_delta(group: list[dict[str, Any]]) -> dict[float, list[dict[str, Any]]]:
    """A mechanism's scenarios split by the delta of their rows (one table per delta, said in its
    header), in the order the deltas first appear."""
    out: dict[float, list[dict[str, Any]]] = {}
    for sc in group:
        out.setdefault(delta_of(sc), []).append(sc)
    return out


def _row(sc: dict[str, Any], common: dict[str, Any]) -> list[str]:
    first = sc["estimate"]["bounds"][0]
    notes = _gdp(sc)
    if not sc.get("seeded", True):
        notes += f" {NOT_REPRODUCIBLE.capitalize()}."
    sequential = sc["estimate"].get("sequential")
    if sequential and sequential_parts(sequential)[1]:
        notes += f" Sequential rule: {sequential_parts(sequential)[1]}."
    own = params_label({k: v for k, v in (sc.get("params") or {}).items() if k not in common})
    name = f"<b>{text(sc['scenario'])}</b>" + (f"<br/>{text(own)}" if own else "")
    samples = count(sc["samples"]) + ("" if not sc["estimate"].get("sequential") else " (sequential)")
    return [name, f"{text(sc['pair'])} ({text(sc['relation'])})", samples,
            fmt(first["epsilon_lower"]), fmt(exact_at(sc, delta_of(sc))),
            text(first["witness"]) + text(notes)]


def _table(group: list[dict[str, Any]], common: dict[str, Any], delta: float,
           by_scenario: dict[str, list[dict[str, Any]]]) -> Flowable:
    """The table of a mechanism's scenarios whose rows are at ``delta``: it says so in its header
    (the claims table gives each claim's numbers at the claim's own delta, which may differ)."""
    at = f"at delta = {fmt(delta)}"
    head = ["scenario (its own parameters)", "neighbouring pair (relation)", "samples per side", f"eps_lower {at}",
            f"eps_exact {at}", f"witness event {at} (selection split, then the estimation counts)"]
    # points; the number columns fit "eps_lower" and "1.744e+04", the pair column an 18-digit coordinate
    widths = [100, 90, 40, 46, 46, 193]
    refuted = [any(r["finding"] in REFUTED for r in by_scenario.get(sc["scenario"], [])) for sc in group]
    return table(head, [_row(sc, common) for sc in group], widths, shaded=refuted, align_right=[2, 3, 4])


def _chain_rows(scenarios: list[dict[str, Any]], by_scenario: dict[str, list[dict[str, Any]]], user: bool
                ) -> list[tuple[str, dict[str, Any]]]:
    rows = []
    for sc in scenarios:
        for r in by_scenario.get(sc["scenario"], []):
            if r["finding"] == NOT_APPLICABLE or r["claim_id"] is None:
                continue
            label = f"{sc['scenario']}: {claim_name(r)}"
            rows.append((label.replace("$", r"\$"), r))
    return rows


def _chunks(items: list[Any], most: int) -> list[list[Any]]:
    """``items`` in the fewest runs of at most ``most``, of near-equal lengths."""
    if not items:
        return []
    size = math.ceil(len(items) / math.ceil(len(items) / most))
    return [items[i:i + size] for i in range(0, len(items), size)]


def _figures(scenarios: list[dict[str, Any]], by_scenario: dict[str, list[dict[str, Any]]], user: bool
             ) -> list[Flowable]:
    """The chain (at most ``CHAIN_ROWS`` rows a figure, so one fits a page), the convergence (at most
    ``LINES`` lines a figure, each told apart by style), and the trade-off panels (``PANELS`` a figure)."""
    out: list[Flowable] = []
    rows = _chain_rows(scenarios, by_scenario, user)
    scale = plots.chain_scale(rows)
    for chunk in _chunks(rows, CHAIN_ROWS):
        out.append(figure(*plots.chain(chunk, scale)))
    converging = [{**sc, "scenario": sc["scenario"].replace("$", r"\$")} for sc in scenarios
                  if plots.looks(sc) >= plots.MIN_LOOKS]
    short = [sc["scenario"] for sc in scenarios if plots.looks(sc) < plots.MIN_LOOKS]
    for chunk in _chunks(converging, LINES):
        out.append(figure(*plots.convergence(chunk)))
    if short:
        out.append(para(f"No convergence plot for {text(', '.join(short))} (fewer than {plots.MIN_LOOKS} looks "
                        "at the samples: a trend needs three points).", "small"))
    meaningful = [({**sc, "scenario": sc["scenario"].replace("$", r"\$")}, by_scenario.get(sc["scenario"], []))
                  for sc in scenarios if plots.tradeoff_meaningful(sc, by_scenario.get(sc["scenario"], []))]
    for i, chunk in enumerate(_chunks(meaningful, PANELS)):
        drawn = figure(*plots.tradeoff(chunk))
        out.append(drawn if i else keep(
            para("The f-DP view where a claim on a continuous output is refuted: the trade-off tests (and their "
                 "complements) that refute a claim no other test refutes, as the privacy loss log(TPR / FPR) "
                 "each one's confidence box certifies; a test above a "
                 "claim's curve log(e^eps + delta / FPR) refutes it. G_mu is the fitted Gaussian curve (an "
                 "assumption; eps_lower assumes nothing).", "small"), drawn))
    return out


CAUGHT_MODEL = ("Could have caught: the smallest leak each check that holds refutes 9 times in 10, under a "
                "stated model: its witness event fixed, the event's probability on the other side at its "
                "estimate q (the Clopper-Pearson upper bound where it was never seen), on the favoured side at "
                "q*e^eps + delta, counted on half the estimation samples (the charge for choosing the event on a "
                "split), the record's joint test at power 0.9; and the samples per side that catch twice the "
                "claim as often. results.json keeps each check's model with its numbers (its key detectable).")


def _caught(scenarios: list[dict[str, Any]], by_scenario: dict[str, list[dict[str, Any]]], *, with_model: bool
            ) -> list[Flowable]:
    """One table of what each claim that holds could have caught (the record's ``detectable``), its
    rows only claims that hold (never beside a refuted one); the model said once in the report
    (``with_model``), not once per claim."""
    rows = [[f"<b>{text(sc['scenario'])}</b>", text(claim_name(r)), text(r["finding"]),
             text(note)]
            for sc in scenarios for r in by_scenario.get(sc["scenario"], [])
            if r["finding"] in HOLDING and (note := caught_note(r, model=False)) is not None]
    if not rows:
        return []
    head = heading("What the claims that hold could have caught", "h2")
    drawn = table(["scenario", "claim", "verdict", "what it could have caught (9 times in 10)"], rows,
                  [100, 110, 60, 245])
    model = [para(CAUGHT_MODEL, "small")] if with_model else []
    # a short table stays with its heading; a long one flows on under its repeated header
    flow: list[Flowable] = [keep(head, *model, drawn)] if len(rows) <= 8 else [head, *model, drawn]
    return flow


def sections(payload: dict[str, Any], user: bool, families: Families) -> list[Flowable]:
    """Every family's section, each on a new page unless most of the page is left for it."""
    by_scenario = _records_by_scenario(payload)
    story: list[Flowable] = []
    said_model = False  # the could-have-caught model is said once, at the first table of it
    # A user's own claims are said in the user's words: no family's sources, whatever the mechanism.
    for name, about, groups in grouped(payload, families, user=user):
        story.append(section_break())
        if name == USER_SECTION:
            title = USER_SECTION if len(groups) > 1 else "Your mechanism"
        else:
            title = name if name == OTHER_SECTION else f"Family {name}"
        story.append(heading(title))
        if about:
            story.append(para(text(about[0].upper() + about[1:]) + "."))
        scenarios = [sc for group in groups.values() for sc in group]
        for mechanism, group in groups.items():
            common = _common(group)
            label = mechanism_label(mechanism, common)
            intro = heading(f"Mechanism {label}" + (f": {len(group)} scenarios" if len(group) > 1 else ""), "h2")
            for delta, rows in by_delta(group).items():
                drawn = _table(rows, common, delta, by_scenario)
                story += [keep(intro, drawn)] if len(rows) <= 3 else [intro, drawn]
                intro = gap(4)
            # A real-valued output whose doubles decided: the mechanism's verdict as mathematics beside it.
            for sc in group:
                for r in by_scenario.get(sc["scenario"], []):
                    note = value_views_note(r)
                    if note is not None:
                        story.append(para(text(f"{sc['scenario']}, {r['claim_id'] or 'no claim'}: {note}.")))
        caught = _caught(scenarios, by_scenario, with_model=not said_model)
        said_model = said_model or bool(caught)
        story += caught
        figures = _figures(scenarios, by_scenario, user)
        title = heading("Figures" if len(scenarios) > 1 else "Figures of the scenario", "h2")
        story += [keep(title, figures[0]), *figures[1:]] if figures else []
    return story
