"""How many gradient canaries catch each fault of an Opacus pipeline (issue 43, point 3).

Planned before the run, from the claimed setting alone (σ, q, C, the steps T the loop will make and
the dataset size N): an isolated white-box canary's coordinate, in units of C, is
``x_t = a_t·b_t + s_t·Z_t`` per step, where under the correct pipeline ``b_t ~ Bernoulli(q)`` when the
canary is in (0 when out), ``a_t = 1`` (its raw 4C clipped to C) and ``s_t = σ``; each fault changes
one part of that law (Nasr et al., USENIX Security 2023, §4, for the white-box canary; the faults
are :mod:`dpaudit.pipelines.opacus_faults`):

* (a) clipping at k·C: ``a_t = min(4, k)``; (b) on the un-noised steps ``s_t = factor·σ``;
  (c) ``b_t ~ Bernoulli(k·q)``; (d) exactly one step per epoch of ⌊1/q⌉ steps; (e) the canary on a
  missed parameter: ``a_t = 4`` (unclipped); (f) the step's value times E[B]/B_t with
  ``B_t ~ 1 + Binomial(N, q)``.

Scores are the auditor's statistic (:func:`~dpaudit.catalog.designs.dpsgd.whitebox_score` at the
claimed σ and q).  Pools of in and out scores are simulated once per fault (fixed seed
:data:`PLAN_SEED`); each candidate m is then played :data:`GAMES` times by drawing a secret and the
canaries' scores from the pools, bounded with the audit's own rule and claims; the plan is the
smallest m of :data:`LADDER` refuted in ≥ 90 % of the games (None past the ladder).  The pools make
the canaries independent, which is the isolated-canary premise the attach checks on every step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpaudit.catalog.designs.dpsgd import RULE
from dpaudit.core import Guarantee, require
from dpaudit.onerun.bound import one_run_bound
from dpaudit.onerun.curves import CurveClaim
from dpaudit.onerun.rules import Fixed
from dpaudit.pipelines.opacus_faults import (
    ClipAboveNoise,
    Fault,
    NormMisses,
    Oversampled,
    PartialNoise,
    RealisedNormalisation,
    ShuffledBatches,
)

__all__ = ["GAMES", "LADDER", "PLAN_SEED", "FaultPlan", "claim_power", "plan_faults", "rule_for", "simulate_scores"]

PLAN_SEED = 20_261_202
GAMES = 40
LADDER = (250, 500, 1000, 2000, 4000, 8000)
POOL = 6000
AMPLITUDE = 4.0


@dataclass(frozen=True)
class FaultPlan:
    """The smallest m (gradient canaries, one run) that refutes the claims under ``fault`` with
    probability ≥ 0.9 (``power`` at that m, from ``GAMES`` simulated games), or None."""

    fault: str
    canaries: int | None
    power: float

    def describe(self) -> str:
        if self.canaries is None:
            return (f"({self.fault}) not caught with probability 0.9 at any m up to {LADDER[-1]} "
                    f"(power {self.power:.2f})")
        return f"({self.fault}) {self.canaries} gradient canaries, 1 run (power {self.power:.2f})"


def _shape_of(fault: Fault | None) -> tuple[float, float, float, float]:
    """(canary amplitude after clipping, rate factor, noisy fraction, noise factor off it), in units of C."""
    amp, rate, noisy, off = 1.0, 1.0, 1.0, 1.0
    if isinstance(fault, ClipAboveNoise):
        amp = min(AMPLITUDE, fault.factor)
    elif isinstance(fault, PartialNoise):
        noisy, off = fault.noisy, fault.factor
    elif isinstance(fault, Oversampled):
        rate = fault.factor
    elif isinstance(fault, NormMisses):
        amp = AMPLITUDE
    return amp, rate, noisy, off


def _law(fault: Fault | None, steps: int, q: float, sigma: float, n: int, rng: np.random.Generator,
         included: bool) -> np.ndarray:
    """x (T × POOL) of one fault's canary coordinate, in units of C."""
    shape = (steps, POOL)
    amp, rate, noisy, off = _shape_of(fault)
    t = np.arange(steps)
    noise = np.where(np.floor((t + 1) * noisy) > np.floor(t * noisy), sigma, off * sigma)
    if isinstance(fault, ShuffledBatches):
        per = max(1, round(1.0 / q))
        b = np.zeros(shape)
        for start in range(0, steps, per):
            width = min(per, steps - start)
            b[start + rng.integers(0, width, POOL), np.arange(POOL)] = 1.0
    else:
        b = (rng.random(shape) < min(1.0, rate * q)).astype(float)
    x = amp * b * float(included) + noise[:, None] * rng.standard_normal(shape)
    if isinstance(fault, RealisedNormalisation):
        x *= (q * n) / np.maximum(1.0, 1.0 + rng.binomial(n, q, size=(steps, 1)))
    return x


