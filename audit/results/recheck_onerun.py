"""A saved one-run game's records and scenarios recounted, its independent-canary reading and its
"could have caught" values checked, never trusted (:mod:`dpaudit.results.recheck` says how and
calls these: they live here so that a document without one-run entries loads no one-run code).

Two keys of a one-run scenario of ``results.json`` that :mod:`dpaudit.results.recheck` holds to the
game it recounts:

* ``isolated`` (:mod:`dpaudit.onerun.isolated`): a function of the stored scores, secret and the
  recorded threshold alone.  The counts above the threshold (``n_in``, ``n_out``, ``tp``, ``fp``),
  the two one-sided Clopper–Pearson bounds at α/2, each (ε, δ) bound, the GDP μ and its ε reading,
  and each claim's ``epsilon_lower`` and ``rejected`` are computed again and a file that disagrees
  is refused, naming the field.  Not re-checked: that the threshold was fixed before the scores were
  seen and that the premise holds (the file's word, as ``declared_by`` and ``check`` say), and a
  claim entry whose ``rejected`` is null (the claim did not apply to the game under its relation).
* a claim's ``detectable`` (:mod:`dpaudit.onerun.detectable`): its power simulation (0.1–1.5 s per
  claim) is not run again.  What is checked: it is null unless the claim holds (verdict "pass"); its
  ``delta`` is the claim's (a curve claim's: the scenario's first δ); its ``epsilon`` is its ``mu``
  read through μ-GDP's profile at that δ (Dong, Roth, Su 2022, Cor. 2.13), "inf" exactly when ``mu``
  is null or δ = 0; and ``mu`` exceeds the claim's own μ (a GDP claim's μ, an (ε, δ) claim's largest
  GDP μ that satisfies it): a leak the claim allows is refuted at most α of the time, never 9 times
  in 10.  The ranges (μ in (0, 20], ``canaries_for_twice`` an integer in [2, 2·10⁵] or null) are the
  schema's.  And the numbers themselves, against the game's recounted tests
  (:func:`dpaudit.onerun.detectable.contradiction`): ``mu`` must be the smallest leak the fixed-seed
  simulation refutes 9 times in 10 (power ≥ 0.9 at ``mu``, below it at ``mu`` − 0.002: two power
  evaluations, about 0.1–0.3 s per holding claim at m = 1000), and ``canaries_for_twice`` is
  recomputed (quantile model).  A ``detectable`` edited consistently in both copies is refused; on
  89c5de2 ``summary`` printed a forged "could have caught … mu >= 19 (eps >= 261)".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from dpaudit.core import Guarantee, InputError
from dpaudit.onerun.claimrule import claim_mu
from dpaudit.onerun.curves import CurveClaim, gdp_epsilon, gdp_mu
from dpaudit.onerun.detectable import contradiction
from dpaudit.onerun.fdp import largest_rejected_mu, rejects_claim
from dpaudit.onerun.game import FRESH, MAX_GAME, secret_sha256, unpack_secret
from dpaudit.onerun.isolated import IsolatedBound, isolated_bound, point_rejects
from dpaudit.onerun.planner import MU_MAX
from dpaudit.onerun.result import read_tiebreak
from dpaudit.onerun.rules import Split, Test, counts, tiebreak_keys
from dpaudit.onerun.steinke import epsilon_lower, prior_guard
from dpaudit.onerun.wording import curve_from_dict
from dpaudit.results.recheck import Fail, as_number, close_enough, guarded

__all__ = ["check_isolated", "check_onerun_detectable", "check_onerun_links", "check_onerun_record",
           "check_onerun_scenario"]



def _again(iso: dict[str, Any], secret: np.ndarray, scores: np.ndarray, deltas: list[float]) -> IsolatedBound:
    return isolated_bound(scores, secret, threshold=float(iso["threshold"]), declared_by=str(iso["declared_by"]),
                          reason=str(iso["reason"]), check=str(iso["check"]),
                          threshold_source=str(iso["threshold_source"]), deltas=deltas, alpha=float(iso["alpha"]))


def check_isolated(sc: dict[str, Any], secret: np.ndarray, scores: np.ndarray, fail: Fail,
                   curve_of: Callable[[Any], CurveClaim]) -> None:
    """Refuse a scenario's ``isolated`` entry that its stored scores, secret and threshold contradict
    (module docstring); ``curve_of`` reads a curve claim's entry."""
    iso = sc["isolated"]
    if not close_enough(float(iso["alpha"]), float(sc["alpha"])):
        fail("isolated.alpha", iso["alpha"], f"the game's level alpha is {sc['alpha']}")
    again = _again(iso, secret, scores, [float(b["delta"]) for b in iso["bounds"]])
    for key in ("n_in", "n_out", "tp", "fp"):
        if iso[key] != getattr(again, key):
            fail(f"isolated.{key}", iso[key], f"the stored scores and secret give {getattr(again, key)} at the "
                 f"recorded threshold {again.threshold:.6g}")
    for key in ("tpr_lower", "fpr_upper"):
        if not close_enough(float(iso[key]), getattr(again, key)):
            fail(f"isolated.{key}", iso[key], f"its counts give {getattr(again, key):.6g}")
    for i, (b, e) in enumerate(zip(iso["bounds"], again.epsilon_lowers, strict=True)):
        if not close_enough(float(b["epsilon_lower"]), e):
            fail(f"isolated.bounds[{i}].epsilon_lower", b["epsilon_lower"], f"its counts give {e:.6g}")
    mu, read = iso["gdp_mu_lower"], again.gdp_epsilon_read
    if not close_enough(float(mu["mu"]), again.gdp_mu_lower):
        fail("isolated.gdp_mu_lower.mu", mu["mu"], f"its counts give {again.gdp_mu_lower:.6g}")
    if (mu["epsilon_read"] is None) != (read is None) or (
            read is not None and not close_enough(mu["epsilon_read"], read)):
        fail("isolated.gdp_mu_lower.epsilon_read", mu["epsilon_read"], f"mu read at delta {again.deltas[0]:g} "
             f"is {read}")
    for i, entry in enumerate(iso["claims"]):
        _isolated_claim(sc, entry, again, f"isolated.claims[{i}]", fail, curve_of)


