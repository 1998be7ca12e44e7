"""The plain-text summary table of a run, from saved records (the outcome of each is
:func:`dpaudit.engine.results.outcome`)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from dpaudit.engine.results import caught_words
from dpaudit.engine.verdicts import CURVE_WORDS, NOT_REPRODUCIBLE, WHITE_BOX_WORDS, doubles_words, float_fix, outcome
from dpaudit.onerun.curves import gdp_epsilon
from dpaudit.onerun.wording import caught_words as onerun_caught_words
from dpaudit.onerun.wording import premise_words

WIDTH = 100  # the default table's width: a terminal's, with room
GDP_DELTA = 1e-5  # the δ a GDP row is read at when its scenario has no (ε, δ) claim: the one-run default δ


def printable(text: str) -> str:
    """``text`` with every character that is not printable (control characters such as ESC, CR and
    NL, format characters such as a right-to-left override, lone surrogates, line separators)
    written as its Python escape (``\\x1b``, ``\\u202e``): a name from a config or a results file
    can then neither move a terminal's cursor nor hide or fake a line of the table, the footer, the
    summary file or the PDF.  Printable text (every name dpaudit itself writes) is unchanged."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)  # as repr writes it: \r, \x1b, \u202e


def printable_all(value: Any) -> Any:
    """``value`` (a record, a results payload) with :func:`printable` applied to every string in it,
    keys included; the reports format what this returns, never the file's raw text."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_all(k): printable_all(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_all(v) for v in value]
    return value


def fmt(value: Any) -> str:
    """How every report prints a number (tables, PDF and tests share it)."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return printable(value)
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        return f"{value:.4g}"
    return f"{value:.3g}"


def summary_table(records: Sequence[dict[str, Any]], witness: bool = False, wide: bool = False) -> str:
    """The run's table: :func:`compact_table` (at most :data:`WIDTH` columns), or with ``wide``
    :func:`wide_table` (every column and the premise notes)."""
    return wide_table(records, witness) if wide else compact_table(records, witness)


def value_views_note(r: dict[str, Any]) -> str | None:
    """The second verdict of a real-valued output, when the floating view decided: what the value
    views (rows, threshold, histogram) say of the mechanism as mathematics."""
    vv = r.get("value_views")
    if not vv or r.get("epsilon_claim") is None:
        return None
    holds = vv["verdict"] != "violation"
    word = "holds" if holds else "does not hold"
    fix = float_fix(r["epsilon_lower"], vv["epsilon_lower"], holds)
    return (f"{doubles_words(r['epsilon_lower'], vv['epsilon_lower'])}; the mechanism, as mathematics, {word} its "
            f"eps = {fmt(r['epsilon_claim'])} ({fmt(vv['epsilon_lower'])}, {vv['finding']})"
            + (f". {fix}" if fix else ""))


def caught_note(r: dict[str, Any], model: bool = True) -> str | None:
    """What a claim that holds could have caught (the record's ``detectable``), in words; None otherwise.
    A one-run record's is :func:`dpaudit.onerun.wording.caught_words`'s (what GDP canaries at its m and
    rule it catches, or that no outcome of its game could have refuted the claim)."""
    d = r.get("detectable")
    if r.get("kind") == "one-run":  # or: no outcome of the game could have refuted it (dpaudit.onerun.wording)
        return onerun_caught_words(r, model=model)
    return caught_words(d, r.get("epsilon_claim"), model=model)


def onerun_words(r: dict[str, Any]) -> str | None:
    """What a one-run record's scenario played: the counts, the canaries and the rule."""
    info = r.get("onerun")
    if r.get("kind") != "one-run" or not info:
        return None
    runs = f", {info['runs']} training runs" if info["runs"] > 1 else ", one training run"
    words = (f"one-run: {info['v']}/{info['r']} guesses right (k+={info['k_plus']}, k-={info['k_minus']}) of "
             f"m={info['m']} canaries{runs}, {info['rule']['rule']} rule; {premise_words()}")
    fam = info.get("family_rejection")
    if fam and fam["epsilon_read"] > 0:  # a family member's ε, said as such: never an (ε, δ) lower bound
        (name, value), = fam["parameter"].items()
        words += (f"; strongest rejected member of the {fam['family']}: {name}={fmt(value)}, whose eps at "
                  f"delta={fmt(fam['delta'])} is {fmt(fam['epsilon_read'])} (valid against that family only)")
    return words