def simulate_scores(fault: Fault | None, *, sigma: float, q: float, steps: int, n: int,
                    seed: int = PLAN_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Pools of in and out scores (POOL each) under ``fault`` (None: the correct pipeline)."""
    rng = np.random.default_rng(seed)

    def score(x: np.ndarray) -> np.ndarray:
        return np.log1p(q * np.expm1((2.0 * x - 1.0) / (2.0 * sigma ** 2))).sum(axis=0)

    return (score(_law(fault, steps, q, sigma, n, rng, True)), score(_law(fault, steps, q, sigma, n, rng, False)))


def rule_for(m: int) -> Fixed:
    """The guessing rule, fixed before any run: the white-box design's fractions (k₊ = k₋ = 5 % of
    the canaries, :data:`~dpaudit.catalog.designs.dpsgd.RULE` at m = 1000), at least one guess each."""
    k = max(1, round(m * RULE.k_plus / 1000))
    return Fixed(k_plus=k, k_minus=k)


def _power(pools: tuple[np.ndarray, np.ndarray], m: int, claims: Sequence[Guarantee | CurveClaim], delta: float,
           rng: np.random.Generator, *, reported: bool) -> float | None:
    """The fraction of GAMES games at m that refute the claims; None for a rung that is not ``reported``
    (not the ladder's last) once it can no longer reach 0.9: its remaining games still draw their
    secrets and scores from ``rng`` (so every later rung sees the stream a full rung leaves, and the
    plan is the same) but are not bounded (the bound is the cost: a never-caught fault spent most of
    its plan on rungs below the last)."""
    hits = 0
    for played in range(GAMES):
        secret = rng.integers(0, 2, m)
        scores = np.where(secret == 1, rng.choice(pools[0], m), rng.choice(pools[1], m))
        if not reported and (hits + GAMES - played) / GAMES < 0.9:
            continue
        result = one_run_bound(scores, secret, rule=rule_for(m), deltas=(delta,), claims=tuple(claims))
        hits += any(c.rejected for c in result.claims)
    if not reported and hits / GAMES < 0.9:
        return None
    return hits / GAMES


def plan_faults(*, sigma: float, q: float, steps: int, n: int, claims: Sequence[Guarantee | CurveClaim],
                faults: Sequence[Fault], delta: float = 1e-5) -> tuple[FaultPlan, ...]:
    """For each fault (an :mod:`~dpaudit.pipelines.opacus_faults` wrapper with its parameters), the
    smallest m of :data:`LADDER` whose simulated power is >= 0.9."""
    require(isinstance(steps, int) and steps >= 1, "steps", steps, "must be an integer >= 1")
    require(isinstance(n, int) and n >= 1, "n", n, "must be an integer >= 1")
    plans = []
    for fault in faults:
        require(isinstance(fault, Fault) and fault.sees_canaries, "faults", fault,
                "must be faults (a)-(f) of dpaudit.pipelines.opacus_faults")
        pools = simulate_scores(fault, sigma=sigma, q=q, steps=steps, n=n)
        rng = np.random.default_rng([PLAN_SEED, ord(fault.letter)])
        found, power = None, 0.0
        for m in LADDER:
            reached = _power(pools, m, claims, delta, rng, reported=m == LADDER[-1])
            if reached is not None:
                power = reached
            if reached is not None and reached >= 0.9:
                found = m
                break
        plans.append(FaultPlan(fault=f"{fault.letter}: {fault!r}", canaries=found, power=power))
    return tuple(plans)


def claim_power(fault: Fault | None, *, sigma: float, q: float, steps: int, n: int, m: int,
                claims: Sequence[Guarantee | CurveClaim], games: int, seed: int,
                delta: float = 1e-5) -> tuple[int, ...]:
    """How many of ``games`` simulated games at ``m`` canaries reject each of ``claims`` (in order)
    under ``fault`` (None: the correct pipeline), from :func:`simulate_scores`' pools and the audit's
    rule: the suite's budgets are set from these counts (:mod:`dpaudit.pipelines.opacus_suite`)."""
    require(isinstance(games, int) and games >= 1, "games", games, "must be an integer >= 1")
    pools = simulate_scores(fault, sigma=sigma, q=q, steps=steps, n=n)
    rng = np.random.default_rng([seed, m])
    hits = np.zeros(len(claims), dtype=int)
    for _ in range(games):
        secret = rng.integers(0, 2, m)
        scores = np.where(secret == 1, rng.choice(pools[0], m), rng.choice(pools[1], m))
        result = one_run_bound(scores, secret, rule=rule_for(m), deltas=(delta,), claims=tuple(claims))
        hits += np.array([bool(c.rejected) for c in result.claims])
    return tuple(int(h) for h in hits)
