"""The PDF audit report (matplotlib's PDF backend; no LaTeX).

Built from saved results alone, so it can be regenerated, restyled or merged later:
a cover page with every claim (violations first), one page per scenario, an errata
appendix for printed claims the audit refutes, and a reproducibility block.  The same
results give a byte-identical file: no timestamp enters the bytes except the run's own.
"""

from __future__ import annotations

import io
import os
import textwrap
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.backends.backend_pdf import PdfPages

from dpaudit.engine.files import write_atomic
from dpaudit.engine.results import (
    HOLDS,
    NO_CLAIM,
    NOT_APPLICABLE,
    NOT_REPRODUCIBLE,
    REFUTED_EMPIRICAL,
    REFUTED_WHITE_BOX,
    UNVERIFIED_HOLDS,
    outcome,
)
from dpaudit.reports import plots
from dpaudit.reports.text import fmt

PAGE = (8.27, 11.69)  # A4 portrait, inches
ROWS_PER_PAGE = 34
STYLE = {"pdf.fonttype": 42, "font.family": "DejaVu Sans", "font.size": 8, "axes.titleweight": "bold",
         "svg.hashsalt": "dpaudit"}
VIOLET = "#fdecea"


def _page(pdf: PdfPages, title: str) -> plt.Figure:
    fig = plt.figure(figsize=PAGE)
    fig.text(0.06, 0.965, title, fontsize=13, weight="bold", va="top")
    fig.text(0.94, 0.02, f"page {pdf.get_pagecount() + 1}", fontsize=7, ha="right", color="#555555")
    fig.text(0.06, 0.02, "dpaudit report", fontsize=7, color="#555555")
    return fig


def _wrap(text: str, width: int = 110) -> str:
    return "\n".join(textwrap.fill(line, width) if line else "" for line in text.split("\n"))


REFUTED = (REFUTED_EMPIRICAL, REFUTED_WHITE_BOX)
# Cover order: refutations first, then what holds, then what does not apply.
RANK = {f: i for i, f in enumerate((REFUTED_EMPIRICAL, REFUTED_WHITE_BOX, UNVERIFIED_HOLDS, HOLDS, NOT_APPLICABLE,
                                    NO_CLAIM))}


def _sorted_records(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=lambda r: (RANK[r["finding"]], r["scenario"], r["claim_id"] or ""))


def _status_label(r: dict[str, Any]) -> str:
    """The claim's registry status as the table shows it: corrected statements and references are
    upper bounds, and a vacuous corrected statement says so."""
    status = r.get("claim_status")
    if status is None:
        return "user claim" if r.get("claim_id") else "-"
    if status == "corrected":
        return "corrected (vacuous)" if r.get("claim_vacuous") else "corrected upper bound"
    if status == "reference":
        return "tight reference"
    return status


