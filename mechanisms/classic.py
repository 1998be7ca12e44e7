"""Textbook reference mechanisms with known, tight privacy guarantees.

Each answers a query of a :class:`neighbors.Dataset` column and states its guarantee with a
stable claim id, so the estimator's tightness can be measured against a known truth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpaudit.core import Guarantee, Relation, check_positive, require
from dpaudit.mechanisms.base import EpsilonSensitivity, log_softmax, per_dataset, sample_categorical
from dpaudit.neighbors.dataset import Dataset

_RR_SOURCE = "Warner (1965); Dwork & Roth (2014), Sec. 3.2"
REFERENCE_GRID = 2.0 ** -32  # the grid the real-valued references round their outputs to (on_grid)


def on_grid(outputs: np.ndarray) -> np.ndarray:
    """Real outputs rounded to the nearest multiple of :data:`REFERENCE_GRID` (exact: a power of 2).

    ``q + noise`` in doubles reaches different sets of doubles for different q (Mironov, CCS 2012),
    so a reference computed that way is not the ε-DP mechanism it stands for: the ``floating``
    view certifies ε > 10 against it.  Rounding to one grid makes both sides reach the same
    outputs (every multiple of 2^−32 below 2^20 in magnitude is a double), and moves each
    output by at most 2^−33 — far below anything the references' tightness figures resolve.
    """
    return np.round(outputs / REFERENCE_GRID) * REFERENCE_GRID + 0.0


def _check_dataset(data: object, mechanism: str) -> Dataset:
    require(isinstance(data, Dataset), f"{mechanism} data", type(data).__name__, "must be a neighbors.Dataset")
    assert isinstance(data, Dataset)  # require raised otherwise: narrows the type for the checker
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

    def guarantees(self, data: Dataset, relation: Relation | str) -> list[Guarantee]:
        return [Guarantee(epsilon=self.epsilon, delta=0.0, relation=relation, source=_RR_SOURCE, claim_id="classic/rr")]


@dataclass(frozen=True)
class Laplace(EpsilonSensitivity):
    """The Laplace mechanism on q(D) = Σ_i clip(x_i, 0, Δ): q(D) + Lap(Δ/ε).

    Neighbours (add/remove or swap) change q by at most Δ, so it is ε-DP
    (Dwork & Roth 2014, Theorem 3.6); the bound is attained by threshold events.  Outputs are
    rounded to a 2^−32 grid (:func:`on_grid`), so the doubles it reaches do not depend on q.
    """

    column: str = "value"
    name: ClassVar[str] = "laplace"

    def query(self, data: Dataset) -> float:
        values = _check_dataset(data, self.name)[self.column]
        return float(np.clip(values, 0.0, self.sensitivity).sum())

    def sample(self, data: Dataset, size: int, rng: np.random.Generator) -> np.ndarray:
        return on_grid(self.query(data) + rng.laplace(0.0, self.sensitivity / self.epsilon, size))

    def guarantees(self, data: Dataset, relation: Relation | str) -> list[Guarantee]:
        if relation not in (Relation.ADD_REMOVE, Relation.SWAP, Relation.ZERO_OUT):
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
        return on_grid(q + rng.normal(0.0, self.sigma, size))

    def guarantees(self, data: Dataset, relation: Relation | str) -> list[Guarantee]:
        if relation not in (Relation.ADD_REMOVE, Relation.SWAP, Relation.ZERO_OUT):
            return []
        if self.epsilon >= 1:
            return [Guarantee.not_applicable(f"epsilon = {self.epsilon} >= 1: Theorem A.1 needs epsilon < 1",
                                             relation=relation, claim_id="classic/gaussian")]
        return [Guarantee(epsilon=self.epsilon, delta=self.delta, relation=relation,
                          source="Dwork & Roth (2014), Theorem A.1", claim_id="classic/gaussian")]


@dataclass(frozen=True)
class ExponentialMechanism(EpsilonSensitivity):
    """The exponential mechanism of the KL paper, Definition 2, eq. (6):

        π(a; D) ∝ exp(ε u(a; D) / (2Δu)),   u(a; D) = Σ_i s_i(a),

    where each record carries a score row s_i ∈ [−Δu, Δu]^k (column ``score``), so
    |u(a; D) − u(a; D′)| ≤ Δu under add/remove.  It is ε-DP; the factor 2 is needed for
    non-monotone utilities (a record that raises one score and lowers the others).
    """

    column: str = "score"
    name: ClassVar[str] = "exponential-mechanism"

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

    def guarantees(self, data: Dataset, relation: Relation | str) -> list[Guarantee]:
        if relation != Relation.ADD_REMOVE:
            return []
        return [Guarantee(epsilon=self.epsilon, delta=0.0, relation=relation,
                          source="KL paper, Definition 2, eq. (6) (McSherry & Talwar 2007)", claim_id="expmech/def2")]


@dataclass(frozen=True)
class ReportNoisyMax(EpsilonSensitivity):
    """Report noisy max: argmax_a u(a; D) + Lap(2Δu/ε), with u as in :class:`ExponentialMechanism`.

    ε-DP for utilities of sensitivity Δu (Dwork & Roth 2014, Claim 3.9 uses Lap(Δ/ε) for
    monotone counts; the factor 2 covers general utilities).
    """

    column: str = "score"
    name: ClassVar[str] = "report-noisy-max"

    def sample(self, data: Dataset, size: int, rng: np.random.Generator) -> np.ndarray:
        u = ExponentialMechanism(self.epsilon, self.sensitivity, self.column).utility(data)
        noise = rng.laplace(0.0, 2.0 * self.sensitivity / self.epsilon, (size, len(u)))
        return np.argmax(u + noise, axis=1).astype(np.int64)

    def guarantees(self, data: Dataset, relation: Relation | str) -> list[Guarantee]:
        if relation != Relation.ADD_REMOVE:
            return []
        return [Guarantee(epsilon=self.epsilon, delta=0.0, relation=relation, source="Dwork & Roth (2014), Claim 3.9",
                          claim_id="classic/report-noisy-max")]


def query_value(data: object, column: str, sensitivity: float, mechanism: str) -> float:
    """q(D): a plain number handed in as the query answer, or Σ_i clip(x_i, 0, Δ) of a dataset's ``column``."""
    if isinstance(data, Dataset):
        return float(np.clip(data[column], 0.0, sensitivity).sum())
    require(isinstance(data, (int, float, np.integer, np.floating)) and not isinstance(data, bool)
            and math.isfinite(float(data)), f"{mechanism} data", data,
            "must be a neighbors.Dataset or a finite number (the query answer)")
    return float(data)  # type: ignore[arg-type]


