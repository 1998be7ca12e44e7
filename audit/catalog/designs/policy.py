"""Canary design for DP-PG, one pass, user-level (the PO slides' Algorithm 2; wraps
:class:`dpaudit.mechanisms.private_po.DPPG`, unchanged).

Environment: d features; the first ``d − slots`` carry real prompts, the last ``slots`` are
dedicated canary coordinates.  Canary prompt c has φ(x_c, 0) = e_c and φ(x_c, 1) = −e_c, the
reference policy always answers 0 and θ₁ = −20 on canary coordinates, so y = 0, y′ = 1 and
∇log π(0|x_c) = 2π(1|x_c)·e_c ≈ G·e_c (G = 2) surely (the worst user of the catalog's DP-PG
family, one per coordinate).  Round t holds ``per_round − slots`` real users and ``slots``
canary slots; canary j sits in round j // slots on coordinate j % slots.

User-level neighbours replace one user, so a canary slot holds the canary user (rewards
(R, −R): Â = +R after clipping) when S_j = 1 and its mirror (rewards (−R, R): Â = −R) when
S_j = 0; the two differ by the claim's sensitivity 2GR/m.  White-box score: the projection of
round t_j's noisy step θ_{t+1} − θ_t on e_{c_j}; it is N(±Δ/2, σ²) (η = 1), i.e. exactly
Δ/σ-GDP per canary — the "exact Gaussian curve of that σ" claim.

Faulty twins: ``wrong-relation`` draws σ for the add-remove sensitivity GR/m (half the
user-level one), i.e. σ/2, while claiming the printed ε; ``reward-convention`` takes rewards in
[−R, R] as they come (|Â| up to 2R), outside Theorem 1's premise: the printed claims are
``not-applicable`` and the evidence beside them is the printed σ's Gaussian curve, rejected.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.catalog.designs.entry import DesignEntry, DesignSummary
from dpaudit.core import require
from dpaudit.mechanisms.private_po import DPPG, PolicyEnv
from dpaudit.neighbors import Dataset
from dpaudit.onerun.curves import gdp
from dpaudit.onerun.design import CanaryDesign
from dpaudit.onerun.rules import Fixed

__all__ = ["DESIGNS", "DPPG_BUGS", "DPPG_RULE", "TWIN_M", "TWIN_RULE", "SlotPopulation", "dppg_design", "dppg_env",
           "dppg_rule"]

# The catalog family whose claims these designs check (dpaudit.catalog files each design by it).
FAMILY = "policy-optimization"

DPPG_BUGS = ("none", "wrong-relation", "reward-convention")
# Fixed in advance from a planning simulation of Gaussian canary scores (m = 500, seeds
# 100–109): at printed ε = 6 a curve at half the true μ was rejected 10/10 with k = 100.  Other
# canary counts keep that fraction, k₊ = k₋ = m/5 (fixed before any run at that size).
DPPG_RULE = Fixed(k_plus=100, k_minus=100)
# The twins (σ/2: each canary's score N(±Δ/2, (σ/2)²), i.e. 2μ = 1.75 against the claim's μ = 0.876) must be
# refuted with probability >= 0.99 in `run --suite onerun` (issue 41, item 12).  Their power from that exact
# law (Gaussian scores, 20,000 games at m = 500, 10,000 at m = 1000, seeds 0-2 of a planning stream): at
# m = 500, k+ = k- = 100 only 0.917 (each twin missed about 1 run in 12); at m = 1000: k = 100, 0.998;
# k = 200, 0.985.  The twins are audited with 1000 canary users and k+ = k- = 100, fixed before any audited
# run; the honest design keeps m = 500 (its tight curve μ = 0.876 was rejected in 0 of 20,000 games there).
TWIN_M, TWIN_RULE = 1000, Fixed(k_plus=100, k_minus=100)


def dppg_rule(m: int) -> Fixed:
    """k₊ = k₋ = ⌊m/5⌋ (:data:`DPPG_RULE` at m = 500)."""
    return Fixed(k_plus=max(1, m // 5), k_minus=max(1, m // 5))


def dppg_env(d: int, slots: int, prompts: int, seed: int) -> PolicyEnv:
    """Real prompts with random features (‖φ‖ ≤ 1) on the first d − slots coordinates and one
    canary prompt per dedicated coordinate; prompts are laid out [real..., canary...]."""
    require(isinstance(d, int) and isinstance(slots, int) and 1 <= slots < d, "slots", slots, f"must be in [1, {d})")
    rng = np.random.default_rng(seed)
    phi = np.zeros((prompts + slots, 2, d))
    real = rng.standard_normal((prompts, 2, d - slots))
    phi[:prompts, :, :d - slots] = real / np.linalg.norm(real, axis=2, keepdims=True)
    ref = np.full((prompts + slots, 2), 0.5)
    for c in range(slots):
        phi[prompts + c, 0, d - slots + c], phi[prompts + c, 1, d - slots + c] = 1.0, -1.0
        ref[prompts + c] = (1.0, 0.0)
    theta0 = np.zeros(d)
    theta0[d - slots:] = -20.0
    return PolicyEnv(features=tuple(tuple(tuple(row) for row in p) for p in phi.tolist()),
                     reference=tuple(tuple(r) for r in ref.tolist()), theta0=tuple(theta0.tolist()))


@dataclass(frozen=True)
class SlotPopulation:
    """The training run of one game: the fixed real users plus, in each canary slot, the canary
    user if it was included, else its mirror.  ``run(dataset, rng)`` returns the transcript."""

    mech: DPPG
    slots: int
    real_prompts: int
    reward_bound: float
    seed: int = 0

    def population(self, included: set[int]) -> Dataset:
        m_b, rounds, k = self.mech.m, self.mech.T, self.slots
        rng = np.random.default_rng(self.seed)
        prompts = rng.integers(0, self.real_prompts, (rounds, m_b))
        rewards = rng.uniform(-self.reward_bound, self.reward_bound, (rounds, m_b, 2))
        j = np.arange(rounds * k).reshape(rounds, k)
        prompts[:, :k] = self.real_prompts + np.arange(k)
        sign = np.where(np.isin(j, list(included)), 1.0, -1.0)
        rewards[:, :k, 0], rewards[:, :k, 1] = sign * self.reward_bound, -sign * self.reward_bound
        return Dataset({"prompt": prompts.reshape(-1), "reward": rewards.reshape(-1, 2)})

    def run(self, dataset: Sequence[Any], rng: np.random.Generator) -> np.ndarray:
        included = {int(rec["slot"]) for user in dataset for rec in user if isinstance(rec, dict) and "slot" in rec}
        return self.mech.sample(self.population(included), 1, rng)[0]


def _score(mech: DPPG, slots: int, d: int) -> Any:
    def score(transcript: np.ndarray, canaries: Sequence[Any]) -> np.ndarray:
        theta = np.vstack([np.asarray(mech.env.start)[None, :], transcript.reshape(mech.T, d)])
        steps = np.diff(theta, axis=0)                       # (T, d): η(ĝ_t + noise)
        j = np.array([int(user[0]["slot"]) for user in canaries])
        return steps[j // slots, d - slots + j % slots]

    return score


def dppg_design(*, m: int = 500, d: int = 256, rounds: int = 100, per_round: int = 50, epsilon: float = 6.0,
                delta: float = 1e-5, bug: str = "none", real_prompts: int = 20, seed: int = 7,
                rule: Fixed | None = None) -> CanaryDesign:
    """m canary users (m / rounds per round) against DP-PG at the printed (ε, δ); ``rule``: the guessing
    rule, fixed in advance (None: :func:`dppg_rule` of m; the suite's twins: :data:`TWIN_RULE`)."""
    require(bug in DPPG_BUGS, "bug", bug, f"must be one of {', '.join(DPPG_BUGS)}")
    require(isinstance(m, int) and m >= 2 and m % rounds == 0, "m", m, f"must be a multiple of rounds = {rounds}")
    slots = m // rounds
    require(slots < per_round, "per_round", per_round, f"must exceed the canary slots per round ({slots})")
    env = dppg_env(d, slots, real_prompts, seed)
    honest = DPPG(env, per_round, rounds, epsilon, delta, output="transcript")
    run_eps = 2 * epsilon if bug == "wrong-relation" else epsilon  # σ ∝ 1/ε: σ/2
    mech = DPPG(env, per_round, rounds, run_eps, delta, output="transcript",
                convention="reward" if bug == "reward-convention" else "advantage")
    population = SlotPopulation(mech, slots, real_prompts, 1.0, seed)
    claims_of = mech if bug == "reward-convention" else honest
    data = population.population(set())
    printed = claims_of.guarantees(data, "user-level")
    mu = honest.sensitivity / honest.sigma  # the Gaussian curve of the printed σ under the premise
    if bug == "reward-convention":
        curve = gdp(mu, claim_id="po/dp-pg-curve-if-premise",
                    source="the printed sigma's Gaussian curve, were |A| <= R (evidence beside not-applicable)")
        expected = {g.claim_id: "not-applicable" for g in printed} | {curve.claim_id: "violation"}
    else:
        curve = gdp(mu, claim_id="po/dp-pg-tight", source=f"exact Gaussian curve of sigma = {honest.sigma:.4g}, "
                                                           f"mu = 2GR/(m sigma) = {mu:.4g}")
        # σ/2 is refuted through the exact curve; the printed ε = 6 is beyond a one-run (ε, δ) bound.
        expected = ({g.claim_id: "pass" for g in printed} | {curve.claim_id: "pass"} if bug == "none"
                    else {curve.claim_id: "violation"})
    canaries = [[{"slot": j}] for j in range(m)]
    return CanaryDesign(name=f"dppg-whitebox{'' if bug == 'none' else '-' + bug}", mechanism=population,
                        canaries=canaries, scorer=_score(mech, slots, d), claims=(*printed, curve),
                        rule=dppg_rule(m) if rule is None else rule,
                        relation="user-level", deltas=(delta,), expected=expected,
                        family=FAMILY,
                        description=f"DP-PG one pass, d={d}, T={rounds}, {per_round} users/round, m={m} canary "
                                    f"users, printed eps={epsilon:g}, bug={bug}; mu per canary "
                                    f"{mu * (2 if bug != 'none' else 1):.3g} (claim {mu:.3g})")


# The suite's DP-PG designs; the twins at 1000 canary users and k+ = k- = 100: refuted with probability
# 0.998, not 0.917 (TWIN_RULE).
# Their summaries name mu = 2GR/(m sigma) = 0.876 of the printed eps = 6 (held equal to the built designs' by a test).


def _summary(bug: str, m: int, mu: str, expected: tuple[tuple[str, str], ...]) -> DesignSummary:
    return DesignSummary(f"dppg-whitebox{'' if bug == 'none' else '-' + bug}", FAMILY,
                         f"DP-PG one pass, d=256, T=100, 50 users/round, m={m} canary users, printed eps=6, "
                         f"bug={bug}; mu per canary {mu} (claim 0.876)", m, expected, relation="user-level")


DESIGNS = (
    DesignEntry(_summary("none", 500, "0.876", (("po/dp-pg", "pass"), ("po/meta", "pass"),
                                                 ("po/dp-pg-tight", "pass"))), dppg_design),
    DesignEntry(_summary("wrong-relation", TWIN_M, "1.75", (("po/dp-pg-tight", "violation"),)),
                functools.partial(dppg_design, bug="wrong-relation", m=TWIN_M, rule=TWIN_RULE)),
    DesignEntry(_summary("reward-convention", TWIN_M, "1.75", (
        ("po/dp-pg", "not-applicable"), ("po/meta", "not-applicable"), ("po/dp-pg-curve-if-premise", "violation"))),
                functools.partial(dppg_design, bug="reward-convention", m=TWIN_M, rule=TWIN_RULE)),
)