def _cover(pdf: PdfPages, payload: dict[str, Any]) -> None:
    records = _sorted_records(payload["records"])
    counts = {f: sum(r["finding"] == f for r in records) for f in RANK}
    complete = payload.get("complete", True)
    audited = (payload.get("suite") and f"built-in suite '{payload['suite']}'") or "scenarios of the command below"
    lines = [
        f"What was audited: {audited}: {len(payload['scenarios'])} scenarios, {len(records)} claim checks.",
        f"When: run started {payload.get('started', '?')} (UTC), {fmt(payload.get('seconds'))} s of wall time.",
        f"With: dpaudit {payload.get('dpaudit_version', '?')}, seed {payload['seed']}, "
        f"budget {payload['samples']} samples per side and scenario, confidence {payload['confidence']} per bound.",
        f"Verdicts: {counts[REFUTED_EMPIRICAL]} refuted from the samples, {counts[REFUTED_WHITE_BOX]} refuted by the "
        f"white box (exact loss) only, {counts[HOLDS]} hold at this budget, {counts[UNVERIFIED_HOLDS]} not refuted "
        f"but unverified, {counts[NOT_APPLICABLE]} not applicable; "
        + ("every verdict as expected." if payload.get("as_expected") else "SOME VERDICTS NOT AS EXPECTED."),
        "Refuted (empirical) means the claim is false with at least the stated confidence: the Clopper-Pearson lower "
        "bound on epsilon exceeds it, from samples of the mechanism alone. Refuted (white box) means the exact "
        "privacy loss of the pair, computed from our model of the mechanism, exceeds it. 'Holds at this budget' is "
        "not a proof; its slack is eps_claim - eps_lower. An unverified claim is one whose source's argument does "
        "not establish it; not refuting it does not make it true.",
    ]
    sources = payload.get("documents") or {}
    if sources:
        lines.append("Sources: " + "  ".join(f"[{key}] {ref}" for key, ref in sorted(sources.items())))
    chunks = [records[i:i + ROWS_PER_PAGE] for i in range(0, len(records), ROWS_PER_PAGE)] or [[]]
    for page_no, chunk in enumerate(chunks):
        fig = _page(pdf, "dpaudit: differential-privacy audit report" if page_no == 0 else "Claims (continued)")
        top = 0.93
        if page_no == 0:
            if not complete:
                fig.text(0.06, top, f"PARTIAL RESULTS: the run was interrupted after "
                         f"{len(payload['scenarios'])} of {payload.get('scenarios_planned', '?')} scenarios.",
                         fontsize=10, color=plots.RED, weight="bold", va="top")
                top -= 0.025
            fig.text(0.06, top, _wrap("\n".join(lines), 120), fontsize=8, va="top", linespacing=1.5)
            top -= 0.17 + 0.012 * len(sources)
            fig.text(0.06, top, "Every claim (refutations first)", fontsize=10, weight="bold", va="top")
            top -= 0.015
        _claims_table(fig, chunk, top)
        pdf.savefig(fig)
        plt.close(fig)
    violations = [r for r in records if r["finding"] in REFUTED]
    per_page = 10
    for i in range(0, len(violations), per_page):
        fig = _page(pdf, "What each refutation means" + (" (continued)" if i else ""))
        text = "\n\n".join(_meaning(r) for r in violations[i:i + per_page])
        fig.text(0.06, 0.93, _wrap(text, 115), fontsize=7.5, va="top", linespacing=1.4)
        pdf.savefig(fig)
        plt.close(fig)


def _claims_table(fig: plt.Figure, rows: list[dict[str, Any]], top: float) -> None:
    if not rows:
        fig.text(0.06, top - 0.02, "(no claims)", fontsize=8, va="top")
        return
    height = 0.021 * (len(rows) + 1)
    ax = fig.add_axes([0.04, top - height, 0.92, height])
    ax.set_axis_off()
    head = ["claim id", "scenario", "status", "delta", "eps_claim", "eps_lower", "eps_exact", "verdict", "outcome"]
    cells = [[r["claim_id"] or "-", r["scenario"], _status_label(r), fmt(r["delta"]), fmt(r["epsilon_claim"]),
              fmt(r["epsilon_lower"]), fmt(r["epsilon_exact"]), r["finding"], outcome(r)] for r in rows]
    table = ax.table(cellText=cells, colLabels=head, loc="upper left", cellLoc="left",
                     colWidths=[0.17, 0.15, 0.11, 0.055, 0.06, 0.06, 0.06, 0.15, 0.175])
    table.auto_set_font_size(False)
    table.set_fontsize(5.6)
    table.scale(1, 1.25)
    for (i, _), cell in table.get_celld().items():
        cell.set_edgecolor("#bbbbbb")
        if i == 0:
            cell.set_facecolor("#e8eef5")
            cell.get_text().set_weight("bold")
        elif rows[i - 1]["finding"] in REFUTED:
            cell.set_facecolor(VIOLET)


def _cite(r: dict[str, Any], documents: dict[str, str]) -> str:
    """Where a claim comes from: its document's full reference and the place in it."""
    doc = r.get("claim_document")
    if not doc:
        return r["claim_source"]
    where = f", {r['claim_where']}" if r.get("claim_where") else ""
    return f"{documents.get(doc, doc)}{where}"


