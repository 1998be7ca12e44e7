"""Saved verdicts recomputed from their own counts: ``summary`` and ``report`` check, never trust.

A record of ``results.json`` carries the event that decided its bound with the counts under
D and D′, the δ and the confidence of the bound.  Its ε lower bound is a function of those alone
(Clopper–Pearson: ``ε_lower = max(0, log((p_lo − δ) / q_hi))``, with ``p_lo`` the one-sided lower
bound of the favoured side's rate and ``q_hi`` the upper bound of the other's, each at level
α/2 with α = 1 − confidence; Clopper & Pearson 1934), and its verdicts are functions of the
bounds and the claim.  Each is recomputed here and a record that disagrees is refused, naming the
record and the field: an ``epsilon_lower`` its counts contradict, an ``exact_verdict`` of "pass"
with ``epsilon_exact`` above the claim.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

from dpaudit.core import InputError
from dpaudit.engine.bounds import clopper_pearson, epsilon_from_bounds

REL_TOL = 1e-7  # the bound is recomputed with the same scipy functions; this only absorbs rounding
EXACT_REL_TOL = 1e-9  # as dpaudit.engine.results: an exact value equal to the claim up to rounding is not a violation


def recomputed_lower(event: dict[str, Any]) -> float:
    """The ε lower bound the saved ``event`` (counts, δ, confidence, favoured side) gives."""
    counts, fav = event["counts"], event["event"].get("favours")
    (k1, n1), (k2, n2) = (counts["D"], counts["D'"]) if fav == "D" else (counts["D'"], counts["D"])
    alpha = (1.0 - float(event["confidence"])) / 2.0
    lo, _ = clopper_pearson(k1, n1, alpha)
    _, hi = clopper_pearson(k2, n2, alpha)
    return max(0.0, float(epsilon_from_bounds(lo, hi, float(event["delta"]))))


def _number(value: Any) -> float | None:
    if value is None:
        return None
    return math.inf if value == "inf" else float(value)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(1.0, abs(a), abs(b))


def check_record(rec: dict[str, Any], where: str, source: Any) -> None:
    """Refuse a record whose bound or verdicts its own numbers contradict (a record's fields are
    type-checked by :mod:`dpaudit.runs.saved` first; a scenario's claim entries may be malformed here)."""
    try:
        _check(rec, where, source)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{source}: {where} is malformed ({type(exc).__name__}: {exc})") from None


def _check(rec: dict[str, Any], where: str, source: Any) -> None:

    def fail(field: str, value: Any, why: str) -> NoReturn:
        raise InputError(f"{source}: {where}.{field} = {value!r} contradicts the record's own numbers: {why}")

    event = rec.get("event")
    lower = _number(rec.get("epsilon_lower"))
    if event is not None:
        if not isinstance(event.get("event"), dict) or event["event"].get("favours") not in ("D", "D'"):
            fail("event.event.favours", event.get("event"), "the event must say which side it favours (D or D')")
        again = recomputed_lower(event)
        if not _close(again, float(event["epsilon_lower"])):
            fail("event.epsilon_lower", event["epsilon_lower"], f"its counts give {again:.6g}")
        if lower is not None and not _close(again, lower):
            fail("epsilon_lower", rec["epsilon_lower"], f"the counts of its event give {again:.6g}")
        if not _close(float(event["delta"]), float(rec["delta"])):
            fail("event.delta", event["delta"], f"the record's delta is {rec['delta']}")
    elif rec.get("verdict") in ("pass", "violation"):
        fail("event", None, f"a {rec['verdict']} verdict needs the event and counts that decided it")
    claim, exact = _number(rec.get("epsilon_claim")), _number(rec.get("epsilon_exact"))
    verdict = rec.get("exact_verdict")
    if verdict in ("pass", "violation"):
        if claim is None or exact is None:
            fail("exact_verdict", verdict, "a white-box verdict needs epsilon_exact and epsilon_claim")
        over = exact > claim * (1 + EXACT_REL_TOL) + 1e-12
        if (verdict == "violation") != over:
            fail("exact_verdict", verdict, f"epsilon_exact {exact:g} is {'above' if over else 'not above'} "
                 f"epsilon_claim {claim:g}")
    elif verdict is None and exact is not None and claim is not None and rec.get("verdict") != "not-applicable":
        fail("exact_verdict", verdict, f"epsilon_exact {exact:g} and epsilon_claim {claim:g} give a white-box verdict")
