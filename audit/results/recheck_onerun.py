"""A saved one-run game's independent-canary reading and "could have caught" values, checked, never trusted.

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

from dpaudit.core import Guarantee
from dpaudit.onerun.claimrule import claim_mu
from dpaudit.onerun.curves import CurveClaim, gdp_epsilon, gdp_mu
from dpaudit.onerun.detectable import contradiction
from dpaudit.onerun.game import FRESH
from dpaudit.onerun.isolated import IsolatedBound, isolated_bound, point_rejects
from dpaudit.onerun.planner import MU_MAX
from dpaudit.onerun.rules import Test
from dpaudit.onerun.steinke import prior_guard

__all__ = ["check_isolated", "check_onerun_detectable"]

Fail = Callable[[str, Any, str], NoReturn]
REL_TOL = 1e-7  # recomputed with the same scipy functions: this only absorbs rounding


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(1.0, abs(a), abs(b))


def _again(iso: dict[str, Any], secret: np.ndarray, scores: np.ndarray, deltas: list[float]) -> IsolatedBound:
    return isolated_bound(scores, secret, threshold=float(iso["threshold"]), declared_by=str(iso["declared_by"]),
                          reason=str(iso["reason"]), check=str(iso["check"]),
                          threshold_source=str(iso["threshold_source"]), deltas=deltas, alpha=float(iso["alpha"]))


def check_isolated(sc: dict[str, Any], secret: np.ndarray, scores: np.ndarray, fail: Fail,
                   curve_of: Callable[[Any], CurveClaim]) -> None:
    """Refuse a scenario's ``isolated`` entry that its stored scores, secret and threshold contradict
    (module docstring); ``curve_of`` reads a curve claim's entry."""
    iso = sc["isolated"]
    if not _close(float(iso["alpha"]), float(sc["alpha"])):
        fail("isolated.alpha", iso["alpha"], f"the game's level alpha is {sc['alpha']}")
    again = _again(iso, secret, scores, [float(b["delta"]) for b in iso["bounds"]])
    for key in ("n_in", "n_out", "tp", "fp"):
        if iso[key] != getattr(again, key):
            fail(f"isolated.{key}", iso[key], f"the stored scores and secret give {getattr(again, key)} at the "
                 f"recorded threshold {again.threshold:.6g}")
    for key in ("tpr_lower", "fpr_upper"):
        if not _close(float(iso[key]), getattr(again, key)):
            fail(f"isolated.{key}", iso[key], f"its counts give {getattr(again, key):.6g}")
    for i, (b, e) in enumerate(zip(iso["bounds"], again.epsilon_lowers, strict=True)):
        if not _close(float(b["epsilon_lower"]), e):
            fail(f"isolated.bounds[{i}].epsilon_lower", b["epsilon_lower"], f"its counts give {e:.6g}")
    mu, read = iso["gdp_mu_lower"], again.gdp_epsilon_read
    if not _close(float(mu["mu"]), again.gdp_mu_lower):
        fail("isolated.gdp_mu_lower.mu", mu["mu"], f"its counts give {again.gdp_mu_lower:.6g}")
    if (mu["epsilon_read"] is None) != (read is None) or (read is not None and not _close(mu["epsilon_read"], read)):
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
        if lower is None or not _close(float(lower), eps):
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
    if not _close(float(det["delta"]), delta):
        fail("detectable.delta", det["delta"], f"the claim's delta is {delta:g}")
    mu = det["mu"]
    if mu is None or delta == 0:
        if det["epsilon"] != "inf":
            fail("detectable.epsilon", det["epsilon"], "no GDP leak refuted (mu null) or delta 0 reads as 'inf'")
    elif det["epsilon"] == "inf" or not _close(float(det["epsilon"]), gdp_epsilon(float(mu), delta)):
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
