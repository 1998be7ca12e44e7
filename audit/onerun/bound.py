"""From scores and the secret to a :class:`OneRunResult`: rule → tests → bounds → verdicts.

Every test of the rule carries its own level (α, or α/G for a Bonferroni grid).  The (ε, δ)
lower bound is the largest of the tests' Steinke bounds; an (ε, δ) claim is violated when that
bound at the claim's δ exceeds its ε; a curve claim is violated when any test rejects it by the
f-DP recursion (each at its level, so the family-wise error is ≤ α).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from dpaudit.core import Guarantee, InputError, check_real_array, require
from dpaudit.onerun.claimrule import rule_from_claims
from dpaudit.onerun.curves import CurveClaim
from dpaudit.onerun.fdp import largest_rejected_mu, rejects_claim
from dpaudit.onerun.game import FRESH, SUPPLIED, GameRecord, drawn_by_dpaudit, secret_sha256
from dpaudit.onerun.result import OneRunClaimCheck, OneRunResult
from dpaudit.onerun.rules import Fixed, Grid, Split, Test, default_rule, tiebreak_keys
from dpaudit.onerun.secret_order import check_secret_order
from dpaudit.onerun.steinke import epsilon_lower, epsilon_upper, prior_guard

__all__ = ["WORST_CASE", "bound_record", "check_callers_secret", "check_rule_for_secret", "check_tiebreak",
           "fresh_tiebreak", "is_balanced", "one_run_bound", "prior_guard"]

Claims = Sequence[Guarantee | CurveClaim]

FAIR_P_MIN = 1e-6  # a secret whose count of ones is rarer than this under Binomial(m, 1/2) is refused
WORST_CASE = "worst-case"  # tiebreak=WORST_CASE: no key, tied blocks counted worst-case (rules.counts)


def _check_inputs(scores: Any, secret: Any) -> tuple[np.ndarray, np.ndarray]:
    s = check_real_array("scores", scores).reshape(-1)
    require(s.size >= 2, "scores", f"<{s.size} values>", "must hold one score per canary (at least 2)")
    require(bool(np.all(np.isfinite(s))), "scores", "<non-finite values>", "must all be finite")
    b = np.asarray(secret).reshape(-1)
    require(b.size == s.size, "secret", f"<{b.size} bits>", f"must hold one bit per canary ({s.size})")
    require(bool(np.all((b == 0) | (b == 1))), "secret", "<values>", "must be 0/1 (1 = canary included)")
    return s, b.astype(np.int8)


def fair_p_value(ones: np.ndarray | int, n: np.ndarray | int) -> np.ndarray:
    """Two-sided exact binomial p-value of ``ones`` successes in ``n`` trials at p = ½,
    vectorised: Bin(n, ½) is symmetric, so the outcomes at most as likely as ``ones`` are those at
    least as far from n/2, and the p-value is min(1, 2·P[X ≤ min(ones, n − ones)]); this is
    ``scipy.stats.binomtest(ones, n).pvalue``."""
    ones, n = np.asarray(ones), np.asarray(n)
    return np.minimum(1.0, 2.0 * stats.binom.cdf(np.minimum(ones, n - ones), n, 0.5))


def _check_secret_fair(b: np.ndarray, runs: int) -> None:
    """Refuse a secret whose count of ones is implausible under S ~ Bernoulli(½)^m.

    Every bound assumes S is drawn i.i.d. Bernoulli(½) per canary (Steinke et al. 2023, §3:
    the prior of each guess is ½); a lopsided secret makes "in" guesses right more often for
    scores that carry nothing.  No test on one realisation proves S was drawn that way, but the
    count of ones catches a biased draw: the whole vector is refused when its two-sided exact
    binomial p-value is below 1e-6, and with R > 1 runs each run's m canaries are tested too, at
    1e-6 / R (Bonferroni), because a run-level layout (run 1 all in, run 2 all out) balances the
    total and is not i.i.d.  An honest secret is refused with probability ≤ 2·10⁻⁶."""
    how = ("the secret must be drawn i.i.d. Bernoulli(1/2) per canary before training, e.g. "
           "np.random.default_rng().integers(0, 2, m) from fresh entropy")
    p = float(fair_p_value(int(b.sum()), b.size))
    require(p >= FAIR_P_MIN, "secret", f"<{int(b.sum())} ones of m = {b.size}>",
            f"a count this far from m/2 has two-sided binomial p-value {p:.3g} < {FAIR_P_MIN:g} under "
            f"Binomial(m, 1/2); {how}")
    if runs > 1:
        per_run = b.reshape(runs, -1)
        ones = per_run.sum(axis=1)
        ps = fair_p_value(ones, per_run.shape[1])
        worst = int(np.argmin(ps))
        require(bool(ps[worst] >= FAIR_P_MIN / runs), f"secret (run {worst})",
                f"<{int(ones[worst])} ones of {per_run.shape[1]} canaries>",
                f"a run this far from half in has two-sided binomial p-value {float(ps[worst]):.3g} < "
                f"{FAIR_P_MIN:g}/{runs} runs under Binomial(m, 1/2); {how}")


def check_callers_secret(secret: Any, runs: int) -> None:
    """Before a game is played with a caller's ``secret``: refuse it when its count of ones
    (:func:`_check_secret_fair`) or its order (:func:`~dpaudit.onerun.secret_order.check_secret_order`)
    is implausible for an i.i.d. Bernoulli(½) draw, so nothing is trained for a game whose bound would
    be refused.  A secret that is not an array of bits 0/1 is left to the game, which names it."""
    try:
        b = np.asarray(secret).reshape(-1)
    except (TypeError, ValueError):
        return
    if b.size < 2 or b.dtype.kind not in "biuf" or not bool(np.all((b == 0) | (b == 1))) or b.size % runs:
        return
    _check_secret_fair(b.astype(np.int8), runs)
    check_secret_order(b.astype(np.int8))


def _unbalanced(rule: Fixed | Grid | Split) -> list[tuple[int, int]]:
    """The (k₊, k₋) pairs of ``rule`` with k₊ ≠ k₋ (a :class:`Split` only ever tests k₊ = k₋)."""
    pairs = [(rule.k_plus, rule.k_minus)] if isinstance(rule, Fixed) else list(getattr(rule, "pairs", ()))
    return [(a, c) for a, c in pairs if a != c]


def is_balanced(rule: Fixed | Grid | Split) -> bool:
    """Whether every test ``rule`` declares has k₊ = k₋ (valid with a secret of any bias)."""
    return not _unbalanced(rule)


def check_rule_for_secret(rule: Fixed | Grid | Split | None, source: str | None) -> None:
    """Refuse a rule with an unbalanced test (k₊ ≠ k₋) unless dpaudit drew the secret (``source`` is
    :data:`~dpaudit.onerun.game.FRESH`).

    **Why.**  Every bound's p-value is that of S ~ Bernoulli(½)^m.  A secret the caller drew may be
    Bernoulli(p) with p ≠ ½ and still pass :func:`_check_secret_fair` (p = 0.55 at m = 1000 does
    almost always).  Under ε-DP with i.i.d. Bernoulli(p) bits, l = logit p, a guess "in" is right
    with probability ≤ σ(ε + l) and a guess "out" with probability ≤ σ(ε − l), conditionally on
    the earlier guesses (the proof of Steinke, Nasr, Jagielski 2023, Thm 3.1, with the prior p in
    place of ½).  So the right count V is dominated by Bin(k₊, σ(ε + l)) + Bin(k₋, σ(ε − l)):

    * k₊ ≠ k₋: its tail exceeds Bin(r, σ(ε))'s; at ε = 0, p = 0.55, ``Fixed(100, 0)`` on scores
      independent of S gave ε_LB > 0 in 25.7 % of seeds at α = 0.05.  Refused.
    * k₊ = k₋ = k/2: the mean rate (σ(ε + l) + σ(ε − l))/2 is ≤ σ(ε) for every l (maximal at
      l = 0), and a sum of independent Bernoullis has P[X ≥ c] ≤ the binomial tail of the same
      mean whenever c ≥ mean + 1 (Hoeffding 1956, Thm 4).  So P[V ≥ v] ≤ P[Bin(r, σ(ε)) ≥ v] for
      v ≥ r·σ(ε) + 1, whatever p: the Bernoulli(½) p-value stays valid (:func:`prior_guard`
      keeps every rejection in that range).  Allowed.

    The argument is exact for Steinke's pure term; his δ term (Thm 3.3) is carried over unchanged
    and was checked by simulation, not proved, for p ≠ ½.

    **The f-DP / GDP readings** (Mahloujifar, Melis, Chaudhuri 2025, Thm 9: ``gdp_mu_lower`` and
    curve claims) assume Bernoulli(½) too, and no prior-free argument is given here: their validity
    under a balanced rule and a biased secret is a measured premise.  m = 1000, α = 0.05, 400 seeds
    per cell, the fairness check switched off so that the bias itself is measured (at P[in] = 0.6 it
    refuses ≈ 95 % of such secrets, at 0.55 ≈ 5 %): on scores independent of S, P[μ_LB > 0] was
    3.0 % ± 0.9 % (claims-planned rule) and 2.3 % ± 0.7 % (default grid) at P[in] = 0.55, 1.5 % ±
    0.6 % and 1.0 % ± 0.5 % at 0.6 (3.8 % ± 0.9 % and 2.3 % ± 0.7 % for a fair secret: no
    inflation); on Gaussian canaries at a true, tight claim μ = 2, the claim was rejected (and
    μ_LB > 2) in 0 of 400 at both biases, under both rules (tests/test_onerun_biased_secret.py
    checks μ_LB > 0 on null scores for every accepted rule)."""
    if source == FRESH or rule is None:
        return
    bad = _unbalanced(rule)
    require(not bad, "rule", rule,
            f"has k_plus != k_minus ({', '.join(f'({a}, {c})' for a, c in bad[:4])}), valid only for a secret "
            "drawn exactly Bernoulli(1/2); with a secret you drew, use a balanced rule (k_plus == k_minus), valid "
            "whatever the secret's bias, e.g. Fixed(50, 50), Grid.symmetric([...]), Split() or rule=None, or let "
            "dpaudit draw the secret: audit_one_run(..., secret=None)")




def fresh_tiebreak() -> int:
    """A tie-break seed from fresh operating-system entropy (128 bits): nothing the user's code, the
    run's seed, the scores or the secret determines it."""
    return secrets.randbits(128)