def curve_note(r: dict[str, Any]) -> str | None:
    """A one-run curve claim in words: the curve, and whether the one-run f-DP test rejects it (a curve
    claim has no ε lower bound: its eps columns stay empty)."""
    info = r.get("onerun") or {}
    curve = info.get("curve")
    if r.get("kind") != "one-run" or info.get("claim_type") != "curve" or not curve:
        return None
    return f"curve claim {curve['curve']}: {CURVE_WORDS[r['verdict']]} by the one-run f-DP test"


def renyi_notes(records: Sequence[dict[str, Any]]) -> dict[int, str]:
    """Per zCDP or RDP claim (its curve's records: one scenario, one claim id, a ``stated_as``), a note on
    its last record in the claim's own form: ``rho = 0.125 zCDP: refuted (a curve of 6 points), implies
    eps(1e-06) <= 2.419`` — the verdict over the curve and the ε its smallest δ's point states."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(records):
        if r.get("stated_as") and r.get("claim_id"):
            groups.setdefault((r["scenario"] or r["mechanism"], r["claim_id"]), []).append(i)
    out: dict[int, str] = {}
    for members in groups.values():
        rows = [records[i] for i in members]
        verdicts = {r["verdict"] for r in rows}
        word = ("refuted" if "violation" in verdicts else "not refuted" if "pass" in verdicts else "not applicable")
        tightest = min(rows, key=lambda r: r["delta"])
        implied = (f", implies eps({tightest['delta']:g}) <= {fmt(tightest['epsilon_claim'])}"
                   if tightest.get("epsilon_claim") is not None else "")
        out[members[-1]] = (f"{rows[0]['stated_as']['label']}: {word} (its (eps, delta) curve, {len(rows)} points, "
                            f"by {rows[0]['stated_as']['conversion']}){implied}")
    return out


def gdp_deltas(records: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Per one-run scenario, the δ its μ-GDP rows are read at: its first (ε, δ) claim's δ > 0, else
    :data:`GDP_DELTA` (a GDP claim has no δ of its own)."""
    out: dict[str, float] = {}
    for r in records:
        name = r["scenario"] or r["mechanism"]
        if r.get("kind") == "one-run" and name not in out and r.get("delta") and 0 < r["delta"] < 1:
            out[name] = float(r["delta"])
    return out


def _gdp(r: dict[str, Any]) -> tuple[float, float] | None:
    """A one-run μ-GDP record's claimed μ and the run's GDP reading μ_lower (the largest μ it rejects)."""
    info = r.get("onerun") or {}
    curve, reading = info.get("curve") or {}, info.get("gdp_mu_lower") or {}
    if r.get("kind") != "one-run" or curve.get("family") != "gdp" or reading.get("mu") is None:
        return None
    return float(curve["mu"]), float(reading["mu"])


def gdp_cells(r: dict[str, Any], delta: float) -> dict[str, str]:
    """A μ-GDP row's number columns: δ, the claim's μ as the ε it gives at δ, and the run's reading
    ``mu>=μ_lower`` (Mahloujifar, Melis, Chaudhuri 2025, Alg. 2) — a μ, never an (ε, δ) lower bound
    (Steinke et al.'s bound is the (ε, δ) rows' ``eps_lower``).  Empty for any other row."""
    found = _gdp(r)
    if found is None:
        return {}
    mu, mu_lower = found
    return {"delta": fmt(delta), "eps_claim": fmt(gdp_epsilon(mu, delta)), "eps_lower": f"mu>={fmt(mu_lower)}"}


