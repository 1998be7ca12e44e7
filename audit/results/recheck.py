"""Saved verdicts recomputed from their own counts: ``summary`` and ``report`` check, never trust.

A record of ``results.json`` carries the event that decided its bound with the counts under
D and D′, the δ and the confidence of the bound.  Its ε lower bound is a function of those alone
and of its ``test`` (:mod:`dpaudit.engine.stattests`): the joint exact test of the ratio, or
the Clopper–Pearson pair ``ε_lower = max(0, log((p_lo − δ) / q_hi))``, with ``p_lo`` the one-sided
lower bound of the favoured side's rate and ``q_hi`` the upper bound of the other's, each at level
α/2 with α = 1 − confidence (Clopper & Pearson 1934), which a record without the key used; and its
verdicts are functions of the bounds and the claim.  Each is recomputed here and a record that
disagrees is refused, naming the record and the field: an ``epsilon_lower`` its counts contradict,
an ``exact_verdict`` of "pass" with ``epsilon_exact`` above the claim.  A one-run record (``kind`` =
"one-run") is recomputed from its guessing tests: Steinke's bound from (m, r, v, δ, α), a curve
claim's verdict by the f-DP recursion, the largest rejected GDP μ
(:func:`dpaudit.results.recheck_onerun.check_onerun_record`, imported only for a document that has one); its
scenario's game is recounted from the stored scores and secret (the secret's SHA-256 compared, each
test's v counted again under the rule, tied scores ranked by the stored tie-break seed:
:func:`check_onerun_scenario`) and each record is held to its scenario's game
(:func:`check_onerun_links`), a scenario's independent-canary reading (``isolated``) recounted from
the same scores and secret at its recorded threshold and each claim's ``detectable`` checked for
consistency, not simulated again (:mod:`dpaudit.results.recheck_onerun` says what is and is not).  A
record's ``detectable`` must be its scenario claim's.  A one-run game larger than :data:`MAX_GAME` canaries is refused
before anything is counted: no run produces one, and its cost would be unbounded.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any, NoReturn

from dpaudit.claims import from_dict as renyi_from_dict
from dpaudit.core import InputError
from dpaudit.engine import stattests

REL_TOL = 1e-7  # the bound is recomputed with the same scipy functions; this only absorbs rounding
EXACT_REL_TOL = 1e-9  # as dpaudit.engine.results: an exact value equal to the claim up to rounding is not a violation


def recomputed_lower(event: dict[str, Any]) -> float:
    """The ε lower bound the saved ``event`` (counts, δ, confidence, favoured side) gives."""
    counts, fav = event["counts"], event["event"].get("favours")
    (k1, n1), (k2, n2) = (counts["D"], counts["D'"]) if fav == "D" else (counts["D'"], counts["D"])
    alpha = (1.0 - float(event["confidence"])) / 2.0
    # the test saved with the bound (dpaudit.engine.stattests); records before the joint test have none
    test = stattests.get(event.get("test", "clopper-pearson")).bound
    return max(0.0, float(test(k1, n1, k2, n2, float(event["delta"]), alpha)))


def as_number(value: Any) -> float | None:
    """A saved number: None, \"inf\" or a float."""
    if value is None:
        return None
    return math.inf if value == "inf" else float(value)


def close_enough(a: float, b: float) -> bool:
    """Equal up to the rounding of a recomputation with the same scipy functions (:data:`REL_TOL`)."""
    return abs(a - b) <= REL_TOL * max(1.0, abs(a), abs(b))


def check_record(rec: dict[str, Any], where: str, source: Any) -> None:
    """Refuse a record whose bound or verdicts its own numbers contradict (a record's fields are
    type-checked by :mod:`dpaudit.results.saved` first; a scenario's claim entries may be malformed here)."""
    if rec.get("kind") == "one-run":
        _games().check_onerun_record(rec, where, source)
        return
    guarded(where, source, lambda: _check(rec, where, source))


