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
claim's verdict by the f-DP recursion, the largest rejected GDP μ (:func:`check_onerun_record`); its
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

import math
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from dpaudit.claims import from_dict as renyi_from_dict
from dpaudit.core import InputError
from dpaudit.engine import stattests
from dpaudit.onerun.fdp import largest_rejected_mu, rejects_claim
from dpaudit.onerun.game import MAX_GAME, secret_sha256, unpack_secret
from dpaudit.onerun.result import read_tiebreak
from dpaudit.onerun.rules import Split, Test, counts, tiebreak_keys
from dpaudit.onerun.steinke import epsilon_lower
from dpaudit.onerun.wording import curve_from_dict
from dpaudit.results.recheck_onerun import check_isolated, check_onerun_detectable

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


def _number(value: Any) -> float | None:
    if value is None:
        return None
    return math.inf if value == "inf" else float(value)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(1.0, abs(a), abs(b))


def check_record(rec: dict[str, Any], where: str, source: Any) -> None:
    """Refuse a record whose bound or verdicts its own numbers contradict (a record's fields are
    type-checked by :mod:`dpaudit.results.saved` first; a scenario's claim entries may be malformed here)."""
    if rec.get("kind") == "one-run":
        check_onerun_record(rec, where, source)
        return
    _guarded(where, source, lambda: _check(rec, where, source))


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
    if rec.get("stated_as") is not None:
        _check_renyi_point(rec, claim, lower, fail)


def _check_renyi_point(rec: dict[str, Any], claim: float | None, lower: float | None, fail: Fail) -> None:
    """A point of a zCDP or RDP claim's curve: its ε_claim is the claim's conversion at its δ
    (:mod:`dpaudit.claims`), and its empirical verdict is a violation iff ε_lower exceeds it."""
    stated = renyi_from_dict(rec["stated_as"], field_name="stated_as")
    if claim is not None:
        again = stated.epsilon_at(float(rec["delta"]))
        if not _close(again, claim):
            fail("epsilon_claim", rec["epsilon_claim"],
                 f"{stated.label()} implies eps({rec['delta']:g}) = {again:.6g}")
        if rec.get("verdict") in ("pass", "violation") and lower is not None and \
                (rec["verdict"] == "violation") != (lower > claim):
            fail("verdict", rec["verdict"], f"epsilon_lower {lower:g} against epsilon_claim {claim:g}")


# --- one-run (canary) records ------------------------------------------------------------------
#
# A one-run record's numbers are functions of its counts: the rule's tests (m, k₊, k₋, v, level),
# each a guessing test on the canaries.  Its (ε, δ) lower bound is the largest of the tests'
# Steinke bounds at the claim's δ (Steinke, Nasr, Jagielski 2023, Thm 3.3); a curve claim is
# rejected when one test rejects it by the f-DP recursion (Mahloujifar, Melis, Chaudhuri 2025,
# Alg. 2); the largest rejected GDP μ is the largest over the tests.  All are recomputed here.

_RULES = ("fixed", "grid", "split")
Fail = Callable[[str, Any, str], NoReturn]


