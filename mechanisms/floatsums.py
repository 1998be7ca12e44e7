"""Sums, means and variances of real-valued records released with Laplace noise: naive float
implementations with the textbook sensitivity, and exact ones that keep it.

Records are clamped to [L, U] and the query's textbook sensitivity under swap neighbours is U − L for
the sum, (U − L)/n for the mean and (U − L)²/n for the variance (Dwork & Roth 2014, Thm. 3.6 with
these bounds).  The naive versions compute the query as most code does, a running sum in doubles
(and, for the variance, two passes around the rounded mean), so the sensitivity they implement is
larger where the data sit far from 0 relative to U − L (Casacuberta, Shoemate, Vadhan & Wagaman,
CCS 2022): they claim ε and are not ε-DP.  The exact versions compute on the centred records
x − L (exact in doubles for x ∈ [L, 2L], Sterbenz's lemma) with ``math.fsum`` (correctly rounded),
add the noise to that small value and add L back afterwards (post-processing of an ε-DP release).

Each declares its clamping bounds (``lower``, ``upper``), its ``sensitivity`` and the white-box hook
``query(data)``: the deterministic part before the noise, as implemented, which the float pair
search (:mod:`dpaudit.engine.floatsearch`) evaluates to report the realised |f(D) − f(D′)|.
Data: a 1-D array of doubles (or a :class:`~dpaudit.neighbors.Dataset` with a ``value`` column).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpaudit.core import Guarantee, Relation, check_positive, check_real_array, require
from dpaudit.mechanisms.classic import on_grid
from dpaudit.neighbors.dataset import Dataset

SOURCE = "Dwork & Roth (2014), Thm. 3.6 with the textbook sensitivity of clamped records"


def records(data: Any, lower: float, upper: float) -> np.ndarray:
    """The records as a 1-D float array clamped to [lower, upper]."""
    values = data["value"] if isinstance(data, Dataset) else data
    arr = check_real_array("data", values)
    require(arr.ndim == 1 and arr.size >= 1, "data", f"<array of shape {arr.shape}>", "must be a 1-D array of records")
    return np.clip(arr, lower, upper)


def running_sum(values: np.ndarray) -> float:
    """Σ values as a loop of double additions, left to right (``np.cumsum`` is that loop; ``np.sum``
    would sum pairwise, which rounds differently)."""
    return float(np.cumsum(values)[-1])


@dataclass(frozen=True, kw_only=True)
class _FloatQuery:
    """Shared parameters: ε, the clamping bounds and the query's name."""

    epsilon: float = 1.0
    lower: float = 2.0 ** 40
    upper: float = 2.0 ** 40 + 1.0
    name: ClassVar[str] = "float-query"

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)
        require(math.isfinite(self.lower) and math.isfinite(self.upper) and self.lower < self.upper,
                "(lower, upper)", (self.lower, self.upper), "must be finite with lower < upper")

    def declared(self, n: int) -> float:  # pragma: no cover - each query defines it
        raise NotImplementedError

    def query(self, data: Any) -> float:  # pragma: no cover - each query defines it
        raise NotImplementedError

    def sample(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        """The query as implemented, plus Laplace noise of scale (declared sensitivity)/ε, in doubles."""
        n = len(records(data, self.lower, self.upper))
        return self.query(data) + rng.laplace(0.0, self.declared(n) / self.epsilon, size)

    def sensitivity_for(self, data: Any) -> float:
        """The declared sensitivity at this dataset's size (swap neighbours keep n)."""
        return self.declared(len(records(data, self.lower, self.upper)))

    def guarantees(self, data: Any, relation: Relation | str) -> list[Guarantee]:
        if relation != Relation.SWAP:
            return []
        return [Guarantee(epsilon=self.epsilon, relation=relation, source=SOURCE, claim_id=f"user/{self.name}")]


@dataclass(frozen=True, kw_only=True)
class NaiveSum(_FloatQuery):
    """Σ clip(x) by a running double sum, + Lap((U − L)/ε): declares U − L."""

    name: ClassVar[str] = "naive-float-sum"

    def declared(self, n: int) -> float:
        return self.upper - self.lower

    def query(self, data: Any) -> float:
        return running_sum(records(data, self.lower, self.upper))


@dataclass(frozen=True, kw_only=True)
class NaiveMean(_FloatQuery):
    """(running double sum)/n, + Lap((U − L)/(nε)): declares (U − L)/n."""

    name: ClassVar[str] = "naive-float-mean"

    def declared(self, n: int) -> float:
        return (self.upper - self.lower) / n

    def query(self, data: Any) -> float:
        x = records(data, self.lower, self.upper)
        return running_sum(x) / len(x)


@dataclass(frozen=True, kw_only=True)
class NaiveVariance(_FloatQuery):
    """The two-pass variance Σ(x − m̂)²/n around the running-sum mean m̂, + Lap((U − L)²/(nε)):
    declares (U − L)²/n."""

    lower: float = 2.0 ** 44
    upper: float = 2.0 ** 44 + 1.0
    name: ClassVar[str] = "naive-float-variance"

    def declared(self, n: int) -> float:
        return (self.upper - self.lower) ** 2 / n

    def query(self, data: Any) -> float:
        x = records(data, self.lower, self.upper)
        mean = running_sum(x) / len(x)
        return running_sum((x - mean) ** 2) / len(x)


@dataclass(frozen=True, kw_only=True)
class _Centred(_FloatQuery):
    """The exact versions: the statistic of the centred records x − L (exact), correctly rounded with
    ``math.fsum``, noised at that small magnitude on the 2^−32 grid (:func:`on_grid`, so the doubles it
    reaches do not depend on the data) and shifted back by post-processing.  The centred statistic
    moves by at most the declared sensitivity plus one rounding of its result (|c| < 2^20: under
    2^−32), which the declared value is relaxed by (:meth:`declared`)."""

    def centred(self, x: np.ndarray) -> float:  # pragma: no cover - each query defines it
        raise NotImplementedError

    def offset(self, n: int) -> float:  # pragma: no cover - each query defines it
        raise NotImplementedError

    def query(self, data: Any) -> float:
        x = records(data, self.lower, self.upper)
        return self.centred(x - self.lower)

    def sample(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        n = len(records(data, self.lower, self.upper))
        return on_grid(self.query(data) + rng.laplace(0.0, self.declared(n) / self.epsilon, size)) + self.offset(n)


@dataclass(frozen=True, kw_only=True)
class ExactSum(_Centred):
    """Σ(x − L) by ``math.fsum``, noised, + nL: declares U − L + 2^−32 (the result's rounding)."""

    name: ClassVar[str] = "exact-float-sum"

    def declared(self, n: int) -> float:
        return self.upper - self.lower + 2.0 ** -32

    def centred(self, x: np.ndarray) -> float:
        return math.fsum(x)

    def offset(self, n: int) -> float:
        return n * self.lower


@dataclass(frozen=True, kw_only=True)
class ExactMean(_Centred):
    """fsum(x − L)/n, noised, + L: declares (U − L)/n + 2^−32."""

    name: ClassVar[str] = "exact-float-mean"

    def declared(self, n: int) -> float:
        return (self.upper - self.lower) / n + 2.0 ** -32

    def centred(self, x: np.ndarray) -> float:
        return math.fsum(x) / len(x)

    def offset(self, n: int) -> float:
        return self.lower


@dataclass(frozen=True, kw_only=True)
class ExactVariance(_Centred):
    """Two passes over the centred records with ``math.fsum`` (the variance is shift-invariant):
    declares (U − L)²/n + 2^−32."""

    lower: float = 2.0 ** 44
    upper: float = 2.0 ** 44 + 1.0
    name: ClassVar[str] = "exact-float-variance"

    def declared(self, n: int) -> float:
        return (self.upper - self.lower) ** 2 / n + 2.0 ** -32

    def centred(self, x: np.ndarray) -> float:
        mean = math.fsum(x) / len(x)
        return math.fsum((x - mean) ** 2) / len(x)

    def offset(self, n: int) -> float:
        return 0.0