def gdp_note(r: dict[str, Any], delta: float) -> str | None:
    """A μ-GDP row's reading in words: the largest μ the run rejects and the ε it reads as at δ,
    beside the claim's, said as a statement about GDP claims only."""
    found = _gdp(r)
    if found is None:
        return None
    mu, mu_lower = found
    return (f"GDP reading: mu_lower {fmt(mu_lower)} (every mu-GDP claim up to it rejected), which reads as eps "
            f"{fmt(gdp_epsilon(mu_lower, delta))} at delta {fmt(delta)}; the claim's mu = {fmt(mu)} reads as eps "
            f"{fmt(gdp_epsilon(mu, delta))}; valid against GDP claims only, not an (eps, delta) lower bound")


def compact_table(records: Sequence[dict[str, Any]], witness: bool = False, width: int = WIDTH) -> str:
    """One header line per scenario, then one line per claim: claim, δ, ε_claim, ε_lower, ε_exact,
    the finding; an outcome other than ok, the value views' verdict, and for a claim that holds what
    the audit could have caught (the record's ``detectable``), on lines under it.
    Columns are dropped (samples, ε_exact, δ) and the claim id clipped until a line fits ``width``."""
    records = printable_all(records)
    sequential = any(r.get("sequential") for r in records)
    names = ["claim", "delta", "eps_claim", "eps_lower", "eps_exact", "finding"] + (["samples"] if sequential else [])
    deltas = gdp_deltas(records)

    def gdp_delta(r: dict[str, Any]) -> float:
        return deltas.get(r["scenario"] or r["mechanism"], GDP_DELTA)

    rows = [{"claim": "  " + (r["claim_id"] or "-"), "delta": fmt(r["delta"]), "eps_claim": fmt(r["epsilon_claim"]),
             "eps_lower": fmt(r["epsilon_lower"]), "eps_exact": fmt(r["epsilon_exact"]), "finding": r["finding"],
             "samples": str(r["samples"]), **gdp_cells(r, gdp_delta(r))} for r in records]
    head = {n: n for n in names}
    head["claim"] = "scenario / claim"

    def widths(cols: list[str]) -> dict[str, int]:
        return {c: max(len(x[c]) for x in [head, *rows]) for c in cols}

    for drop in ("samples", "eps_exact", "delta"):
        if sum(widths(names).values()) + 2 * (len(names) - 1) <= width:
            break
        if drop in names:
            names.remove(drop)
    w = widths(names)
    over = sum(w.values()) + 2 * (len(names) - 1) - width
    if over > 0:
        w["claim"] = max(12, w["claim"] - over)

    def line(cells: dict[str, str]) -> str:
        out = []
        for c in names:
            text = cells[c]
            if len(text) > w[c]:
                text = text[: w[c] - 1] + "…"
            out.append(text.ljust(w[c]))
        return "  ".join(out).rstrip()

    lines = [line(head), "  ".join("-" * w[c] for c in names)]
    last = None
    renyi = renyi_notes(records)
    for index, (r, cells) in enumerate(zip(records, rows, strict=True)):
        scenario = r["scenario"] or r["mechanism"]
        if scenario != last:
            lines.append(scenario if len(scenario) <= width else scenario[: width - 1] + "…")
            played = onerun_words(r)
            if played:
                lines += textwrap.wrap(played, width=width, initial_indent="    ", subsequent_indent="      ")
            last = scenario
        lines.append(line(cells))
        notes = [note for note in (curve_note(r), gdp_note(r, gdp_delta(r)), renyi.get(index)) if note]
        said = outcome(r)
        if said != "ok":
            notes.append(f"outcome: {said}")
        vv = value_views_note(r)
        if vv:
            notes.append(vv)
        event = r.get("event") or {}
        if witness and event.get("witness"):
            notes.append(f"witness: {event['witness']}")
        caught = caught_note(r, model=False)
        if caught:
            notes.append(caught)
        for note in notes:
            lines += textwrap.wrap(note, width=width, initial_indent="      ", subsequent_indent="        ")
    return "\n".join(lines) + "\n"