_SNAPPING_SOURCE = "Mironov (CCS 2012), Theorem 1"


@dataclass(frozen=True)
class SnappingLaplace:
    """Mironov's snapping mechanism (CCS 2012, §5.2): the floating-point Laplace mechanism repaired.

        f̃(D) = clamp_B(⌊clamp_B(q(D)) ⊕ S ⊗ λ ⊗ LN(U*)⌉_Λ),

    with S a uniform sign, U* uniform on (0, 1) over *all* doubles (each with the mass of its
    ulp: a 52-bit mantissa and a geometric exponent), Λ the smallest power of 2 ≥ λ, ⌊·⌉_Λ
    rounding to the nearest multiple of Λ (exact for a power of 2) and ⊕, ⊗, LN the double
    operations.  Theorem 1: for queries of sensitivity 1 and λ < B < 2^46 λ it is
    (1/λ + 2^−49 B/λ)-DP; here λ = (1 + 2^−49 B)/ε, so the guarantee is exactly ε.  Snapping to
    the Λ grid makes the sets of reachable outputs of neighbours equal, which is what the
    textbook ``q + rng.laplace(1/ε)`` (:class:`dpaudit.mechanisms.faulty.TextbookFloatLaplace`) lacks.
    """

    epsilon: float
    bound: float = 1024.0  # B: the query and the output are clamped to [−B, B]
    column: str = "value"
    name: ClassVar[str] = "snapping-laplace"

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)
        check_positive("bound", self.bound)
        require(self.scale < self.bound < 2.0 ** 46 * self.scale, "bound", self.bound,
                f"Theorem 1 needs lambda < B < 2^46 lambda (lambda = {self.scale:.6g})")

    @property
    def scale(self) -> float:
        """λ, the Laplace scale: (1 + 2^−49 B)/ε, so that Theorem 1's ε is the one claimed."""
        return (1.0 + 2.0 ** -49 * self.bound) / self.epsilon

    @property
    def grid(self) -> float:
        """Λ, the smallest power of 2 ≥ λ."""
        return 2.0 ** math.ceil(math.log2(self.scale))

    def sample(self, data: object, size: int, rng: np.random.Generator) -> np.ndarray:
        x = min(max(query_value(data, self.column, 1.0, self.name), -self.bound), self.bound)
        # U*: every double in (0, 1) with the probability of its ulp — binade 2^-e w.p. 2^-e,
        # then a uniform 52-bit mantissa.
        mantissa = 1.0 + rng.integers(0, 2 ** 52, size, dtype=np.int64) * 2.0 ** -52
        u = np.ldexp(mantissa, -rng.geometric(0.5, size))
        sign = np.where(rng.integers(0, 2, size) == 1, 1.0, -1.0)
        noisy = x + sign * (self.scale * np.log(u))
        # + 0.0 turns −0.0 into 0.0: the sign of a zero output would be a second, needless category.
        return np.clip(self.grid * np.round(noisy / self.grid), -self.bound, self.bound) + 0.0

    def guarantees(self, data: object, relation: Relation | str) -> list[Guarantee]:
        if relation not in (Relation.ADD_REMOVE, Relation.SWAP, Relation.ZERO_OUT):
            return []
        return [Guarantee(epsilon=self.epsilon, delta=0.0, relation=relation, source=_SNAPPING_SOURCE,
                          claim_id="classic/snapping")]
