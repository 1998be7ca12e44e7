"""The one-run section of the PDF report: one page per one-run (canary) scenario, and beside them
what one run buys on a claim the multi-run audit also checks.

A one-run scenario's page says the design (m canaries in R runs, the relation, the guessing rule
fixed in advance and its multiplicity correction, α, δ, the SHA-256 of the secret inclusion
vector S), the counts (r guesses, v right, k₊ "in" and k₋ "out"), Steinke, Nasr and Jagielski's
(ε, δ) lower bound (NeurIPS 2023, Thm 3.3), the largest rejected GDP μ (Mahloujifar, Melis,
Chaudhuri, ICML 2025, Alg. 2) with its label (valid against GDP-family claims only, never an
(ε, δ) bound), a family's strongest rejected member where the design reads one (labelled valid
against that family only), one row per claim with its verdict in the project's words, and the
two figures of :mod:`dpaudit.reports.onerun_plots`.  Every number is the payload's own: only the
exploratory curve of the second figure is drawn from the saved scores, labelled as such.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reportlab.platypus import Flowable, PageBreak

from dpaudit.engine.verdicts import NOT_APPLICABLE, outcome
from dpaudit.onerun.game import FRESH, SUPPLIED
from dpaudit.reports import onerun_plots
from dpaudit.reports.layout import figure, gap, heading, keep, kv_table, para, section_break, table, text
from dpaudit.reports.text import caught_note, fmt
from dpaudit.reports.wording import REFUTED, claim_name, count, is_user_claim, status_label

ONE_RUN = "one-run"
TITLE = "One-run audits"
CAUGHT_MODEL = ("What a claim that holds could have caught is the smallest GDP leak the run refutes 9 times in 10, "
                "simulated under a model: GDP canaries (in N(mu, 1), out N(0, 1), the secret Bernoulli(1/2)) at "
                "this m under this rule's tests; and the canaries that catch twice the claim's mu as often. "
                "results.json keeps each claim's model with its numbers (its key detectable).")
CURVE_WORDS = {"violation": "rejected", "pass": "not rejected", "not-applicable": "not applied"}


def is_onerun(item: dict[str, Any]) -> bool:
    """A results.json scenario or record of a one-run (canary) audit."""
    return item.get("kind") == ONE_RUN


def scenarios(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [sc for sc in payload["scenarios"] if is_onerun(sc)]


def multi_run(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` without its one-run scenarios and records (the payload itself when it has none):
    the parts of the report written for the multi-run audit read this."""
    if not any(is_onerun(x) for x in (*payload["scenarios"], *payload["records"])):
        return payload
    return {**payload, "scenarios": [sc for sc in payload["scenarios"] if not is_onerun(sc)],
            "records": [r for r in payload["records"] if not is_onerun(r)]}


def _info(r: dict[str, Any]) -> dict[str, Any]:
    return r.get("onerun") or {}


def is_curve(r: dict[str, Any]) -> bool:
    return _info(r).get("claim_type") == "curve"


def curve_label(r: dict[str, Any]) -> str:
    """A curve claim as the tables name it (e.g. "0.5838-GDP"); never an epsilon."""
    curve = _info(r).get("curve") or {}
    return str(curve.get("curve") or curve.get("family") or "curve")


def label(r: dict[str, Any]) -> str:
    """A one-run record's claim by its id ("your claim my-eps" for a user's own: a game often
    checks several of them, an (epsilon, delta) pair and a curve)."""
    name = claim_name(r)
    return f"{name} {r['claim_id']}" if name != r.get("claim_id") and r.get("claim_id") else name


def claimed(r: dict[str, Any]) -> str:
    """What a one-run record's claim states: the (ε, δ) pair, or the curve."""
    if is_curve(r):
        return f"curve {curve_label(r)}"
    return f"({fmt(r['epsilon_claim'])}, {fmt(r['delta'])})"


