"""Deliberately broken mechanisms: what a caught bug looks like.

Each samples from a mechanism that leaks more than the guarantee it states.  The test
suite uses them as the twins of "no violation" tests: an audit that cannot catch these
proves nothing when it passes a correct mechanism.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

from dpaudit.core import Guarantee, Relation
from dpaudit.mechanisms.align_mle import PrivateMLE
from dpaudit.mechanisms.base import EpsilonSensitivity
from dpaudit.mechanisms.classic import ExponentialMechanism, Gaussian, on_grid, query_value
from dpaudit.mechanisms.vector import NoisyMax, SparseVector


@dataclass(frozen=True)
class ExponentialMechanismWithoutFactor2(ExponentialMechanism):
    """Samples ∝ exp(ε u / Δu) — the factor 2 of Definition 2 dropped — yet claims ε.

    For a non-monotone utility its exact privacy loss approaches 2ε.
    """

    name: ClassVar[str] = "exponential-mechanism-without-factor-2"

    def _temperature(self) -> float:
        return self.sensitivity / self.epsilon


class _EtaPolicy(Protocol):
    """What ClaimsWithDoubledEta needs of its base: a KL-paper policy that is a dataclass with a field
    ``eta`` (so ``dataclasses.replace`` can double it) and states claims on one dataset."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
    eta: float

    def output_distribution(self, data: Any) -> np.ndarray: ...

    def sample(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray: ...

    def guarantees(self, data: Any, relation: Relation | str) -> list[Guarantee]: ...


@dataclass(frozen=True)
class ClaimsWithDoubledEta:
    """Samples from a KL-paper policy with its η but states the claims computed with 2η.

    Every KL-paper bound scales like 1/η, so the stated ε is half of what the analysis
    gives; on a fixture where that analysis is tight (the corrected RLHF bounds) the
    audit must report a violation.
    """

    base: _EtaPolicy
    name: ClassVar[str] = "kl-policy-claiming-double-eta"

    def output_distribution(self, data):
        return self.base.output_distribution(data)

    def sample(self, data, size, rng):
        return self.base.sample(data, size, rng)

    def pair_guarantees(self, data, data_prime, relation):
        wrong = dataclasses.replace(self.base, eta=2 * self.base.eta)
        if hasattr(wrong, "pair_guarantees"):
            return wrong.pair_guarantees(data, data_prime, relation)
        return wrong.guarantees(data, relation)


@dataclass(frozen=True)
class GaussianOnHalfSensitivity(Gaussian):
    """The classical Gaussian mechanism calibrated as if the sensitivity were Δ/2, claiming (ε, δ)."""

    name: ClassVar[str] = "gaussian-on-half-sensitivity"

    @property
    def sigma(self) -> float:
        return super().sigma / 2


@dataclass(frozen=True)
class PrivateMLEOnTenthNoise(PrivateMLE):
    """Algorithm 1 whose objective noise is a tenth of the printed σ_b while it keeps the printed
    claim (ε/2, δ/2): the kind of calibration bug an audit of Algorithm 1 must catch."""

    name: ClassVar[str] = "align-mle-tenth-noise"

    @functools.cached_property
    def sigma_b(self) -> float:
        # The printed σ_b's own function: reading PrivateMLE.sigma_b through self would cache it first.
        printed: functools.cached_property[float] = vars(PrivateMLE)["sigma_b"]
        return printed.func(self) / 10


@dataclass(frozen=True)
class NoisyMaxValue(NoisyMax):
    """Report noisy max that returns the noisy maximum *value* max_i(q_i + ν_i), ν_i ~ Lap(2Δ/ε),
    claiming ε — the incorrect benchmark variant of Ding et al. (CCS 2018, §6, "NoisyMax" returning
    the value; also in Bichsel et al., S&P 2021).

    Below min_i q_i every coordinate is in its lower Laplace tail, so the value's density is
    m·(1/2b)e^{y/b}·(½e^{y/b})^{m−1} ∝ e^{m y/b} (b = 2Δ/ε): shifting all m answers by Δ
    ("all above") multiplies it by e^{mΔ/b} = e^{mε/2}.  The loss is at most that everywhere,
    so the true ε is m·ε/2 for m queries — 2.5ε for m = 5.  Outputs are rounded to the
    references' grid (:func:`~dpaudit.mechanisms.classic.on_grid`): its one bug is the released value,
    not the doubles q + ν reaches (which the floating view would refute on their own).
    """

    name: ClassVar[str] = "noisy-max-value"
    claim_id: ClassVar[str] = "classic/noisy-max-value"
    source: ClassVar[str] = "Ding et al. (CCS 2018), report noisy max returning the value"

    def sample(self, data, size, rng):
        return on_grid(self.noisy_answers(data, size, rng).max(axis=1))


@dataclass(frozen=True)
class SparseVectorWithoutQueryNoise(SparseVector):
    """Lyu, Su & Li (2017), Fig. 1, Algorithm 5 (Stoddard et al. 2014): ρ ~ Lap(2Δ/ε), no query noise,
    no cutoff — ⊤ iff q_i ≥ T + ρ.  Claims ε; the true ε is ∞: with q = 0 and q′ = (Δ, 0, …, 0)
    the answer (⊤, ⊥, …, ⊥) is possible under q′ (T + ρ ∈ (0, Δ]) and impossible under q."""

    cutoff: int | None = None         # no cutoff: every query is answered
    query_scale: float | None = 0.0   # no query noise
    name: ClassVar[str] = "svt-without-query-noise"
    claim_id: ClassVar[str] = "classic/svt-no-query-noise"
    source: ClassVar[str] = "Lyu, Su & Li (2017), Fig. 1, Algorithm 5 (Stoddard et al. 2014)"


@dataclass(frozen=True)
class SparseVectorWithoutCutoff(SparseVector):
    """Lyu, Su & Li (2017), Fig. 1, Algorithm 6 (Chen et al. 2015): ρ ~ Lap(2Δ/ε), ν_i ~ Lap(2Δ/ε),
    no cutoff.  Claims ε; the true ε is ∞ (their §4: the loss of answering ⊤ on queries that
    rose and ⊥ on queries that fell grows with the number of queries, without bound)."""

    cutoff: int | None = None         # no cutoff: every query is answered
    query_scale: float | None = 1.0   # ν_i ~ Lap(Δ/ε₂) = Lap(2Δ/ε), without Algorithm 1's factor 2c
    name: ClassVar[str] = "svt-without-cutoff"
    claim_id: ClassVar[str] = "classic/svt-no-cutoff"
    source: ClassVar[str] = "Lyu, Su & Li (2017), Fig. 1, Algorithm 6 (Chen et al. 2015)"


@dataclass(frozen=True)
class TextbookFloatLaplace(EpsilonSensitivity):
    """The textbook Laplace mechanism in doubles, ``q + rng.laplace(scale=Δ/ε)``, claiming ε.

    Mironov (CCS 2012, §3): its true ε is ∞.  The noise is a double on its own binade's grid and
    q ⊕ noise rounds onto the output's grid, so the sets of reachable outputs differ between q and
    q′: for q = 1 every output in [−1, −0.5) is 1 + L with L ∈ [−2, −1.5), a multiple of 2^−52, so
    its last mantissa bit (2^−53) is 0 — an event of probability 0 under q = 0 and ≈ 0.15 under
    q = 1 (Laplace(1)).
    """

    column: str = "value"
    name: ClassVar[str] = "textbook-float-laplace"

    def sample(self, data, size, rng):
        q = query_value(data, self.column, self.sensitivity, self.name)
        return q + rng.laplace(scale=self.sensitivity / self.epsilon, size=size)

    def guarantees(self, data, relation):
        if relation not in (Relation.ADD_REMOVE, Relation.SWAP, Relation.ZERO_OUT):
            return []
        return [Guarantee(epsilon=self.epsilon, delta=0.0, relation=relation,
                          source="textbook Laplace mechanism in floating point (Mironov, CCS 2012)",
                          claim_id="classic/float-laplace")]
