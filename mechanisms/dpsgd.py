"""A reward model trained with DP-SGD (numpy): the baseline the alignment papers compare against.

Model: Bradley–Terry / logistic, ``P[y = 1 | x] = sigmoid(θᵀx)``, where a preference record is
the feature difference ``x = φ(a) − φ(b)`` of two responses and ``y = 1`` when a is preferred.

DP-SGD (Abadi et al., *Deep Learning with Differential Privacy*, CCS 2016, Algorithm 1), for
t = 1..T:

* Poisson subsampling: every record enters the batch independently with probability q;
* per-example gradients ``g_i = (sigmoid(θᵀx_i) − y_i)·x_i``, clipped to ``‖g_i‖ ≤ C``;
* ``U_t = Σ_{i ∈ batch} clip(g_i) + N(0, σ²C²I)``,  ``θ_{t+1} = θ_t − η·U_t / (qN)``.

Each step is the Poisson-subsampled Gaussian mechanism with noise multiplier σ towards one record
under the add-or-remove relation; T steps compose.  The claim is the accountant's: the privacy
loss distribution of that composition (dp-accounting's PLD accountant; Koskela, Jälkö, Honkela,
AISTATS 2020; Doroshenko et al., PETS 2022), its (ε, δ) at the stated δ and its whole curve.

Records are rows ``[x (d entries), y, kind]``: ``kind = 0`` a preference example, ``kind = 1`` a
*gradient (Dirac) canary* whose per-example gradient is the vector x it carries, whatever θ
(Nasr et al., *Tight Auditing of Differentially Private Machine Learning*, USENIX Security 2023,
§4: the worst-case white-box canary).

``bug`` selects a faulty twin that keeps the correct mechanism's claim:

* ``noise-halved`` — the noise is σC/2 (true ε ≈ 10.5 where σ = 1.19 claims ε ≈ 2);
* ``no-clip-canaries`` — canary gradients skip the clipping (their norm can exceed C);
* ``shuffle-batches`` — batches of fixed size (N/⌊1/q⌉, ±1) drawn without replacement, epoch
  by epoch (a shuffled data loader: ⌊1/q⌉ steps per epoch), while the accountant assumes
  Poisson subsampling: every record is in exactly one batch per epoch, never in none (Chua et
  al., *How Private are DP-SGD Implementations?*, ICML 2024).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpaudit.core import Guarantee, InputError, Relation, check_positive, require

__all__ = ["BUGS", "DPSGD", "DPSGDOutput", "accountant_deltas", "accountant_epsilon", "optimistic_epsilon",
           "preference_data", "records"]

BUGS = ("none", "noise-halved", "no-clip-canaries", "shuffle-batches")
SOURCE = "DP-SGD (Abadi et al. 2016, Alg. 1); PLD accountant of the Poisson-subsampled Gaussian"


@functools.lru_cache(maxsize=256)
def _pld(noise_multiplier: float, sampling_probability: float, steps: int, discretisation: float):
    from dp_accounting import dp_event, pld  # optional dependency, and a slow import: only claims need it

    accountant = pld.PLDAccountant(value_discretization_interval=discretisation)
    accountant.compose(dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(sampling_probability, dp_event.GaussianDpEvent(noise_multiplier)), steps))
    return accountant


def accountant_epsilon(noise_multiplier: float, sampling_probability: float, steps: int, delta: float, *,
                       discretisation: float = 1e-4) -> float:
    """ε(δ) of T self-composed Poisson-subsampled Gaussians (add-or-remove; pessimistic PLD, so
    an upper bound on the true ε)."""
    check_positive("noise_multiplier", noise_multiplier)
    require(0 < sampling_probability <= 1, "sampling_probability", sampling_probability, "must be in (0, 1]")
    require(isinstance(steps, int) and steps >= 1, "steps", steps, "must be an integer >= 1")
    require(0 < delta < 1, "delta", delta, "must be in (0, 1)")
    return float(_pld(float(noise_multiplier), float(sampling_probability), int(steps), float(discretisation))
                 .get_epsilon(float(delta)))


@functools.lru_cache(maxsize=256)
def optimistic_epsilon(noise_multiplier: float, sampling_probability: float, steps: int, delta: float, *,
                       discretisation: float = 1e-4) -> float:
    """A *lower* estimate of the same ε (dp-accounting's optimistic PLD, privacy buckets): used to
    read a rejected curve as ε without overstating it (about 1 % below the pessimistic value at
    σ = 1.19, q = 0.02, T = 500)."""
    from dp_accounting.pld import privacy_loss_distribution as pl  # optional dependency, slow import

    dist = pl.from_gaussian_mechanism(float(noise_multiplier), sampling_prob=float(sampling_probability),
                                      pessimistic_estimate=False, use_connect_dots=False,
                                      value_discretization_interval=float(discretisation))
    return float(dist.self_compose(int(steps)).get_epsilon_for_delta(float(delta)))


def accountant_deltas(noise_multiplier: float, sampling_probability: float, steps: int, epsilons: Sequence[float], *,
                      discretisation: float = 1e-4) -> np.ndarray:
    """δ(ε) of the same composition at each ε (upper bounds)."""
    acc = _pld(float(noise_multiplier), float(sampling_probability), int(steps), float(discretisation))
    return np.clip(np.array([acc.get_delta(float(e)) for e in epsilons]), 0.0, 1.0)  # tiny negative round-off


def records(x: np.ndarray, y: np.ndarray, kind: int = 0) -> np.ndarray:
    """Rows ``[x, y, kind]`` of a dataset (kind 0: preference example; 1: gradient canary)."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    y = np.asarray(y, dtype=float).reshape(-1)
    require(x.shape[0] == y.size, "y", y.shape, f"must hold one label per row of x ({x.shape[0]})")
    return np.column_stack([x, y, np.full(y.size, float(kind))])


def preference_data(n: int, features: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """n Bradley–Terry comparisons on the first ``features`` of ``dim`` coordinates (the rest,
    reserved for canaries, are 0): x = φ(a) − φ(b), y ~ Bernoulli(sigmoid(θ*ᵀx))."""
    require(isinstance(n, int) and n >= 1, "n", n, "must be an integer >= 1")
    require(isinstance(features, int) and 1 <= features <= dim, "features", features, f"must be in [1, {dim}]")
    theta = rng.standard_normal(features) / math.sqrt(features)
    x = np.zeros((n, dim))
    x[:, :features] = (rng.standard_normal((n, features)) - rng.standard_normal((n, features))) / math.sqrt(features)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-x[:, :features] @ theta))).astype(float)
    return records(x, y)