def _check(rec: dict[str, Any], where: str, source: Any) -> None:

    def fail(field: str, value: Any, why: str) -> NoReturn:
        raise InputError(f"{source}: {where}.{field} = {value!r} contradicts the record's own numbers: {why}")

    event = rec.get("event")
    lower = as_number(rec.get("epsilon_lower"))
    if event is not None:
        if not isinstance(event.get("event"), dict) or event["event"].get("favours") not in ("D", "D'"):
            fail("event.event.favours", event.get("event"), "the event must say which side it favours (D or D')")
        again = recomputed_lower(event)
        if not close_enough(again, float(event["epsilon_lower"])):
            fail("event.epsilon_lower", event["epsilon_lower"], f"its counts give {again:.6g}")
        if lower is not None and not close_enough(again, lower):
            fail("epsilon_lower", rec["epsilon_lower"], f"the counts of its event give {again:.6g}")
        if not close_enough(float(event["delta"]), float(rec["delta"])):
            fail("event.delta", event["delta"], f"the record's delta is {rec['delta']}")
    elif rec.get("verdict") in ("pass", "violation"):
        fail("event", None, f"a {rec['verdict']} verdict needs the event and counts that decided it")
    claim, exact = as_number(rec.get("epsilon_claim")), as_number(rec.get("epsilon_exact"))
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
    if rec.get("stated_as") is not None:
        _check_renyi_point(rec, claim, lower, fail)


def _check_renyi_point(rec: dict[str, Any], claim: float | None, lower: float | None, fail: Fail) -> None:
    """A point of a zCDP or RDP claim's curve: its ε_claim is the claim's conversion at its δ
    (:mod:`dpaudit.claims`), and its empirical verdict is a violation iff ε_lower exceeds it."""
    stated = renyi_from_dict(rec["stated_as"], field_name="stated_as")
    if claim is not None:
        again = stated.epsilon_at(float(rec["delta"]))
        if not close_enough(again, claim):
            fail("epsilon_claim", rec["epsilon_claim"],
                 f"{stated.label()} implies eps({rec['delta']:g}) = {again:.6g}")
        if rec.get("verdict") in ("pass", "violation") and lower is not None and \
                (rec["verdict"] == "violation") != (lower > claim):
            fail("verdict", rec["verdict"], f"epsilon_lower {lower:g} against epsilon_claim {claim:g}")


Fail = Callable[[str, Any, str], NoReturn]


def guarded(where: str, source: Any, check: Any) -> None:
    """``check()``, a malformed entry's error (a missing key, a wrong type) refused as an InputError."""
    try:
        check()
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError, IndexError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{source}: {where} is malformed ({type(exc).__name__}: {exc})") from None


def _games() -> Any:
    """:mod:`dpaudit.results.recheck_onerun`, imported on first use: a document of multi-run records
    alone, which the supervising parent re-checks after every run, loads no one-run code and with it
    no scipy.stats or scipy.optimize (about 0.4 of the parent's 0.9 CPU s)."""
    return importlib.import_module("dpaudit.results.recheck_onerun")


def check_onerun_scenario(sc: dict[str, Any], where: str, source: Any) -> None:
    """Refuse a one-run scenario entry whose bounds, verdicts or GDP μ its own tests contradict
    (:func:`dpaudit.results.recheck_onerun.check_onerun_scenario`)."""
    _games().check_onerun_scenario(sc, where, source)


def check_onerun_links(payload: dict[str, Any], source: Any) -> None:
    """Each one-run record is its scenario's game (:func:`dpaudit.results.recheck_onerun.check_onerun_links`);
    a document whose scenarios and records are lists holding no one-run entry has none to link."""
    parts = [payload.get(key) for key in ("scenarios", "records")] if isinstance(payload, dict) else [None]
    lists = [part for part in parts if isinstance(part, list)]
    if len(lists) == len(parts) and not any(
            isinstance(entry, dict) and entry.get("kind") == "one-run" for part in lists for entry in part):
        return
    _games().check_onerun_links(payload, source)