def _meaning(r: dict[str, Any]) -> str:
    known = (" This is a known erratum of the source, caught as expected."
             if r.get("expected_verdict") in ("violation", "exact-violation") else " This refutation was not expected.")
    where = f"{r['claim_id']} ({r['claim_source']}): on the pair '{r['pair']}' "
    false = f"so the claimed epsilon = {fmt(r['epsilon_claim'])} is false for the {r['relation']} relation."
    if r["finding"] == REFUTED_WHITE_BOX:
        return (where + f"the exact privacy loss (white box) is epsilon = {fmt(r['epsilon_exact'])} at delta = "
                f"{fmt(r['delta'])}, {false} The empirical bound, {fmt(r['epsilon_lower'])}, does not reach it at "
                f"this sample budget." + known)
    return (where + f"the audit certifies epsilon >= {fmt(r['epsilon_lower'])} at delta = {fmt(r['delta'])} with "
            f"confidence {r['confidence']}, " + false + known)


def _gdp_line(gdp: dict[str, Any] | None) -> str:
    """The μ-GDP fit, labelled with its assumption (the assumption-free result is eps_lower)."""
    if not gdp:
        return ""
    if not gdp["consistent"]:
        return "\nmu-GDP: the trade-off points reject a Gaussian trade-off curve (no mu reported)."
    return (f"\nmu-GDP fit, ASSUMING a Gaussian trade-off curve: mu = {fmt(gdp['mu'])} "
            f"[{fmt(gdp['lower'])}, {fmt(gdp['upper'])}] from {gdp['points']} tests (eps_lower assumes nothing).")


def _scenario_page(pdf: PdfPages, scenario: dict[str, Any], records: list[dict[str, Any]]) -> None:
    fig = _page(pdf, f"Scenario {scenario['scenario']}")
    params = ", ".join(f"{k}={v}" for k, v in scenario.get("params", {}).items() if k != "name")
    first = scenario["estimate"]["bounds"][0]
    head = (f"Mechanism {scenario['mechanism']} ({params}); relation {scenario['relation']}.\n"
            f"Neighbouring pair: {scenario['pair']}.\n"
            f"{scenario['samples']} samples per side (selection {scenario['estimate']['selection_samples']}), "
            f"seed {scenario['seed']}, confidence {scenario['confidence']}, {fmt(scenario['seconds'])} s."
            + ("" if scenario.get("seeded", True) else f"\n{NOT_REPRODUCIBLE.capitalize()}: the seed does not fix "
                                                       "its outputs.")
            + (f"\nSequential: {scenario['estimate']['sequential']}" if scenario['estimate'].get('sequential') else "")
            + _gdp_line(scenario['estimate'].get('gdp')))
    fig.text(0.06, 0.935, _wrap(head, 120), fontsize=7.5, va="top", linespacing=1.4)
    with_profile = plots.has_profile(scenario, records)
    grid = fig.add_gridspec(4 if with_profile else 3, 2, left=0.1, right=0.95, top=0.84, bottom=0.06, hspace=0.55,
                            wspace=0.3, height_ratios=[1.1, 1.0, 1.0, 1.0] if with_profile else [1.0, 1.0, 1.0])
    plots.chain(fig.add_subplot(grid[0, :]), records, scenario.get("epsilon_sup"))
    witness_ax = fig.add_subplot(grid[1, 0])
    witness_ax.set_axis_off()
    witness_ax.set_title("The witness", fontsize=9)
    witness_ax.text(0, 1, _wrap(first["witness"], 62), fontsize=6.8, va="top", transform=witness_ax.transAxes,
                    linespacing=1.35)
    plots.distributions(fig.add_subplot(grid[1, 1]), scenario)
    plots.convergence(fig.add_subplot(grid[2, 0]), scenario, records)
    plots.tradeoff(fig.add_subplot(grid[2, 1]), scenario, records)
    if with_profile:
        plots.profile(fig.add_subplot(grid[3, :]), scenario, records)
    pdf.savefig(fig)
    plt.close(fig)