def wide_table(records: Sequence[dict[str, Any]], witness: bool = False) -> str:
    """One line per record: scenario, claim, its registry status, δ, ε_claim, ε_lower, ε_exact, the
    supremum of the pure loss over reference policies (pure claims of KL mechanisms), the verdict
    that combines both witnesses, and the outcome (as expected or not); a claim outside its
    premise gets a second line saying so and whether the samples would refute it.  When a record
    comes from a sequential run, a ``samples`` column gives the samples per side it used; with
    ``witness``, each row is followed by its witness event and counts."""
    records = printable_all(records)
    sequential = any(r.get("sequential") for r in records)
    head = ("scenario", "claim", "status", "delta", "eps_claim", "eps_lower", "eps_exact", "eps_sup", "verdict",
            "outcome") + (("samples",) if sequential else ())
    rows: list[tuple[str, ...]] = [head]
    notes: dict[int, list[str]] = {}
    seen = set()
    deltas = gdp_deltas(records)
    renyi = renyi_notes(records)
    for index, r in enumerate(records):
        delta = deltas.get(r["scenario"] or r["mechanism"], GDP_DELTA)
        gdp = gdp_cells(r, delta)
        row = (r["scenario"] or r["mechanism"], r["claim_id"] or "-", r.get("claim_status") or "-",
               gdp.get("delta", fmt(r["delta"])), gdp.get("eps_claim", fmt(r["epsilon_claim"])),
               gdp.get("eps_lower", fmt(r["epsilon_lower"])), fmt(r["epsilon_exact"]),
               fmt(r.get("epsilon_sup") if r["delta"] == 0 else None), r["finding"], outcome(r))
        rows.append(row + ((str(r["samples"]),) if sequential else ()))
        extra: list[str] = []
        played = onerun_words(r)
        if played and row[0] not in seen:
            extra.append(played)
            seen.add(row[0])
        extra += [note for note in (curve_note(r), gdp_note(r, delta), renyi.get(index)) if note]
        if r.get("premise"):
            extra.append(r["premise"])
        views = value_views_note(r)
        if views:
            extra.append(views)
        event = r.get("event") or {}
        if witness and event.get("witness"):
            extra.append(f"witness: {event['witness']}")
        caught = caught_note(r)
        if caught:
            extra.append(caught)
        if extra:
            notes[len(rows) - 1] = extra
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = []
    for i, cells in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(cells, widths, strict=True)).rstrip())
        lines += [" " * (widths[0] + 2) + note for note in notes.get(i, ())]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def footer(records: Sequence[dict[str, Any]], scenarios: int, settings: str, seconds: float, ok: bool,
           complete: bool = True) -> str:
    """The run's last line: what was checked and whether every outcome is as expected — or, when no
    claim was checked at all, that only ε_lower was measured (never "as expected" about nothing);
    an incomplete run never says "every verdict as expected" (:func:`incomplete_note` says what is
    missing); for sequential runs, how many samples per side the scenarios used."""
    records, settings = printable_all(records), printable(settings)
    checked = [r for r in records if r["claim_id"] is not None]
    if not ok:
        verdict = "SOME VERDICTS NOT AS EXPECTED"
    elif not complete:
        verdict = "INCOMPLETE: the run was interrupted, not every expectation was checked"
    elif not checked:
        verdict = "no claim checked: eps_lower measured only"
    else:
        verdict = "every verdict as expected"
    runs = {(r["scenario"], r["mechanism"], r["pair"]): r for r in records if r.get("sequential")}
    if runs:
        stopped = sum("stopped" in r["sequential"] for r in runs.values())
        settings += (f"; sequential: {stopped} of {len(runs)} scenarios stopped early, "
                     f"{sum(r['samples'] for r in runs.values())} samples per side used in all")
    unseeded = sorted({r["scenario"] or r["mechanism"] for r in records if r.get("seeded") is False})
    warning = f"\n{NOT_REPRODUCIBLE.upper()}: {', '.join(unseeded)}\n" if unseeded else ""
    counted = f"{_count(len(checked), 'check')} in {_count(scenarios, 'scenario')}"
    return f"\n{counted}, {settings}, {seconds:.1f} s: {verdict}\n{warning}"


