"""The record of a one-run audit: counts, rule, level, bounds and one verdict per claim.

Verdict words are the project's own: the per-claim verdict is a :class:`dpaudit.core.Verdict`
(``pass`` / ``violation`` / ``not-applicable``) and the combined finding is
:func:`dpaudit.engine.verdicts.finding` of it (a one-run audit has no white-box witness).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit.core import Guarantee, Verdict, require
from dpaudit.engine.results import jsonable
from dpaudit.engine.verdicts import finding
from dpaudit.onerun import detectable as detect
from dpaudit.onerun.claimrule import claim_mu
from dpaudit.onerun.curves import CurveClaim
from dpaudit.onerun.game import PREMISE, pack_secret
from dpaudit.onerun.isolated import IsolatedBound, deprecated_epsilon_lower
from dpaudit.onerun.planner import MU_MAX
from dpaudit.onerun.rules import Test
from dpaudit.onerun.steinke import prior_guard
from dpaudit.onerun.wording import never_words, premise_words
from dpaudit.runtime.files import write_atomic

__all__ = ["MU_LABEL", "OneRunClaimCheck", "OneRunResult", "read_tiebreak"]

MU_LABEL = "valid against GDP-family claims only; not an (epsilon, delta) lower bound"
# ``secret_source`` as the summary line says it (the record keeps the short value)
SECRET_SOURCE_TEXT = {"fresh entropy": "secret drawn by dpaudit (fresh entropy)",
                      "supplied by the caller": "secret supplied by the caller (balanced rules only)"}
MAX_TIEBREAK_DIGITS = 80  # a 128-bit seed has 39; a replayed one may be larger, never this long


def read_tiebreak(value: Any) -> int | None:
    """The tie-break seed a record stores (:meth:`OneRunResult.to_dict`): a string of decimal
    digits, or None (absent, or written before the key existed: tied scores counted worst-case).
    Anything else is an :class:`InputError` naming ``tiebreak``."""
    if value is None:
        return None
    long = isinstance(value, str) and len(value) > MAX_TIEBREAK_DIGITS
    require(isinstance(value, str) and not long and value.isascii() and value.isdigit(), "tiebreak",
            f"<{len(value)} characters>" if long else value,
            f"must be the tie-break seed as a string of at most {MAX_TIEBREAK_DIGITS} decimal digits, or null "
            "(tied scores counted worst-case)")
    return int(value)


@dataclass(frozen=True)
class OneRunClaimCheck:
    """One claim against the run: an (ε, δ) :class:`dpaudit.core.Guarantee` (Steinke's bound at the
    claim's δ) or a :class:`CurveClaim` (the f-DP recursion at the rule's levels)."""

    claim: Guarantee | CurveClaim
    rejected: bool | None          # None: not applicable
    epsilon_lower: float | None = None  # only for (ε, δ) claims: Steinke's bound at the claim's δ
    status: str | None = None

    @property
    def verdict(self) -> str:
        if self.rejected is None:
            return Verdict.NOT_APPLICABLE.value
        return Verdict.VIOLATION.value if self.rejected else Verdict.PASS.value

    @property
    def finding(self) -> str:
        status = self.status if self.status is not None else getattr(self.claim, "status", None)
        return finding(Verdict(self.verdict), None, status)

    def to_dict(self) -> dict[str, Any]:
        c = self.claim
        if isinstance(c, CurveClaim):
            head: dict[str, Any] = {"claim_type": "curve", **c.to_dict()}
        else:
            head = {"claim_type": "epsilon-delta", "claim_id": c.claim_id or None, "epsilon_claim": jsonable(c.epsilon),
                    "delta": c.delta, "relation": c.relation, "source": c.source,
                    "epsilon_lower": self.epsilon_lower}
        return {**head, "verdict": self.verdict, "finding": self.finding,
                "note": getattr(c, "note", "") or None}


class _ChosenTestCount:
    """A count of the one-run result's chosen test, read through the result: ``result.r`` is
    ``result.tests[result.best].r`` (likewise ``v``, ``k_plus``, ``k_minus``)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, result: OneRunResult, owner: type | None = None) -> int:
        count: int = getattr(result.tests[result.best], self.name)
        return count


