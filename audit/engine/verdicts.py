"""The one vocabulary of every surface: the finding words (one per claim, combining both witnesses),
the JSON codes they go with, the outcome words of a run, and the sentences that put them together.

The CLI table, ``summary``, the PDF, ``print(result)`` and the pytest messages all take their words
from here, so a verdict is spelled one way everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dpaudit.core import Verdict

REFUTED_EMPIRICAL = "refuted (empirical)"
REFUTED_WHITE_BOX = "refuted (white box)"
HOLDS = "holds at this budget"
UNVERIFIED_HOLDS = "not refuted — unverified claim"
NOT_APPLICABLE = "not-applicable"
# The one verdict per claim, combining both witnesses (the samples first: they depend only on the
# mechanism's own code; the white box depends on our model of it).
FINDINGS = (REFUTED_EMPIRICAL, REFUTED_WHITE_BOX, HOLDS, UNVERIFIED_HOLDS, NOT_APPLICABLE)
NO_CLAIM = "no claim checked"  # the finding of a record with no claim: eps_lower measured only
# The JSON contract codes (``verdict`` of a record) and the finding word each can carry: humans read
# the words, programs the codes; the schema (dpaudit.results.schema) documents the correspondence.
VERDICT_FINDINGS = {"violation": (REFUTED_EMPIRICAL,),
                    "pass": (REFUTED_WHITE_BOX, HOLDS, UNVERIFIED_HOLDS),
                    "not-applicable": (NOT_APPLICABLE, NO_CLAIM)}


# How a human surface says the white box's code and an expectation code.
WHITE_BOX_WORDS = {"violation": "refutes it", "pass": "holds", "not-applicable": NOT_APPLICABLE}
EXPECTATION_WORDS = {"violation": "expected refuted (empirical)",
                     "exact-violation": "expected refuted (white box or empirical)",
                     "pass": "expected to hold", "not-applicable": "expected not-applicable"}


# How a human surface says the one-run test of a curve claim (μ-GDP, an accountant's profile): the
# f-DP recursion rejects the curve at the run's confidence, or does not ("not rejected" is no proof).
CURVE_WORDS = {"violation": "curve rejected", "pass": "curve not rejected", "not-applicable": NOT_APPLICABLE}


NOT_REPRODUCIBLE = "not reproducible: unseeded mechanism"  # said of results of a mechanism with seeded = False


def doubles_words(floating: float | None, values: float, name: str = "eps_lower") -> str:
    """What the floating view's bound says beside the value views': a leak of the doubles when it
    certifies more than any event on the values (on outputs that are values on one grid its
    categories are only a coarse histogram, and it certifies no more than they do)."""
    if floating is not None and floating > values:
        return f"the implementation leaks through its doubles ({name} {floating:.4g}, floating view)"
    return f"the floating view ({name} {short(floating)}) sees no more than the values"


# What to do about a leak through the doubles (Mironov, CCS 2012): said wherever it is found.
FLOAT_FIX = ("To fix the doubles, release every output on one grid: `from dpaudit.mechanisms.classic import "
             "on_grid`, then `return on_grid(value + noise)` (multiples of 2^-32), or snap (Mironov 2012; "
             "dpaudit.mechanisms.classic.SnappingLaplace)")


def float_fix(floating: float | None, values: float, values_hold: bool) -> str:
    """What to do when the floating view certifies more than the values (a leak of the doubles):
    :data:`FLOAT_FIX`, and whether that will be enough — it is when the value views hold (a float
    leak alone); when they refute the claim too, the mechanism is also miscalibrated.  The empty
    string when the doubles do not leak."""
    if floating is None or floating <= values:
        return ""
    if values_hold:
        return f"{FLOAT_FIX}; the audit then checks the mechanism as mathematics, which holds here"
    return (f"{FLOAT_FIX}. That alone will not do: the value views refute the claim too, so the mechanism "
            "is miscalibrated as well (check its noise scale)")


def short(value: float | None) -> str:
    """A bound as the messages print it: four significant digits, ``-`` for none."""
    return "-" if value is None else f"{value:.4g}"


def most_severe(findings: Sequence[str]) -> str:
    """The worst of ``findings`` in :data:`FINDINGS`' order (:data:`NO_CLAIM` when there are none)."""
    return min(findings, key=FINDINGS.index) if findings else NO_CLAIM