def _onerun_tests(info: dict[str, Any], where: str, fail: Fail) -> list[Test]:
    """The record's tests, checked against its rule (the rule and its correction decide each level)."""
    alpha, m = float(info["alpha"]), info["m"]
    if not (isinstance(m, int) and not isinstance(m, bool) and 2 <= m <= MAX_GAME and 0.0 < alpha < 1.0):
        fail("onerun.m", m, f"m must be an integer in [2, {MAX_GAME:.0e}] (the largest game a run plays) and alpha "
             "in (0, 1)")
    rule = info["rule"]
    if not isinstance(rule, dict) or rule.get("rule") not in _RULES:
        fail("onerun.rule", rule, f"must be an object whose rule is one of {', '.join(_RULES)}")
    tests = []
    for i, t in enumerate(info["tests"]):
        values = [t[k] for k in ("m", "k_plus", "k_minus", "v")]
        if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in values):
            fail(f"onerun.tests[{i}]", t, "m, k_plus, k_minus and v must be integers >= 0")
        test = Test(values[0], values[1], values[2], values[3], float(t["alpha"]))
        if not (1 <= test.r <= test.m <= m and test.v <= test.r) or t.get("r", test.r) != test.r:
            fail(f"onerun.tests[{i}]", t, "needs 1 <= r = k_plus + k_minus <= m and v <= r")
        tests.append(test)
    if not tests:
        fail("onerun.tests", info["tests"], "must hold the rule's tests")
    kind = rule["rule"]
    if kind == "fixed":
        ok = (len(tests) == 1 and tests[0].m == m and (tests[0].k_plus, tests[0].k_minus) == (rule["k_plus"],
              rule["k_minus"]) and _close(tests[0].alpha, alpha))
    elif kind == "grid":
        pairs = [tuple(p) for p in rule["pairs"]]
        ok = (len(tests) == len(pairs) and all((t.k_plus, t.k_minus) == p and t.m == m and
                                                _close(t.alpha, alpha / len(pairs)) for t, p in zip(tests, pairs,
                                                                                                    strict=True)))
    else:
        ok = len(tests) == 1 and tests[0].m < m and _close(tests[0].alpha, alpha)
    if not ok:
        fail("onerun.tests", info["tests"], f"are not the tests of its {kind} rule at alpha {alpha:g} "
             "(a fixed rule: one test at alpha; a grid: one per pair at alpha / G; a split: one on the held-out part)")
    best = (info["k_plus"], info["k_minus"], info["r"], info["v"])
    if best not in {(t.k_plus, t.k_minus, t.r, t.v) for t in tests}:
        fail("onerun.v", info["v"], "the reported counts (k_plus, k_minus, r, v) are not those of any of its tests")
    return tests


def _onerun_claim(claim: dict[str, Any], claim_type: str, curve: Any, tests: list[Test], fail: Fail) -> None:
    """A one-run claim's verdict and bound against its tests."""
    verdict, lower = claim.get("verdict"), _number(claim.get("epsilon_lower"))
    if verdict not in ("pass", "violation", "not-applicable"):
        fail("verdict", verdict, "must be pass, violation or not-applicable")
    if claim_type == "curve":
        if lower is not None:
            fail("epsilon_lower", lower, "a curve claim has no (epsilon, delta) lower bound: a GDP mu (or a curve "
                 "test) is never read as one")
        if verdict == "not-applicable":
            return
        try:
            found = curve_from_dict(curve)
        except InputError as exc:
            fail("onerun.curve", curve, f"is not a curve claim ({exc})")
        rejected = any(rejects_claim(found, m=t.m, c_prime=t.r, c=t.v, tau=t.alpha) for t in tests)
        if rejected != (verdict == "violation"):
            fail("verdict", verdict, f"the f-DP recursion {'rejects' if rejected else 'does not reject'} the curve "
                 f"{found.describe()} at its tests")
        return
    if claim_type != "epsilon-delta":
        fail("onerun.claim_type", claim_type, "must be curve or epsilon-delta")
    if verdict == "not-applicable":
        return
    claim_eps, delta = _number(claim.get("epsilon_claim")), float(claim["delta"])
    if claim_eps is None or lower is None or not 0.0 <= delta < 1.0:
        fail("verdict", verdict, "a pass or violation of an (epsilon, delta) claim needs epsilon_claim, "
             "epsilon_lower and a delta in [0, 1)")
    again = max(epsilon_lower(t.m, t.r, t.v, delta=delta, alpha=t.alpha) for t in tests)
    if not _close(again, lower):
        fail("epsilon_lower", lower, f"Steinke's bound of its tests at delta {delta:g} is {again:.6g}")
    if (verdict == "violation") != (lower > claim_eps):
        fail("verdict", verdict, f"epsilon_lower {lower:g} is {'above' if lower > claim_eps else 'not above'} "
             f"epsilon_claim {claim_eps:g}")


def _check_mu(mu_entry: Any, tests: list[Test], fail: Fail, field: str) -> None:
    mu = float(mu_entry["mu"])
    again = max(largest_rejected_mu(m=t.m, c_prime=t.r, c=t.v, tau=t.alpha) for t in tests)
    if not _close(mu, again):
        fail(field, mu, f"the largest GDP mu its tests reject is {again:.6g}")