def evidence(r: dict[str, Any]) -> str:
    """What the run says of one claim: Steinke's bound at the claim's δ, or the curve test's answer."""
    info = _info(r)
    if is_curve(r):
        return f"curve test: {CURVE_WORDS.get(r['verdict'], r['verdict'])} at confidence {fmt(r['confidence'])}"
    runs = info.get("runs", r.get("samples"))
    return (f"eps_lower {fmt(r['epsilon_lower'])} at delta {fmt(r['delta'])} "
            f"({info.get('m', '?')} canaries, {runs} run{'s' if runs != 1 else ''})")


def claims_cells(r: dict[str, Any]) -> tuple[str, str]:
    """(scenario, eps_claim) of a one-run record in the claims table: marked "one run", and a curve
    claim named by its curve (it has no eps_claim)."""
    return f"{r['scenario']} (one run)", (curve_label(r) if is_curve(r) else fmt(r["epsilon_claim"]))


def summary_phrase(payload: dict[str, Any]) -> str:
    """How the summary counts the one-run scenarios ("" without any)."""
    found = scenarios(payload)
    if not found:
        return ""
    canaries = sorted({sc["m"] for sc in found})
    each = f"{canaries[0]}" if len(canaries) == 1 else f"{canaries[0]} to {canaries[-1]}"
    return f"{len(found)} one-run (canary) scenario{'s' if len(found) > 1 else ''} of {each} canaries"


def budget(payload: dict[str, Any]) -> str:
    """The summary's budget: samples per side of the multi-run scenarios, one training run of a
    one-run scenario's canaries (the multi-run wording alone when there is no one-run scenario)."""
    multi = f"{payload['samples']} samples per side and scenario"
    if not scenarios(payload):
        return multi
    one = "one training run of its canaries per one-run scenario"
    return f"{multi} ({one})" if len(scenarios(payload)) < len(payload["scenarios"]) else one


def refutations(records: Sequence[dict[str, Any]], user: bool) -> list[list[str]]:
    """The summary's lines for the claims a one-run audit refutes: claim [scenario], what refutes it,
    and (for the catalog's claims) the outcome: a known erratum, or a faulty twin caught as expected."""
    rows = []
    for r in records:
        if not is_onerun(r) or r["finding"] not in REFUTED or (is_user_claim(r) != user):
            continue
        info = _info(r)
        counts = f"{info.get('v', '?')} right of {info.get('r', '?')} guesses on {info.get('m', '?')} canaries"
        if is_curve(r):
            why = f"curve test rejects {curve_label(r)} at confidence {fmt(r['confidence'])}: {counts}"
        else:
            why = (f"one run: eps_lower {fmt(r['epsilon_lower'])} > eps_claim {fmt(r['epsilon_claim'])} at delta "
                   f"{fmt(r['delta'])}: {counts}")
        rows.append([f"{text(label(r))} [{text(r['scenario'])}]", text(why)] + ([] if user else [text(outcome(r))]))
    return sorted(rows)


def side_by_side(payload: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]]:
    """(claim id, its multi-run records, its one-run records) of every claim both kinds check, the
    multi-run checks outside the claim's premise left out (they measure nothing about it)."""
    multi: dict[str, list[dict[str, Any]]] = {}
    one: dict[str, list[dict[str, Any]]] = {}
    for r in payload["records"]:
        if not r.get("claim_id"):
            continue
        if is_onerun(r):
            one.setdefault(r["claim_id"], []).append(r)
        elif r["finding"] != NOT_APPLICABLE:
            multi.setdefault(r["claim_id"], []).append(r)
    return [(cid, sorted(multi[cid], key=lambda r: r["scenario"]), sorted(one[cid], key=lambda r: r["scenario"]))
            for cid in sorted(set(multi) & set(one))]