def check_tiebreak(tiebreak: Any) -> None:
    """Refuse a ``tiebreak`` argument that is not None, an integer >= 0 or :data:`WORST_CASE` (before a
    game is played: :func:`~dpaudit.onerun.api.audit_one_run` calls it first)."""
    require(tiebreak is None or (isinstance(tiebreak, str) and tiebreak == WORST_CASE)
            or (isinstance(tiebreak, (int, np.integer)) and not isinstance(tiebreak, bool) and bool(tiebreak >= 0)),
            "tiebreak", tiebreak, f"must be None (a seed drawn from fresh entropy), an integer >= 0 (the recorded "
            f"seed of a game to replay) or {WORST_CASE!r}")


def _tiebreak(tiebreak: int | str | None, m: int) -> tuple[int | None, np.ndarray | None]:
    """The seed to record and the key it gives (None, None: worst-case counts)."""
    check_tiebreak(tiebreak)
    if isinstance(tiebreak, str):
        return None, None
    seed = fresh_tiebreak() if tiebreak is None else int(tiebreak)
    return seed, tiebreak_keys(seed, m)


def _check_deltas(deltas: Sequence[float]) -> tuple[float, ...]:
    out = tuple(float(d) for d in deltas)
    require(len(out) >= 1, "deltas", deltas, "must hold at least one delta")
    for d in out:
        require(0.0 <= d < 1.0, "deltas", deltas, "each delta must be in [0, 1)")
    return out