@dataclass(frozen=True)
class DPSGDOutput:
    """What a white-box auditor sees: every step's noisy clipped-gradient sum U_t (T × d) and the
    last iterate θ_T (a black-box auditor sees θ_T only)."""

    updates: np.ndarray
    theta: np.ndarray


@dataclass(frozen=True)
class DPSGD:
    """DP-SGD on the logistic (Bradley–Terry) reward model; see the module docstring."""

    noise_multiplier: float
    sampling_probability: float
    steps: int
    clip: float = 1.0
    learning_rate: float = 0.5
    bug: str = "none"
    keep_updates: bool = True

    def __post_init__(self) -> None:
        check_positive("noise_multiplier", self.noise_multiplier)
        require(isinstance(self.sampling_probability, float) and 0 < self.sampling_probability <= 1,
                "sampling_probability", self.sampling_probability, "must be a float in (0, 1]")
        require(isinstance(self.steps, int) and self.steps >= 1, "steps", self.steps, "must be an integer >= 1")
        check_positive("clip", self.clip)
        check_positive("learning_rate", self.learning_rate)
        require(self.bug in BUGS, "bug", self.bug, f"must be one of {', '.join(BUGS)}")

    @property
    def actual_noise(self) -> float:
        """The noise multiplier the code applies (the claim uses ``noise_multiplier``)."""
        return self.noise_multiplier / 2 if self.bug == "noise-halved" else self.noise_multiplier

    def _batches(self, n: int, rng: np.random.Generator):
        q = self.sampling_probability
        if self.bug != "shuffle-batches":
            for _ in range(self.steps):
                yield np.flatnonzero(rng.random(n) < q)
            return
        per_epoch = max(1, round(1.0 / q))  # ⌊qN⌋-sized batches, a fixed number per epoch
        t = 0
        while t < self.steps:
            yield from np.array_split(rng.permutation(n), per_epoch)[:self.steps - t]
            t += per_epoch

    def run(self, dataset: np.ndarray, rng: np.random.Generator) -> DPSGDOutput:
        data = np.asarray(dataset, dtype=float)
        if data.ndim != 2 or data.shape[1] < 3 or not np.all(np.isfinite(data)):
            raise InputError(f"dataset = <shape {np.shape(data)}> is invalid: must be finite rows [x, y, kind]")
        x, y, kind = data[:, :-2], data[:, -2], data[:, -1]
        n, d = x.shape
        canary = kind == 1
        theta = np.zeros(d)
        updates = np.empty((self.steps, d)) if self.keep_updates else np.empty((0, d))
        scale = self.learning_rate / (self.sampling_probability * max(n, 1))
        c, noise = self.clip, self.actual_noise * self.clip
        for t, idx in enumerate(self._batches(n, rng)):
            xb = x[idx]
            resid = 1.0 / (1.0 + np.exp(-(xb @ theta))) - y[idx]
            grads = np.where(canary[idx, None], xb, resid[:, None] * xb)
            norms = np.linalg.norm(grads, axis=1)
            factor = np.minimum(1.0, c / np.maximum(norms, 1e-300))
            if self.bug == "no-clip-canaries":
                factor = np.where(canary[idx], 1.0, factor)
            u = factor @ grads + noise * rng.standard_normal(d)
            if self.keep_updates:
                updates[t] = u
            theta = theta - scale * u
        return DPSGDOutput(updates=updates, theta=theta)

    def epsilon(self, delta: float = 1e-5) -> float:
        """The accountant's ε at δ (of the *claimed* noise multiplier)."""
        return accountant_epsilon(self.noise_multiplier, self.sampling_probability, self.steps, delta)

    def guarantees(self, delta: float = 1e-5) -> list[Guarantee]:
        """The accountant's (ε, δ) claim, add-or-remove one record."""
        return [Guarantee(epsilon=self.epsilon(delta), delta=delta, relation=Relation.ADD_REMOVE.value,
                          source=SOURCE, claim_id="dpsgd/accountant", kind="printed")]