def _buys(payload: dict[str, Any]) -> list[Flowable]:
    found = side_by_side(payload)
    if not found:
        return []
    rows = [[text(cid),
             "<br/>".join(f"&bull; {text(m['scenario'])}: ({fmt(m['epsilon_claim'])}, {fmt(m['delta'])}), eps_lower "
                          f"{fmt(m['epsilon_lower'])} ({count(m['samples'])} samples per side): "
                          f"<b>{text(m['finding'])}</b>" for m in multi),
             "<br/>".join(f"&bull; {text(o['scenario'])}: {text(claimed(o))}, {text(evidence(o))}: "
                          f"<b>{text(o['finding'])}</b>" for o in ones)]
            for cid, multi, ones in found]
    shaded = [any(r["finding"] in REFUTED for r in (*multi, *ones)) for _, multi, ones in found]
    head = ["claim", "multi-run: scenario, claim (eps, delta), eps_lower at the claim's delta (samples per side): "
            "verdict",
            "one run: scenario, claim, evidence (canaries, runs): verdict"]
    return [heading("What one run buys", "h2"),
            para("The same claim checked both ways: the multi-run audit draws the mechanism its samples per side "
                 "(each a training run); the one-run audit trains once with m canaries. Multi-run checks outside "
                 "the claim's premise are left out here (the claims table has them).", "small"),
            table(head, rows, [80, 230, 220], shaded=shaded)]


def _rule(sc: dict[str, Any]) -> str:
    rule = sc.get("rule") or {}
    name = rule.get("rule", "?")
    if name == "fixed":
        return f"fixed in advance: k+ = {rule.get('k_plus')} guessed in, k- = {rule.get('k_minus')} guessed out"
    if name == "grid":
        pairs = rule.get("pairs") or []
        shown = ", ".join(f"({a}, {b})" for a, b in pairs[:8]) + (", ..." if len(pairs) > 8 else "")
        return f"grid of {len(pairs)} (k+, k-) pairs fixed in advance: {shown}"
    if name == "split":
        return (f"split: k chosen on a {fmt(rule.get('select'))} share of the canaries among fractions "
                f"{', '.join(fmt(f) for f in rule.get('fractions') or [])} (seed {rule.get('seed')}), "
                "bounded on the rest")
    return str(name)


def secret_stored(sc: dict[str, Any]) -> str:
    """Whether results.json keeps a one-run scenario's secret, so that its result can be re-checked."""
    kept = sc.get("secret_bits") is not None or sc.get("secret") is not None
    return ("stored in results.json, so the result can be re-checked" if kept
            else "not stored in this file, so the result cannot be re-checked from it")


def secret_words(sc: dict[str, Any]) -> str:
    """Who drew a one-run scenario's secret S and where it is kept, as its record says
    (``secret_source``; the game draws its own from fresh entropy, never from the seed): the
    report never says more of the secret than the file does."""
    source = sc.get("secret_source")
    if source == FRESH:
        return f"drawn by dpaudit from fresh entropy (not from the seed), {secret_stored(sc)}"
    if source == SUPPLIED:
        return f"the caller's own secret (supplied by the caller, not drawn by dpaudit), {secret_stored(sc)}"
    return f"its source is not recorded (a file written before the key), {secret_stored(sc)}"


def secrets_summary(found: Sequence[dict[str, Any]]) -> str:
    """The secrets of ``found`` (one-run scenarios) in one phrase: said once when they share it,
    else left to each scenario's page."""
    said = {secret_words(sc) for sc in found}
    if len(said) == 1:
        return f"the secret S is {next(iter(said))}; its SHA-256 is on the scenario's page"
    return "who drew each secret S, and whether it is stored, is on its scenario's page with its SHA-256"