def one_run_bound(scores: Any, secret: Any, *, rule: Fixed | Grid | Split | None = None,
                  deltas: Sequence[float] = (1e-5,), confidence: float = 0.95, claims: Claims = (),
                  runs: int = 1, seed: int | None = None, relation: str | None = None,
                  tiebreak: int | str | None = None) -> OneRunResult:
    """Bounds and verdicts for a game the user ran: ``scores`` (one per canary, higher = "in")
    and the ``secret`` inclusion bits (R runs of m canaries concatenated: one game of R·m).

    The secret must be drawn i.i.d. Bernoulli(½) per canary, independently of the scorer (e.g.
    ``np.random.default_rng().integers(0, 2, m)`` from fresh entropy): a secret whose count of ones
    has a two-sided exact binomial p-value below 1e-6 (per run too, at 1e-6/R) is refused with an
    :class:`InputError`, and so is one laid out in an order that is not plausibly random (a runs test
    and a drift test, each at 1e-6: :mod:`dpaudit.onerun.secret_order`; included-first or alternating
    secrets turn scores that drift with the canary index or its parity into false findings).  That
    check cannot see a mild bias (P[in] = 0.55 passes at m = 1000), so a
    secret given here is recorded as ``"supplied by the caller"`` (``result.secret_source``) and
    bounded only under a balanced rule (k₊ = k₋ in every test: valid whatever the secret's bias,
    :func:`check_rule_for_secret`); an unbalanced one is refused.  A game dpaudit played
    (:func:`bound_record` of a :class:`~dpaudit.onerun.game.GameRecord` whose secret it drew) has no
    such restriction.

    Tied scores are ranked by a random key (:func:`~dpaudit.onerun.rules.counts`) whose seed is
    drawn here from fresh entropy, after the scores and the secret exist and independently of both,
    and recorded (``result.tiebreak``).  ``tiebreak``: None (default) draws it; an integer replays a
    recorded one (a re-check, a resume, a reproducible test: choosing it after seeing the counts, or
    keeping the best of several, voids the bound); :data:`WORST_CASE` counts tied blocks
    worst-case instead (valid, without power on discrete scores).

    ``rule=None``: with claims that apply, the rule is planned from the claims alone
    (:func:`~dpaudit.onerun.claimrule.rule_from_claims`: k₊ = k₋ = k with the largest median bound
    for Gaussian canaries at the nearest claim's μ, from m, the claims, ``confidence`` and
    ``deltas[0]`` only, never from the scores or the secret), one test at level α, recorded with
    ``"planned_from": "claims"`` in ``result.rule``; without claims, :func:`default_rule` (a
    Bonferroni grid)."""
    return _bound(scores, secret, source=SUPPLIED, rule=rule, deltas=deltas, confidence=confidence, claims=claims,
                  runs=runs, seed=seed, relation=relation, tiebreak=tiebreak)


