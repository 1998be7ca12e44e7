"""Mechanisms on a vector of query answers: the setting of the classic auditing benchmark
(Ding et al., CCS 2018 "StatDP"; Bichsel et al., S&P 2021 "DP-Sniper").

The input is the vector q ∈ ℝ^m of the answers of m queries on a dataset, and neighbouring
datasets change every answer by at most the sensitivity Δ (‖q − q′‖_∞ ≤ Δ).  The input may
be handed in as a numpy vector or as a :class:`neighbors.Dataset` with a column of answers
(one record per query).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpaudit.core import Guarantee, Relation, check_positive, require
from dpaudit.mechanisms.base import EpsilonSensitivity
from dpaudit.neighbors.dataset import Dataset

ABOVE, BELOW, ABORTED = 1, 0, -1  # the sparse vector's answers


_HALF_STEP = 2.0 ** -54  # half the spacing of Generator.random's values k·2⁻⁵³


def laplace(rng: np.random.Generator, scale: float, shape: int | tuple[int, ...]) -> np.ndarray:
    """Lap(0, ``scale``) draws by inversion, one uniform each: v = u − ½ + 2⁻⁵⁴ is symmetric
    about 0 and never 0 (exactly, for u = k·2⁻⁵³), and −sign(v)·log(1 − 2|v|) is Lap(0, 1)
    (|v| gives the Exp(1) magnitude, sign(v) an independent sign).  ``Generator.laplace`` inverts
    the same uniforms (log 2u or −log(2 − 2u)), so the draws agree with it up to the 2⁻⁵⁴ shift;
    vectorised logarithms make this about twice as fast (it takes a scalar log per draw)."""
    v = rng.random(shape)
    v -= 0.5 - _HALF_STEP
    mag = np.abs(v)
    mag *= -2.0
    np.log1p(mag, out=mag)   # log(1 − 2|v|) ∈ [log 2⁻⁵³, 0): minus an Exp(1) draw
    mag *= -scale
    return np.copysign(mag, v, out=mag)


def query_answers(data: object, column: str, mechanism: str) -> np.ndarray:
    """The query-answer vector of ``data``: a 1-D numeric array, or a dataset's ``column``."""
    if isinstance(data, Dataset):
        data = data[column]
    q = np.asarray(data, dtype=float)
    require(q.ndim == 1 and len(q) > 0, f"{mechanism} queries", data, "must be a non-empty vector of query answers")
    require(bool(np.isfinite(q).all()), f"{mechanism} queries", data, "must be finite")
    return q


