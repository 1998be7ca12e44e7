"""Private policy optimisation (the PO slides) under user-level neighbours.

Environment: prompts x from a finite set, responses y from a finite set, a log-linear
policy π_θ(y|x) ∝ exp(θᵀφ(x, y)) with ‖φ‖ ≤ Φ, so ‖∇_θ log π_θ‖ ≤ G = 2Φ, and a
reference policy μ(y|x).  Users are prompts with their rewards r(x, ·) ∈ [−R, R].

* :class:`DPPG` — the meta-algorithm with DP-PG as PrivUpdate (slides' Algorithm 2):
  for t = 1..T a batch of m users, y_i ~ μ(·|x_i), y′_i ~ π_θt(·|x_i),
  Â_i = r(x_i, y_i) − r(x_i, y′_i), ĝ = (1/m) Σ ∇log π_θt(y_i|x_i) Â_i,
  θ_{t+1} = θ_t + η(ĝ + N(0, σ²I)),  σ² = 16 log(1.25/δ) R²G²/(m²ε²).
  The reward convention is explicit (the slides' "reward range R" admits both): ``advantage`` clips Â to [−R, R]
  (sensitivity 2GR/m: the claim holds), ``reward`` takes rewards in [−R, R] as they come
  (sensitivity 4GR/m: the printed claim is false).  One pass: each user in one round;
  ``schedule="repeat"`` reuses the same users every round (then rounds compose).
  Runs are simulated together: arrays of (runs, m) and (runs, d), no loop over runs.
* :class:`DPNPG` — PrivLS by the exponential mechanism over a finite W (slides' Algorithm 5):
  P(w) ∝ exp(−ε L(w)/(8R²)), L(w) = Σ_i (wᵀ∇log π(y_i|x_i) − Â_i)²; ε-DP when
  sup |wᵀ∇log π| ≤ R, i.e. ‖w‖ ≤ R/G (a condition the slides leave unstated), which is checked and enforced.
* :class:`DPREBEL` — dpaudit's instantiation (the slides give no privacy parameters): the exponential mechanism over
  a finite Θ, P(θ) ∝ exp(−ε F(θ)/(2c)), F = Σ_i min(c, residual_i(θ)²) with the REBEL residual.

DP-NPG and DP-REBEL act on one round's batch with its sampled responses (columns
``prompt``, ``y``, ``y_prime``, ``reward``), so their output distribution is exact.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpaudit.core import Guarantee, InputError, Relation, check_positive, require
from dpaudit.mechanisms.base import log_softmax, per_dataset, sample_categorical
from dpaudit.neighbors.dataset import Dataset

SLIDES = "PO slides"


def _array(field: str, value: Any, ndim: int) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    require(arr.ndim == ndim and arr.size > 0 and bool(np.all(np.isfinite(arr))), field, np.shape(arr),
            f"must be a finite array with {ndim} dimensions")
    return arr


@dataclass(frozen=True)
class PolicyEnv:
    """Log-linear policies over ``features[x, y]`` (prompts × responses × d)."""

    features: tuple
    reference: tuple | None = None  # μ(y|x), prompts × responses; None: uniform
    theta0: tuple | None = None     # θ_1; None: zeros

    def __post_init__(self) -> None:
        phi = _array("features", self.features, 3)
        object.__setattr__(self, "features", _freeze(phi))
        if self.reference is not None:
            mu = _array("reference", self.reference, 2)
            require(mu.shape == phi.shape[:2] and bool(np.all(mu >= 0)) and np.allclose(mu.sum(axis=1), 1),
                    "reference", mu.shape, f"must be {phi.shape[:2]} rows of probabilities")
            object.__setattr__(self, "reference", _freeze(mu))
        if self.theta0 is not None:
            t0 = _array("theta0", self.theta0, 1)
            require(t0.shape == (phi.shape[2],), "theta0", t0.shape, f"must have d = {phi.shape[2]} entries")
            object.__setattr__(self, "theta0", _freeze(t0))

    # The arrays below are built once per environment (the fields are nested tuples, hashable and
    # frozen, whose conversion costs more than a sampling round) and are read-only.
    @functools.cached_property
    def phi(self) -> np.ndarray:
        return _read_only(np.asarray(self.features))

    @functools.cached_property
    def mu(self) -> np.ndarray:
        k = self.phi.shape[1]
        return _read_only(np.full(self.phi.shape[:2], 1.0 / k) if self.reference is None
                          else np.asarray(self.reference))

    @functools.cached_property
    def start(self) -> np.ndarray:
        return _read_only(np.zeros(self.phi.shape[2]) if self.theta0 is None else np.asarray(self.theta0))

    @functools.cached_property
    def G(self) -> float:
        """Bound on ‖∇ log π_θ(y|x)‖ = ‖φ(x, y) − E_π φ(x, ·)‖ ≤ 2 max ‖φ‖."""
        return 2.0 * float(np.linalg.norm(self.phi, axis=2).max())

    def probs(self, theta: np.ndarray, prompts: np.ndarray) -> np.ndarray:
        """π_θ(·|x_i) for each run and user, laid out (K, runs, m): reductions over the few
        responses are then elementwise operations on large contiguous slices."""
        phi = self.phi[prompts]                                        # (m, K, d)
        p = np.empty((phi.shape[1], len(theta), len(prompts)))         # (K, runs, m)
        for k in range(phi.shape[1]):
            np.matmul(theta, phi[:, k, :].T, out=p[k])
        p -= p.max(axis=0)
        np.exp(p, out=p)
        p /= p.sum(axis=0)
        return p

    def grad_log(self, probs: np.ndarray, prompts: np.ndarray, y: np.ndarray) -> np.ndarray:
        """∇_θ log π_θ(y_i|x_i) = φ(x_i, y_i) − E_π φ(x_i, ·), laid out (d, runs, m)."""
        phi = self.phi[prompts]                                        # (m, K, d)
        m, k_count, d = phi.shape
        flat = np.arange(m) * k_count + y                              # gather from small tables
        out = np.empty((d, *y.shape))
        for j in range(d):
            table = phi[:, :, j]
            out[j] = np.take(table.ravel(), flat)
            for k in range(k_count):
                out[j] -= probs[k] * table[:, k]
        return out


def _freeze(a: np.ndarray):
    return tuple(_freeze(x) for x in a) if a.ndim > 1 else tuple(float(x) for x in a)


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _draw(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per (run, user) from probabilities laid out (K, runs, m): the number
    of running sums p_0 + … + p_k (k < K − 1) that one uniform reaches."""
    u = rng.random(probs.shape[1:])
    cdf = probs[0]
    # Few responses: the comparison's bytes are the draw (0/1 as int8, no copy); sums of
    # comparisons take it further.
    y = (u >= cdf).view(np.int8) if probs.shape[0] <= 127 else (u >= cdf).astype(np.int64)
    for k in range(1, probs.shape[0] - 1):
        cdf = cdf + probs[k]
        y += u >= cdf
    return y


