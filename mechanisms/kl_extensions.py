"""The KL paper's §4.4 extensions: repeated sampling and inexact policies.

Both wrap a KL-policy mechanism (anything with ``output_distribution`` and claims).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy.special import gammaln

from dpaudit.core import Guarantee, Relation, check_positive, require
from dpaudit.mechanisms.base import counts_categorical, log_softmax, per_dataset, sample_categorical
from dpaudit.mechanisms.kl_policy import KLPolicy, require_count

_MAX_OUTCOMES = 200_000


@functools.lru_cache(maxsize=16)
def _compositions(total: int, k: int) -> np.ndarray:
    """Count vectors with sum ``total`` over ``k`` parts (stars and bars), read-only."""
    rows = [np.diff((-1, *bars, total + k - 1)) - 1 for bars in itertools.combinations(range(total + k - 1), k - 1)]
    out = np.array(rows, dtype=np.int64)
    out.setflags(write=False)
    return out


def _base_claims(base: Any, d: Any, d_prime: Any, relation: Relation | str) -> list[Guarantee]:
    if hasattr(base, "pair_guarantees"):
        return base.pair_guarantees(d, d_prime, relation)
    return base.guarantees(d, relation) if hasattr(base, "guarantees") else []


def _first_printed(claims: list[Guarantee], pure: bool) -> Guarantee | None:
    for c in claims:
        if c.kind == "printed" and (c.delta == 0) == pure:
            return c
    return None


@dataclass(frozen=True)
class RepeatedSampling:
    """T independent actions from one policy π̃(·; D), released together (KL paper §4.4).

    The output is the multiset of actions, encoded as the index of its count vector among
    all compositions of T into |A| parts (the counts are sufficient: the privacy loss of the
    sequence depends only on them).  Its exact distribution is multinomial, so the T-fold
    ε(δ) is computed exactly, δ_T(ε) = E_{a~p^T}[(1 − e^{ε − Σ_t L(a_t)})_+] with
    L = log p/q, over both directions, not bounded.  Claims:

    * ``kl/repeated-T``  basic composition, T·ε0 of the base's pure claim (VALID);
    * ``kl/repeated-T-advanced``  advanced composition (√(2T log(1/δ′)) ε0 + T ε0 (e^{ε0} − 1), Tδ + δ′);
      the paper prints "kδ" for Tδ.
    """

    base: Any
    T: int
    delta_prime: float = 1e-6
    name: ClassVar[str] = "repeated-sampling"

    def __post_init__(self) -> None:
        require_count("T", self.T, 1)
        require(0 < self.delta_prime < 1, "delta_prime", self.delta_prime, "must be in (0, 1)")
        require(callable(getattr(self.base, "output_distribution", None)), "base", self.base,
                "must expose output_distribution")

    def compositions(self, k: int) -> np.ndarray:
        """All count vectors (c_1..c_k) with Σ c = T, in the order of the output indices."""
        n = math.comb(self.T + k - 1, k - 1)
        require(n <= _MAX_OUTCOMES, "T", self.T, f"T and {k} actions give {n} outcomes; at most {_MAX_OUTCOMES}")
        return _compositions(int(self.T), k)

    def _index(self, counts: np.ndarray) -> np.ndarray:
        comps = self.compositions(counts.shape[1])
        radix = self.T + 1
        codes = comps @ (radix ** np.arange(comps.shape[1]))
        order = np.argsort(codes)
        pos = np.searchsorted(codes[order], counts @ (radix ** np.arange(counts.shape[1])))
        return order[pos]

    def output_distribution(self, data: Any) -> np.ndarray:
        p = self.base.output_distribution(data)
        comps = self.compositions(len(p))
        with np.errstate(divide="ignore", invalid="ignore"):
            logp = np.where(comps > 0, comps * np.log(p), 0.0).sum(axis=1)
        logp += gammaln(self.T + 1) - gammaln(comps + 1).sum(axis=1)
        out = np.exp(logp)
        return out / out.sum()

    def sample(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        p = self.base.output_distribution(data)
        return self._index(rng.multinomial(self.T, p, size=size))

    def sample_counts(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        """How many of ``size`` outputs are each composition (Multinomial(size, output_distribution(data)))."""
        return counts_categorical(self.output_distribution(data), size, rng)

    def epsilon_sup_pi0(self, data: Any, data_prime: Any) -> float | None:
        sup = getattr(self.base, "epsilon_sup_pi0", None)
        return None if sup is None else self.T * sup(data, data_prime)

    def pair_guarantees(self, data: Any, data_prime: Any, relation: Relation | str) -> list[Guarantee]:
        base = _first_printed(_base_claims(self.base, data, data_prime, relation), pure=True)
        src = f"KL paper, Sec. 4.4, {{}} composition of {base.claim_id if base else 'the base claim'} over T = {self.T}"
        if base is None or not base.applicable:
            why = base.note if base is not None else f"the base mechanism has no pure claim for {relation}"
            return [Guarantee.not_applicable(why, relation=relation, source=src.format(kind), claim_id=cid)
                    for kind, cid in (("basic", "kl/repeated-T"), ("advanced", "kl/repeated-T-advanced"))]
        e, t, dp = base.epsilon, self.T, self.delta_prime
        advanced = math.sqrt(2 * t * math.log(1 / dp)) * e + t * e * math.expm1(min(e, 700.0))
        return [Guarantee(epsilon=t * e, delta=0.0, relation=relation, source=src.format("basic"),
                          claim_id="kl/repeated-T"),
                Guarantee(epsilon=advanced, delta=min(1.0, t * base.delta + dp), relation=relation,
                          source=src.format("advanced"), claim_id="kl/repeated-T-advanced",
                          note='the paper prints "k delta"; T delta is meant')]


@dataclass(frozen=True)
class InexactPolicy:
    """The KL-regularized policy after ``iterations`` steps of entropic mirror ascent (KL paper §4.4).

    Mirror ascent on F(π) = ⟨π, u⟩ − η KL(π‖π0) from π0 with step α (0 < αη < 1):

        log π_{t+1} = (1 − αη) log π_t + αη log π0 + α u + const,

    converging to π̃ ∝ π0 e^{u/η}.  With ε̂ = the larger D∞ gap between π̂ and π̃ in either
    order on D and D′, and (ε, δ) the base's claim ``base_claim`` (by id; None: its first
    applicable printed claim), the claims are:

    * ``kl/inexact``  the paper's (ε + 2ε̂, δ) (VALID for δ = 0; for δ > 0 the printed δ is wrong,
      so the claim is stated outside its premise δ = 0, with its value kept);
    * ``kl/inexact-corrected``  (ε + 2ε̂, e^{ε̂} δ): P̂(S) ≤ e^{ε̂}P̃(S) ≤ e^{ε̂}(e^ε Q̃(S) + δ)
      ≤ e^{ε+2ε̂} Q̂(S) + e^{ε̂} δ.
    """

    base: KLPolicy
    iterations: int
    step: float
    base_claim: str | None = None
    name: ClassVar[str] = "inexact-kl-policy"

    def __post_init__(self) -> None:
        require_count("iterations", self.iterations, 0)
        check_positive("step", self.step)
        require(self.step * self.base.eta < 1, "step", self.step, f"needs step * eta < 1 (eta = {self.base.eta})")
        require(self.base_claim is None or (isinstance(self.base_claim, str) and self.base_claim != ""), "base_claim",
                self.base_claim, "must be a claim id of the base mechanism, or None")

    @per_dataset
    def output_distribution(self, data: Any) -> np.ndarray:
        u, log_pi0 = self.base.utility(data), self.base.log_pi0()
        a = self.step * self.base.eta
        log_pi = log_softmax(log_pi0)
        for _ in range(self.iterations):
            log_pi = log_softmax((1 - a) * log_pi + a * log_pi0 + self.step * u)
        return np.exp(log_pi)

    def sample(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        return sample_categorical(self.output_distribution(data), size, rng)

    def sample_counts(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        """How many of ``size`` draws pick each action (Multinomial(size, π̂(·; D)): the law of ``sample``'s counts)."""
        return counts_categorical(self.output_distribution(data), size, rng)

    def gap(self, data: Any) -> float:
        """ε̂(D) = max(D∞(π̂‖π̃), D∞(π̃‖π̂))."""
        p, q = self.output_distribution(data), self.base.output_distribution(data)
        if np.any((p > 0) != (q > 0)):
            return math.inf
        keep = p > 0
        return float(np.max(np.abs(np.log(p[keep]) - np.log(q[keep]))))

    def pair_guarantees(self, data: Any, data_prime: Any, relation: Relation | str) -> list[Guarantee]:
        claims = _base_claims(self.base, data, data_prime, relation)
        if self.base_claim is None:
            base = next((c for c in claims if c.kind == "printed" and c.applicable), None)
            why = "the base mechanism has no applicable printed claim for " + relation
        else:
            named = next((c for c in claims if c.claim_id == self.base_claim), None)
            base = named if named is not None and named.applicable else None
            why = (f"the base mechanism states no {self.base_claim} for {relation}" if named is None
                   else f"the base claim {self.base_claim} is not applicable: {named.note}")
        src = f"KL paper, Sec. 4.4, inexact policy optimisation ({self.iterations} mirror-ascent steps)"
        if base is None:
            return [Guarantee.not_applicable(why, relation=relation, source=src, claim_id=cid)
                    for cid in ("kl/inexact", "kl/inexact-corrected")]
        gap = max(self.gap(data), self.gap(data_prime))
        note = f"eps_hat = {gap:.6g} (measured on D and D'), base claim {base.claim_id}"
        eps = base.epsilon + 2 * gap
        if base.delta > 0:
            printed = Guarantee.outside_premise(
                f"δ = 0 (the printed δ is wrong for δ > 0: it should be e^ε̂ δ); {note}",
                epsilon=eps, delta=base.delta, relation=relation, source=src, claim_id="kl/inexact")
        else:
            printed = Guarantee(epsilon=eps, delta=0.0, relation=relation, source=src, claim_id="kl/inexact", note=note)
        return [printed,
                Guarantee(epsilon=eps, delta=min(1.0, math.exp(gap) * base.delta), relation=relation,
                          source=src + ", with delta corrected to e^eps_hat delta", claim_id="kl/inexact-corrected",
                          kind="corrected", note=note)]