def _design(sc: dict[str, Any]) -> list[list[str]]:
    runs = sc.get("runs", 1)
    deltas = ", ".join(fmt(b["delta"]) for b in sc.get("bounds") or [])
    return [
        ["mechanism", text(sc["mechanism"])],
        ["canaries", f"m = {sc['m']}: {runs} training run{'s' if runs != 1 else ''} of "
                     f"{sc.get('canaries_per_run', sc['m'])} canaries, each inserted with probability 1/2"],
        ["relation", text(sc.get("relation") or "-")],
        ["guessing rule", text(_rule(sc))],
        ["correction", text(sc.get("correction") or (sc.get("rule") or {}).get("correction") or "-")],
        ["level", f"alpha = {fmt(sc['alpha'])} (confidence {fmt(sc['confidence'])})"],
        ["delta", deltas or "-"],
        ["secret S", f"{text(secret_words(sc))}; SHA-256 <font name='DV-Mono'>{text(sc.get('secret_sha256', '-'))}"
                     "</font>"],
        ["seed", f"{text(sc.get('seed'))}" + (" (the training's randomness, not the secret's)"
                                              if sc.get("secret_source") == FRESH else "")
                 + f"; {fmt(sc.get('seconds'))} s"],
    ]


def _results(sc: dict[str, Any]) -> list[list[str]]:
    grid = (sc.get("rule") or {}).get("rule") == "grid"
    counts = (f"r = {sc['r']} guesses, v = {sc['v']} right (k+ = {sc['k_plus']} in, k- = {sc['k_minus']} out)"
              + (": the grid's pair with the largest bound at the first delta, each pair tested at its corrected "
                 "level" if grid else ""))
    bounds = "; ".join(f"eps_lower = {fmt(b['epsilon_lower'])} at delta = {fmt(b['delta'])}"
                       for b in sc.get("bounds") or [])
    method = text((sc.get("bounds") or [{}])[0].get("method", ""))
    rows = [["counts", counts],
            ["(epsilon, delta) lower bound", f"<b>{bounds}</b> at confidence {fmt(sc['confidence'])} ({method}): "
                                             "valid against any (epsilon, delta) claim"]]
    gdp = sc.get("gdp_mu_lower")
    if gdp:
        rows.append(["GDP mu", f"largest rejected mu = {fmt(gdp['mu'])}: <b>{text(gdp['validity'])}</b> "
                               f"({text(gdp.get('method', ''))})"])
    family = sc.get("family_rejection")
    if family:
        name, value = next(iter((family.get("parameter") or {"parameter": None}).items()))
        member = (f"strongest rejected member {text(name)} = {fmt(value)}, whose epsilon at delta = "
                  f"{fmt(family.get('delta'))} reads {fmt(family.get('epsilon_read'))}" if value is not None
                  else "no member in the searched range is rejected")
        rows.append([f"{text(family.get('family', 'family'))} family", f"{member}: <b>{text(family['validity'])}</b>"])
    if sc.get("isolated"):
        rows.append(_isolated(sc["isolated"]))
    return rows


def _isolated(iso: dict[str, Any]) -> list[str]:
    """The independent-canary test's row: counts above the threshold fixed in advance, its (ε, δ) bounds
    and GDP μ, labelled with the premise they rest on and who declared it (never assumed of a run)."""
    bounds = "; ".join(f"eps_lower = {fmt(b['epsilon_lower'])} at delta = {fmt(b['delta'])}" for b in iso["bounds"])
    mu = iso["gdp_mu_lower"]
    read = (f" (read as eps = {fmt(mu['epsilon_read'])} at delta = {fmt(mu['delta'])}, GDP claims only)"
            if mu.get("epsilon_read") is not None else " (GDP claims only)")
    return [f"independent canaries (declared by the {text(iso['declared_by'])})",
            f"{iso['tp']}/{iso['n_in']} in and {iso['fp']}/{iso['n_out']} out above the threshold "
            f"{fmt(iso['threshold'])} ({text(iso['threshold_source'])}): <b>{bounds}; GDP mu &gt;= {fmt(mu['mu'])}"
            f"{read}</b>, valid <b>only under the premise</b>: {text(iso['premise'])}. Why: {text(iso['reason'])}; "
            f"checked: {text(iso['check'])}"]