def _bound(scores: Any, secret: Any, *, source: str | None, rule: Fixed | Grid | Split | None,
           deltas: Sequence[float], confidence: float, claims: Claims, runs: int, seed: int | None,
           relation: str | None, tiebreak: int | str | None) -> OneRunResult:
    """:func:`one_run_bound` for a secret from ``source`` (:data:`~dpaudit.onerun.game.FRESH`: drawn by
    dpaudit; anything else: the caller's, balanced rules only, each ε capped by :func:`prior_guard`)."""
    s, b = _check_inputs(scores, secret)
    deltas = _check_deltas(deltas)
    require(isinstance(confidence, float) and 0.5 <= confidence < 1.0, "confidence", confidence,
            "must be a float in [0.5, 1)")
    require(isinstance(runs, int) and runs >= 1 and s.size % runs == 0, "runs", runs,
            f"must be an integer >= 1 dividing the number of canaries ({s.size})")
    _check_secret_fair(b, runs)
    if source != FRESH:
        check_secret_order(b)
    check_rule_for_secret(rule, source)
    alpha = float(f"{1.0 - confidence:.12g}")  # 0.05, not 0.050000000000000044, in the record
    m = int(s.size)
    planned: dict[str, object] = {}
    if rule is None:
        rule, planned = _default(m, claims, confidence=confidence, delta=deltas[0], relation=relation)
    require(isinstance(rule, (Fixed, Grid, Split)), "rule", rule, "must be Fixed, Grid or Split")
    if isinstance(rule, Fixed):
        require(rule.k_plus + rule.k_minus <= m, "rule", rule, f"makes more guesses than canaries ({m})")
    if isinstance(rule, Grid):
        require(all(a + c <= m for a, c in rule.pairs), "rule", rule, f"makes more guesses than canaries ({m})")

    def objective(mm: int, r: int, v: int, a: float) -> float:
        return epsilon_lower(mm, r, v, delta=deltas[0], alpha=a)

    tie_seed, keys = _tiebreak(tiebreak, m)
    if isinstance(rule, Split):
        floor = _split_floor(claims, deltas[0], relation)
        planned = planned | {"fallback_floor": floor}
        tests = tuple(rule.tests(s, b, alpha, objective, keys, floor=floor))
    else:
        tests = tuple(rule.tests(s, b, alpha, objective, keys))
    guarded = source != FRESH
    if guarded:  # what the rule produced, not what it declares (a subclass may produce anything)
        bad = [(t.k_plus, t.k_minus) for t in tests if t.k_plus != t.k_minus]
        require(not bad, "rule", rule, f"produced unbalanced tests ({', '.join(f'({a}, {c})' for a, c in bad[:4])}): "
                "with a secret you drew, only balanced tests (k_plus == k_minus) are valid whatever its bias")
    per_test = np.column_stack([_eps_column(tests, d, guarded) for d in deltas])
    best = int(np.argmax(per_test[:, 0]))
    eps_lower = tuple(float(x) for x in per_test.max(axis=0))
    mu = max(largest_rejected_mu(m=t.m, c_prime=t.r, c=t.v, tau=t.alpha) for t in tests)
    checks = tuple(_check_claim(c, tests, deltas, per_test, relation, guarded) for c in claims)
    return OneRunResult(m=m, runs=runs, canaries_per_run=m // runs, tests=tests, best=best,
                        rule=rule.to_dict() | planned,
                        alpha=alpha, deltas=deltas, epsilon_lowers=eps_lower, gdp_mu_lower=float(mu), claims=checks,
                        secret_sha256=secret_sha256(b), seed=seed, relation=relation, scores=s, secret=b,
                        tiebreak=tie_seed, secret_source=source)


