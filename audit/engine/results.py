"""Audit results: one :class:`ClaimCheck` per claim, gathered in an :class:`AuditResult`.

A claim (ε_c, δ) is *violated* when the ε lower bound at δ exceeds ε_c; the claim is then
false with confidence ≥ the stated confidence.  Otherwise it passes, with its slack
ε_c − ε_lower and tightness ε_lower/ε_c.  When the mechanism's output distribution is
known, the exact loss gives a white-box verdict beside the empirical one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from dpaudit.core import Claim, Guarantee, Verdict
from dpaudit.engine import detectable as detect
from dpaudit.engine import stattests
from dpaudit.engine.estimate import Bound, Estimate
from dpaudit.engine.exact import epsilon_for_delta
from dpaudit.engine.verdicts import (
    EXPECTATION_WORDS,
    NO_CLAIM,
    NOT_REPRODUCIBLE,
    OK_OUTCOMES,
    WHITE_BOX_WORDS,
    doubles_words,
    finding,
    float_fix,
    most_severe,
    outcome,
)

PROFILE_DELTAS = np.geomspace(1e-12, 0.5, 60)  # where a result states its exact privacy profile
_REL_TOL = 1e-9  # exact values equal to a claim up to rounding are not violations


def jsonable(value: float | None) -> float | str | None:
    """Finite floats as numbers; ±inf as the strings "inf"/"-inf" (JSON has no infinity)."""
    if value is None:
        return None
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return float(value)


@dataclass(frozen=True)
class ClaimCheck:
    """One claim held against the empirical bound and, when known, the exact loss.

    ``info`` is the claim's registry entry (source, statement, status), when the claim id is
    registered; a claim whose scenario breaks one of its premises keeps its claimed value, is
    not applicable, and still gets a bound so the record can say whether the samples would
    refute it (:meth:`premise_note`).
    """

    claim: Guarantee
    bound: Bound | None
    epsilon_exact: float | None
    expected_verdict: str | None = None
    info: Claim | None = None
    # When the floating view decided (a real output's doubles): the best bound of the value views
    # (rows, threshold, histogram) at the same level, from their own selection on their own samples.
    value_bound: Bound | None = None

    @property
    def value_views(self) -> dict[str, Any] | None:
        """The second verdict of a real-valued output: what the value views say of the mechanism as
        mathematics, beside the floating view's verdict on its implementation (see ``value_bound``)."""
        if self.value_bound is None or not self.claim.applicable:
            return None
        lower = self.value_bound.epsilon_lower
        verdict = Verdict.VIOLATION if lower > self.claim.epsilon else Verdict.PASS
        return {"epsilon_lower": lower, "verdict": verdict, "finding": finding(verdict, None, self.status),
                "confidence": self.value_bound.confidence, "event": self.value_bound.to_dict()}

    @property
    def epsilon_lower(self) -> float | None:
        return None if self.bound is None else self.bound.epsilon_lower

    @property
    def verdict(self) -> Verdict:
        """The empirical verdict: ``violation`` when ε_lower > ε_claim (false with the stated confidence)."""
        if not self.claim.applicable or self.bound is None:
            return Verdict.NOT_APPLICABLE
        return Verdict.VIOLATION if self.bound.epsilon_lower > self.claim.epsilon else Verdict.PASS

    @property
    def exact_verdict(self) -> Verdict | None:
        """The white-box verdict: ``violation`` when the exact ε of the pair exceeds ε_claim."""
        if not self.claim.applicable:
            return Verdict.NOT_APPLICABLE
        if self.epsilon_exact is None:
            return None
        over = self.epsilon_exact > self.claim.epsilon * (1 + _REL_TOL) + 1e-12
        return Verdict.VIOLATION if over else Verdict.PASS

    @property
    def status(self) -> str | None:
        """The claim's registry status (``proven``, ``refuted``, ``unverified``, ``corrected``,
        ``reference``), or None for a claim the registry does not know (a user's own)."""
        return None if self.info is None else self.info.status

    @property
    def finding(self) -> str:
        """The one verdict that combines both witnesses (see :data:`FINDINGS`)."""
        return finding(self.verdict, self.exact_verdict, self.status)

    @property
    def premise_note(self) -> str | None:
        """For a claim outside its premise: the premise, and whether the samples would refute it."""
        if not self.claim.broken_premise:
            return None
        if self.bound is None:
            return self.claim.note
        lower, eps = self.bound.epsilon_lower, self.claim.epsilon
        would = (f"the samples would refute it: eps_lower {lower:.4g} > {eps:.4g}" if lower > eps else
                 f"the samples would not refute it: eps_lower {lower:.4g} <= {eps:.4g}")
        return f"{self.claim.note}; {would}"

    @property
    def slack(self) -> float | None:
        if self.verdict == "not-applicable" or self.bound is None:
            return None
        return self.claim.epsilon - self.bound.epsilon_lower

    @property
    def tightness(self) -> float | None:
        if self.verdict == "not-applicable" or self.bound is None or self.claim.epsilon == 0:
            return None
        return self.bound.epsilon_lower / self.claim.epsilon

    @property
    def as_expected(self) -> bool:
        """The finding agrees with the expectation (or, with none, refutes nothing): :func:`outcome` is ok."""
        return outcome({"finding": self.finding, "expected_verdict": self.expected_verdict,
                        "claim_status": self.status}) in OK_OUTCOMES

    def to_dict(self) -> dict[str, Any]:
        c, info = self.claim, self.info
        shown = c.applicable or c.broken_premise
        return {"claim_id": c.claim_id or None, "claim_kind": c.kind, "claim_source": c.source,
                "claim_note": c.note or None, "claim_status": self.status,
                "claim_document": None if info is None else info.document,
                "claim_where": None if info is None else info.where,
                "claim_statement": None if info is None else info.statement,
                "claim_vacuous": None if info is None else info.vacuous,
                "relation": c.relation, "delta": c.delta,
                "stated_as": None if c.stated_as is None else c.stated_as.to_dict(),
                "epsilon_claim": jsonable(c.epsilon) if shown else None,
                "epsilon_lower": self.epsilon_lower, "epsilon_exact": jsonable(self.epsilon_exact),
                "verdict": self.verdict, "exact_verdict": self.exact_verdict, "finding": self.finding,
                "premise": self.premise_note,
                "expected_verdict": self.expected_verdict, "as_expected": self.as_expected,
                "slack": self.slack, "tightness": self.tightness,
                "event": None if self.bound is None else self.bound.to_dict(), "value_views": self.value_views}