def _guarded(where: str, source: Any, check: Any) -> None:
    try:
        check()
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError, IndexError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{source}: {where} is malformed ({type(exc).__name__}: {exc})") from None


def check_onerun_record(rec: dict[str, Any], where: str, source: Any) -> None:
    """Refuse a one-run record whose bound, verdict or GDP μ its own tests contradict."""

    def fail(field: str, value: Any, why: str) -> NoReturn:
        raise InputError(f"{source}: {where}.{field} = {value!r} contradicts the record's own numbers: {why}")

    def check() -> None:
        info = rec["onerun"]
        if not isinstance(info, dict):
            fail("onerun", info, "a one-run record carries its counts in 'onerun'")
        if not _close(float(rec["confidence"]), 1.0 - float(info["alpha"])):
            fail("confidence", rec["confidence"], f"its level alpha is {info['alpha']}")
        tests = _onerun_tests(info, where, fail)
        claim_type = info["claim_type"]
        if (claim_type == "curve") != isinstance(info.get("curve"), dict):
            fail("onerun.curve", info.get("curve"), "a curve claim carries its curve, an (epsilon, delta) one none")
        _onerun_claim(rec, claim_type, info.get("curve"), tests, fail)
        _check_mu(info["gdp_mu_lower"], tests, fail, "onerun.gdp_mu_lower.mu")
        if rec.get("detectable") is not None and rec["verdict"] != "pass":
            fail("detectable", "<object>", f"only a claim that holds says what it could have caught (this verdict: "
                 f"{rec['verdict']})")

    _guarded(where, source, check)


def check_onerun_scenario(sc: dict[str, Any], where: str, source: Any) -> None:
    """Refuse a one-run scenario entry whose bounds, verdicts or GDP μ its own tests contradict."""

    def fail(field: str, value: Any, why: str) -> NoReturn:
        raise InputError(f"{source}: {where}.{field} = {value!r} contradicts the scenario's own numbers: {why}")

    def check() -> None:
        for key in ("scenario", "mechanism"):
            if not isinstance(sc[key], str):
                fail(key, sc[key], "must be a string")
        tests = _onerun_tests(sc, where, fail)
        secret, scores = _recount(sc, tests, fail)
        if sc.get("isolated") is not None:
            check_isolated(sc, secret, scores, fail, curve_from_dict)
        for i, b in enumerate(sc["bounds"]):
            again = max(epsilon_lower(t.m, t.r, t.v, delta=float(b["delta"]), alpha=t.alpha) for t in tests)
            if not _close(again, float(b["epsilon_lower"])):
                fail(f"bounds[{i}].epsilon_lower", b["epsilon_lower"], f"its tests give {again:.6g}")
        for i, claim in enumerate(sc["claims"]):
            claim_type = claim["claim_type"]
            curve = claim if claim_type == "curve" else None

            def fail_claim(field: str, value: Any, why: str, i: int = i) -> NoReturn:
                fail(f"claims[{i}].{field}", value, why)

            _onerun_claim(claim, claim_type, curve, tests, fail_claim)
            check_onerun_detectable(claim, float(sc["bounds"][0]["delta"]), fail_claim, tests=tests,
                                    secret_source=sc.get("secret_source"), curve_of=curve_from_dict)
        _check_mu(sc["gdp_mu_lower"], tests, fail, "gdp_mu_lower.mu")

    _guarded(where, source, check)


# --- the game itself: the stored secret and scores give the tests' counts ------------------------------

