"""The PDF audit report, drawn from saved results alone (nothing is recomputed or re-sampled).

Layout by reportlab's platypus (:mod:`dpaudit.reports.layout`), figures by matplotlib (:mod:`dpaudit.reports.plots`).
The structure a reviewer expects: (1) a one-page summary: what was audited, the verdict counts with
what each kind of finding means (said once per kind), and each erratum caught with its witness in
one line; (2) the claims table; (3) one section per family, its scenarios grouped by mechanism,
with figures only where they say something; (3b) where the run holds one-run (canary) scenarios,
their section, one page each, with what one run buys beside the multi-run audit of the same claim
(:mod:`dpaudit.reports.onerun_page`); (4) the errata appendix; (5) reproducibility.  The same
results give a byte-identical file: no timestamp enters the bytes except the run's own; a run
without one-run scenarios gives the same file as before they existed.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from typing import Any

from reportlab.platypus import CondPageBreak, Flowable, PageBreak

from dpaudit.engine.verdicts import NOT_REPRODUCIBLE, outcome
from dpaudit.reports import bounded, errata, onerun_page, plots
from dpaudit.reports import families as sections
from dpaudit.reports.layout import PER_ROW_DELTA, build, figure, gap, heading, para, table, text
from dpaudit.reports.text import fmt, printable_all, renyi_notes
from dpaudit.reports.wording import (
    REFUTED,
    Families,
    meanings,
    sequential_parts,
    sorted_records,
    status_label,
    user_run,
)
from dpaudit.runtime.files import write_atomic


def _audited(payload: dict[str, Any], user: bool, families: Families) -> str:
    scenarios = payload["scenarios"]
    checks = sum(r["claim_id"] is not None for r in payload["records"])
    one_run = onerun_page.summary_phrase(payload)
    if user:
        names = sorted({s["mechanism"] for s in scenarios})
        pairs = len(onerun_page.multi_run(payload)["scenarios"])
        what = (f"{pairs} neighbouring pair{'s' if pairs != 1 else ''}" if pairs or not one_run else "") + \
            (f"{', ' if pairs else ''}{one_run}" if one_run else "")
        return (f"your mechanism{'s' if len(names) > 1 else ''} {text(', '.join(names))}: {what}, "
                f"{checks} check{'s' if checks != 1 else ''} of your claims.")
    where = f"the built-in suite '{text(payload['suite'])}'" if payload.get("suite") else "the scenarios of the command"
    fams = sections.grouped(payload, families)
    parts = ", ".join(f"{text(name)} {sum(len(g) for g in groups.values())}" for name, _, groups in fams)
    parts = "; ".join(p for p in (parts, one_run) if p)
    return f"{where}: {len(scenarios)} scenarios ({parts}), {checks} claim checks."


def _summary(payload: dict[str, Any], user: bool, families: Families) -> list[Flowable]:
    records = payload["records"]
    story: list[Flowable] = [heading("dpaudit: differential-privacy audit report", "title")]
    complete = payload.get("complete", True)
    if not complete:
        unchecked = payload.get("expectations_unchecked")
        story.append(para(f"PARTIAL RESULTS: the run was interrupted after {len(payload['scenarios'])} of "
                          f"{payload.get('scenarios_planned', '?')} scenarios"
                          + ("" if unchecked is None else f"; {unchecked} claims of the plan were not checked")
                          + ".", "alert"))
    refuted = [r for r in records if r["finding"] in REFUTED]
    if user:
        expectation = (f"{len(refuted)} of your claims {'is' if len(refuted) == 1 else 'are'} refuted."
                       if refuted else "None of your claims is refuted.")
    elif not payload.get("as_expected"):
        expectation = "<b>Some verdicts are not as expected</b> (see the outcome column of the claims table)."
    elif complete:
        expectation = "Every verdict is as expected."
    else:
        expectation = "The verdicts checked are as expected, but the run is incomplete."
    story += [
        para(f"<b>What was audited:</b> {_audited(payload, user, families)}"),
        para(f"<b>Run:</b> started {text(payload.get('started', '?'))} (UTC), {fmt(payload.get('seconds'))} s of "
             f"wall time; dpaudit {text(payload.get('dpaudit_version', '?'))}, seed {payload['seed']}, budget "
             f"{onerun_page.budget(payload)}, confidence {payload['confidence']} per bound."),
        para(f"<b>Verdicts.</b> {expectation}"),
    ]
    kinds = meanings(r["finding"] for r in records)
    rows = [[text(f), str(sum(r["finding"] == f for r in records)), text(m)] for f, m in kinds]
    story.append(table(["verdict", "checks", "what it means"], rows, [0.2, 0.07, 0.73],
                       shaded=[f in REFUTED for f, _ in kinds], align_right=[1]))
    if any(onerun_page.is_onerun(r) for r in records):
        story.append(gap(3))
        story.append(para("In a one-run check the samples are one training run with canaries: eps_lower is Steinke "
                          "et al.'s bound of the canary game, and a curve claim is refuted by the f-DP curve test "
                          f"(see '{onerun_page.TITLE}').", "small"))
    caught = errata.entries(onerun_page.multi_run(payload)["records"], user)
    more = len(caught) - bounded.ERRATA_ENTRIES
    caught = caught[:bounded.ERRATA_ENTRIES]
    if caught:
        story += [gap(6), heading("Your claims the audit refutes" if user else "Errata caught", "h2"),
                  para("One line each: the claim, the witness pair and what refutes it; the appendix gives the "
                       "source, the witness event and the computation." if not user else
                       "One line each: the witness pair and what refutes the claim; the appendix gives the "
                       "witness event and the computation.", "small")]
        story.append(table(["claim", "witness pair", "refuted by"], [errata.one_line(rows) for rows in caught],
                           [0.25, 0.38, 0.37]))
        if more > 0:
            story.append(para(bounded.left_out(more, "refuted claims"), "small"))
    in_one_run = onerun_page.refutations(records, user)
    if in_one_run:
        story += [gap(6), heading("Refuted in one run", "h2"),
                  para("One line each: the claim and its one-run scenario, and what refutes it (the scenario's page "
                       "gives the design and the counts).", "small"),
                  table(["claim", "refuted by"] + ([] if user else ["outcome"]), in_one_run,
                        [0.3, 0.7] if user else [0.28, 0.52, 0.2])]
    return story


def _claims(payload: dict[str, Any], user: bool) -> list[Flowable]:
    records = sorted_records(payload["records"])
    story: list[Flowable] = [PageBreak(), heading("Claims" if not user else "Your claims")]
    sources = payload.get("documents") or {}
    if sources:
        story.append(para("<b>Sources.</b> " + "; ".join(f"[{text(k)}] {text(v)}" for k, v in sorted(sources.items())),
                          "small"))
    one_run = (" A one-run check is marked '(one run)': its eps_lower is the canary game's bound, and a curve claim "
               "shows its curve and no eps_lower (its verdict is the curve test's)."
               if any(onerun_page.is_onerun(r) for r in records) else "")
    story.append(para("Every claim check, refutations first. eps_lower is the audit's lower bound at the stated "
                      "confidence, eps_exact the exact loss of the pair where the outputs are finite, '-' where "
                      "there is none; both at the claim's own delta (the row's), which may differ from the delta "
                      "of the scenario tables further on (each of them says its delta in its header)." + one_run,
                      "small"))
    # Each row's numbers are at its claim's own delta (the scenario tables give theirs at one delta each).
    head = ["claim id", "scenario", "status", "delta", "eps_claim", f"eps_lower {PER_ROW_DELTA}",
            f"eps_exact {PER_ROW_DELTA}", "verdict"]
    widths = [92, 78, 46, 44, 45, 45, 45, 45]  # points: a number column fits "-2.345e-05"
    if not user:
        head.append("outcome")
        widths.append(64)  # "known erratum —" on one line
    more = len(records) - bounded.CLAIM_ROWS
    records = records[:bounded.CLAIM_ROWS]  # refutations first: what a bounded table keeps
    rows = []
    for r in records:
        scenario, claim = ((r["scenario"] or r["mechanism"], fmt(r["epsilon_claim"])) if not onerun_page.is_onerun(r)
                           else onerun_page.claims_cells(r))
        row = [text(r["claim_id"] or "-"), text(scenario), text(status_label(r)),
               fmt(r["delta"]), text(claim), fmt(r["epsilon_lower"]), fmt(r.get("epsilon_exact")),
               text(r["finding"])]
        if not user:
            row.append(text(outcome(r)))
        rows.append(row)
    story.append(table(head, rows, widths, shaded=[r["finding"] in REFUTED for r in records],
                       align_right=[3, 4, 5, 6]))
    if more > 0:
        story.append(para(bounded.left_out(more, "claim checks"), "small"))
    renyi = list(renyi_notes(records).values())
    if renyi:  # a zCDP or RDP claim in its own form: the rows above are its (eps, delta) curve's points
        story += [gap(4), para("<b>Renyi and zCDP claims</b>, each audited through the (eps, delta) curve it implies "
                               "(its rows above share its claim id): " + "; ".join(text(n) for n in renyi) + ".",
                               "small")]
    return story


def _settings(payload: dict[str, Any]) -> str:
    """The reproducibility section's line on the run's settings: the sampling budget only where a
    scenario sampled (a run of one-run scenarios alone trains once each and draws no samples)."""
    rest = (f"confidence {payload['confidence']} per bound; jobs {payload.get('jobs')}, backend "
            f"{text(payload.get('backend', 'local'))}.")
    if onerun_page.multi_run(payload)["scenarios"] or not onerun_page.scenarios(payload):
        return f"<b>Budget:</b> {payload['samples']} samples per side and scenario; {rest}"
    return f"<b>Settings:</b> one training run per one-run scenario; {rest}"


def _reproducibility(payload: dict[str, Any]) -> list[Flowable]:
    env = payload.get("environment", {})
    lines = [f"<b>Command:</b> <font name='DV-Mono'>{text(shlex.join(payload.get('command', [])))}</font>",
             f"<b>Versions:</b> dpaudit {text(payload.get('dpaudit_version', '?'))}; "
             + text(", ".join(f"{k} {v}" for k, v in env.items())),
             f"<b>Seeds:</b> root seed {payload['seed']}; every chunk's generator is SeedSequence(seed, "
             "spawn_key=(scenario, phase, side, chunk)), so the numbers do not depend on --jobs or the backend.",
             _settings(payload),
             f"<b>When:</b> started {text(payload.get('started', '?'))} (UTC); wall time "
             f"{fmt(payload.get('seconds'))} s; {'complete' if payload.get('complete', True) else 'PARTIAL'} run.",
             f"<b>Results file fingerprint:</b> {text(payload.get('fingerprint', '-'))}"]
    rules = sorted({sequential_parts(r["sequential"])[0] for r in payload["records"] if r.get("sequential")})
    if rules:
        lines.append("<b>Sequential rule</b> (said once for every scenario that used it): "
                     + " ".join(text(rule) for rule in rules))
    if onerun_page.scenarios(payload):
        stored = {onerun_page.secret_stored(sc) for sc in onerun_page.scenarios(payload)}
        lines.append("<b>One-run scenarios:</b> each plays one canary game, whose secret S is "
                     + (text(next(iter(stored))) if len(stored) == 1 else "stored in results.json or not as its "
                        "page says") + f" (who drew it: '{onerun_page.TITLE}').")
    unseeded = sorted({r["scenario"] or r["mechanism"] for r in payload["records"] if r.get("seeded") is False})
    if unseeded:
        lines.append(f"<b>{NOT_REPRODUCIBLE.capitalize()}:</b> {text(', '.join(unseeded))} draw their own "
                     "randomness, so the root seed does not fix their numbers.")
    return [CondPageBreak(130), heading("Reproducibility"), *(para(line) for line in lines)]


def _sweep(sweep: dict[str, Any]) -> list[Flowable]:
    png, w, h = plots.sweep(sweep)
    slopes = "<br/>".join(f"{text(cid)}: log-log slope of eps_claim {s['epsilon_claim']:+.3f}, of eps_exact "
                          f"{s['epsilon_exact']:+.3f} (the paper's rate is -1)"
                          for cid, s in sweep.get("slopes", {}).items())
    return [CondPageBreak(320), heading(f"Rates: {sweep['family']}"),
            para(f"{sweep['samples']} samples per side at each n, seed {sweep['seed']}."), figure(png, w, h),
            para(slopes)]


def story(payload: dict[str, Any], sweeps: Sequence[dict[str, Any]] = (), families: Families = ()) -> list[Flowable]:
    """Every flowable of the report, in order (``families``: see :func:`write_pdf`)."""
    user = user_run(payload)
    detail, rest = bounded.split(payload)  # a large file: its first scenarios in full, the rest summarised
    flow = _summary(payload, user, families) + _claims(payload, user) + sections.sections(detail, user, families)
    flow += onerun_page.section(detail, user)
    flow += bounded.section(rest, payload)
    for sweep in sweeps:
        flow += _sweep(sweep)
    flow += errata.appendix(onerun_page.multi_run(payload), user, most=bounded.ERRATA_ENTRIES)
    flow += _reproducibility(payload)
    return flow


def write_pdf(payload: dict[str, Any], path: str | os.PathLike, sweeps: Sequence[dict[str, Any]] = (),
              families: Families = ()) -> None:
    """Write the report of ``payload`` (a results.json) and optional sweeps to ``path``, atomically.

    ``families`` (name, about, claim ids, mechanism names) name the sections: a scenario belongs to
    the first family that holds its claims or lists its mechanism (the app passes the catalog's;
    without them the scenarios are grouped by mechanism under one section).

    The PDF is rendered in memory and written with :func:`dpaudit.runtime.files.write_atomic` (an exclusive,
    randomly named temporary file, never through a symbolic link): a fixed temporary name in a
    shared folder could be a link planted to overwrite another file."""
    # every string of the files printable (dpaudit.reports.text.printable): a name cannot hide text
    payload, sweeps = printable_all(payload), [printable_all(sweep) for sweep in sweeps]
    write_atomic(path, build(story(payload, sweeps, families), "dpaudit audit report"))