def users(data: Dataset, n_responses: int, n_prompts: int, bound: float) -> tuple[np.ndarray, np.ndarray]:
    """The population's prompts and rewards, validated (|r| ≤ R)."""
    require(isinstance(data, Dataset), "data", type(data).__name__, "must be a neighbors.Dataset")
    prompts, rewards = data["prompt"], data["reward"].reshape(len(data), -1).astype(float)
    require(prompts.dtype.kind in "iu" and (len(prompts) == 0 or (prompts.min() >= 0 and prompts.max() < n_prompts)),
            "column 'prompt'", prompts.tolist()[:5], f"must hold prompt indices in [0, {n_prompts})")
    require(rewards.shape[1] == n_responses, "column 'reward'", rewards.shape,
            f"must hold one reward per response ({n_responses})")
    if len(rewards) and np.abs(rewards).max() > bound:
        raise InputError(f"column 'reward' has |r| = {np.abs(rewards).max():g}: rewards must lie in [-R, R] = "
                         f"[-{bound}, {bound}]")
    return prompts.astype(np.int64), rewards


RUN_BATCH = 1 << 14


@dataclass(frozen=True)
class DPPG:
    """The meta-algorithm with DP-PG, T rounds of m users; output θ_{T+1} or the transcript."""

    env: PolicyEnv
    m: int
    T: int
    epsilon: float
    delta: float
    reward_bound: float = 1.0
    convention: str = "advantage"   # advantage: |Â| ≤ R (clipped) | reward: rewards in [−R, R]
    learning_rate: float = 1.0
    schedule: str = "one-pass"      # one-pass | repeat
    output: str = "final"           # final | transcript
    name: ClassVar[str] = "dp-pg"

    def __post_init__(self) -> None:
        require(isinstance(self.m, int) and self.m >= 1, "m", self.m, "must be an integer >= 1")
        require(isinstance(self.T, int) and self.T >= 1, "T", self.T, "must be an integer >= 1")
        check_positive("epsilon", self.epsilon)
        require(0 < self.delta < 1, "delta", self.delta, "must be in (0, 1)")
        check_positive("reward_bound (R)", self.reward_bound)
        check_positive("learning_rate", self.learning_rate)
        require(self.convention in ("advantage", "reward"), "convention", self.convention, "advantage or reward")
        require(self.schedule in ("one-pass", "repeat"), "schedule", self.schedule, "one-pass or repeat")
        require(self.output in ("final", "transcript"), "output", self.output, "final or transcript")

    @property
    def sigma(self) -> float:
        """The slides' σ = 4 √(log(1.25/δ)) R G / (m ε)."""
        return 4 * math.sqrt(math.log(1.25 / self.delta)) * self.reward_bound * self.env.G / (self.m * self.epsilon)

    @property
    def sensitivity(self) -> float:
        """ℓ2 sensitivity of ĝ to replacing one user: 2GR/m (advantage) or 4GR/m (reward)."""
        return (2 if self.convention == "advantage" else 4) * self.env.G * self.reward_bound / self.m

    def _rounds(self, data: Dataset) -> list[np.ndarray]:
        n = len(data)
        if self.schedule == "repeat":
            require(n == self.m, "data", f"{n} users", f"the repeat schedule reuses m = {self.m} users every round")
            return [np.arange(self.m)] * self.T
        require(n == self.m * self.T, "data", f"{n} users", f"one pass needs m * T = {self.m * self.T} users")
        return [np.arange(t * self.m, (t + 1) * self.m) for t in range(self.T)]

    def sample(self, data: Dataset, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` independent runs, vectorised over batches of :data:`RUN_BATCH` runs: a
        batch's per-round (runs, users) arrays stay in cache, 4–6× faster than one pass over
        hundreds of thousands of runs."""
        if size <= RUN_BATCH:
            return self._sample(data, size, rng)
        return np.concatenate([self._sample(data, min(RUN_BATCH, size - i), rng) for i in range(0, size, RUN_BATCH)])

    def _sample(self, data: Dataset, size: int, rng: np.random.Generator) -> np.ndarray:
        env = self.env
        prompts_all, rewards_all = users(data, env.phi.shape[1], env.phi.shape[0], self.reward_bound)
        sigma = self.sigma
        theta = np.tile(env.start, (size, 1))
        transcript = []
        for idx in self._rounds(data):
            prompts, rewards = prompts_all[idx], rewards_all[idx]
            pi = env.probs(theta, prompts)
            y = _draw(np.broadcast_to(env.mu[prompts].T[:, None, :], pi.shape), rng)
            y_prime = _draw(pi, rng)
            flat = rewards.ravel()
            base = np.arange(len(idx)) * rewards.shape[1]
            adv = np.take(flat, base + y)
            adv -= np.take(flat, base + y_prime)
            if self.convention == "advantage":
                np.clip(adv, -self.reward_bound, self.reward_bound, out=adv)
            # ĝ = (1/m) Σ_i Â_i (φ(x_i, y_i) − Σ_k π_ik φ(x_i, k)) = (1/m) Σ_k [((y = k) − π_k) Â] @ φ_k:
            # K matrix products instead of a (runs, m, d) intermediate.
            phi = env.phi[prompts]
            grad = sum((((y == k) - pi[k]) * adv) @ phi[:, k, :] for k in range(phi.shape[1])) / self.m
            noise = rng.standard_normal(theta.shape)
            noise *= sigma
            noise += grad
            noise *= self.learning_rate
            theta = theta + noise
            transcript.append(theta)
        return np.hstack(transcript) if self.output == "transcript" else theta

    def guarantees(self, data: Dataset, relation: Relation | str) -> list[Guarantee]:
        if relation != Relation.USER_LEVEL:
            return []
        conv = ("|A| <= R (advantage clipped)" if self.convention == "advantage" else "rewards in [-R, R]")
        claims = [("po/dp-pg", f"{SLIDES}, Theorem 1 (DP-PG), sigma^2 = 16 log(1.25/delta) R^2 G^2/(m^2 eps^2); "
                               f"{conv}")]
        if self.T > 1:
            claims.append(("po/meta", f"{SLIDES}, Proposition 1 (one pass over users, T = {self.T}); {conv}"))
        broken = []
        if self.schedule == "repeat":
            # Both statements assume each user contributes to one round; repeated users compose.
            broken.append(f"each user in exactly one round (one pass); here the same users take part in all "
                          f"{self.T} rounds")
        if self.convention == "reward":
            # Theorem 1's sensitivity 2GR/m needs |Â| <= R; rewards in [-R, R] give |Â| <= 2R.
            broken.append("|Â| <= R (advantage clipped); here rewards lie in [-R, R], so |Â| reaches 2R")
        if broken:
            return [Guarantee.outside_premise("; ".join(broken), epsilon=self.epsilon, delta=self.delta,
                                              relation=relation, source=source, claim_id=cid) for cid, source in claims]
        return [Guarantee(epsilon=self.epsilon, delta=self.delta, relation=relation, source=source, claim_id=cid,
                          note=f"convention: {self.convention}") for cid, source in claims]


def _batch(data: Dataset, env: PolicyEnv, bound: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    prompts, rewards = users(data, env.phi.shape[1], env.phi.shape[0], bound)
    y, yp = data["y"].astype(np.int64), data["y_prime"].astype(np.int64)
    k = env.phi.shape[1]
    for name, col in (("y", y), ("y_prime", yp)):
        require(len(col) == 0 or (col.min() >= 0 and col.max() < k), f"column {name!r}", col.tolist()[:5],
                f"must hold response indices in [0, {k})")
    return prompts, rewards, y, yp


class CandidateExponentialMechanism:
    """P(c) ∝ exp(−ε loss(c)/scale) over finitely many candidates, with one user-level claim.

    Subclasses (frozen dataclasses with ``epsilon``) define ``loss(data)``, ``scale`` and
    ``_claim(relation)``; the output distribution is exact, so the pair loss is too."""

    epsilon: float  # the subclass's field, declared for the type checker (an annotation, not a field)

    @property
    def scale(self) -> float:
        raise NotImplementedError

    def loss(self, data: Dataset) -> np.ndarray:
        raise NotImplementedError

    def _claim(self, relation: Relation | str) -> Guarantee:
        raise NotImplementedError

    @per_dataset
    def output_distribution(self, data: Dataset) -> np.ndarray:
        return np.exp(log_softmax(-self.epsilon * self.loss(data) / self.scale))

    def sample(self, data: Dataset, size: int, rng: np.random.Generator) -> np.ndarray:
        return sample_categorical(self.output_distribution(data), size, rng)

    def guarantees(self, data: Dataset, relation: Relation | str) -> list[Guarantee]:
        return [self._claim(relation)] if relation == Relation.USER_LEVEL else []


@dataclass(frozen=True)
class DPNPG(CandidateExponentialMechanism):
    """PrivLS (the exponential mechanism over ``candidates`` W) on one round's batch."""

    env: PolicyEnv
    candidates: tuple
    epsilon: float
    reward_bound: float = 1.0
    enforce_condition: bool = True
    name: ClassVar[str] = "dp-npg"

    def __post_init__(self) -> None:
        w = _array("candidates", self.candidates, 2)
        object.__setattr__(self, "candidates", _freeze(w))
        check_positive("epsilon", self.epsilon)
        check_positive("reward_bound (R)", self.reward_bound)
        limit = self.reward_bound / self.env.G
        if self.enforce_condition and np.linalg.norm(w, axis=1).max() > limit * (1 + 1e-12):
            raise InputError(f"candidates have norm up to {np.linalg.norm(w, axis=1).max():.4g}: the exponential "
                             f"mechanism needs "
                             f"sup |w . grad log pi| <= R, i.e. ||w|| <= R/G = {limit:.4g}")

    @property
    def scale(self) -> float:
        return 8 * self.reward_bound ** 2

    def loss(self, data: Dataset) -> np.ndarray:
        """L(w) = Σ_i (wᵀ∇log π(y_i|x_i) − Â_i)² for every candidate w."""
        prompts, rewards, y, yp = _batch(data, self.env, self.reward_bound)
        rows = np.arange(len(y))
        adv = np.clip(rewards[rows, y] - rewards[rows, yp], -self.reward_bound, self.reward_bound)
        pi = self.env.probs(self.env.start[None, :], prompts)
        grads = self.env.grad_log(pi, prompts, y[None, :])[:, 0, :].T    # (m, d)
        return ((grads @ np.asarray(self.candidates).T - adv[:, None]) ** 2).sum(axis=0)

    def _claim(self, relation: Relation | str) -> Guarantee:
        source = f"{SLIDES}, Algorithm 5 (DP-NPG, PrivLS exponential mechanism)"
        w = np.asarray(self.candidates)
        limit = self.reward_bound / self.env.G
        if np.linalg.norm(w, axis=1).max() > limit * (1 + 1e-12):
            # The privacy argument needs every per-record loss term in [0, 4R^2].
            premise = (f"sup |w . grad log pi| <= R, i.e. ||w|| <= R/G = {limit:.4g}; here candidates reach "
                       f"||w|| = {np.linalg.norm(w, axis=1).max():.4g}")
            return Guarantee.outside_premise(premise, epsilon=self.epsilon, relation=relation, source=source,
                                             claim_id="po/dp-npg")
        return Guarantee(epsilon=self.epsilon, delta=0.0, relation=relation, source=source, claim_id="po/dp-npg")


@dataclass(frozen=True)
class DPREBEL(CandidateExponentialMechanism):
    """The exponential mechanism over a finite Θ on the clipped REBEL regression loss: ε-DP with c bounding one
    record's clipped squared residual, since one user changes F by at most c."""

    env: PolicyEnv
    candidates: tuple
    epsilon: float
    clip: float = 1.0
    rebel_eta: float = 1.0
    name: ClassVar[str] = "dp-rebel"

    def __post_init__(self) -> None:
        object.__setattr__(self, "candidates", _freeze(_array("candidates", self.candidates, 2)))
        check_positive("epsilon", self.epsilon)
        check_positive("clip (c)", self.clip)
        check_positive("rebel_eta", self.rebel_eta)

    @property
    def scale(self) -> float:
        return 2 * self.clip

    def loss(self, data: Dataset) -> np.ndarray:
        """F(θ) = Σ_i min(c, residual_i(θ)²) for every candidate θ."""
        prompts, rewards, y, yp = _batch(data, self.env, math.inf)
        thetas = np.asarray(self.candidates)
        logp = np.log(self.env.probs(thetas, prompts)).transpose(1, 2, 0)          # (Θ, m, K)
        logp0 = np.log(self.env.probs(self.env.start[None, :], prompts))[:, 0].T  # (m, K)
        rows = np.arange(len(y))
        ratio = (logp[:, rows, y] - logp0[rows, y]) - (logp[:, rows, yp] - logp0[rows, yp])
        residual = ratio / self.rebel_eta - (rewards[rows, y] - rewards[rows, yp])[None, :]
        return np.minimum(residual ** 2, self.clip).sum(axis=1)

    def _claim(self, relation: Relation | str) -> Guarantee:
        return Guarantee(epsilon=self.epsilon, delta=0.0, relation=relation,
                         source="dpaudit's DP-REBEL: the exponential mechanism over a finite "
                                "Theta with the clipped REBEL residual", claim_id="po/dp-rebel")