def _stored_secret(sc: dict[str, Any], m: int, fail: Fail) -> np.ndarray:
    """The secret the scenario stores (packed ``secret_bits`` and/or the ``secret`` list), each copy
    held to the ``secret_sha256`` taken when it was drawn."""
    copies = []
    if sc.get("secret_bits") is not None:
        copies.append(("secret_bits", unpack_secret(sc["secret_bits"], m)))
    if sc.get("secret") is not None:
        raw = sc["secret"]
        if not isinstance(raw, list) or len(raw) != m or not all(x in (0, 1) and not isinstance(x, float)
                                                                 for x in raw):
            fail("secret", f"<{len(raw) if isinstance(raw, list) else type(raw).__name__}>",
                 f"must be the m = {m} inclusion bits 0/1 of the game")
        copies.append(("secret", np.asarray(raw, dtype=np.int8)))
    if not copies:
        fail("secret_bits", None, "a one-run game stores its secret (and its scores) so that it can be recounted")
    for key, bits in copies:
        if secret_sha256(bits) != sc["secret_sha256"]:
            fail(key, f"<{m} bits>", f"its SHA-256 {secret_sha256(bits)[:16]}... is not secret_sha256 "
                 f"{str(sc['secret_sha256'])[:16]}...: the secret or its hash was altered")
    return copies[0][1]


def _stored_scores(sc: dict[str, Any], m: int, fail: Fail) -> np.ndarray:
    raw = sc.get("scores")
    if not isinstance(raw, list) or len(raw) != m:
        fail("scores", f"<{len(raw) if isinstance(raw, list) else type(raw).__name__}>",
             f"a one-run game stores its m = {m} scores (one per canary) so that it can be recounted")
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in raw):
        fail("scores", "<values>", "must be numbers")
    scores = np.asarray(raw, dtype=float)
    if not np.all(np.isfinite(scores)):
        fail("scores", "<non-finite>", "must all be finite")
    return scores


def _stored_keys(sc: dict[str, Any], m: int, fail: Fail) -> np.ndarray | None:
    """The tie-break key of the stored seed (``tiebreak``), or None when the game has none."""
    try:
        seed = read_tiebreak(sc.get("tiebreak"))
    except InputError as exc:
        fail("tiebreak", sc.get("tiebreak"), str(exc).partition(" is invalid: ")[2] or str(exc))
    return None if seed is None else tiebreak_keys(seed, m)