def _isolated_claim(sc: dict[str, Any], entry: dict[str, Any], again: IsolatedBound, where: str, fail: Fail,
                    curve_of: Callable[[Any], CurveClaim]) -> None:
    claim = next((c for c in sc["claims"] if c.get("claim_id") == entry["claim_id"]), None)
    if claim is None or claim["claim_type"] != entry["claim_type"]:
        fail(f"{where}.claim_id", entry["claim_id"], f"names no {entry['claim_type']} claim of the scenario")
    if entry["rejected"] is None:
        return  # the claim did not apply to the game (its relation): nothing to recompute
    if entry["claim_type"] == "curve":
        rejected = point_rejects(curve_of(claim), again.tpr_lower, again.fpr_upper)
    else:
        eps = again.epsilon_at(float(claim["delta"]))
        lower = entry["epsilon_lower"]
        if lower is None or not close_enough(float(lower), eps):
            fail(f"{where}.epsilon_lower", lower, f"its counts give {eps:.6g} at the claim's delta {claim['delta']}")
        claimed = math.inf if claim["epsilon_claim"] == "inf" else float(claim["epsilon_claim"])
        rejected = eps > claimed
    if entry["rejected"] != rejected:
        fail(f"{where}.rejected", entry["rejected"], f"the test's point (TPR >= {again.tpr_lower:.6g}, FPR <= "
             f"{again.fpr_upper:.6g}) {'rejects' if rejected else 'does not reject'} the claim")


def _claim_mu(claim: dict[str, Any]) -> float | None:
    """The claim's own GDP μ (a GDP curve's μ; the largest μ-GDP within an (ε, δ) claim with ε, δ > 0),
    None for the other claims (their μ is not re-derived here)."""
    if claim["claim_type"] == "curve":
        return float(claim["mu"]) if claim.get("family") == "gdp" and claim.get("mu") else None
    eps, delta = claim.get("epsilon_claim"), claim.get("delta")
    if eps in (None, "inf") or delta is None or not (float(eps) > 0 and 0 < float(delta) < 1):
        return None
    return min(gdp_mu(float(eps), float(delta)), MU_MAX)


def _claim_object(claim: dict[str, Any], curve_of: Callable[[Any], CurveClaim]) -> Guarantee | CurveClaim:
    if claim["claim_type"] == "curve":
        return curve_of(claim)
    eps = claim["epsilon_claim"]
    return Guarantee(epsilon=math.inf if eps in ("inf", None) else float(eps), delta=float(claim["delta"]),
                     relation=claim["relation"])


def check_onerun_detectable(claim: dict[str, Any], first_delta: float, fail: Fail, *, tests: Sequence[Test],
                            secret_source: str | None, curve_of: Callable[[Any], CurveClaim]) -> None:
    """Refuse a one-run claim entry's ``detectable`` that its claim, its own numbers or the game's
    ``tests`` contradict (module docstring: what is and is not re-checked)."""
    det = claim.get("detectable")
    if det is None:
        return
    if claim["verdict"] != "pass":
        fail("detectable", "<object>", f"only a claim that holds says what it could have caught (this verdict: "
             f"{claim['verdict']})")
    delta = first_delta if claim["claim_type"] == "curve" else float(claim["delta"])
    if not close_enough(float(det["delta"]), delta):
        fail("detectable.delta", det["delta"], f"the claim's delta is {delta:g}")
    mu = det["mu"]
    if mu is None or delta == 0:
        if det["epsilon"] != "inf":
            fail("detectable.epsilon", det["epsilon"], "no GDP leak refuted (mu null) or delta 0 reads as 'inf'")
    elif det["epsilon"] == "inf" or not close_enough(float(det["epsilon"]), gdp_epsilon(float(mu), delta)):
        fail("detectable.epsilon", det["epsilon"], f"mu {mu:g} reads as epsilon {gdp_epsilon(float(mu), delta):.6g} "
             f"at delta {delta:g}")
    own = _claim_mu(claim)
    if mu is not None and own is not None and float(mu) <= own:
        fail("detectable.mu", mu, f"is within the claim itself (mu {own:.6g}): a leak the claim allows is refuted "
             "at most alpha of the time, never 9 times in 10")
    obj = _claim_object(claim, curve_of)
    why = contradiction(obj, tuple(tests), guard=None if secret_source == FRESH else prior_guard, mu_max=MU_MAX,
                        claim_mu=claim_mu(obj), mu=None if mu is None else float(mu),
                        canaries_for_twice=det["canaries_for_twice"])
    if why is not None:
        key, text = why
        fail(f"detectable.{key}", det[key], f"is not what this game's tests could have caught: {text}")


