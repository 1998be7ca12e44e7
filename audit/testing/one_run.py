"""A privacy assertion for a training function, in one run: canaries in, one training, scores out.

    from dpaudit.testing import assert_private_one_run

    def test_my_training_is_private():
        assert_private_one_run(train, score, epsilon=4.0, delta=1e-5, m=1000, seed=0)

``train(dataset, rng) -> output`` trains once on a dataset (a list of records: the base data
followed by the included canaries); ``score(output, canaries) -> one float per canary``, higher
meaning "in".  The canary game of Steinke, Nasr, Jagielski (NeurIPS 2023) includes each canary
with probability ½ by a secret drawn from fresh entropy (never from ``seed``, which seeds the
training's randomness only) that the scorer never sees, guesses "in" for the k₊ highest
scores and "out" for the k₋ lowest, and turns the right guesses into their (ε, δ) lower bound
(Theorem 3.3).  A curve claim (e.g. ``gdp(mu)``) is tested by the f-DP recursion of Mahloujifar,
Melis, Chaudhuri (ICML 2025, Algorithm 2).  A one-run bound is valid for a rule fixed before the
game; by default k₊ = k₋ = k is chosen by :mod:`dpaudit.onerun.planner` from the claim alone (the
rule with the largest median bound for Gaussian canaries with half the noise the claim allows), so
nothing about the run enters the choice.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from dpaudit.core import Guarantee, Relation, is_real, require
from dpaudit.onerun.api import audit_one_run
from dpaudit.onerun.claimrule import rule_from_claims
from dpaudit.onerun.curves import CurveClaim
from dpaudit.onerun.game import check_game_size
from dpaudit.onerun.result import MU_LABEL, OneRunClaimCheck, OneRunResult
from dpaudit.onerun.rules import Fixed, Grid, Split
from dpaudit.testing.assertions import PrivacyViolation
from dpaudit.testing.budget import current

__all__ = ["assert_private_one_run", "planned_rule"]

CLAIM_ID = "user/assert_private_one_run"
CURVE_ID = "user/assert_private_one_run-curve"
DEFAULT_M = 1000
ALTERNATIVE = 2.0  # the default rule is tuned to catch canaries this many times more separated than claimed


def planned_rule(m: int, *, epsilon: float, delta: float, confidence: float,
                 curve: CurveClaim | None = None) -> Fixed:
    """The default rule, from the claim alone (:func:`~dpaudit.onerun.claimrule.rule_from_claims`):
    k₊ = k₋ = k maximising the median bound under Gaussian canaries at twice the claims' μ (the
    smaller of ``curve``'s μ and the μ whose GDP profile passes through (ε, δ)) — half the noise the
    claim allows, the size of violation a test should catch; the GDP-μ objective when a curve is
    tested, Steinke's else.  Nothing of the run enters the choice, so the rule is fixed in advance
    and no correction is due."""
    claims: list[Guarantee | CurveClaim] = [Guarantee(epsilon=epsilon, delta=delta)]
    if curve is not None:
        claims.append(curve)
    planned = rule_from_claims(m, claims, confidence=confidence, delta=delta, separation=ALTERNATIVE)
    assert planned is not None  # the (ε, δ) claim always applies
    return planned[0]


def _check(train: Any, score: Any, epsilon: Any, delta: Any, confidence: Any, curve: Any, seed: Any,
           relation: Any) -> None:
    require(callable(train) or callable(getattr(train, "run", None)) or callable(getattr(train, "sample", None)),
            "train", train, "must be callable as train(dataset, rng), or have run(dataset, rng)")
    require(callable(score) or callable(getattr(score, "score", None)), "score", score,
            "must be callable as score(output, canaries), one float per canary, or have score(output, canaries)")
    require(is_real(epsilon) and math.isfinite(epsilon) and epsilon >= 0, "epsilon", epsilon,
            "must be a finite number >= 0")
    require(is_real(delta) and 0.0 <= delta < 1.0, "delta", delta, "must be a number in [0, 1)")
    require(is_real(confidence) and 0.5 <= confidence < 1.0, "confidence", confidence, "must be in [0.5, 1)")
    require(curve is None or isinstance(curve, CurveClaim), "curve", curve,
            "must be None or a CurveClaim (dpaudit.onerun.gdp(mu), approx_dp, profile)")
    require(isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0, "seed", seed,
            "must be an integer >= 0")
    allowed = (Relation.ADD_REMOVE.value, Relation.USER_LEVEL.value)
    require(relation in allowed, "relation", relation, f"must be one of {', '.join(allowed)}")


def assert_private_one_run(train: Any, score: Any, *, epsilon: float, delta: float = 1e-5,
                           canaries: Sequence[Any] | None = None, m: int | None = None, runs: int = 1,
                           rule: Fixed | Grid | Split | None = None, confidence: float | None = None, seed: int = 0,
                           curve: CurveClaim | None = None, relation: str = Relation.ADD_REMOVE.value,
                           base: Any = (), tiebreak: int | None = None) -> OneRunResult:
    """Fail when one canary game certifies that ``train`` is not (ε, δ)-DP towards its canaries
    (or, with ``curve``, not f-DP for that trade-off curve).

    ``canaries``: the records to insert (reused by every run, or runs·m of them); default the
    integers 0..m−1 with m = 1000.  ``base``: the training data every run holds.  ``runs``
    independent trainings of m canaries each are one game of runs·m canaries.  ``rule``: the
    guessing rule, fixed in advance (default :func:`planned_rule`); a :class:`Grid` pays a
    Bonferroni correction, a :class:`Split` holds out part of the canaries.  ``confidence``
    defaults to the budget in force (0.99, as :func:`~dpaudit.testing.assert_private`).
    ``tiebreak``: the seed of the key that ranks tied scores, drawn from fresh entropy after the
    game when None (default) and named in a failure's message; give it to replay a failure.

    A mechanism that is (ε, δ)-DP (and f-DP for ``curve``) towards each canary fails with
    probability at most 1 − ``confidence`` (Steinke et al., Thm 3.3; Mahloujifar et al., Thm 9;
    with a curve, each of the two tests runs at half that level: Bonferroni), provided the scorer
    does not read the secret.  A ``train`` or ``score`` that calls ``sys.exit`` or raises
    ``KeyboardInterrupt`` raises :class:`~dpaudit.core.InputError` naming it.
    Raises :class:`~dpaudit.testing.PrivacyViolation` naming the bound, the counts, the rule and,
    for a curve claim, the largest rejected GDP μ (valid against GDP-family claims only).  Returns
    the :class:`~dpaudit.onerun.OneRunResult` otherwise, so a test can also assert on tightness.
    """
    __tracebackhide__ = True  # a failing test shows the test's line, not dpaudit's frames
    confidence = current().confidence if confidence is None else confidence
    _check(train, score, epsilon, delta, confidence, curve, seed, relation)
    if canaries is None:
        m = DEFAULT_M if m is None else m
        require(isinstance(m, int) and not isinstance(m, bool) and m >= 2, "m", m, "must be an integer >= 2")
        if isinstance(runs, int) and not isinstance(runs, bool) and runs >= 1:
            check_game_size(m, runs, "runs x m")  # before the canaries are built
        canaries = list(range(m))
    canaries = list(canaries)
    require(isinstance(runs, int) and not isinstance(runs, bool) and runs >= 1, "runs", runs,
            "must be an integer >= 1")
    per_run = m if m is not None else (len(canaries) // runs if len(canaries) % runs == 0 else len(canaries))
    require(isinstance(per_run, int) and per_run >= 2, "canaries", f"<{len(canaries)} canaries>",
            "must hold at least 2 canaries per run")
    # Two claims, two tests: each at level α/2, so that a correct mechanism fails with probability ≤ α.
    each = float(f"{1.0 - (1.0 - float(confidence)) / (1 if curve is None else 2):.12g}")
    if rule is None:
        rule = planned_rule(per_run * runs, epsilon=float(epsilon), delta=float(delta), confidence=each, curve=curve)
    claim = Guarantee(epsilon=float(epsilon), delta=float(delta), relation=relation, source="assert_private_one_run",
                      claim_id=CLAIM_ID)
    claims: list[Guarantee | CurveClaim] = [claim]
    if curve is not None:
        claims.append(curve if curve.claim_id else _with_id(curve))
    result = audit_one_run(train, score, canaries=canaries, m=per_run, runs=runs, rule=rule, deltas=(float(delta),),
                           confidence=each, claims=claims, seed=seed, relation=relation, base=base, tiebreak=tiebreak)
    refuted = [c for c in result.claims if c.rejected]
    if refuted:
        raise PrivacyViolation(_message(result, refuted, float(epsilon), float(delta), float(confidence)))
    return result


def _with_id(curve: CurveClaim) -> CurveClaim:
    return replace(curve, claim_id=CURVE_ID)


def _message(result: OneRunResult, refuted: list[OneRunClaimCheck], epsilon: float, delta: float,
             confidence: float) -> str:
    rule = result.rule
    if rule["rule"] == "fixed":
        how = (f"fixed rule k+ = {rule['k_plus']}, k- = {rule['k_minus']}, chosen before the game "
               f"(correction: {rule['correction']})")
    else:
        how = f"{rule['rule']} rule ({rule['correction']})"
    lines = []
    for check in refuted:
        if isinstance(check.claim, CurveClaim):
            lines.append(f"{check.finding}: the training run is not {check.claim.describe()} towards its canaries "
                         f"[{result.relation}]: the f-DP one-run test (Mahloujifar, Melis, Chaudhuri 2025, Alg. 2) "
                         f"rejects the curve with confidence {result.confidence:g}.")
        else:
            lines.append(f"{check.finding}: the training run is not ({epsilon:g}, {delta:g})-DP towards its canaries "
                         f"[{result.relation}]: eps_lower = {check.epsilon_lower:.6g} at delta {delta:g} with "
                         f"confidence {result.confidence:g} (Steinke, Nasr, Jagielski 2023, Thm 3.3).")
    lines.append(f"Counts: {result.v} right of {result.r} guesses (k+ = {result.k_plus}, k- = {result.k_minus}) "
                 f"on m = {result.m} canaries ({result.runs} run(s) of {result.canaries_per_run}); {how}.")
    if len(result.claims) > 1:
        lines.append(f"Two claims, two tests, each at confidence {result.confidence:.6g} (Bonferroni): together "
                     f"{confidence:g}.")
    if any(isinstance(c.claim, CurveClaim) for c in result.claims):
        lines.append(f"GDP mu rejected up to {result.gdp_mu_lower:.4g}: {MU_LABEL}.")
    lines.append(f"Seed {result.seed}, secret sha256 {result.secret_sha256[:16]}..., tie-break seed "
                 f"{result.tiebreak if result.tiebreak is not None else 'none (ties counted worst-case)'}.")
    return "\n".join(lines)