def _eps(test: Test, delta: float, guarded: bool) -> float:
    """Steinke's bound of one test at δ; with a caller's secret, at most :func:`prior_guard`."""
    eps = epsilon_lower(test.m, test.r, test.v, delta=delta, alpha=test.alpha)
    return min(eps, prior_guard(test)) if guarded else eps


def _eps_column(tests: tuple[Test, ...], delta: float, guarded: bool) -> np.ndarray:
    """Each test's :func:`_eps` at δ, in order, except that a test whose bound provably cannot
    exceed an earlier one's is skipped (−∞): its Steinke bound is < ``epsilon_upper`` (and a
    caller's secret caps it at :func:`prior_guard`), so when that is ≤ the best so far, neither the
    column's maximum nor its first argmax (the result's ``best``) depends on it.  A grid's tests of
    many guesses, the costliest, are the ones this skips once a smaller k has done better."""
    out = np.full(len(tests), -np.inf)
    best = -np.inf
    for i, t in enumerate(tests):
        if best > 0:
            upper = epsilon_upper(t.m, t.r, t.v, delta=delta, alpha=t.alpha)
            if (min(upper, prior_guard(t)) if guarded else upper) <= best:
                continue
        out[i] = _eps(t, delta, guarded)
        best = max(best, float(out[i]))
    return out


