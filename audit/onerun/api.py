"""The public entry point of one-run auditing: play the canary game, then bound it.

    audit_one_run(mechanism, scorer, canaries=..., m=..., runs=1, rule=..., deltas=(1e-5,),
                  confidence=0.95, claims=(), seed=0, relation="add-remove", base=(), secret=None,
                  progress=None, tiebreak=None) -> OneRunResult
    one_run_bound(scores, secret, rule=..., ...) -> OneRunResult   # a game the user played

A one-run bound assumes the scorer does not read the secret (:data:`dpaudit.onerun.game.PREMISE`):
the game draws it from fresh entropy, never from ``seed`` (which seeds the mechanism's randomness
only), and keeps it out of the scorer's frames.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from dpaudit.core import Relation, require
from dpaudit.onerun.bound import (
    Claims,
    bound_record,
    check_callers_secret,
    check_rule_for_secret,
    check_tiebreak,
    one_run_bound,
)
from dpaudit.onerun.game import FRESH, SUPPLIED, CanaryGame, check_game_size
from dpaudit.onerun.result import OneRunResult
from dpaudit.onerun.rules import Fixed, Grid, Split

__all__ = ["audit_one_run", "one_run_bound"]


def audit_one_run(mechanism: Any, scorer: Any, *, canaries: Sequence[Any] | None = None, m: int | None = None,
                  runs: int = 1, rule: Fixed | Grid | Split | None = None, deltas: Sequence[float] = (1e-5,),
                  confidence: float = 0.95, claims: Claims = (), seed: int = 0,
                  relation: str = Relation.ADD_REMOVE.value, base: Any = (), secret: Any = None,
                  progress: Callable[[int, int], None] | None = None,
                  tiebreak: int | str | None = None) -> OneRunResult:
    """Play the canary game (``runs`` training runs of ``m`` canaries) and bound it.

    ``canaries``: m canaries reused by every run, or runs·m of them; when omitted, the canaries
    are the integers 0..m−1.  ``mechanism``: ``run(dataset, rng)``, ``sample(dataset, 1, rng)`` or
    a callable; ``scorer``: ``score(output, canaries)`` or a callable, one float per canary.
    ``seed`` seeds the mechanism's generators only.  ``secret``: None (default) draws the inclusion
    bits from fresh entropy; give runs·m bits 0/1 of your own Bernoulli(½) draw to replay a game
    (checked for plausibility before training: its count of ones, and its order,
    :mod:`dpaudit.onerun.secret_order`).  ``progress(done, runs)`` is called before the first training run
    and after each (quiet by default; :class:`dpaudit.onerun.progress.TrainingProgress` prints lines).
    ``tiebreak``: the seed of the key that ranks tied scores, drawn from fresh entropy after the game
    when None (default) and recorded in the result; give a recorded one to replay a game
    (:func:`~dpaudit.onerun.bound.one_run_bound`).
    ``rule``: None (default) plans the rule from ``claims`` before the game (one fixed k, from m, the
    claims, ``confidence`` and ``deltas[0]`` alone: ``"planned_from": "claims"`` in ``result.rule``),
    or, without claims, uses :func:`~dpaudit.onerun.rules.default_rule`'s Bonferroni grid.
    ``SystemExit`` or ``KeyboardInterrupt`` from the mechanism or scorer is an ``InputError`` naming
    it.  The bound assumes the scorer does not read the secret.
    """
    require(canaries is not None or m is not None, "canaries", canaries, "give the canaries or m")
    check_tiebreak(tiebreak)  # before anything is trained
    check_rule_for_secret(rule, FRESH if secret is None else SUPPLIED)  # a caller's secret: balanced rules only
    require(isinstance(runs, int) and not isinstance(runs, bool) and runs >= 1, "runs", runs,
            "must be an integer >= 1")
    if secret is not None:  # its count and its order, before anything is trained
        check_callers_secret(secret, runs)
    if canaries is None:
        require(isinstance(m, int) and not isinstance(m, bool) and m >= 1, "m", m, "must be an integer >= 1")
        assert m is not None
        check_game_size(m, runs, "runs x m")  # before the canaries are built
        canaries = list(range(m))
    canaries = list(canaries)
    if m is None:
        m = len(canaries) // runs if len(canaries) % runs == 0 and len(canaries) > runs else len(canaries)
    record = CanaryGame(m=m, seed=seed, runs=runs, relation=relation).play(mechanism, scorer, canaries, base,
                                                                           secret=secret, progress=progress)
    record.verify()
    result = bound_record(record, rule=rule, deltas=deltas, confidence=confidence, claims=claims, tiebreak=tiebreak)
    return dataclasses.replace(result, secret_source=record.secret_source)