def _claims(sc: dict[str, Any], records: list[dict[str, Any]], user: bool) -> Flowable:
    head = ["claim id", "status", "claim", "what the run says", "verdict"]
    widths = [100, 58, 92, 170, 72]
    if not user:
        head.append("outcome")
        widths.append(70)
    rows = []
    for r in records:
        # a claim that holds: what the audit could have caught, on the claim's own row (never beside a refuted one)
        caught = caught_note(r, model=False) if r["finding"] not in REFUTED else None
        said = evidence(r) + (f"; {caught}" if caught else "")
        row = [text(label(r)), text(status_label(r)), text(claimed(r)), text(said), text(r["finding"])]
        if not user:
            row.append(text(outcome(r)))
        rows.append(row)
    return table(head, rows, widths, shaded=[r["finding"] in REFUTED for r in records])


def page(sc: dict[str, Any], records: list[dict[str, Any]], user: bool) -> list[Flowable]:
    """The flowables of one scenario's page (``records``: its flat one-run records)."""
    flow: list[Flowable] = [heading(f"One-run scenario {sc['scenario']}")]
    if sc.get("description"):
        flow.append(para(text(sc["description"])))
    flow += [kv_table(_design(sc), 0.16), gap(6), kv_table(_results(sc), 0.16), gap(6)]
    if records:
        flow.append(_claims(sc, records, user))
        if any(r["finding"] not in REFUTED and caught_note(r) is not None for r in records):
            flow.append(para(CAUGHT_MODEL, "small"))
    if sc.get("scores") is not None and sc.get("secret") is not None and sc.get("bounds"):
        flow += [figure(*onerun_plots.page_figure(sc)),
                 para("Left: the scores of the canaries the secret S included and excluded, with the rule's "
                      "thresholds. Right: exploratory; each point is the eps_lower a rule fixed in advance at r "
                      "guesses would have given, so the curve's maximum is not a bound; the audit's bound is the "
                      "one above, of its own rule.", "small")]
    else:
        flow.append(para("No figures: the results hold no scores for this scenario.", "small"))
    return flow


def section(payload: dict[str, Any], user: bool) -> list[Flowable]:
    """The one-run section (nothing when the payload has no one-run scenario): an introduction, the
    side-by-side table where a claim is checked both ways, and one page per scenario (the first on
    the introduction's page when it fits there)."""
    found = scenarios(payload)
    if not found:
        return []
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for r in payload["records"]:
        if is_onerun(r):
            by_scenario.setdefault(r["scenario"], []).append(r)
    flow: list[Flowable] = [
        section_break(), heading(TITLE),
        para("One training run each: m canaries are inserted independently with probability 1/2 (the secret S; "
             f"{text(secrets_summary(found))}), the mechanism is trained once, every "
             "canary is scored from the output, and a guessing rule fixed in advance guesses in or out for the "
             "most confident ones. From v right out of r guesses, Steinke, Nasr and Jagielski's test (NeurIPS "
             "2023, Thm 3.3) gives an (epsilon, delta) lower bound valid against any (epsilon, delta) claim; a "
             "curve claim (a trade-off curve such as mu-GDP) is tested by the f-DP recursion of Mahloujifar, "
             "Melis and Chaudhuri (ICML 2025, Alg. 2). The largest rejected GDP mu is valid against GDP-family "
             "claims only: it is never an (epsilon, delta) lower bound. A verdict 'refuted (empirical)' here "
             "means the run's bound exceeds the claim or the curve test rejects it at the stated confidence."),
        *_buys(payload),
    ]
    for i, sc in enumerate(found):
        drawn = page(sc, by_scenario.get(sc["scenario"], []), user)
        flow += [keep(*drawn)] if i == 0 else [PageBreak(), *drawn]
    return flow