# --- one-run (canary) records ------------------------------------------------------------------
#
# A one-run record's numbers are functions of its counts: the rule's tests (m, k₊, k₋, v, level),
# each a guessing test on the canaries.  Its (ε, δ) lower bound is the largest of the tests'
# Steinke bounds at the claim's δ (Steinke, Nasr, Jagielski 2023, Thm 3.3); a curve claim is
# rejected when one test rejects it by the f-DP recursion (Mahloujifar, Melis, Chaudhuri 2025,
# Alg. 2); the largest rejected GDP μ is the largest over the tests.  All are recomputed here.

_RULES = ("fixed", "grid", "split")


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
              rule["k_minus"]) and close_enough(tests[0].alpha, alpha))
    elif kind == "grid":
        pairs = [tuple(p) for p in rule["pairs"]]
        ok = (len(tests) == len(pairs) and all((t.k_plus, t.k_minus) == p and t.m == m and
                                                close_enough(t.alpha, alpha / len(pairs)) for t, p in zip(tests, pairs,
                                                                                                    strict=True)))
    else:
        ok = len(tests) == 1 and tests[0].m < m and close_enough(tests[0].alpha, alpha)
    if not ok:
        fail("onerun.tests", info["tests"], f"are not the tests of its {kind} rule at alpha {alpha:g} "
             "(a fixed rule: one test at alpha; a grid: one per pair at alpha / G; a split: one on the held-out part)")
    best = (info["k_plus"], info["k_minus"], info["r"], info["v"])
    if best not in {(t.k_plus, t.k_minus, t.r, t.v) for t in tests}:
        fail("onerun.v", info["v"], "the reported counts (k_plus, k_minus, r, v) are not those of any of its tests")
    return tests


def _onerun_claim(claim: dict[str, Any], claim_type: str, curve: Any, tests: list[Test], fail: Fail) -> None:
    """A one-run claim's verdict and bound against its tests."""
    verdict, lower = claim.get("verdict"), as_number(claim.get("epsilon_lower"))
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
    claim_eps, delta = as_number(claim.get("epsilon_claim")), float(claim["delta"])
    if claim_eps is None or lower is None or not 0.0 <= delta < 1.0:
        fail("verdict", verdict, "a pass or violation of an (epsilon, delta) claim needs epsilon_claim, "
             "epsilon_lower and a delta in [0, 1)")
    again = max(epsilon_lower(t.m, t.r, t.v, delta=delta, alpha=t.alpha) for t in tests)
    if not close_enough(again, lower):
        fail("epsilon_lower", lower, f"Steinke's bound of its tests at delta {delta:g} is {again:.6g}")
    if (verdict == "violation") != (lower > claim_eps):
        fail("verdict", verdict, f"epsilon_lower {lower:g} is {'above' if lower > claim_eps else 'not above'} "
             f"epsilon_claim {claim_eps:g}")


def _check_mu(mu_entry: Any, tests: list[Test], fail: Fail, field: str) -> None:
    mu = float(mu_entry["mu"])
    again = max(largest_rejected_mu(m=t.m, c_prime=t.r, c=t.v, tau=t.alpha) for t in tests)
    if not close_enough(mu, again):
        fail(field, mu, f"the largest GDP mu its tests reject is {again:.6g}")


def check_onerun_record(rec: dict[str, Any], where: str, source: Any) -> None:
    """Refuse a one-run record whose bound, verdict or GDP μ its own tests contradict."""

    def fail(field: str, value: Any, why: str) -> NoReturn:
        raise InputError(f"{source}: {where}.{field} = {value!r} contradicts the record's own numbers: {why}")

    def check() -> None:
        info = rec["onerun"]
        if not isinstance(info, dict):
            fail("onerun", info, "a one-run record carries its counts in 'onerun'")
        if not close_enough(float(rec["confidence"]), 1.0 - float(info["alpha"])):
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

    guarded(where, source, check)


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
            if not close_enough(again, float(b["epsilon_lower"])):
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

    guarded(where, source, check)


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

    guarded("records", source, check)
