"""Synthetic datasets for the built-in scenarios and tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpaudit.core import require
from dpaudit.neighbors.dataset import Dataset


def bandit_log(arm_rewards: Sequence[Sequence[float] | np.ndarray]) -> Dataset:
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


MAX_VOTE_SCORES = 1 << 25  # votes x options a dataset may hold (256 MiB of float64 scores)


def votes(counts: Sequence[float]) -> Dataset:
    """Score rows for the exponential mechanism: a vote for option j scores +1 on j, −1 elsewhere.

    The utility is non-monotone (adding a vote lowers the other options), which is where
    Definition 2's factor 2 is attained.
    """
    k = len(counts)
    require(k >= 2, "counts", counts, "need at least 2 options")
    require(all((isinstance(c, int | np.integer) and not isinstance(c, bool) and c >= 0)
                or (isinstance(c, float) and c.is_integer() and c >= 0) for c in counts),
            "counts", counts, "must be whole numbers of votes >= 0")
    n = sum(int(c) for c in counts)
    require(n * k <= MAX_VOTE_SCORES, "counts", counts,
            f"ask for {n} votes over {k} options, {n * k} scores ({8 * n * k / 2**30:.3g} GiB as float64): at most "
            f"{MAX_VOTE_SCORES} scores (votes x options)")
    counts = [int(c) for c in counts]
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


def preferences(x, y) -> Dataset:
    """Pairwise preferences (alignment paper §4.1): differences x = φ(s, a₁) − φ(s, a₀) and labels y."""
    return Dataset({"x": np.asarray(x, dtype=float), "y": np.asarray(y, dtype=np.int64)})


def rankings(phi) -> Dataset:
    """K-wise rankings (§4.2): features (n, K, d), best-ranked response first."""
    return Dataset({"phi": np.asarray(phi, dtype=float)})


def trajectories(steps, y) -> Dataset:
    """Trajectory comparisons (§5): per-step differences (n, H, d) and labels y."""
    return Dataset({"steps": np.asarray(steps, dtype=float), "y": np.asarray(y, dtype=np.int64)})


def ball(n: int, d: int, radius: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` points uniform in the d-ball of ``radius``."""
    return unit_vectors(n, d, rng) * radius * rng.uniform(0, 1, (n, 1)) ** (1 / d)


def preference_records(kind: str, n: int, d: int, rng: np.random.Generator, *, L: float = 1.0, K: int = 4,
                       H: int = 3) -> Dataset:
    """Random records of ``kind`` (pairwise, kwise, trajectory) within the norm bounds."""
    require(kind in ("pairwise", "kwise", "trajectory"), "kind", kind, "must be pairwise, kwise or trajectory")
    if kind == "pairwise":
        return preferences(ball(n, d, 2 * L, rng), rng.integers(0, 2, n))
    if kind == "kwise":
        return rankings(ball(n * K, d, L, rng).reshape(n, K, d))
    return trajectories(ball(n * H, d, 2 * L, rng).reshape(n, H, d), rng.integers(0, 2, n))


def extreme_record(kind: str, direction: np.ndarray, *, L: float = 1.0, K: int = 4, H: int = 3,
                   y: int = 1) -> dict:
    """The worst-case record for Algorithm 2 of the alignment paper, whose covariance term has the
    largest Frobenius norm along ``direction``:
    x = 2L·v (pairwise), every step 2L·v (trajectory), (v, …, v, −v, …, −v)·L split in half (K-wise)."""
    v = np.asarray(direction, dtype=float)
    v = v / np.linalg.norm(v)
    if kind == "pairwise":
        return {"x": (2 * L * v).tolist(), "y": y}
    if kind == "trajectory":
        return {"steps": np.tile(2 * L * v, (H, 1)).tolist(), "y": y}
    signs = np.where(np.arange(K) < K // 2, 1.0, -1.0)
    return {"phi": (L * signs[:, None] * v[None, :]).tolist()}