@dataclass(frozen=True)
class OneRunResult:
    """A one-run audit.  ``tests`` are the rule's tests (one, or one per grid pair); the reported
    counts (r, v, k₊, k₋) are those of the test that gave the largest ε lower bound at the first δ.

    ``epsilon_lowers`` holds, for each δ of ``deltas``, Steinke et al.'s (ε, δ) lower bound at
    confidence 1 − α (:attr:`bounds` maps δ to it).  ``epsilon_lower``, which was this tuple, is a
    deprecated spelling of it for one release: everywhere else ``epsilon_lower`` is one float.
    ``gdp_mu_lower`` is the largest rejected μ of the GDP family (:data:`MU_LABEL`); it is never
    converted to ε here.

    ``secret_bits`` (in :meth:`to_dict`) is the secret packed (:func:`dpaudit.onerun.game.pack_secret`)
    beside its SHA-256, so ``summary`` can recount the game; ``premise`` states what the bound assumes:
    the scorer did not read the secret.

    ``tiebreak`` is the seed of the key that ranked tied scores (:func:`dpaudit.onerun.rules.tiebreak_keys`,
    drawn from fresh entropy after the game), None when ties were counted worst-case.  In
    :meth:`to_dict` it is a string of decimal digits, as ``secret_bits`` is a string: a 128-bit
    seed is past the integers a JSON reader keeps exactly (2⁵³).

    ``isolated``: the independent-canary test (:mod:`dpaudit.onerun.isolated`), present only when a
    design or the caller declared its premise (``declared_by`` in it says which).

    ``secret_source`` (``"secret_source"`` in :meth:`to_dict`) says who drew the secret: ``"fresh
    entropy"`` (dpaudit's own game), ``"supplied by the caller"`` (an array given to
    :func:`~dpaudit.onerun.bound.one_run_bound` or ``audit_one_run(secret=...)``: bounded under
    balanced rules only, :func:`~dpaudit.onerun.bound.check_rule_for_secret`), None (a record written
    before the key existed).  :attr:`detectable` (``claims[i].detectable`` in :meth:`to_dict`) is what
    each holding claim could have caught (:mod:`dpaudit.onerun.detectable`).
    """

    m: int
    runs: int
    canaries_per_run: int
    tests: tuple[Test, ...]
    best: int
    rule: dict[str, Any]
    alpha: float
    deltas: tuple[float, ...]
    epsilon_lowers: tuple[float, ...]
    gdp_mu_lower: float
    claims: tuple[OneRunClaimCheck, ...]
    secret_sha256: str
    seed: int | None = None
    relation: str | None = None
    scores: np.ndarray | None = field(default=None, repr=False, compare=False)
    secret: np.ndarray | None = field(default=None, repr=False, compare=False)
    # who drew the secret: "fresh entropy" (dpaudit's own game), "supplied by the caller" (an array given to
    # one_run_bound or audit_one_run: balanced rules only), None (a record written before the key existed)
    secret_source: str | None = None
    premise: str = PREMISE
    tiebreak: int | None = None
    isolated: IsolatedBound | None = None  # the independent-canary test, when its premise is declared

    @property
    def confidence(self) -> float:
        return 1.0 - self.alpha

    # The chosen test's counts (tests[best].r, .v, .k_plus, .k_minus), read through the result.
    r = _ChosenTestCount()
    v = _ChosenTestCount()
    k_plus = _ChosenTestCount()
    k_minus = _ChosenTestCount()

    @property
    def epsilon_lower(self) -> tuple[float, ...]:
        """Deprecated (for one release): :attr:`epsilon_lowers`
        (:func:`~dpaudit.onerun.isolated.deprecated_epsilon_lower`)."""
        return deprecated_epsilon_lower(self.epsilon_lowers, "OneRunResult")

    @property
    def bounds(self) -> dict[float, float]:
        """δ → the (ε, δ) lower bound at that δ, one entry per reported δ (:class:`~dpaudit.Result`;
        ``epsilon_lowers`` holds the same numbers as a tuple in the order of ``deltas``)."""
        return dict(zip(self.deltas, self.epsilon_lowers, strict=True))

    def epsilon_at(self, delta: float) -> float:
        """The (ε, δ) lower bound at one of the reported δ (``KeyError`` naming them for another)."""
        for d, e in zip(self.deltas, self.epsilon_lowers, strict=True):
            if math.isclose(d, delta, rel_tol=1e-12, abs_tol=0.0) or d == delta:
                return e
        raise KeyError(f"delta = {delta!r} is not reported: the bounds are at delta = "
                       f"{', '.join(f'{d:g}' for d in self.deltas)}")

    @functools.cached_property
    def detectable(self) -> tuple[Any, ...]:
        """Per claim, what the audit could have caught (:mod:`dpaudit.onerun.detectable`): for a claim
        that holds, the smallest GDP canary leak refuted 9 times in 10 at this m and rule and the
        canaries that refute twice the claim's μ; None for a claim that is violated or not applicable.
        Computed on first use (0.1–0.6 s per holding claim at m = 1000), then kept."""
        guard = None if self.secret_source == "fresh entropy" else prior_guard
        return tuple(detect.for_check(c.claim, self.tests, delta=self.deltas[0], guard=guard, mu_max=MU_MAX,
                                      claim_mu=claim_mu(c.claim)) if c.verdict == Verdict.PASS.value else None
                     for c in self.claims)

    @property
    def verdict(self) -> str:
        """Over all claims: violation if any is violated, else pass if any passes."""
        vs = {c.verdict for c in self.claims}
        if Verdict.VIOLATION.value in vs:
            return Verdict.VIOLATION.value
        return Verdict.PASS.value if Verdict.PASS.value in vs else Verdict.NOT_APPLICABLE.value

    def to_dict(self, *, include_scores: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "one-run", "m": self.m, "runs": self.runs, "canaries_per_run": self.canaries_per_run,
            "r": self.r, "v": self.v, "k_plus": self.k_plus, "k_minus": self.k_minus,
            "rule": self.rule, "correction": self.rule.get("correction"),
            "alpha": self.alpha, "confidence": self.confidence,
            "bounds": [{"delta": d, "epsilon_lower": e, "method": "Steinke-Nasr-Jagielski 2023, Thm 3.3"}
                       for d, e in zip(self.deltas, self.epsilon_lowers, strict=True)],
            "gdp_mu_lower": {"mu": self.gdp_mu_lower, "validity": MU_LABEL,
                             "method": "Mahloujifar-Melis-Chaudhuri 2025, Alg. 2"},
            "tests": [t.to_dict() for t in self.tests],
            "secret_sha256": self.secret_sha256, "secret_source": self.secret_source, "premise": self.premise,
            "seed": self.seed, "relation": self.relation,
            "tiebreak": None if self.tiebreak is None else str(self.tiebreak),
            "verdict": self.verdict,
            "claims": [c.to_dict() | {"detectable": None if d is None else d.to_dict()}
                       for c, d in zip(self.claims, self.detectable, strict=True)],
        }
        if self.isolated is not None:
            out["isolated"] = self.isolated.to_dict()
        if self.secret is not None:  # compact (m/6 characters): a re-check or a replay needs it
            out["secret_bits"] = pack_secret(self.secret)
        if include_scores and self.scores is not None and self.secret is not None:
            out["scores"] = [float(s) for s in self.scores]
            out["secret"] = [int(s) for s in self.secret]
        return out

    def to_json(self, *, include_scores: bool = False) -> str:
        return json.dumps(self.to_dict(include_scores=include_scores), indent=2, allow_nan=False)

    def save(self, path: str, *, include_scores: bool = False) -> None:
        """Write :meth:`to_json` atomically."""
        write_atomic(path, self.to_json(include_scores=include_scores))

    def __repr__(self) -> str:
        """One line under 400 characters (the scores and the secret are never shown)."""
        claims = ", ".join(f"{getattr(c.claim, 'claim_id', '') or 'claim'}: {c.verdict}" for c in self.claims[:3])
        more = f", +{len(self.claims) - 3} more" if len(self.claims) > 3 else ""
        text = (f"OneRunResult(m={self.m}, runs={self.runs}, verdict={self.verdict!r}, right={self.v}/{self.r}, "
                f"epsilon_lower={self.epsilon_lowers[0]:.4g} at delta={self.deltas[0]:g}, "
                f"gdp_mu_lower={self.gdp_mu_lower:.4g}, claims=[{claims}{more}])")
        return text if len(text) < 400 else text[:396] + "…)"

    def __str__(self) -> str:
        return self.summary()

    def summary(self) -> str:
        """One line: counts, rule, bounds, μ (labelled), the verdicts (a holding claim: what the audit could
        have caught, or that no outcome could have refuted it) and the premise every bound rests on."""
        eps = ", ".join(f"eps_lower={e:.4g} at delta={d:.3g}" for d, e in zip(self.deltas, self.epsilon_lowers,
                                                                            strict=True))
        claims = "; ".join(f"{getattr(c.claim, 'claim_id', '') or 'claim'}: {c.verdict}"
                           + ("" if d is None else f" ({self._caught(c, d)})")
                           for c, d in zip(self.claims, self.detectable, strict=True))
        return (f"one-run audit, m={self.m} ({self.runs} run(s)), {self.v}/{self.r} right "
                f"(k+={self.k_plus}, k-={self.k_minus}), {self.rule['rule']} rule, confidence {self.confidence:.3g}: "
                f"{eps}; GDP mu rejected up to {self.gdp_mu_lower:.4g} (GDP claims only)"
                + (f"; {claims}" if claims else "")
                + (f"; {self.isolated.summary()}" if self.isolated is not None else "")
                + (f"; {SECRET_SOURCE_TEXT.get(self.secret_source, self.secret_source)}" if self.secret_source else "")
                + f"; {premise_words()}")

    def _caught(self, check: OneRunClaimCheck, found: Any) -> str:
        """A holding claim's words: none of the tests could have rejected it, or what they could have caught."""
        return never_words(self.tests) if detect.unrefutable(check.claim, self.tests) else found.words()
