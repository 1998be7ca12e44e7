"""Synthetic datasets for the built-in scenarios and tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mechanisms.base import require
from neighbors.dataset import Dataset


def bandit_log(arm_rewards: Sequence[Sequence[float]]) -> Dataset:
    """A bandit log from the rewards observed on each arm: arm ``a`` gets ``arm_rewards[a]``."""
    actions = np.concatenate([np.full(len(r), a, dtype=np.int64) for a, r in enumerate(arm_rewards)])
    rewards = np.concatenate([np.asarray(r, dtype=float) for r in arm_rewards])
    return Dataset({"action": actions, "reward": rewards})


def random_bandit_log(counts: Sequence[int], rng: np.random.Generator, reward_range: float = 1.0) -> Dataset:
    """A log with ``counts[a]`` uniform rewards in [0, R] on arm ``a``."""
    require(all(c >= 0 for c in counts), "counts", counts, "must be >= 0")
    return bandit_log([rng.uniform(0, reward_range, c) for c in counts])


def bandit_candidates(n_actions: int, reward_range: float = 1.0) -> list[dict]:
    """Candidate records for add/remove and swap searches: extreme rewards on every arm."""
    return [{"action": a, "reward": r} for a in range(n_actions) for r in (0.0, float(reward_range))]


def votes(counts: Sequence[int]) -> Dataset:
    """Score rows for the exponential mechanism: a vote for option j scores +1 on j, −1 elsewhere.

    The utility is non-monotone (adding a vote lowers the other options), which is where
    Definition 2's factor 2 is attained.
    """
    k = len(counts)
    require(k >= 2, "counts", counts, "need at least 2 options")
    choices = np.concatenate([np.full(c, j) for j, c in enumerate(counts)]).astype(int)
    return Dataset({"score": 2.0 * np.eye(k)[choices] - 1.0 if len(choices) else np.zeros((0, k))})


def vote_record(option: int, k: int) -> dict:
    return {"score": (2.0 * np.eye(k)[option] - 1.0).tolist()}


def unit_vectors(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` uniformly random unit vectors in R^d."""
    r = rng.normal(size=(n, d))
    return r / np.linalg.norm(r, axis=1, keepdims=True)


def linear_log(phi, rewards, d: int | None = None) -> Dataset:
    """A linear-bandit log: features ``phi`` (n, d), rewards (n,); ``d`` fixes the dimension of an empty log."""
    phi = np.asarray(phi, dtype=float)
    if phi.size == 0 and phi.ndim < 2:  # a bare [] does not say its dimension
        require(d is not None and d >= 1, "d", d, "an empty log needs its feature dimension d >= 1")
        phi = phi.reshape(0, d)
    return Dataset({"phi": phi, "reward": np.asarray(rewards, dtype=float)})


def comparisons(z, labels) -> Dataset:
    """RLHF comparisons: feature differences ``z`` (n, d) and 0/1 labels."""
    return Dataset({"z": np.asarray(z, dtype=float), "label": np.asarray(labels, dtype=np.int64)})
