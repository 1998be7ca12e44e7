"""Textbook reference mechanisms with known, tight privacy guarantees.

Each answers a query of a :class:`neighbors.Dataset` column and states its guarantee with a
stable claim id, so the estimator's tightness can be measured against a known truth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpcore import Guarantee, check_positive, require
from mechanisms.base import log_softmax, per_dataset, sample_categorical
from neighbors.dataset import Dataset

_RR_SOURCE = "Warner (1965); Dwork & Roth (2014), Sec. 3.2"


def _check_dataset(data: object, mechanism: str) -> Dataset:
    require(isinstance(data, Dataset), f"{mechanism} data", type(data).__name__, "must be a neighbors.Dataset")
    return data


@dataclass(frozen=True)
class RandomizedResponse:
    """ε-randomized response on the bit q(D) = [some record has ``column`` = 1].

    Reports q(D) with probability e^ε/(1 + e^ε) and 1 − q(D) otherwise.  Any {0,1}-valued
    query changes by at most one bit between neighbours (add/remove, swap, label flip), so
    the mechanism is ε-DP under each, and the bound is attained.
    """

    epsilon: float
    column: str = "bit"
    name: ClassVar[str] = "randomized-response"

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)

    def output_distribution(self, data: Dataset) -> np.ndarray:
        bits = _check_dataset(data, self.name)[self.column]
        require(bool(np.isin(bits, (0, 1)).all()), f"column {self.column!r}", bits, "must hold only 0 and 1")
        keep = 1.0 / (1.0 + math.exp(-self.epsilon))
        bit = int(bits.max()) if len(bits) else 0
        return np.array([1 - keep, keep]) if bit else np.array([keep, 1 - keep])

    def sample(self, data: Dataset, size: int, rng: np.random.Generator) -> np.ndarray:
        return sample_categorical(self.output_distribution(data), size, rng)

    def guarantees(self, data: Dataset, relation: str) -> list[Guarantee]:
        return [Guarantee(epsilon=self.epsilon, delta=0.0, relation=relation, source=_RR_SOURCE, claim_id="classic/rr")]


@dataclass(frozen=True)
class Laplace:
    """The Laplace mechanism on q(D) = Σ_i clip(x_i, 0, Δ): q(D) + Lap(Δ/ε).

    Neighbours (add/remove or swap) change q by at most Δ, so it is ε-DP
    (Dwork & Roth 2014, Theorem 3.6); the bound is attained by threshold events.
    """

    epsilon: float
    sensitivity: float = 1.0
    column: str = "value"
    name: ClassVar[str] = "laplace"

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)
        check_positive("sensitivity", self.sensitivity)

    def query(self, data: Dataset) -> float:
        values = _check_dataset(data, self.name)[self.column]
        return float(np.clip(values, 0.0, self.sensitivity).sum())

    def sample(self, data: Dataset, size: int, rng: np.random.Generator) -> np.ndarray:
        return self.query(data) + rng.laplace(0.0, self.sensitivity / self.epsilon, size)

    def guarantees(self, data: Dataset, relation: str) -> list[Guarantee]:
        if relation not in ("add-remove", "swap", "zero-out"):
            return []
        return [Guarantee(epsilon=self.epsilon, delta=0.0, relation=relation, source="Dwork & Roth (2014), Theorem 3.6",
                          claim_id="classic/laplace")]


@dataclass(frozen=True)
class Gaussian:
    """The Gaussian mechanism on q(D) = Σ_i clip(x_i, 0, Δ) with the classical calibration
    σ = Δ √(2 log(1.25/δ)) / ε, which is (ε, δ)-DP for ε < 1 (Dwork & Roth 2014, Theorem A.1)."""

    epsilon: float
    delta: float
    sensitivity: float = 1.0
    column: str = "value"
    name: ClassVar[str] = "gaussian"

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)
        check_positive("sensitivity", self.sensitivity)
        require(0 < self.delta < 1, "delta", self.delta, "must be in (0, 1)")

    @property
    def sigma(self) -> float:
        return self.sensitivity * math.sqrt(2 * math.log(1.25 / self.delta)) / self.epsilon

    def sample(self, data: Dataset, size: int, rng: np.random.Generator) -> np.ndarray:
        q = float(np.clip(_check_dataset(data, self.name)[self.column], 0.0, self.sensitivity).sum())
        return q + rng.normal(0.0, self.sigma, size)

    def guarantees(self, data: Dataset, relation: str) -> list[Guarantee]:
        if relation not in ("add-remove", "swap", "zero-out"):
            return []
        if self.epsilon >= 1:
            return [Guarantee.not_applicable(f"epsilon = {self.epsilon} >= 1: Theorem A.1 needs epsilon < 1",
                                             relation=relation, claim_id="classic/gaussian")]
        return [Guarantee(epsilon=self.epsilon, delta=self.delta, relation=relation,
                          source="Dwork & Roth (2014), Theorem A.1", claim_id="classic/gaussian")]


@dataclass(frozen=True)
class ExponentialMechanism:
    """The exponential mechanism of the KL paper, Definition 2, eq. (6):

        π(a; D) ∝ exp(ε u(a; D) / (2Δu)),   u(a; D) = Σ_i s_i(a),

    where each record carries a score row s_i ∈ [−Δu, Δu]^k (column ``score``), so
    |u(a; D) − u(a; D′)| ≤ Δu under add/remove.  It is ε-DP; the factor 2 is needed for
    non-monotone utilities (a record that raises one score and lowers the others).
    """

    epsilon: float
    sensitivity: float = 1.0
    column: str = "score"
    name: ClassVar[str] = "exponential-mechanism"

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)
        check_positive("sensitivity", self.sensitivity)

    def _temperature(self) -> float:
        return 2.0 * self.sensitivity / self.epsilon

    def utility(self, data: Dataset) -> np.ndarray:
        scores = _check_dataset(data, self.name)[self.column]
        require(scores.ndim == 2 and scores.shape[1] >= 2, f"column {self.column!r} shape", scores.shape,
                "must be (records, outputs) with at least 2 outputs")
        require(bool(np.all(np.abs(scores) <= self.sensitivity)), f"column {self.column!r}",
                float(np.abs(scores).max()), f"scores must lie in [-{self.sensitivity}, {self.sensitivity}]")
        return scores.sum(axis=0).astype(float)

    @per_dataset
    def output_distribution(self, data: Dataset) -> np.ndarray:
        return np.exp(log_softmax(self.utility(data) / self._temperature()))

    def sample(self, data: Dataset, size: int, rng: np.random.Generator) -> np.ndarray:
        return sample_categorical(self.output_distribution(data), size, rng)

    def guarantees(self, data: Dataset, relation: str) -> list[Guarantee]:
        if relation != "add-remove":
            return []
        return [Guarantee(epsilon=self.epsilon, delta=0.0, relation=relation,
                          source="KL paper, Definition 2, eq. (6) (McSherry & Talwar 2007)", claim_id="expmech/def2")]


@dataclass(frozen=True)
class ReportNoisyMax:
    """Report noisy max: argmax_a u(a; D) + Lap(2Δu/ε), with u as in :class:`ExponentialMechanism`.

    ε-DP for utilities of sensitivity Δu (Dwork & Roth 2014, Claim 3.9 uses Lap(Δ/ε) for
    monotone counts; the factor 2 covers general utilities).
    """

    epsilon: float
    sensitivity: float = 1.0
    column: str = "score"
    name: ClassVar[str] = "report-noisy-max"

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)
        check_positive("sensitivity", self.sensitivity)

    def sample(self, data: Dataset, size: int, rng: np.random.Generator) -> np.ndarray:
        u = ExponentialMechanism(self.epsilon, self.sensitivity, self.column).utility(data)
        noise = rng.laplace(0.0, 2.0 * self.sensitivity / self.epsilon, (size, len(u)))
        return np.argmax(u + noise, axis=1).astype(np.int64)

    def guarantees(self, data: Dataset, relation: str) -> list[Guarantee]:
        if relation != "add-remove":
            return []
        return [Guarantee(epsilon=self.epsilon, delta=0.0, relation=relation, source="Dwork & Roth (2014), Claim 3.9",
                          claim_id="classic/report-noisy-max")]