def _split_floor(claims: Claims, delta: float, relation: str | None) -> float:
    """The claim a :class:`Split`'s bound-part test should be able to reject: the smallest ε of the
    applicable (ε, δ) claims at the bound's first δ (0 without one), fixed by the claims alone."""
    eps = [float(c.epsilon) for c in claims if isinstance(c, Guarantee) and c.applicable and c.delta == delta
           and (relation is None or c.relation == relation) and math.isfinite(c.epsilon)]
    return min(eps, default=0.0)


def _default(m: int, claims: Claims, *, confidence: float, delta: float,
             relation: str | None) -> tuple[Fixed | Grid, dict[str, object]]:
    """The rule when none is given: planned from the claims that apply, else the default grid."""
    planned = rule_from_claims(m, claims, confidence=confidence, delta=delta, relation=relation)
    return planned if planned is not None else (default_rule(m), {})


def bound_record(record: GameRecord, *, rule: Fixed | Grid | Split | None = None, deltas: Sequence[float] = (1e-5,),
                 confidence: float = 0.95, claims: Claims = (), relation: str | None = None,
                 tiebreak: int | str | None = None) -> OneRunResult:
    """:func:`one_run_bound` of a played :class:`GameRecord` (keeps its seed, and its relation unless
    ``relation`` names the claims' own; with claims and no ``rule``, the rule is planned from the
    claims, as there).  The record is verified first (:meth:`GameRecord.verify`: its secret and its
    scores as the game made them).  A secret dpaudit drew in this process
    (:func:`~dpaudit.onerun.game.drawn_by_dpaudit`) may be bounded under any rule; any other — a
    caller's, a record built by hand or restored from a file, whatever its ``secret_source`` says —
    under a balanced one only (:func:`~dpaudit.onerun.bound.check_rule_for_secret`), after the checks of a
    caller's secret (its count, its order)."""
    record.verify()  # an array edited in place since the game (the secret, or the scores) is refused
    source = FRESH if drawn_by_dpaudit(record) else SUPPLIED
    return _bound(record.scores, record.secret, source=source, rule=rule, deltas=deltas,
                  confidence=confidence, claims=claims, runs=record.runs, seed=record.seed,
                  relation=record.relation if relation is None else relation, tiebreak=tiebreak)


def _check_claim(claim: Guarantee | CurveClaim, tests: tuple[Test, ...], deltas: tuple[float, ...],
                 per_test: np.ndarray, relation: str | None, guarded: bool = False) -> OneRunClaimCheck:
    if isinstance(claim, CurveClaim):
        if not claim.applicable:
            return OneRunClaimCheck(claim=claim, rejected=None)
        rej = any(rejects_claim(claim, m=t.m, c_prime=t.r, c=t.v, tau=t.alpha) for t in tests)
        return OneRunClaimCheck(claim=claim, rejected=rej)
    if not isinstance(claim, Guarantee):
        raise InputError(f"claims = {claim!r} is invalid: each claim must be a dpaudit.core.Guarantee or a CurveClaim")
    if not claim.applicable or (relation is not None and claim.relation != relation):
        # A claim stated for another neighbour relation says nothing about this game's canaries.
        return OneRunClaimCheck(claim=claim, rejected=None)
    if claim.delta in deltas:
        eps = float(per_test[:, deltas.index(claim.delta)].max())
    else:
        eps = float(_eps_column(tests, claim.delta, guarded).max())
    return OneRunClaimCheck(claim=claim, rejected=eps > claim.epsilon, epsilon_lower=eps)
