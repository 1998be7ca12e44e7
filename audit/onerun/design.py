"""A canary design: what a training mechanism declares so that it can be audited in one run.

A design holds the mechanism, the base training data, the m canaries, the neighbour relation
the canaries are added under, a scorer (one float per canary, higher = "in", never given the
secret), a guessing rule fixed in advance and the claims the run is held against, each with the
verdict expected of it.  :meth:`CanaryDesign.audit` plays the canary game once and bounds it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dpaudit.core import Guarantee, require
from dpaudit.onerun.api import audit_one_run
from dpaudit.onerun.bound import bound_record
from dpaudit.onerun.curves import CurveClaim
from dpaudit.onerun.game import CanaryGame
from dpaudit.onerun.isolated import IsolatedCanaries, isolated_bound
from dpaudit.onerun.result import OneRunResult
from dpaudit.onerun.rules import Fixed, Grid, Split

__all__ = ["CanaryDesign", "refuted"]


@dataclass(frozen=True)
class CanaryDesign:
    """A one-run scenario of a training mechanism.  ``expected`` maps each claim id to the
    verdict a correct audit gives (``pass``, ``violation`` or ``not-applicable``).

    ``neighbours``: the relation between a run with canary j and one without, when the
    mechanism's slots make it other than the game's ``relation`` (a slot that holds the canary or
    its zeroed record: ``zero-out``); the claims are checked against it.

    ``isolated_canaries``: the design's declaration that each canary's score depends on its own bit
    and independent noise only (:class:`~dpaudit.onerun.isolated.IsolatedCanaries`: why, each
    canary's own coordinate, the threshold planned from the claims); :meth:`audit` then attaches the
    independent-canary test to the result, ``declared_by="design"``.  None: not declared, no test.

    ``family``: the name of the catalog family whose claims the design checks (``"dp-sgd"``,
    ``"policy-optimization"``, ``"alignment"``), stated by the design itself so the catalog files it
    without reading its claim ids; None for a user's design (it belongs to no family)."""

    name: str
    mechanism: Any
    canaries: Sequence[Any]
    scorer: Callable[[Any, Sequence[Any]], Any]
    claims: tuple[Guarantee | CurveClaim, ...]
    rule: Fixed | Grid | Split
    base: Any = ()
    relation: str = "add-remove"
    deltas: tuple[float, ...] = (1e-5,)
    expected: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    neighbours: str | None = None
    isolated_canaries: IsolatedCanaries | None = None
    family: str | None = None

    def __post_init__(self) -> None:
        require(len(self.canaries) >= 2, "canaries", f"<{len(self.canaries)}>", "a design needs at least 2 canaries")
        ids = {getattr(c, "claim_id", "") for c in self.claims}
        require(set(self.expected) <= ids, "expected", dict(self.expected), f"must name claims of the design ({ids})")
        iso = self.isolated_canaries
        require(iso is None or len(iso.coordinates) == len(self.canaries), "isolated_canaries",
                None if iso is None else f"<{len(iso.coordinates)} coordinates>",
                f"must give one coordinate per canary ({len(self.canaries)})")
        require(self.family is None or (isinstance(self.family, str) and self.family.strip() != ""), "family",
                self.family, "a catalog family's name (a non-empty string), or None for a design of no family")

    @property
    def m(self) -> int:
        return len(self.canaries)

    def audit(self, seed: int = 0, *, confidence: float = 0.95, secret: Any = None,
              tiebreak: int | str | None = None) -> OneRunResult:
        """One training run (its randomness from ``seed``; the secret from fresh entropy, or ``secret``
        when given), bounded under the design's rule (tied scores ranked by a key from fresh entropy,
        or from ``tiebreak`` when given: :func:`~dpaudit.onerun.bound.one_run_bound`)."""
        if self.neighbours is not None:
            record = CanaryGame(m=self.m, seed=seed, relation=self.relation).play(
                self.mechanism, self.scorer, list(self.canaries), self.base, secret=secret)
            result = bound_record(record, rule=self.rule, deltas=self.deltas, confidence=confidence,
                                  claims=self.claims, relation=self.neighbours, tiebreak=tiebreak)
        else:
            result = audit_one_run(self.mechanism, self.scorer, canaries=list(self.canaries), base=self.base,
                                   rule=self.rule, deltas=self.deltas, confidence=confidence, claims=self.claims,
                                   seed=seed, relation=self.relation, secret=secret, tiebreak=tiebreak)
        return self.with_isolated(result)

    def with_isolated(self, result: OneRunResult) -> OneRunResult:
        """``result`` with the independent-canary test attached when the design declares isolated
        canaries (at the result's α, the design's δs, claims and planned threshold); else unchanged."""
        iso = self.isolated_canaries
        if iso is None or result.scores is None or result.secret is None:
            return result
        bound = isolated_bound(result.scores, result.secret, threshold=iso.threshold, declared_by="design",
                               reason=iso.reason, check=iso.check, threshold_source=iso.threshold_source,
                               deltas=self.deltas, alpha=result.alpha, claims=self.claims,
                               relation=self.neighbours or self.relation)
        return dataclasses.replace(result, isolated=bound)

    def as_expected(self, result: OneRunResult) -> bool:
        """Every claim's verdict is the expected one."""
        got = {getattr(c.claim, "claim_id", ""): c.verdict for c in result.claims}
        return all(got.get(k) == v for k, v in self.expected.items())


def refuted(result: OneRunResult) -> bool:
    """Whether any claim of the run is rejected: its (ε, δ) bound or its curve."""
    return any(c.rejected for c in result.claims)