def _recount(sc: dict[str, Any], tests: Sequence[Test], fail: Fail) -> tuple[np.ndarray, np.ndarray]:
    """Each test's v counted again from the stored scores and secret under the rule (Steinke et al.
    2023, Algorithm 1: "in" on the k₊ highest scores, "out" on the k₋ lowest), and the secret's hash.

    Tied scores are ranked by the key of the stored ``tiebreak`` seed, as the run ranked them.  A
    game without one (null, or a file written before the key existed) is recounted with tied blocks
    counted worst-case, and its stored v must equal that count: a file whose v was counted with
    ties broken by canary index (before worst-case counting) is refused when ties at a cut made a
    difference, because that order could turn ties into right guesses (a false finding); with no
    tie at a cut every order gives the same v and the file is accepted.  The seed, like the scores,
    is the file's word: the recount shows that the counts follow from it, not that it was drawn
    before anyone looked (a seed searched for a larger v passes, as rewritten scores would)."""
    m = sc["m"]
    if not (isinstance(sc.get("runs"), int) and sc["runs"] >= 1 and m % sc["runs"] == 0
            and sc.get("canaries_per_run", m // sc["runs"]) == m // sc["runs"]):
        fail("runs", sc.get("runs"), f"must be an integer >= 1 dividing m = {m}, with canaries_per_run = m / runs")
    secret, scores = _stored_secret(sc, m, fail), _stored_scores(sc, m, fail)
    keys = _stored_keys(sc, m, fail)
    rule = sc["rule"]
    if rule["rule"] == "split":
        delta = float(sc["bounds"][0]["delta"])
        split = Split(select=float(rule["select"]), fractions=tuple(float(f) for f in rule["fractions"]),
                      seed=int(rule["seed"]))
        floor = rule.get("fallback_floor", 0.0)  # absent in files written before Split had one: 0
        if not (isinstance(floor, (int, float)) and not isinstance(floor, bool) and math.isfinite(floor)
                and floor >= 0):
            fail("rule.fallback_floor", floor, "must be a finite number >= 0")
        again = split.tests(scores, secret, tests[0].alpha,
                            lambda mm, r, v, a: epsilon_lower(mm, r, v, delta=delta, alpha=a), keys,
                            floor=float(floor))
    else:
        again = [Test(m, t.k_plus, t.k_minus, counts(scores, secret, t.k_plus, t.k_minus, keys), t.alpha)
                 for t in tests]
    how = ("tied scores ranked by its tiebreak seed" if keys is not None else
           "no tiebreak seed stored: tied scores counted worst-case (a file whose v counted ties by canary "
           "index is refused: re-run the audit)")
    for i, (t, a) in enumerate(zip(tests, again, strict=True)):
        if (t.m, t.k_plus, t.k_minus, t.v) != (a.m, a.k_plus, a.k_minus, a.v):
            field = "v" if (t.m, t.k_plus, t.k_minus) == (a.m, a.k_plus, a.k_minus) else "k_plus"
            fail(f"tests[{i}].{field}", getattr(t, field), f"the stored scores and secret give m = {a.m}, "
                 f"k_plus = {a.k_plus}, k_minus = {a.k_minus}, v = {a.v} under the {rule['rule']} rule ({how})")
    return secret, scores


def _same_detectable(rec: dict[str, Any], sc: dict[str, Any], where: str, fail: Fail) -> None:
    """A one-run record's ``detectable`` is its scenario's claim entry's (which
    :func:`~dpaudit.results.recheck_onerun.check_onerun_detectable` checks); files before either key pass."""
    entry = next((c for c in sc["claims"] if isinstance(c, dict) and c.get("claim_id") == rec["claim_id"]), None)
    if entry is not None and "detectable" in entry and "detectable" in rec and rec["detectable"] != entry["detectable"]:
        fail(where, "<object>" if rec["detectable"] is not None else None,
             f"its scenario's claim {rec['claim_id']!r} says {entry['detectable']!r}")


_LINKED = ("m", "runs", "r", "v", "k_plus", "k_minus", "rule", "alpha", "secret_sha256", "tests")


def check_onerun_links(payload: dict[str, Any], source: Any) -> None:
    """Each one-run record is its scenario's game: the same counts, tests, rule, secret hash and seed;
    each one-run scenario ran at the run's seed and holds its m scores (m at most :data:`MAX_GAME`).
    A record that names no one-run scenario, or differs from it, is refused naming the field.  Run
    before the records' bounds are recomputed: their cost (O(m) per test) is then that of a game
    the file really holds."""

    def fail(where: str, value: Any, why: str) -> NoReturn:
        raise InputError(f"{source}: {where} = {value!r} contradicts the record's own numbers: {why}")

    def check() -> None:
        games = {}
        for i, sc in enumerate(payload["scenarios"]):
            if isinstance(sc, dict) and sc.get("kind") == "one-run":
                m, scores = sc["m"], sc.get("scores")
                if not (isinstance(m, int) and not isinstance(m, bool) and 2 <= m <= MAX_GAME):
                    fail(f"scenarios[{i}].m", m, f"a one-run game holds from 2 to {MAX_GAME:.0e} canaries (the "
                         "largest game a run plays)")
                if not isinstance(scores, list) or len(scores) != m:  # before any bound of m is computed
                    fail(f"scenarios[{i}].scores", f"<{len(scores) if isinstance(scores, list) else scores}>",
                         f"a one-run game stores its m = {m} scores (one per canary) so that it can be recounted")
                if sc["seed"] != payload["seed"]:
                    fail(f"scenarios[{i}].seed", sc["seed"], f"the run's seed is {payload['seed']}")
                games[sc["scenario"]] = sc
        for i, rec in enumerate(payload["records"]):
            if not isinstance(rec, dict) or rec.get("kind") != "one-run":
                continue
            sc = games.get(rec["scenario"])
            if sc is None:
                fail(f"records[{i}].scenario", rec["scenario"], "names no one-run scenario of the file (whose game "
                     "holds the scores and secret its counts come from)")
            if rec["seed"] != sc["seed"]:
                fail(f"records[{i}].seed", rec["seed"], f"its scenario's game ran at seed {sc['seed']}")
            for key in _LINKED:
                if rec["onerun"][key] != sc[key]:
                    fail(f"records[{i}].onerun.{key}", rec["onerun"][key], f"its scenario's game has {sc[key]!r}")
            _same_detectable(rec, sc, f"records[{i}].detectable", fail)

    _guarded("records", source, check)