def _errata_entries(records: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Printed claims refuted by this run, one entry per distinct claim and witness pair (the
    records of every scenario that refutes it on that pair, strongest refutation first).  A claim
    outside its premise is never here: that is a misuse, not an erratum of the source."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        if r["claim_kind"] == "printed" and r["finding"] in REFUTED:
            groups.setdefault((r["claim_id"], r["pair"]), []).append(r)
    entries = []
    for rows in groups.values():
        rows.sort(key=lambda r: (RANK[r["finding"]], -(_number(r["epsilon_lower"]) - _number(r["epsilon_claim"]))))
        entries.append(rows)
    return sorted(entries, key=lambda rows: (rows[0]["claim_id"], rows[0]["pair"]))


def _number(value: Any) -> float:
    return float(value) if value is not None else 0.0


def _errata(pdf: PdfPages, payload: dict[str, Any]) -> None:
    entries = _errata_entries(payload["records"])
    if not entries:
        return
    documents = payload.get("documents") or {}
    blocks = []
    for rows in entries:
        r = rows[0]
        scenarios = sorted({x["scenario"] for x in rows})
        fixes = [c for c in payload["records"] if c["scenario"] in scenarios and c["claim_kind"] == "corrected"]
        fixes = list({c["claim_id"]: c for c in fixes}.values())
        holding = [c for c in payload["records"] if c["scenario"] == r["scenario"] and c["finding"] == HOLDS
                   and c["claim_kind"] != "corrected"]
        fix = "; ".join(f"{c['claim_id']}: ({fmt(c['epsilon_claim'])}, {fmt(c['delta'])}), {c['finding']} "
                        f"(eps_lower {fmt(c['epsilon_lower'])}, eps_exact {fmt(c['epsilon_exact'])})"
                        + (" - VACUOUS: true but says nothing useful here" if c.get("claim_vacuous") else
                           " - an upper bound") for c in fixes)
        if not fix and holding:
            fix = "none shipped; claims that hold on this pair: " + "; ".join(
                f"{c['claim_id']} ({fmt(c['epsilon_claim'])}, {fmt(c['delta'])})" for c in holding)
        refuting = [x for x in rows if x["finding"] == REFUTED_EMPIRICAL]
        smallest = min(refuting, key=lambda x: x["samples"]) if refuting else None
        how = (f"from the samples alone, with {smallest['samples']:.3g} samples per side"
               + (" (where the sequential rule stopped)" if smallest.get("sequential") else "")
               if smallest is not None else
               "by the white box only (the exact loss of our model of the mechanism; the samples do not reach it at "
               "this budget)")
        event = (r.get("event") or {}).get("witness", "")
        blocks.append(f"{r['claim_id']}  [{', '.join(scenarios)}]  refuted {how}\n"
                      f"Source: {_cite(r, documents)}.\n"
                      f"Printed statement: {r.get('claim_statement') or r['claim_source']}: (epsilon, delta) = "
                      f"({fmt(r['epsilon_claim'])}, {fmt(r['delta'])}) for {r['relation']} neighbours.\n"
                      f"Witness: {r['pair']}. {event}\n"
                      f"Exact loss of the pair: epsilon(delta) = {fmt(r['epsilon_exact'])}.\n"
                      f"Corrected statement: {fix or 'none shipped for this claim'}.")
    per_page = 5
    for i in range(0, len(blocks), per_page):
        fig = _page(pdf, "Errata: printed claims refuted by this audit" + (" (continued)" if i else ""))
        fig.text(0.06, 0.93, _wrap("\n\n".join(blocks[i:i + per_page]), 118), fontsize=7, va="top", linespacing=1.35)
        pdf.savefig(fig)
        plt.close(fig)


def _reproducibility(pdf: PdfPages, payload: dict[str, Any]) -> None:
    env = payload.get("environment", {})
    lines = [f"Command: {' '.join(payload.get('command', []))}",
             f"dpaudit {payload.get('dpaudit_version', '?')}; "
             + ", ".join(f"{k} {v}" for k, v in env.items()),
             f"Root seed {payload['seed']}; every chunk's generator is SeedSequence(seed, spawn_key=(scenario, phase, "
             f"side, chunk)), so the numbers do not depend on --jobs or the backend.",
             f"Budget {payload['samples']} samples per side and scenario; confidence {payload['confidence']} "
             f"per bound; jobs {payload.get('jobs')}, backend {payload.get('backend', 'local')}.",
             f"Started {payload.get('started', '?')} (UTC); wall time {fmt(payload.get('seconds'))} s; "
             f"{'complete' if payload.get('complete', True) else 'PARTIAL'} run."]
    unseeded = sorted({r["scenario"] or r["mechanism"] for r in payload["records"] if r.get("seeded") is False})
    if unseeded:
        lines.append(f"{NOT_REPRODUCIBLE.capitalize()}: {', '.join(unseeded)} draw their own randomness, so the "
                     "root seed does not fix their numbers.")
    fig = _page(pdf, "Reproducibility")
    fig.text(0.06, 0.93, _wrap("\n\n".join(lines), 115), fontsize=8, va="top", linespacing=1.5)
    pdf.savefig(fig)
    plt.close(fig)


def _sweep_page(pdf: PdfPages, sweep: dict[str, Any]) -> None:
    fig = _page(pdf, f"Rates: {sweep['family']}")
    ax = fig.add_axes([0.12, 0.45, 0.8, 0.45])
    plots.sweep(ax, sweep)
    slopes = "\n".join(f"{cid}: log-log slope of eps_claim {s['epsilon_claim']:+.3f}, of eps_exact "
                       f"{s['epsilon_exact']:+.3f} (the paper's rate is -1)"
                       for cid, s in sweep.get("slopes", {}).items())
    fig.text(0.06, 0.38, _wrap(f"{sweep['samples']} samples per side at each n, seed {sweep['seed']}.\n" + slopes),
             fontsize=8, va="top", linespacing=1.5)
    pdf.savefig(fig)
    plt.close(fig)


def _literal(value: Any) -> Any:
    """Every string of a payload with its dollars escaped: names come from users, and matplotlib
    reads "$...$" as mathtext (a "$" in a scenario name broke the report); "\\$" draws a dollar.
    Only the payload's text is escaped: the axes' own log-scale labels keep their mathtext."""
    if isinstance(value, str):
        return value.replace("$", "\\$")
    if isinstance(value, dict):
        return {_literal(k): _literal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_literal(v) for v in value]
    return value


def write_pdf(payload: dict[str, Any], path: str | os.PathLike, sweeps: Sequence[dict[str, Any]] = ()) -> None:
    """Write the report of ``payload`` (a results.json) and optional sweeps to ``path``, atomically.

    The PDF is rendered in memory and written with :func:`dpaudit.engine.files.write_atomic` (an exclusive,
    randomly named temporary file, never through a symbolic link): a fixed temporary name in a
    shared folder could be a link planted to overwrite another file."""
    metadata = {"Creator": "dpaudit", "Producer": "dpaudit", "CreationDate": None, "ModDate": None,
                "Title": "dpaudit audit report"}
    payload, sweeps = _literal(payload), [_literal(sweep) for sweep in sweeps]
    buffer = io.BytesIO()
    with plt.rc_context(STYLE), PdfPages(buffer, metadata=metadata) as pdf:
        _cover(pdf, payload)
        for scenario in payload["scenarios"]:
            records = [r for r in payload["records"] if r["scenario"] == scenario["scenario"]]
            _scenario_page(pdf, scenario, records)
        for sweep in sweeps:
            _sweep_page(pdf, sweep)
        _errata(pdf, payload)
        _reproducibility(pdf, payload)
    write_atomic(path, buffer.getvalue())
