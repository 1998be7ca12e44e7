"""One-run (canary) scenarios in the catalog and in a run's results.

A one-run scenario is a :class:`dpaudit.onerun.design.CanaryDesign`: m canaries, each in the
training data with probability ½ by a seeded secret, one training run, a scorer, a guessing rule
fixed in advance and claims with their expected verdicts.  Its bounds are Steinke, Nasr and
Jagielski's (NeurIPS 2023, Thm 3.3: the (ε, δ) lower bound at each claim's δ) and Mahloujifar,
Melis and Chaudhuri's (ICML 2025, Alg. 2: a curve claim rejected or not).

This module gives each family its designs (:func:`designs_of`, by the family each design names), audits
one (:func:`run_design`) and turns the result into the run's records (:class:`OneRunScenario`):
one flat record per claim with the multi-run record's keys plus ``kind`` and ``onerun``, verdicts,
findings and "as expected" decided by the registry's own logic (:mod:`dpaudit.engine.verdicts`).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dpaudit.catalog.designs.dpsgd import family_rejection
from dpaudit.catalog.designs.suite import onerun_designs
from dpaudit.core import Claim, Guarantee, Relation, Verdict
from dpaudit.engine.results import jsonable
from dpaudit.engine.verdicts import OK_OUTCOMES, finding, outcome
from dpaudit.mechanisms.dpsgd import DPSGD
from dpaudit.onerun.curves import CurveClaim
from dpaudit.onerun.design import CanaryDesign
from dpaudit.onerun.family import FamilyRejection
from dpaudit.onerun.result import OneRunClaimCheck, OneRunResult

__all__ = ["NO_EXPECTATION", "OneRunScenario", "SuiteDesign", "all_designs", "checked",
           "designs_of", "family_of", "mechanism_name", "run_design", "strongest_family_rejection", "unclaimed"]

# Names of wrapped training mechanisms that carry no ``name`` of their own.
_NAMES = {"DPSGD": "dpsgd-reward-model", "OpacusDPSGD": "opacus-dpsgd"}


@functools.cache
def all_designs() -> tuple[CanaryDesign, ...]:
    """Every design of ``run --suite onerun``, built once per process (building computes the
    accountants' curves and the base data: seconds)."""
    return tuple(onerun_designs())


def family_of(design: CanaryDesign) -> str | None:
    """The family whose claims the design checks, as the design names it (``design.family``; None: a
    design of no family, such as a user's)."""
    return design.family


NO_EXPECTATION = ("the design states no expectation for this claim (it is built faulty, or the claim goes either way "
                  "at this budget): shown with its verdict; refuted, it is not a finding")


@dataclass(frozen=True)
class SuiteDesign(CanaryDesign):
    """A catalog design as ``run --suite`` audits it: every claim it states is audited and listed,
    and one it states no expectation for carries :data:`NO_EXPECTATION` in its record (refuted, it is
    no finding: :data:`dpaudit.engine.verdicts.NO_EXPECTATION_REFUTED`).  A user's config is never one."""


def checked(design: CanaryDesign) -> CanaryDesign:
    """The design as a suite scenario: every claim it states is audited and reported.

    A design's ``expected`` names what it is built to decide; a faulty twin may leave a claim open
    (the noise x0.5 twin of DP-SGD is refuted through its curve; its (ε, δ) bound sits near the
    claim and goes either way: refuted in 28 of 200 fresh games at seed 0).  Such a claim is shown
    with its verdict, never hidden, and marked as stated without expectation (:class:`SuiteDesign`)."""
    if type(design) is not CanaryDesign:
        return design
    return SuiteDesign(**{f.name: getattr(design, f.name) for f in dataclasses.fields(design)})


def designs_of(family: str) -> list[CanaryDesign]:
    """The one-run designs of ``family`` (its ``Family.onerun``), each checking its expected claims."""
    return [checked(d) for d in all_designs() if family_of(d) == family]


def unclaimed() -> list[CanaryDesign]:
    """Designs no family files (kept in an unfiltered ``--suite onerun``: none is silently lost)."""
    return [checked(d) for d in all_designs() if family_of(d) is None]


def mechanism_name(design: CanaryDesign) -> str:
    """The training mechanism's name: the wrapped mechanism's catalog name when it has one."""
    mech = design.mechanism
    inner = getattr(mech, "mech", mech)
    for obj in (inner, mech):
        name = getattr(obj, "name", None)
        if isinstance(name, str) and name:
            return name
    return _NAMES.get(type(inner).__name__, type(inner).__name__)


def _describe_pair(design: CanaryDesign, runs: int) -> str:
    unit = "canary users" if design.relation == Relation.USER_LEVEL else "canaries"
    return (f"{design.m} {unit}, each in with probability 1/2 ({design.relation})"
            + (f", {runs} training runs" if runs > 1 else ""))


@dataclass(frozen=True)
class OneRunScenario:
    """One audited design: the result, its seconds, and the registry its records cite.  Has the
    ``records()`` / ``to_dict()`` of a multi-run result, so a run's envelope holds both."""

    design: CanaryDesign
    result: OneRunResult
    seconds: float
    mechanism: str
    registry: Mapping[str, Claim]
    family_rejection: FamilyRejection | None = None

    @property
    def name(self) -> str:
        return self.design.name

    def _info(self, check: OneRunClaimCheck) -> Claim | None:
        return self.registry.get(getattr(check.claim, "claim_id", "") or "")

    def _finding(self, check: OneRunClaimCheck) -> str:
        info = self._info(check)
        return finding(Verdict(check.verdict), None, None if info is None else info.status)

    def _open(self, check: OneRunClaimCheck) -> str | None:
        """:data:`NO_EXPECTATION` for a suite design's claim without expectation; None otherwise."""
        cid = getattr(check.claim, "claim_id", "") or ""
        return NO_EXPECTATION if isinstance(self.design, SuiteDesign) and cid not in self.design.expected else None

    def _record(self, check: OneRunClaimCheck, detectable: Any = None) -> dict[str, Any]:
        r, c, info = self.result, check.claim, self._info(check)
        curve = isinstance(c, CurveClaim)
        if isinstance(c, CurveClaim):  # (not `if curve`: the checker narrows c only on the isinstance itself)
            delta = c.delta if c.family == "approx-dp" else None
            # the claim kinds are the registry's: a reference curve is "tight", a corrected one "corrected"
            kind = {"reference": "tight", "corrected": "corrected"}.get(info.status if info else "", "printed")
            epsilon_claim, relation = None, r.relation or self.design.relation
        else:
            assert isinstance(c, Guarantee)
            delta, kind, relation = c.delta, c.kind, c.relation
            epsilon_claim = jsonable(c.epsilon) if c.applicable or c.broken_premise else None
        lower = check.epsilon_lower
        verdict = check.verdict
        decided = verdict != "not-applicable" and not curve and lower is not None
        eps = float(c.epsilon) if decided and isinstance(c, Guarantee) else None
        rec: dict[str, Any] = {
            "kind": "one-run", "scenario": self.design.name, "mechanism": self.mechanism,
            "pair": _describe_pair(self.design, r.runs), "samples": r.runs, "confidence": r.confidence,
            "seed": r.seed if r.seed is not None else 0, "seconds": self.seconds, "epsilon_sup": None,
            "sequential": None, "seeded": True,
            "claim_id": getattr(c, "claim_id", "") or None, "claim_kind": kind, "claim_source": c.source or None,
            "claim_note": getattr(c, "note", "") or None, "claim_status": None if info is None else info.status,
            "claim_document": None if info is None else info.document,
            "claim_where": None if info is None else info.where,
            "claim_statement": None if info is None else info.statement,
            "claim_vacuous": None if info is None else info.vacuous,
            "relation": relation, "delta": delta, "epsilon_claim": epsilon_claim, "epsilon_lower": lower,
            "epsilon_exact": None, "verdict": verdict, "exact_verdict": None, "finding": self._finding(check),
            "premise": (getattr(c, "note", "") or None) if verdict == "not-applicable" else None,
            "expected_verdict": self.design.expected.get(getattr(c, "claim_id", "") or ""),
            "slack": None if eps is None or lower is None else eps - lower,
            "tightness": None if eps is None or lower is None or eps == 0 else lower / eps,
            "event": None, "value_views": None, "no_expectation": self._open(check),
            "detectable": None if detectable is None else detectable.to_dict(),
            "onerun": {"m": r.m, "runs": r.runs, "r": r.r, "v": r.v, "k_plus": r.k_plus, "k_minus": r.k_minus,
                       "rule": r.rule, "correction": r.rule.get("correction"), "alpha": r.alpha,
                       "secret_sha256": r.secret_sha256, "assumes": r.premise,
                       "claim_type": "curve" if curve else "epsilon-delta",
                       "curve": c.to_dict() if isinstance(c, CurveClaim) else None,
                       "gdp_mu_lower": r.to_dict()["gdp_mu_lower"],
                       "tests": [t.to_dict() for t in r.tests],
                       "family_rejection": None if self.family_rejection is None else self.family_rejection.to_dict()},
        }
        rec["as_expected"] = outcome(rec) in OK_OUTCOMES
        return rec

    def records(self) -> list[dict[str, Any]]:
        """One flat record per claim (the contract of ``results.json``)."""
        return [self._record(c, d) for c, d in zip(self.result.claims, self.result.detectable, strict=True)]

    @property
    def as_expected(self) -> bool:
        return all(rec["as_expected"] for rec in self.records())

    def to_dict(self) -> dict[str, Any]:
        """The scenario's entry of ``results.json``: the result with scores and secret, each claim's
        finding read with the registry's status, its expectation and outcome."""
        body = self.result.to_dict(include_scores=True)
        for entry, rec in zip(body["claims"], self.records(), strict=True):
            entry.update(finding=rec["finding"], claim_status=rec["claim_status"],
                         expected_verdict=rec["expected_verdict"], as_expected=rec["as_expected"],
                         no_expectation=rec["no_expectation"])
        out = {"kind": "one-run", "scenario": self.design.name, "mechanism": self.mechanism,
               "description": self.design.description, "seconds": self.seconds, **body}
        if self.family_rejection is not None:
            out["family_rejection"] = self.family_rejection.to_dict()
        return out


def strongest_family_rejection(design: CanaryDesign, result: OneRunResult) -> FamilyRejection | None:
    """The strongest rejected DP-SGD accountant curve (same q and T, σ varied), for a DP-SGD design."""
    if not isinstance(design.mechanism, DPSGD):
        return None
    return family_rejection(result, design.mechanism, delta=design.deltas[0])


def run_design(design: CanaryDesign, *, seed: int, confidence: float, registry: Mapping[str, Claim],
               mechanism: str | None = None) -> OneRunScenario:
    """One training run of ``design``: its randomness from ``seed``, its secret from fresh entropy (a
    resumed run takes the stored game instead: :func:`dpaudit.runs.onerun.onerun_scenario`)."""
    start = time.perf_counter()
    result = design.audit(seed, confidence=confidence)
    rejection = strongest_family_rejection(design, result)
    return OneRunScenario(design, result, time.perf_counter() - start, mechanism or mechanism_name(design),
                          registry, rejection)