@dataclass(frozen=True)
class SparseVector:
    """The sparse vector technique, Lyu, Su & Li (VLDB 2017), Algorithm 1 (their Fig. 1).

    With ε₁ = ``threshold_share``·ε and ε₂ = ε − ε₁: ρ ~ Lap(Δ/ε₁) once; for each query i in
    order, ν_i ~ Lap(``query_scale``·Δ/ε₂) and the answer is ⊤ (1) when q_i + ν_i ≥ T + ρ,
    else ⊥ (0); after the ``cutoff``-th ⊤ the remaining answers are −1 (aborted).  With
    ``query_scale`` = 2c (the default) it is ε-DP for any queries of sensitivity Δ (their
    Theorem 2).  The other parameters exist to build the printed variants their Fig. 1 shows
    to be wrong (:mod:`dpaudit.mechanisms.faulty`): ``query_scale`` 0 drops the query noise,
    ``cutoff`` None never stops.
    """

    epsilon: float
    threshold: float = 0.0              # T, the threshold the noisy answers are compared with
    cutoff: int | None = 1              # c, the number of ⊤ answers before it stops (None: never stops)
    sensitivity: float = 1.0
    threshold_share: float = 0.5        # ε₁/ε, the share of ε spent on the threshold's noise
    query_scale: float | None = None    # ν_i's scale in units of Δ/ε₂ (None: 2c, the proven one; 0: no noise)
    column: str = "answer"              # the dataset column of query answers, when the input is a dataset
    name: ClassVar[str] = "sparse-vector"
    claim_id: ClassVar[str] = "classic/sparse-vector"   # what it states; the printed variants override both
    source: ClassVar[str] = "Lyu, Su & Li (2017), Theorem 2"

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)
        check_positive("sensitivity", self.sensitivity)
        require(0 < self.threshold_share < 1, "threshold_share", self.threshold_share, "must lie in (0, 1)")
        require(self.cutoff is None or (isinstance(self.cutoff, int) and self.cutoff >= 1), "cutoff", self.cutoff,
                "must be a positive integer, or None for no cutoff")
        require(self.query_scale is None or self.query_scale >= 0, "query_scale", self.query_scale,
                "must be >= 0 (0: no query noise)")

    @property
    def noise_scales(self) -> tuple[float, float]:
        """(scale of ρ, scale of each ν_i)."""
        eps1 = self.threshold_share * self.epsilon
        eps2 = self.epsilon - eps1
        factor = 2.0 * (self.cutoff or 1) if self.query_scale is None else self.query_scale
        return self.sensitivity / eps1, factor * self.sensitivity / eps2

    def sample(self, data: object, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` runs: the comparisons on whole (size, m) arrays, then the cutoff query by
        query on the transposed comparisons (each query's answers contiguous), with the count of
        ⊤ so far carried along instead of a cumulative sum along short rows."""
        q = query_answers(data, self.column, self.name)
        rho_scale, nu_scale = self.noise_scales
        level = laplace(rng, rho_scale, (size, 1))
        level += self.threshold                                             # T + ρ, per run
        noisy = q + laplace(rng, nu_scale, (size, len(q))) if nu_scale > 0 else np.broadcast_to(q, (size, len(q)))
        above = noisy >= level
        if self.cutoff is None:
            return above.astype(np.int8)
        by_query = np.ascontiguousarray(above.T)                           # (m, size), one byte each
        out = by_query.astype(np.int8)
        seen = np.zeros(size, dtype=np.int32)
        for i in range(len(q)):
            # Aborted after the cutoff-th ⊤: the ⊤ counted before query i decide it.
            out[i][seen >= self.cutoff] = ABORTED
            seen += by_query[i]
        return out.T

    def guarantees(self, data: object, relation: Relation | str) -> list[Guarantee]:
        return [Guarantee(epsilon=self.epsilon, delta=0.0, relation=relation, source=self.source,
                          claim_id=self.claim_id)]


@dataclass(frozen=True)
class SparseVectorLeeClifton(SparseVector):
    """Lee & Clifton (2014) as Lyu, Su & Li (VLDB 2017) print it in Fig. 1, Algorithm 4: ε₁ = ε/4,
    ρ ~ Lap(Δ/ε₁) = Lap(4Δ/ε), ν_i ~ Lap(Δ/ε₂) = Lap(4Δ/(3ε)), stop after ``cutoff`` ⊤.  Claims
    ε; it is ((1 + 6c)/4)·ε-DP and no better in general (their §4): the query noise lacks
    Algorithm 1's factor 2c."""

    threshold_share: float = 0.25
    query_scale: float | None = 1.0
    name: ClassVar[str] = "svt-lee-clifton"
    claim_id: ClassVar[str] = "classic/svt-lee-clifton"
    source: ClassVar[str] = "Lyu, Su & Li (2017), Fig. 1, Algorithm 4 (Lee & Clifton 2014)"


@dataclass(frozen=True)
class SparseVectorDworkRoth(SparseVector):
    """Dwork & Roth (2014, Algorithm 2 "Sparse") as Lyu, Su & Li (VLDB 2017) print it in Fig. 1,
    Algorithm 2: ε₁ = ε₂ = ε/2, ρ ~ Lap(cΔ/ε₁), ν_i ~ Lap(2cΔ/ε₁), and after each ⊤ the threshold
    noise is drawn anew, ρ ~ Lap(cΔ/ε₂); stop after c = ``cutoff`` ⊤.  ε-DP (their Theorem 2
    covers it: each of the c segments is an ε/c-DP sparse vector with cutoff 1).  With c = 1 it
    is Algorithm 1's law; the redraw shows from c = 2."""

    cutoff: int | None = 2
    name: ClassVar[str] = "svt-dwork-roth"
    claim_id: ClassVar[str] = "classic/svt-dwork-roth"
    source: ClassVar[str] = "Lyu, Su & Li (2017), Fig. 1, Algorithm 2 (Dwork & Roth 2014)"

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.cutoff is not None, "cutoff", self.cutoff, "Algorithm 2 needs a cutoff c >= 1")
        require(self.threshold_share == 0.5 and self.query_scale is None, "threshold_share", self.threshold_share,
                "Algorithm 2 fixes eps1 = eps2 = eps/2 and the query noise 2c/eps1")

    @property
    def noise_scales(self) -> tuple[float, float]:
        """(scale of each ρ, scale of each ν_i): cΔ/ε₁ and 2cΔ/ε₁."""
        c = float(self.cutoff or 1)
        eps1 = self.epsilon / 2
        return c * self.sensitivity / eps1, 2 * c * self.sensitivity / eps1

    def sample(self, data: object, size: int, rng: np.random.Generator) -> np.ndarray:
        """Query by query, each run compared with its current threshold T + ρ; a run's ρ is
        replaced by its next pre-drawn value after each ⊤ (draw j serves the (j+1)-th segment)."""
        q = query_answers(data, self.column, self.name)
        c = int(self.cutoff or 1)
        rho_scale, nu_scale = self.noise_scales
        levels = laplace(rng, rho_scale, (c, size))
        levels += self.threshold
        noisy = q[:, None] + laplace(rng, nu_scale, (len(q), size))        # (m, size): query rows
        out = np.empty((len(q), size), dtype=np.int8)
        seen = np.zeros(size, dtype=np.int64)
        runs = np.arange(size)
        for i in range(len(q)):
            live = seen < c
            above = live & (noisy[i] >= levels[np.minimum(seen, c - 1), runs])
            out[i] = np.where(live, above, ABORTED)
            seen += above
        return np.ascontiguousarray(out.T)


@dataclass(frozen=True)
class NoisyMax(EpsilonSensitivity):
    """Report noisy max on a query vector: argmax_i q_i + ν_i, ν_i ~ Lap(2Δ/ε) i.i.d.

    ε-DP for any queries with ‖q(D) − q(D′)‖_∞ ≤ Δ (Dwork & Roth 2014, Claim 3.9 proves ε with
    Lap(Δ/ε) for monotone counting queries; the doubled scale covers answers that move in both
    directions, the setting of Ding et al. 2018's benchmark).  Returns the index only.
    """

    column: str = "answer"
    name: ClassVar[str] = "noisy-max"
    claim_id: ClassVar[str] = "classic/noisy-max"       # what it states; the value-returning variant overrides both
    source: ClassVar[str] = "Dwork & Roth (2014), Claim 3.9 (scale 2Δ/ε)"

    def noisy_answers(self, data: object, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` rows of q + Lap(2Δ/ε) noise."""
        q = query_answers(data, self.column, self.name)
        return q + rng.laplace(0.0, 2.0 * self.sensitivity / self.epsilon, (size, len(q)))

    def sample(self, data: object, size: int, rng: np.random.Generator) -> np.ndarray:
        return np.argmax(self.noisy_answers(data, size, rng), axis=1).astype(np.int64)

    def guarantees(self, data: object, relation: Relation | str) -> list[Guarantee]:
        return [Guarantee(epsilon=self.epsilon, delta=0.0, relation=relation, source=self.source,
                          claim_id=self.claim_id)]


@dataclass(frozen=True)
class NoisyHistogram(EpsilonSensitivity):
    """The Laplace mechanism on a histogram: h + Lap(Δ/ε) in every bin (Dwork & Roth 2014,
    Proposition 3.4 via Theorem 3.6).  Adding or removing one record changes one bin by 1,
    so with Δ = 1 it is ε-DP under add/remove; the input is the vector of bin counts."""

    column: str = "count"               # the dataset column of bin counts, when the input is a dataset
    name: ClassVar[str] = "noisy-histogram"

    def sample(self, data: object, size: int, rng: np.random.Generator) -> np.ndarray:
        h = query_answers(data, self.column, self.name)
        out = laplace(rng, self.sensitivity / self.epsilon, (size, len(h)))
        out += h
        return out

    def guarantees(self, data: object, relation: Relation | str) -> list[Guarantee]:
        return [Guarantee(epsilon=self.epsilon, delta=0.0, relation=relation,
                          source="Dwork & Roth (2014), Theorem 3.6", claim_id="classic/noisy-histogram")]
