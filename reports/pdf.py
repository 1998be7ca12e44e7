"""The PDF audit report (matplotlib's PDF backend; no LaTeX).

Built from saved results alone, so it can be regenerated, restyled or merged later:
a cover page with every claim (violations first), one page per scenario, an errata
appendix for printed claims the audit refutes, and a reproducibility block.  The same
results give a byte-identical file: no timestamp enters the bytes except the run's own.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

from reports import plots  # noqa: E402
from reports.text import fmt  # noqa: E402

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


def _sorted_records(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    rank = {"violation": 0, "pass": 1, "not-applicable": 2}
    return sorted(records, key=lambda r: (rank[r["verdict"]], r["scenario"], r["claim_id"] or ""))


def _cover(pdf: PdfPages, payload: dict[str, Any]) -> None:
    records = _sorted_records(payload["records"])
    counts = {v: sum(r["verdict"] == v for r in records) for v in ("violation", "pass", "not-applicable")}
    complete = payload.get("complete", True)
    audited = payload.get("suite") and f"built-in suite '{payload['suite']}'" or "scenarios of the command below"
    lines = [
        f"What was audited: {audited}: {len(payload['scenarios'])} scenarios, {len(records)} claim checks.",
        f"When: run started {payload.get('started', '?')} (UTC), {fmt(payload.get('seconds'))} s of wall time.",
        f"With: dpaudit {payload.get('dpaudit_version', '?')}, seed {payload['seed']}, "
        f"budget {payload['samples']} samples per side and scenario, confidence {payload['confidence']} per bound.",
        f"Verdicts: {counts['violation']} violations, {counts['pass']} passes, {counts['not-applicable']} not applicable; "
        + ("every verdict as expected." if payload.get("as_expected") else "SOME VERDICTS NOT AS EXPECTED."),
        "A violation means the claim is false with at least the stated confidence: the Clopper-Pearson lower "
        "bound on epsilon exceeds it. A pass is not a proof; its slack is eps_claim - eps_lower.",
    ]
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
            top -= 0.13
            fig.text(0.06, top, "Every claim (violations first)", fontsize=10, weight="bold", va="top")
            top -= 0.015
        _claims_table(fig, chunk, top)
        pdf.savefig(fig)
        plt.close(fig)
    violations = [r for r in records if "violation" in (r["verdict"], r.get("exact_verdict"))]
    if violations:
        fig = _page(pdf, "What each violation means")
        text = "\n\n".join(_meaning(r) for r in violations)
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
    head = ["claim id", "scenario", "relation", "delta", "eps_claim", "eps_lower", "eps_exact", "verdict"]
    cells = [[r["claim_id"] or "-", r["scenario"], r["relation"], fmt(r["delta"]), fmt(r["epsilon_claim"]),
              fmt(r["epsilon_lower"]), fmt(r["epsilon_exact"]), r["verdict"]] for r in rows]
    table = ax.table(cellText=cells, colLabels=head, loc="upper left", cellLoc="left",
                     colWidths=[0.25, 0.19, 0.09, 0.07, 0.085, 0.085, 0.085, 0.105])
    table.auto_set_font_size(False)
    table.set_fontsize(6.5)
    table.scale(1, 1.25)
    for (i, _), cell in table.get_celld().items():
        cell.set_edgecolor("#bbbbbb")
        if i == 0:
            cell.set_facecolor("#e8eef5")
            cell.get_text().set_weight("bold")
        elif rows[i - 1]["verdict"] == "violation":
            cell.set_facecolor(VIOLET)


def _meaning(r: dict[str, Any]) -> str:
    known = (" This is a known erratum of the source, caught as expected."
             if r.get("expected_verdict") in ("violation", "exact-violation") else " This violation was not expected.")
    where = f"{r['claim_id']} ({r['claim_source']}): on the pair '{r['pair']}' "
    false = f"so the claimed epsilon = {fmt(r['epsilon_claim'])} is false for the {r['relation']} relation."
    if r["verdict"] != "violation":
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


def _errata(pdf: PdfPages, payload: dict[str, Any]) -> None:
    wrong = [r for r in payload["records"] if r["claim_kind"] == "printed" and r["verdict"] == "violation"]
    if not wrong:
        return
    blocks = []
    for r in wrong:
        fixes = [c for c in payload["records"] if c["scenario"] == r["scenario"] and c["claim_kind"] == "corrected"]
        holding = [c for c in payload["records"] if c["scenario"] == r["scenario"] and c["verdict"] == "pass"
                   and c["claim_kind"] != "corrected"]
        fix = "; ".join(f"{c['claim_id']}: ({fmt(c['epsilon_claim'])}, {fmt(c['delta'])}), {c['verdict']} "
                        f"(eps_lower {fmt(c['epsilon_lower'])}, eps_exact {fmt(c['epsilon_exact'])})" for c in fixes)
        if not fix and holding:
            fix = "none shipped; claims that hold on this pair: " + "; ".join(
                f"{c['claim_id']} ({fmt(c['epsilon_claim'])}, {fmt(c['delta'])})" for c in holding)
        event = (r.get("event") or {}).get("witness", "")
        blocks.append(f"{r['claim_id']}  [{r['scenario']}]\n"
                      f"Printed statement: {r['claim_source']}: (epsilon, delta) = ({fmt(r['epsilon_claim'])}, "
                      f"{fmt(r['delta'])}) for {r['relation']} neighbours.\n"
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
             f"Budget {payload['samples']} samples per side and scenario; confidence {payload['confidence']} per bound; "
             f"jobs {payload.get('jobs')}, backend {payload.get('backend', 'local')}.",
             f"Started {payload.get('started', '?')} (UTC); wall time {fmt(payload.get('seconds'))} s; "
             f"{'complete' if payload.get('complete', True) else 'PARTIAL'} run."]
    fig = _page(pdf, "Reproducibility")
    fig.text(0.06, 0.93, _wrap("\n\n".join(lines), 115), fontsize=8, va="top", linespacing=1.5)
    pdf.savefig(fig)
    plt.close(fig)


def _sweep_page(pdf: PdfPages, sweep: dict[str, Any]) -> None:
    fig = _page(pdf, f"Rates: {sweep['family']}")
    ax = fig.add_axes([0.12, 0.45, 0.8, 0.45])
    plots.sweep(ax, sweep)
    slopes = "\n".join(f"{cid}: log-log slope of eps_claim {s['epsilon_claim']:+.3f}, of eps_exact "
                       f"{s['epsilon_exact']:+.3f} (the paper's rate is -1)" for cid, s in sweep.get("slopes", {}).items())
    fig.text(0.06, 0.38, _wrap(f"{sweep['samples']} samples per side at each n, seed {sweep['seed']}.\n" + slopes),
             fontsize=8, va="top", linespacing=1.5)
    pdf.savefig(fig)
    plt.close(fig)


def write_pdf(payload: dict[str, Any], path: str | os.PathLike, sweeps: Sequence[dict[str, Any]] = ()) -> None:
    """Write the report of ``payload`` (a results.json) and optional sweeps to ``path``, atomically."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with plt.rc_context(STYLE):
        with PdfPages(tmp, metadata={"Creator": "dpaudit", "Producer": "dpaudit", "CreationDate": None,
                                     "ModDate": None, "Title": "dpaudit audit report"}) as pdf:
            _cover(pdf, payload)
            for scenario in payload["scenarios"]:
                records = [r for r in payload["records"] if r["scenario"] == scenario["scenario"]]
                _scenario_page(pdf, scenario, records)
            for sweep in sweeps:
                _sweep_page(pdf, sweep)
            _errata(pdf, payload)
            _reproducibility(pdf, payload)
    os.replace(tmp, path)