def finding(verdict: Verdict, exact_verdict: Verdict | None, status: str | None) -> str:
    """The combined verdict of one claim from its empirical and white-box verdicts and its status."""
    if verdict == Verdict.VIOLATION:
        return REFUTED_EMPIRICAL
    if exact_verdict == Verdict.VIOLATION:  # "not-applicable" for a claim that does not apply
        return REFUTED_WHITE_BOX
    if verdict == Verdict.NOT_APPLICABLE:
        return NOT_APPLICABLE
    return UNVERIFIED_HOLDS if status == "unverified" else HOLDS


def outcome(record: Mapping[str, Any]) -> str:
    """What a record means for the run: ok, a caught erratum, a missed or an unexpected refutation.

    The one place that decides it, from the record's finding and expectation: the summary table,
    the PDF, ``summary``'s exit code and :meth:`ClaimCheck.as_expected` all read it.  An expected
    ``violation`` must be refuted from the samples; ``exact-violation`` accepts the white box.
    """
    found, expected = record["finding"], record.get("expected_verdict")
    if found == NO_CLAIM:
        return "ok"
    refuted = found in (REFUTED_EMPIRICAL, REFUTED_WHITE_BOX)
    if expected in ("violation", "exact-violation"):
        # An erratum is a printed claim the registry marks refuted.  A claim the registry does not know
        # is the user's own (no paper printed it), and a sound claim refuted on a deliberately broken
        # mechanism (a faulty twin) is no erratum of its source: both are expected refutations.
        own = "claim_status" in record and record["claim_status"] != "refuted"
        if found == REFUTED_EMPIRICAL:
            return EXPECTED_CAUGHT if own else "known erratum — caught"
        if found == REFUTED_WHITE_BOX and expected == "exact-violation":
            return EXPECTED_CAUGHT_WHITE_BOX if own else "known erratum — caught by the white box"
        return "MISSED expected violation"
    if refuted and expected is None and record.get("no_expectation"):  # a suite design's open claim: not a finding
        return NO_EXPECTATION_REFUTED
    if refuted:
        return "UNEXPECTED violation"
    if expected == "not-applicable" and found != NOT_APPLICABLE:
        return "MISMATCH (expected not-applicable)"
    if expected == "pass" and found == NOT_APPLICABLE:
        return "MISMATCH (expected pass)"
    return "ok"


EXPECTED_CAUGHT = "expected refutation — caught"
EXPECTED_CAUGHT_WHITE_BOX = "expected refutation — caught by the white box"
# A suite design's claim that it states no expectation for (a faulty twin's claim that goes either
# way at the design's budget), refuted: listed with its verdict, not a finding (dpaudit.catalog.onerun).
NO_EXPECTATION_REFUTED = ("refuted (no expectation: this design is built faulty / the claim goes either way at "
                          "this budget)")
OK_OUTCOMES = ("ok", "known erratum — caught", "known erratum — caught by the white box", EXPECTED_CAUGHT,
               EXPECTED_CAUGHT_WHITE_BOX, NO_EXPECTATION_REFUTED)


# Every word :func:`outcome` can give (the outcome vocabulary of every human surface).
OUTCOMES = (*OK_OUTCOMES, "MISSED expected violation", "UNEXPECTED violation",
            "MISMATCH (expected not-applicable)", "MISMATCH (expected pass)")


def run_as_expected(records: Sequence[Mapping[str, Any]]) -> bool:
    """Exit status 0 of a run (or of ``summary`` on its results): every record's outcome is ok."""
    return all(outcome(r) in OK_OUTCOMES for r in records)
