"""The public entry point of one-run auditing: play the canary game, then bound it.

    audit_one_run(mechanism, scorer, canaries=..., m=..., runs=1, rule=..., deltas=(1e-5,),
                  confidence=0.95, claims=(), seed=0, relation="add-remove", base=()) -> OneRunResult
    one_run_bound(scores, secret, rule=..., ...) -> OneRunResult   # a game the user played
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dpaudit.core import Relation, require
from dpaudit.onerun.bound import Claims, bound_record, one_run_bound
from dpaudit.onerun.game import CanaryGame
from dpaudit.onerun.result import OneRunResult
from dpaudit.onerun.rules import Fixed, Grid, Split

__all__ = ["audit_one_run", "one_run_bound"]


def audit_one_run(mechanism: Any, scorer: Any, *, canaries: Sequence[Any] | None = None, m: int | None = None,
                  runs: int = 1, rule: Fixed | Grid | Split | None = None, deltas: Sequence[float] = (1e-5,),
                  confidence: float = 0.95, claims: Claims = (), seed: int = 0,
                  relation: str = Relation.ADD_REMOVE.value, base: Any = ()) -> OneRunResult:
    """Play the canary game (``runs`` training runs of ``m`` canaries) and bound it.

    ``canaries``: m canaries reused by every run, or runs·m of them; when omitted, the canaries
    are the integers 0..m−1.  ``mechanism``: ``run(dataset, rng)``, ``sample(dataset, 1, rng)`` or
    a callable; ``scorer``: ``score(output, canaries)`` or a callable, one float per canary.
    """
    require(canaries is not None or m is not None, "canaries", canaries, "give the canaries or m")
    if canaries is None:
        assert m is not None
        canaries = list(range(m))
    canaries = list(canaries)
    require(isinstance(runs, int) and runs >= 1, "runs", runs, "must be an integer >= 1")
    if m is None:
        m = len(canaries) // runs if len(canaries) % runs == 0 and len(canaries) > runs else len(canaries)
    record = CanaryGame(m=m, seed=seed, runs=runs, relation=relation).play(mechanism, scorer, canaries, base)
    return bound_record(record, rule=rule, deltas=deltas, confidence=confidence, claims=claims)