def detectable_dict(d: detect.Detectable | None) -> dict[str, Any] | None:
    """A record's ``detectable`` key: the smallest leak (``epsilon``, "inf" when the witness event can
    refute none) refuted with probability 0.9, the samples per side that refute twice the claim as often
    (``samples_for_twice``, null past 10¹³, for a claim of 0, or when the event cannot carry that leak)
    and the ``model`` both assume."""
    if d is None:
        return None
    return {"epsilon": jsonable(d.epsilon), "samples_for_twice": d.samples_for_twice, "model": d.model}


def caught_words(d: dict[str, Any] | None, epsilon_claim: Any, model: bool = True) -> str | None:
    """A holding claim's ``detectable`` in words: what this audit would have refuted 9 times in 10,
    with its model unless ``model`` is False (a table's note; the JSON and the wide table keep it)."""
    if not d:
        return None
    eps = d["epsilon"]
    if eps == "inf":
        head = "could have caught: no leak on this witness event is refuted 9 times in 10 at this budget"
    else:
        head = f"could have caught: a leak of eps >= {float(eps):.4g}, 9 times in 10"
    if d["samples_for_twice"] is not None and isinstance(epsilon_claim, (int, float)):
        head += f"; eps = {2 * epsilon_claim:.4g} (twice the claim) needs {d['samples_for_twice']:,} samples per side"
    return f"{head} (model: {d['model']})" if model else head