def incomplete_note(*, done: int, planned: int | None, unchecked: int | None, resume: str | None,
                    status: int, exact: bool = True) -> str:
    """What an interrupted run's footer (and ``summary`` of its file) says: that the run is
    incomplete, how many scenarios ran and how many claims of the plan (each with its expected
    verdict: explicit, or not refuted) went unchecked (``exact``
    False: at least that many), the exit status, and the command that resumes it (``resume``; None:
    it had no folder to resume from)."""
    scope = f"{done} of {planned}" if planned is not None else f"{done} of an unknown number of"
    expectations = ""
    if unchecked is not None:
        verb = "was" if unchecked == 1 else "were"
        theirs = "its expected verdict" if unchecked == 1 else "their expected verdicts"
        expectations = (f"; {'' if exact else 'at least '}{_count(unchecked, 'claim')} of the plan, with {theirs}, "
                        f"{verb} not checked")
    how = (f"resume it with: {printable(resume)}" if resume else
           "it wrote no folder to resume from: rerun it, with --out DIR to make it resumable")
    return (f"INCOMPLETE run: interrupted after {scope} scenarios (the last may be partial, the others were not "
            f"run){expectations}; exit status {status}, never 0; {how}\n")


def settings_words(samples: Any, confidence: Any, seed: Any, multi_run: int, one_run: int) -> str:
    """The footer's settings: the multi-run budget (when there are multi-run scenarios), how many
    one-run scenarios (one training run each), the confidence and the seed."""
    parts = [f"budget {samples} samples per side"] if multi_run or not one_run else []
    if one_run:
        parts.append(f"{_count(one_run, 'one-run scenario')} (one training run each)")
    return ", ".join([*parts, f"confidence {confidence}", f"seed {seed}"])


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def errata_note(records: Sequence[dict[str, Any]]) -> str:
    """The closing note of an errata run: each printed claim the registry marks refuted, whether the
    samples alone refuted it (ε_lower > ε_claim) with the samples per side and seconds its scenario
    used, the white box's verdict beside it (not deciding)."""
    records = printable_all(records)
    lines, seen = [], set()
    refuted = [r for r in records if r.get("claim_status") == "refuted" and r["claim_id"]]
    for r in sorted(refuted, key=lambda r: r["verdict"] != "violation"):
        key = (r["claim_id"], r["scenario"])
        if key in seen:
            continue
        seen.add(key)
        head = f"  {r['claim_id']}  [{r['scenario'] or r['mechanism']}]"
        if r["verdict"] == "violation":
            lines.append(f"{head}: eps_lower {fmt(r['epsilon_lower'])} > {fmt(r['epsilon_claim'])} at delta "
                         f"{fmt(r['delta'])} from {r['samples']:.3g} samples per side in {r['seconds']:.1f} s "
                         f"(white box: {WHITE_BOX_WORDS.get(r['exact_verdict'] or '', '-')})")
        else:
            lines.append(f"{head}: NOT refuted from samples (eps_lower {fmt(r['epsilon_lower'])} <= "
                         f"{fmt(r['epsilon_claim'])} after {r['samples']:.3g} samples per side; white box: "
                         f"{WHITE_BOX_WORDS.get(r['exact_verdict'] or '', '-')})")
    if not lines:
        return ""
    claims = {r["claim_id"] for r in refuted}
    done = {r["claim_id"] for r in refuted if r["verdict"] == "violation"}
    return (f"\nErrata: {len(done)} of {len(claims)} printed claims the registry marks refuted were refuted from "
            f"samples alone (per witness: samples per side used, seconds of its scenario):\n" + "\n".join(lines) + "\n")
