"""What a one-run verdict rests on, in the words printed beside it (the table, ``summary``, the PDF).

Two things a reader of a one-run verdict must see where the verdict is printed, not only in
``results.json``:

* **the premise** (:data:`~dpaudit.onerun.game.PREMISE`): every bound holds only if the scorer did
  not read the secret; a scorer that reads it voids the bound (:func:`premise_words`);
* **whether the game could have refuted the claim at all**: a claim that no outcome of the game
  rejects — every guess right (v = r) and still no rejection, e.g. a (4, 10⁻⁵) claim at m = 200 —
  "holds" in every run, and that pass is no evidence.  :func:`caught_words` says so, as
  ``dpaudit plan`` would, instead of what the audit could have caught; otherwise it gives the
  record's ``detectable`` (:meth:`~dpaudit.onerun.detectable.OneRunDetectable.words`).

These functions read a saved record (a results file's one-run record, checked on load by
:mod:`dpaudit.results.recheck`), so the reports call them; the API's one-line
:meth:`~dpaudit.onerun.result.OneRunResult.summary` says the same.
"""

from __future__ import annotations

import math
from typing import Any

from dpaudit.core import Guarantee
from dpaudit.onerun.curves import CurveClaim
from dpaudit.onerun.detectable import OneRunDetectable, unrefutable
from dpaudit.onerun.rules import Test

__all__ = ["PREMISE_WORDS", "caught_words", "curve_from_dict", "never_words", "premise_words", "unrefutable_words"]

PREMISE_WORDS = ("valid only if the scorer did not read the secret (dpaudit keeps it out of the scorer's frames; "
                 "a scorer that reads it anyway voids the bound)")


def premise_words() -> str:
    """The premise of every one-run verdict, said once where a one-run scenario's verdicts are printed."""
    return PREMISE_WORDS


def curve_from_dict(d: dict[str, Any]) -> CurveClaim:
    """The :class:`CurveClaim` a record's ``curve`` entry (:meth:`CurveClaim.to_dict`) describes."""
    family = d["family"]
    if family == "gdp":
        return CurveClaim(family="gdp", mu=float(d["mu"]))
    if family == "approx-dp":
        return CurveClaim(family="approx-dp", epsilon=float(d["epsilon"]), delta=float(d["delta"]))
    return CurveClaim(family=str(family), epsilons=tuple(d["epsilons"]), deltas=tuple(d["deltas"]))


def _claim(rec: dict[str, Any]) -> Guarantee | CurveClaim | None:
    info = rec.get("onerun") or {}
    if info.get("claim_type") == "curve":
        return curve_from_dict(info["curve"]) if info.get("curve") else None
    eps, delta = rec.get("epsilon_claim"), rec.get("delta")
    if eps is None or delta is None:
        return None
    return Guarantee(epsilon=math.inf if eps == "inf" else float(eps), delta=float(delta),
                     relation=rec.get("relation") or "add-remove")


def unrefutable_words(rec: dict[str, Any]) -> str | None:
    """For a holding one-run claim that no outcome of its game could have rejected, the sentence that
    says so (None otherwise): "no test at this budget could refute this claim: …"."""
    info = rec.get("onerun") or {}
    claim, raw = _claim(rec), info.get("tests") or []
    if rec.get("verdict") != "pass" or claim is None or not raw:
        return None
    tests = tuple(Test(int(t["m"]), int(t["k_plus"]), int(t["k_minus"]), int(t["v"]), float(t["alpha"])) for t in raw)
    return never_words(tests) if unrefutable(claim, tests) else None


def never_words(tests: tuple[Test, ...]) -> str:
    """The sentence for a claim that none of ``tests`` rejects even with every guess right."""
    best = max(tests, key=lambda t: t.r)
    return (f"no test at this budget could refute this claim: even all {best.r} guesses right (k+={best.k_plus}, "
            f"k-={best.k_minus}, m={best.m}) would not reject it at this confidence; this pass is no evidence for "
            "it (more canaries would be: dpaudit plan)")


def caught_words(rec: dict[str, Any], *, model: bool = True) -> str | None:
    """What a holding one-run claim says beside its verdict: :func:`unrefutable_words` when no outcome
    could have refuted it, else what the audit could have caught (the record's ``detectable``);
    None for a record without either."""
    never = unrefutable_words(rec)
    if never is not None:
        return never
    d = rec.get("detectable")
    if not isinstance(d, dict):
        return None
    found = OneRunDetectable(mu=d["mu"], epsilon=math.inf if d["epsilon"] == "inf" else float(d["epsilon"]),
                             delta=float(d["delta"]), canaries_for_twice=d["canaries_for_twice"], model=d["model"])
    return found.words() + (f" (model: {d['model']})" if model else "")
