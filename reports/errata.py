"""Section 4 of the report: the errata appendix (printed claims of a source that this run refutes),
or, for a user's own mechanism, the claims of the user it refutes, said in the user's words.

Each entry gives the claim, its source (a user's claim has none), the witness pair and event, and
what refutes it: the estimation counts with the Clopper-Pearson computation
ε_lower = log((P_lower − δ) / Q_upper), or the exact loss of the pair (white box); the formulas are
typeset (:mod:`dpaudit.reports.mathtext`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from reportlab.platypus import CondPageBreak, Flowable

from dpaudit.engine.verdicts import HOLDS, REFUTED_EMPIRICAL, REFUTED_WHITE_BOX
from dpaudit.reports.layout import heading, keep, kv_table, para, section_break, text
from dpaudit.reports.mathtext import typeset
from dpaudit.reports.text import fmt
from dpaudit.reports.wording import RANK, REFUTED, count, is_user_claim, mechanism_label


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def entries(records: Sequence[dict[str, Any]], user: bool) -> list[list[dict[str, Any]]]:
    """One entry per distinct refuted claim and witness pair (every scenario's record that refutes
    it, strongest refutation first): printed claims of a source, or the user's own claims.  A claim
    outside its premise is never here: that is a misuse, not an error of the claim."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        mine = is_user_claim(r) if user else (r["claim_kind"] == "printed" and not is_user_claim(r))
        if mine and r["finding"] in REFUTED:
            groups.setdefault((r["claim_id"], r["pair"]), []).append(r)
    for rows in groups.values():
        rows.sort(key=lambda r: (RANK[r["finding"]], -(_number(r["epsilon_lower"]) - _number(r["epsilon_claim"]))))
    return sorted(groups.values(), key=lambda rows: (rows[0]["claim_id"], rows[0]["pair"]))


def _refuted_by(r: dict[str, Any]) -> str:
    at = f"at delta {fmt(r['delta'])}"
    if r["finding"] == REFUTED_EMPIRICAL:
        return (f"samples: eps_lower {fmt(r['epsilon_lower'])} &gt; eps_claim {fmt(r['epsilon_claim'])} {at}, "
                f"{count(r['samples'])} samples per side")
    return f"white box: exact loss {fmt(r['epsilon_exact'])} &gt; eps_claim {fmt(r['epsilon_claim'])} {at}"


def one_line(rows: list[dict[str, Any]]) -> list[str]:
    """The summary's line of an entry: the claim, its witness pair, what refutes it."""
    r = rows[0]
    claim = (f"your claim ({fmt(r['epsilon_claim'])}, {fmt(r['delta'])}) on {text(r['mechanism'])}"
             if is_user_claim(r) else f"{text(r['claim_id'])} [{text(r['scenario'])}]")
    return [claim, f"{text(r['pair'])} ({text(r['relation'])})", _refuted_by(r)]


def _cite(r: dict[str, Any], documents: dict[str, str]) -> str:
    doc = r.get("claim_document")
    if not doc:
        return text(r["claim_source"])
    where = f", {r['claim_where']}" if r.get("claim_where") else ""
    return text(f"{documents.get(doc, doc)}{where}")


def _computation(r: dict[str, Any]) -> str:
    """The counts and the Clopper-Pearson arithmetic that give eps_lower, checked against the record."""
    event = r.get("event") or {}
    witness = text(event.get("witness", ""))
    lower, upper, delta = event.get("p_lower"), event.get("q_upper"), event.get("delta", r["delta"])
    if lower is None or upper is None or upper <= 0 or lower <= delta:
        return witness
    value = math.log((lower - delta) / upper)
    if not math.isclose(value, r["epsilon_lower"], rel_tol=1e-6, abs_tol=1e-9):
        return witness  # the record was computed another way: show its counts, not an arithmetic it did not do
    return (f"{witness}. Hence " + typeset(f"ε_lower = log((P_lower − δ) / Q_upper) = log(({lower:.4g} − {fmt(delta)}) "
                                           f"/ {upper:.4g}) = {fmt(value)} &gt; ε_claim = {fmt(r['epsilon_claim'])}."))


