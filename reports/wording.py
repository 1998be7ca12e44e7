"""What the PDF report says, decided from the saved records alone: which claims are the user's own
(said as "your claim", with no source), the explanation of each kind of finding (written once per
kind, never once per claim), and which family a scenario belongs to."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from dpaudit.engine.verdicts import (
    HOLDS,
    NO_CLAIM,
    NOT_APPLICABLE,
    REFUTED_EMPIRICAL,
    REFUTED_WHITE_BOX,
    UNVERIFIED_HOLDS,
)
from dpaudit.reports.text import fmt

REFUTED = (REFUTED_EMPIRICAL, REFUTED_WHITE_BOX)
# Tables list refutations first, then what holds, then what does not apply.
RANK = {f: i for i, f in enumerate((REFUTED_EMPIRICAL, REFUTED_WHITE_BOX, UNVERIFIED_HOLDS, HOLDS, NOT_APPLICABLE,
                                    NO_CLAIM))}
USER_SECTION = "Your mechanisms"
OTHER_SECTION = "Other scenarios"

_MEANING = {
    REFUTED_EMPIRICAL: "the Clopper-Pearson lower bound eps_lower, computed from samples of the mechanism alone, "
                       "exceeds the claimed epsilon at the claim's delta: the claim is false with at least the "
                       "stated confidence.",
    REFUTED_WHITE_BOX: "the exact privacy loss of the neighbouring pair (eps_exact), computed from our model of the "
                       "mechanism, exceeds the claimed epsilon; the samples did not reach it at this budget, so the "
                       "refutation rests on the model being the mechanism.",
    HOLDS: "neither the samples nor the exact loss refute the claim. This is not a proof: the slack "
           "eps_claim - eps_lower says how close the audit came.",
    UNVERIFIED_HOLDS: "not refuted, but the source's argument does not establish the claim; not refuting it does "
                      "not make it true.",
    NOT_APPLICABLE: "the scenario lies outside the claim's premise (its relation, delta or parameter range): the "
                    "claim says nothing here, and this is a misuse, not an error of the claim.",
    NO_CLAIM: "no claim was given: only eps_lower was measured.",
}


def is_user_claim(r: dict[str, Any]) -> bool:
    """A claim the user stated (command line or config): no registry status and no document."""
    return bool(r.get("claim_id")) and r.get("claim_status") is None and not r.get("claim_document")


def user_run(payload: dict[str, Any]) -> bool:
    """Every checked claim is the user's own and no document is cited: say "your claim" throughout."""
    claims = [r for r in payload["records"] if r.get("claim_id")]
    return not payload.get("documents") and all(is_user_claim(r) for r in claims)


def meanings(findings: Iterable[str]) -> list[tuple[str, str]]:
    """(finding, what it means) for each kind present, in the tables' order."""
    present = set(findings)
    return [(f, _MEANING[f]) for f in RANK if f in present and f in _MEANING]


def status_label(r: dict[str, Any]) -> str:
    """The claim's registry status as the tables show it."""
    if is_user_claim(r):
        return "your claim"
    status = r.get("claim_status")
    if status is None:
        return "-"
    if status == "corrected":
        return "corrected (vacuous)" if r.get("claim_vacuous") else "corrected upper bound"
    if status == "reference":
        return "tight reference"
    return status


def claim_name(r: dict[str, Any]) -> str:
    """How a claim is named in prose: its id, or "your claim" for the user's own."""
    return "your claim" if is_user_claim(r) else r["claim_id"] or "-"


def params_label(params: dict[str, Any] | None) -> str:
    """A mechanism's parameters as key=value, or "" when it has none."""
    return ", ".join(f"{k}={fmt(v) if isinstance(v, float) else v}" for k, v in (params or {}).items() if k != "name")


def sequential_parts(description: str) -> tuple[str, str]:
    """(the sequential rule, where this scenario stopped) of a record's ``sequential`` text: the rule
    is the same for every scenario and said once; the stop is the scenario's own."""
    rule, _, stop = description.partition("; look ")
    return rule, (f"look {stop}" if stop else "")


def count(n: float) -> str:
    """A sample count as a reader writes it: 20000, 1e6, 1.76e7."""
    if n < 1e5:
        return f"{n:.0f}"
    mantissa, exponent = f"{n:.3g}".split("e")
    return f"{mantissa}e{int(exponent)}"


def mechanism_label(name: str, params: dict[str, Any] | None) -> str:
    """The mechanism's own name with its parameters, and no empty parentheses when it has none."""
    shown = params_label(params)
    return f"{name} ({shown})" if shown else name


def sorted_records(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=lambda r: (RANK.get(r["finding"], 9), r["scenario"] or "", r["claim_id"] or ""))


Families = Sequence[tuple[str, str, Collection[str], Collection[str]]]


def family_of(scenario: dict[str, Any], records: Sequence[dict[str, Any]], families: Families, *,
              user: bool = False) -> tuple[str, str]:
    """(family, about) of a scenario: its own ``family`` key when the file has one (null: no family
    knew it); else, in a file written before the key, the first of ``families`` (name, about, claim ids,
    mechanism names: the installed catalog's) whose registry holds its claims or whose catalog lists its
    mechanism; a mechanism no family knows is the user's own.  ``user``: a user's run, whose claims are
    said in the user's words (no family at all)."""
    if user:
        families = ()
    elif "family" in scenario:  # written with the results: the file alone decides (the same on any install)
        if scenario["family"] is not None:
            return scenario["family"]["name"], scenario["family"]["about"]
        families = ()
    ids = {r["claim_id"] for r in records if r.get("claim_id")}
    for name, about, claims, mechanisms in families:
        if ids & set(claims) or scenario["mechanism"] in mechanisms:
            return name, about
    return (USER_SECTION if all(is_user_claim(r) for r in records if r.get("claim_id")) else OTHER_SECTION), ""