def two_verdicts(c: ClaimCheck) -> str:
    """The two verdicts of a real-valued output in words, when the floating view decided: the
    implementation's (its doubles) and the mechanism's as mathematics (the value views)."""
    vv = c.value_views
    assert vv is not None, "only said of a claim with value views"
    word = "holds" if vv["verdict"] == "pass" else "does not hold"
    fix = float_fix(c.epsilon_lower, vv["epsilon_lower"], vv["verdict"] == "pass")
    return (f"{doubles_words(c.epsilon_lower, vv['epsilon_lower'], 'epsilon_lower').capitalize()}; "
            f"the mechanism, as mathematics, {word} its epsilon = {c.claim.epsilon:.4g} "
            f"({vv['epsilon_lower']:.4g} from the value views: {vv['finding']})." + (f" {fix}." if fix else ""))


@dataclass(frozen=True)
class AuditResult:
    """The outcome of auditing one mechanism on one neighbouring pair."""

    mechanism: str
    relation: str
    pair: str
    estimate: Estimate
    exact: dict[float, float] | None  # δ -> exact ε(δ) of the pair, when the output space is finite
    claims: tuple[ClaimCheck, ...]
    seed: int
    seconds: float
    scenario: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    epsilon_sup: float | None = None  # sup of the pure loss over reference policies (KL mechanisms)
    distributions: tuple[list[float], list[float]] | None = None  # exact P[M(D)], P[M(D')] for small finite outputs
    seeded: bool = True  # False for a mechanism that declares it cannot be seeded: the numbers are not reproducible
    search: dict[str, Any] | None = None  # the pair search that chose the pair (dpaudit.engine.search.search_pair)

    @cached_property
    def detectable(self) -> tuple[detect.Detectable | None, ...]:
        """Per claim, what the audit could have caught (:mod:`dpaudit.engine.detectable`): for a claim
        that passed the empirical test with measured counts, the smallest leak its witness event refutes
        with probability 0.9 and the budget that refutes twice the claim as often; None otherwise."""
        return tuple(detect.for_claim(c.bound, c.claim.epsilon, self.samples)
                     if c.verdict == "pass" and c.bound is not None and self.estimate.measured else None
                     for c in self.claims)

    @property
    def estimates(self) -> tuple[Bound, ...]:
        """One bound per δ (requested δs first, then the claims' δs)."""
        return self.estimate.bounds

    @property
    def epsilon_lower(self) -> float:
        """The headline ε lower bound: at the first reported δ (``bounds`` has every δ)."""
        return self.estimate.epsilon_lower

    @property
    def bounds(self) -> dict[float, float]:
        """δ → the ε lower bound at that δ, one entry per reported δ (:class:`~dpaudit.Result`)."""
        return {b.delta: b.epsilon_lower for b in self.estimates}

    def epsilon_at(self, delta: float) -> float:
        """The ε lower bound at one of the reported δ (``KeyError`` naming them for another)."""
        for b in self.estimates:
            if b.delta == delta or math.isclose(b.delta, delta, rel_tol=1e-12, abs_tol=0.0):
                return b.epsilon_lower
        raise KeyError(f"delta = {delta!r} is not reported: the bounds are at delta = "
                       f"{', '.join(f'{b.delta:g}' for b in self.estimates)}")

    @property
    def epsilon_exact(self) -> float | None:
        if self.exact is None:
            return None
        return self.exact[self.estimates[0].delta]

    @property
    def sequential(self) -> str | None:
        """The stopping rule and where the run stopped, for sequential audits."""
        return self.estimate.sequential

    @property
    def samples(self) -> int:
        return self.estimate.samples

    @property
    def confidence(self) -> float:
        return self.estimate.confidence

    @property
    def verdict(self) -> Verdict:
        verdicts = {c.verdict for c in self.claims}
        if Verdict.VIOLATION in verdicts:
            return Verdict.VIOLATION
        return Verdict.PASS if Verdict.PASS in verdicts else Verdict.NOT_APPLICABLE

    @property
    def finding(self) -> str:
        """The most severe finding over the claims (:data:`FINDINGS` order), or "no claim checked"."""
        return most_severe([c.finding for c in self.claims])

    @property
    def as_expected(self) -> bool:
        return all(c.as_expected for c in self.claims)

    def exact_profile(self) -> list[dict[str, Any]] | None:
        """The exact ε(δ) of the pair at :data:`PROFILE_DELTAS`, when its output distributions are known
        (a fresh list each call: the caller may change it)."""
        profile = self._profile
        return None if profile is None else [{"delta": d, "epsilon": e} for d, e in profile]

    @cached_property
    def _profile(self) -> tuple[tuple[float, Any], ...] | None:
        """(δ, ε(δ)) at :data:`PROFILE_DELTAS`, computed once per result: a run writes its growing
        results file after every scenario, and each write asks every earlier result for its
        profile (one ``epsilon_for_delta`` per δ; the result is frozen, so the answer cannot change)."""
        if self.distributions is None:
            return None
        p, q = (np.asarray(v, dtype=float) for v in self.distributions)
        return tuple((float(d), jsonable(epsilon_for_delta(p, q, float(d)))) for d in PROFILE_DELTAS)

    # --- in words ------------------------------------------------------------------------

    def __repr__(self) -> str:
        """One line under 400 characters: mechanism, verdict, ε_lower, ε_exact, claims, samples."""
        groups = self._claim_groups()
        shown = [self._claim_short(cid, checks) for cid, checks in groups[:3]]
        if len(groups) > 3:
            shown.append(f"+{len(groups) - 3} more")
        b = self.estimates[0]
        exact_text = "None" if self.epsilon_exact is None else self._num(self.epsilon_exact)
        text = (f"AuditResult(mechanism={self._clip(self.mechanism, 40)!r}, finding={self.finding!r}, "
                f"epsilon_lower={self._num(self.epsilon_lower)} at delta={b.delta:g}, "
                f"epsilon_exact={exact_text}, claims=[{', '.join(shown)}], samples={self.samples}"
                + ("" if self.seeded else ", seeded=False") + ")")
        return text if len(text) < 400 else text[:396] + "…)"

    def __str__(self) -> str:
        return self.summary()

    def summary(self) -> str:
        """One paragraph in plain words: the verdict, the ε lower bound with its confidence,
        the exact ε when known, each claim (id, ε_claim, verdict) and the witness event."""
        b = self.estimates[0]
        where = f"{self.pair or 'the pair'} ({self.relation} neighbours)"
        scenario = f" [scenario {self.scenario}]" if self.scenario else ""
        bound = (f"With confidence {100 * self.confidence:g}%, epsilon >= {self._num(b.epsilon_lower)} at "
                 f"delta = {b.delta:g} ({stattests.get(b.test).title} lower bound from {self.samples:,} samples "
                 f"per side, "
                 f"seed {self.seed}).")
        parts = [f"Auditing {self.mechanism} on {where}{scenario}: {self.finding}.", bound]
        if not self.seeded:
            parts.append(f"{NOT_REPRODUCIBLE.capitalize()}: the seed does not fix its outputs.")
        if self.sequential:
            parts.append(f"The run was sequential: {self.sequential}.")
        if self.search is not None:
            parts.append(f"The pair was chosen by a search over {self.search['space']}: "
                         f"{len(self.search['tried'])} pairs scored on {self.search['pilot_samples']:,} pilot samples "
                         f"per side, the winner audited on fresh samples.")
            screen = self.search.get("sensitivity")
            if screen and screen.get("chosen"):
                mine = screen["chosen"]
                parts.append(f"Its query as implemented moves by {mine['realised']:.6g} between D and D', "
                             f"{mine['ratio']:.4g} times the declared sensitivity {mine['declared']:.6g} "
                             f"(largest of {screen['evaluated']} pairs evaluated: "
                             f"{screen['largest']['ratio']:.4g} times).")
        if self.epsilon_exact is None:
            parts.append("The exact epsilon of the pair is not known (black box).")
        else:
            parts.append(f"The exact epsilon of the pair at delta = {b.delta:g} is {self._num(self.epsilon_exact)}.")
        groups = self._claim_groups()
        if not groups:
            parts.append("No claim was checked.")
        else:
            said = [self._claim_words(cid, checks) for cid, checks in groups[:8]]
            if len(groups) > 8:
                said.append(f"and {len(groups) - 8} more claims")
            parts.append(f"Claims: {'; '.join(said)}.")
        parts += self._caught_sentences()
        for c in self.claims:
            if c.value_views is not None:
                parts.append(two_verdicts(c))
                break
        violated = [c for c in self.claims if c.verdict == "violation"]
        witness = violated[0].bound if violated else b
        # Structural: a "violation" verdict is only given with a bound (ClaimCheck.verdict).
        assert witness is not None, "a violated claim has a bound"
        parts.append(f"Witness at delta = {witness.delta:g}: {self._compress_sets(witness.witness())}.")
        return " ".join(parts)

    def _caught_sentences(self, most: int = 3) -> list[str]:
        """"Could have caught" for the tightest holding point of the first ``most`` claims that hold."""
        found = dict(zip(map(id, self.claims), self.detectable, strict=True))
        out: list[str] = []
        for cid, checks in self._claim_groups():
            held = [c for c in checks if found[id(c)] is not None]
            if held and len(out) < most:
                c = min(held, key=lambda c: c.slack if c.slack is not None else math.inf)
                words = caught_words(detectable_dict(found[id(c)]), c.claim.epsilon)
                out.append(f"'{cid}' {words}.")
        return out

    def _claim_groups(self) -> list[tuple[str, list[ClaimCheck]]]:
        """Claims grouped by id in order of appearance (the points of one curve share an id)."""
        groups: dict[str, list[ClaimCheck]] = {}
        for c in self.claims:
            groups.setdefault(c.claim.claim_id or c.claim.source or "claim", []).append(c)
        return list(groups.items())

    @staticmethod
    def _group_verdict(checks: list[ClaimCheck]) -> str:
        return most_severe([c.finding for c in checks])

    @classmethod
    def _claim_short(cls, cid: str, checks: list[ClaimCheck]) -> str:
        verdict = cls._group_verdict(checks)
        if len(checks) > 1:
            return f"{cls._clip(cid, 28)}: {len(checks)}-point curve {verdict}"
        c = checks[0].claim
        if not c.applicable:
            return f"{cls._clip(cid, 28)}: {verdict}"
        at = f" at delta={c.delta:g}" if c.delta else ""
        return f"{cls._clip(cid, 28)}: eps<={cls._num(c.epsilon)}{at} {verdict}"

    @classmethod
    def _claim_words(cls, cid: str, checks: list[ClaimCheck]) -> str:
        verdict = cls._group_verdict(checks)
        applicable = [c for c in checks if c.claim.applicable]
        if not applicable:
            return f"'{cid}' is not applicable ({cls._clip(checks[0].claim.note, 160)})"
        worst = next((c for c in applicable if c.verdict == "violation"), None) or min(
            applicable, key=lambda c: c.slack if c.slack is not None else math.inf)
        point = f"epsilon <= {cls._num(worst.claim.epsilon)} at delta = {worst.claim.delta:g}"
        head = f"'{cid}' ({len(checks)}-point curve, tightest point {point})" if len(checks) > 1 else f"'{cid}' {point}"
        detail = [f"epsilon_lower {cls._num(worst.epsilon_lower)}"]
        if worst.epsilon_exact is not None:
            detail.append(f"white box: exact {cls._num(worst.epsilon_exact)}, "
                          f"{WHITE_BOX_WORDS.get(worst.exact_verdict or '', '-')}")
        if any(c.expected_verdict for c in checks):
            as_expected = "" if all(c.as_expected for c in checks) else ", NOT as expected"
            detail.append(f"{EXPECTATION_WORDS.get(checks[0].expected_verdict or '', 'expected ?')}{as_expected}")
        return f"{head}: {verdict} ({'; '.join(detail)})"

    @staticmethod
    def _num(value: float | None) -> str:
        if value is None:
            return "unknown"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else f"{value:.4g}"

    @staticmethod
    def _clip(text: str, width: int) -> str:
        return text if len(text) <= width else text[: width - 1] + "…"

    @staticmethod
    def _compress_sets(text: str, keep: int = 3) -> str:
        """Shorten every ``{a, b, c, …}`` of a witness to its first ``keep`` items and "… and N more"
        (N counts outputs: an interval ``a..b`` left out counts b − a + 1)."""

        def size(item: str) -> int:
            run = re.fullmatch(r"(-?\d+)\.\.(-?\d+)", item)
            return int(run.group(2)) - int(run.group(1)) + 1 if run else 1

        def shorten(match: re.Match) -> str:
            items, depth, current = [], 0, ""
            for ch in match.group(1):
                depth += (ch in "[(") - (ch in "])")
                if ch == "," and depth == 0:
                    items.append(current.strip())
                    current = ""
                else:
                    current += ch
            items.append(current.strip())
            more = 0
            tail = re.fullmatch(r"… and (\d+) more", items[-1])
            if tail:
                items, more = items[:-1], int(tail.group(1))
            if len(items) <= (keep if tail else keep + 1):
                return match.group(0)
            left_out = sum(size(item) for item in items[keep:]) + more
            return "{" + ", ".join(items[:keep]) + f", … and {left_out} more" + "}"

        return re.sub(r"\{([^{}]*)\}", shorten, text)

    def records(self) -> list[dict[str, Any]]:
        """One flat record per claim (one with no claim fields when there is none)."""
        head = {"kind": "multi-run", "scenario": self.scenario, "mechanism": self.mechanism, "relation": self.relation,
                "pair": self.pair, "samples": self.samples, "confidence": self.confidence,
                "seed": self.seed, "seconds": self.seconds, "epsilon_sup": jsonable(self.epsilon_sup),
                "sequential": self.sequential, "seeded": self.seeded}
        if not self.claims:
            b = self.estimates[0]
            return [{**head, "claim_id": None, "claim_kind": None, "claim_source": None, "claim_status": None,
                     "delta": b.delta, "epsilon_claim": None, "epsilon_lower": b.epsilon_lower,
                     "epsilon_exact": jsonable(self.epsilon_exact), "verdict": "not-applicable",
                     "exact_verdict": None, "finding": NO_CLAIM, "premise": None, "expected_verdict": None,
                     "as_expected": True, "event": b.to_dict(), "value_views": None}]
        return [{**head, **c.to_dict(), "relation": self.relation, "detectable": detectable_dict(d)}
                for c, d in zip(self.claims, self.detectable, strict=True)]

    def to_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "mechanism": self.mechanism, "relation": self.relation,
                "pair": self.pair, "params": self.params, "epsilon_lower": self.epsilon_lower,
                "epsilon_exact": jsonable(self.epsilon_exact), "epsilon_sup": jsonable(self.epsilon_sup),
                "exact": None if self.exact is None else [{"delta": d, "epsilon": jsonable(e)}
                                                          for d, e in self.exact.items()],
                "distributions": None if self.distributions is None else {"D": self.distributions[0],
                                                                          "D'": self.distributions[1]},
                "exact_profile": self.exact_profile(),
                "verdict": self.verdict, "samples": self.samples, "confidence": self.confidence,
                "seed": self.seed, "seeded": self.seeded, "seconds": self.seconds, "estimate": self.estimate.to_dict(),
                "claims": [{**c.to_dict(), "detectable": detectable_dict(d)}
                           for c, d in zip(self.claims, self.detectable, strict=True)],
                "search": self.search}
