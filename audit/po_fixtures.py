"""Fixtures for the private policy-optimisation mechanisms (spec C.2–C.4) and their scenarios.

The worst user-level pair of DP-PG (spec E.4): a gradient of norm G with Â = ±R.  Prompt 0
has features ±e1, the reference μ always answers response 0 and θ_1 = (−20, 0) makes
π_θ(1|x0) ≈ 1, so y = 0, y′ = 1 and ∇log π(0|x0) = 2e1 (norm G = 2) surely; the other
users have constant rewards (Â = 0).  Replacing the extreme user's rewards (R, −R) by
(−R, R) moves ĝ by exactly the sensitivity: 2GR/m (advantage) or 4GR/m (reward).
"""

from __future__ import annotations

import math

import numpy as np

from audit.accounting import gauss_epsilon
from mechanisms.base import Guarantee
from mechanisms.private_po import DPNPG, DPPG, DPREBEL, PolicyEnv
from neighbors import Dataset, Pair

ENV = PolicyEnv(features=(((1.0, 0.0), (-1.0, 0.0)), ((0.0, 1.0), (0.0, -1.0))),
                reference=((1.0, 0.0), (0.5, 0.5)), theta0=(-20.0, 0.0))


def population(m: int, rounds: int, extreme_round: int, reward_bound: float = 1.0) -> Pair:
    """m·rounds users, all neutral but one extreme user in ``extreme_round``; D′ flips its rewards."""
    n = m * rounds
    prompts = np.ones(n, dtype=np.int64)
    rewards = np.zeros((n, 2))
    i = extreme_round * m
    prompts[i] = 0
    rewards[i] = (reward_bound, -reward_bound)
    d = Dataset({"prompt": prompts, "reward": rewards})
    return Pair(d, d.replace(i, {"prompt": 0, "reward": [-reward_bound, reward_bound]}),
                f"user {i} (round {extreme_round + 1}): rewards (R, -R) replaced by (-R, R)", "user-level")


def tight_claims(mech: DPPG, data: Dataset) -> list[Guarantee]:
    """The mechanism's claims plus the exact Gaussian curve at its δ (kind ``tight``).

    One pass: the changed user moves one round's step, μ = Δ/σ.  Repeated users move every
    round's step: the T steps compose to μ√T (Gaussian composition is exact)."""
    mu = mech.sensitivity / mech.sigma * (math.sqrt(mech.T) if mech.schedule == "repeat" else 1.0)
    tight = Guarantee(gauss_epsilon(mech.delta, mu), mech.delta, "user-level",
                      f"Balle & Wang (2018), Thm 8: the exact Gaussian curve, mu = {mu:.4g}", "po/dp-pg-tight",
                      kind="tight")
    return [*mech.guarantees(data, "user-level"), tight]


def batch(m: int = 6, seed: int = 11) -> Dataset:
    """One round's users with their sampled responses, for DP-NPG and DP-REBEL."""
    rng = np.random.default_rng(seed)
    prompts = np.r_[0, rng.integers(0, 2, m - 1)]
    y = np.r_[0, rng.integers(0, 2, m - 1)]
    yp = np.r_[1, rng.integers(0, 2, m - 1)]
    rewards = np.round(rng.uniform(-1, 1, (m, 2)), 3)
    rewards[0] = (1.0, -1.0)
    return Dataset({"prompt": prompts, "y": y, "y_prime": yp, "reward": rewards})


def user_candidates() -> list[dict]:
    return [{"prompt": p, "y": a, "y_prime": b, "reward": [r1, r2]}
            for p in (0, 1) for a in (0, 1) for b in (0, 1) for r1 in (-1.0, 1.0) for r2 in (-1.0, 1.0)]


def disc(radius: float, n: int = 3) -> tuple:
    grid = np.linspace(-radius, radius, n)
    pts = [(a, b) for a in grid for b in grid if math.hypot(a, b) <= radius * (1 + 1e-12)]
    return tuple(pts)


def npg(enforced: bool = True) -> DPNPG:
    radius = 1.0 / ENV.G if enforced else 6.0 / ENV.G
    return DPNPG(ENV, disc(radius, 5), epsilon=1.0, reward_bound=1.0, enforce_condition=enforced)


def rebel() -> DPREBEL:
    return DPREBEL(ENV, disc(2.0, 5), epsilon=1.0, clip=1.0)


def dppg(convention: str, epsilon: float = 4.0, T: int = 1, schedule: str = "one-pass",
         output: str = "final") -> DPPG:
    return DPPG(ENV, m=2, T=T, epsilon=epsilon, delta=1e-5, reward_bound=1.0, convention=convention,
                schedule=schedule, output=output)