def _entry(number: int, rows: list[dict[str, Any]], payload: dict[str, Any], user: bool) -> Flowable:
    r = rows[0]
    scenarios = sorted({x["scenario"] for x in rows})
    documents = payload.get("documents") or {}
    params = next((s.get("params") for s in payload["scenarios"] if s["scenario"] == r["scenario"]), None)
    mechanism = text(mechanism_label(r["mechanism"], params))
    claim = f"(ε, δ) = ({fmt(r['epsilon_claim'])}, {fmt(r['delta'])}) for {text(r['relation'])} neighbours"
    kv: list[list[str]] = []
    if user:
        kv.append(["your claim", f"{mechanism} is {claim}."])
        if r.get("claim_source") not in (None, "", "command line", "config"):
            kv.append(["your reference", text(r["claim_source"])])
    else:
        statement = r.get("claim_statement")
        kv.append(["claim", (f"{typeset(text(statement))}; " if statement else "") + claim + f", of {mechanism}."])
        kv.append(["source", _cite(r, documents)])
    where = f"scenarios {', '.join(scenarios)}" if len(scenarios) > 1 else f"scenario {scenarios[0]}"
    kv.append(["witness pair", f"{text(r['pair'])} ({text(where)})"])
    event = (r.get("event") or {}).get("event") or {}
    if event.get("text"):
        kv.append(["witness event", "S = " + text(event["text"])])
    refuting = [x for x in rows if x["finding"] == REFUTED_EMPIRICAL]
    if refuting:
        best = min(refuting, key=lambda x: x["samples"])
        stop = " (the sequential rule stopped there)" if best.get("sequential") else ""
        kv.append(["refuted from the samples", f"{count(best['samples'])} samples per side{stop}: "
                   + _computation(best)])
    if r["finding"] == REFUTED_WHITE_BOX or r.get("epsilon_exact") not in (None, "-"):
        exact = next((x for x in rows if x.get("epsilon_exact") is not None), r)
        if exact.get("epsilon_exact") is not None:
            value = typeset(f"ε_exact = {fmt(exact['epsilon_exact'])} at δ = {fmt(exact['delta'])}")
            kv.append(["exact loss (white box)", value + ", computed from "
                       "the exact output distributions of our model of the mechanism"
                       + (" (the samples do not reach it at this budget)." if not refuting else ".")])
    if not user:
        fixes = {c["claim_id"]: c for c in payload["records"]
                 if c["scenario"] in scenarios and c["claim_kind"] == "corrected"}
        fix = "; ".join(f"{text(c['claim_id'])}: ({fmt(c['epsilon_claim'])}, {fmt(c['delta'])}), {text(c['finding'])}"
                        + (" (vacuous here)" if c.get("claim_vacuous") else "") for c in fixes.values())
        if not fix:
            holding = {c["claim_id"]: c for c in payload["records"] if c["scenario"] in scenarios
                       and c["finding"] == HOLDS}
            fix = ("none shipped; claims that hold on this pair: " + "; ".join(
                f"{text(c['claim_id'])} ({fmt(c['epsilon_claim'])}, {fmt(c['delta'])})" for c in holding.values())
                   if holding else "none shipped")
        kv.append(["corrected statement", fix])
    title = (f"{number}. Your claim on {mechanism}" if user
             else f"A.{number} {text(r['claim_id'])} [{text(', '.join(scenarios))}]")
    return keep(para(f"<b>{title}</b>", "h2"), kv_table(kv, style="math"))


def appendix(payload: dict[str, Any], user: bool, most: int | None = None) -> list[Flowable]:
    """The appendix's entries, the first ``most`` of them (None: all), saying how many it leaves out."""
    found = entries(payload["records"], user)
    more = 0 if most is None else max(0, len(found) - most)
    found = found if most is None else found[:most]
    if not found:
        return []
    if user:
        intro = ("Each claim of yours that the audit refutes: the witness pair and event, and the counts or the "
                 "exact computation that refute it.")
        title = "Appendix: your claims the audit refutes"
    else:
        intro = ("Each printed claim this run refutes, once per witness pair: the claim and its source, the "
                 "witness pair and event, and the counts (with the Clopper-Pearson arithmetic) or the exact "
                 "computation that refute it. Corrected statements are upper bounds shipped with dpaudit.")
        title = "Appendix A: errata"
    flow: list[Flowable] = [section_break(), heading(title), para(intro, "small")]
    for i, rows in enumerate(found, 1):
        flow += [CondPageBreak(90), _entry(i, rows, payload, user)]
    if more:
        flow.append(para(f"{more} more entries are not shown here. Every number is in results.json (and in "
                         "`dpaudit summary`).", "small"))
    return flow
