"""The mechanism protocol, its optional white-box capabilities, and helpers mechanisms share.

A mechanism is anything with a ``name`` and ``sample(data, size, rng)``; each optional
capability (the white-box ones, and ``sample_counts``, a faster ``sample`` for finite outputs)
is a documented method declared by a structural ``Protocol`` below.  Nothing here
must be subclassed.  ``Guarantee`` and the validators live in :mod:`dpaudit.core` and are
re-exported here because mechanism authors reach for them beside the protocol.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpaudit.core import Guarantee, InputError, Relation, check_positive, require

__all__ = ["CAPABILITIES", "EpsilonSensitivity", "Guarantee", "HasEpsilonSupPi0", "HasExactEpsilon", "HasGuarantees",
           "HasOutputDistribution", "HasPairGuarantees", "HasSampleCounts", "InputError", "Mechanism", "capabilities",
           "counts_categorical", "log_softmax", "per_dataset", "sample_categorical"]


@runtime_checkable
class Mechanism(Protocol):
    """What dpaudit needs to audit a mechanism as a black box.

    ``sample(data, size, rng)`` returns ``size`` independent outputs: shape ``(size,)`` for
    discrete or scalar outputs, ``(size, k)`` for vectors, drawn with ``rng`` only (so one seed
    gives one result).  Nothing must be subclassed: any object with ``name`` and ``sample`` is
    a mechanism.  The capabilities below are optional; implementing one turns on the check
    that uses it (``dpaudit.testing.check_mechanism`` verifies they agree with ``sample``).
    """

    name: str

    def sample(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray: ...


@runtime_checkable
class HasOutputDistribution(Protocol):
    """White box for finite outputs: ``output_distribution(data)`` is the probability vector of
    outputs ``0..k-1`` on ``data``.  The engine then computes the exact ε(δ) of the pair,
    δ(ε) = max Σ (p − e^ε q)_+ over both directions."""

    def output_distribution(self, data: Any) -> np.ndarray: ...


@runtime_checkable
class HasExactEpsilon(Protocol):
    """White box for continuous outputs: ``exact_epsilon(d, d_prime, delta)`` is the exact
    ε(δ) of the pair (or None where unknown), e.g. the Balle–Wang curve of a Gaussian shift."""

    def exact_epsilon(self, d: Any, d_prime: Any, delta: float) -> float | None: ...


@runtime_checkable
class HasGuarantees(Protocol):
    """The source's claims evaluated on one dataset: ``guarantees(data, relation)``."""

    def guarantees(self, data: Any, relation: Relation | str) -> list[Guarantee]: ...


@runtime_checkable
class HasPairGuarantees(Protocol):
    """Claims whose free parameters depend on both datasets of the pair (e.g. the smallest
    admissible B of the KL paper's RLHF bounds): ``pair_guarantees(d, d_prime, relation)``."""

    def pair_guarantees(self, d: Any, d_prime: Any, relation: Relation | str) -> list[Guarantee]: ...


@runtime_checkable
class HasEpsilonSupPi0(Protocol):
    """KL mechanisms: the supremum of the pair's pure loss over reference policies π0,
    (max_a Δu − min_a Δu)/η for Δu = u(·; D′) − u(·; D), approached as π0 concentrates on argmin Δu."""

    def epsilon_sup_pi0(self, d: Any, d_prime: Any) -> float: ...


@runtime_checkable
class HasSampleCounts(Protocol):
    """Finite outputs drawn as counts: ``sample_counts(data, size, rng)`` is the vector c of how many
    of ``size`` independent draws equal each output 0..len(c)−1 — the same law as
    ``np.bincount(sample(data, size, rng))``, i.e. Multinomial(size, p), at O(len(c)) cost whatever
    ``size`` (``rng.multinomial``).  Not a white box: the engine counts estimation chunks from it
    instead of drawing them (:mod:`dpaudit.engine.streaming`), so it must be distributionally identical to
    ``sample`` (``dpaudit.testing.check_mechanism`` tests the two against each other)."""

    def sample_counts(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray: ...


CAPABILITIES: dict[str, type] = {"output_distribution": HasOutputDistribution, "exact_epsilon": HasExactEpsilon,
                                 "guarantees": HasGuarantees, "pair_guarantees": HasPairGuarantees,
                                 "epsilon_sup_pi0": HasEpsilonSupPi0, "sample_counts": HasSampleCounts}


@dataclass(frozen=True)
class EpsilonSensitivity:
    """The first two parameters of the ε-DP noise mechanisms on a query of sensitivity Δ (Laplace,
    the exponential mechanism, report noisy max, the noisy histogram and their faulty twins): ``epsilon``
    and ``sensitivity`` (Δ, default 1), both checked > 0 on construction.  Each mechanism adds its
    ``column`` and ``name``; an optional base for our own mechanisms, not part of the protocol."""

    epsilon: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)
        check_positive("sensitivity", self.sensitivity)


def capabilities(mechanism: Any) -> tuple[str, ...]:
    """The optional capabilities ``mechanism`` implements (callable methods only)."""
    return tuple(name for name in CAPABILITIES if callable(getattr(mechanism, name, None)))


def sample_categorical(probs: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws from a finite distribution by inverse CDF (one uniform per draw)."""
    cdf = np.cumsum(probs)
    cdf /= cdf[-1]
    out = np.searchsorted(cdf, rng.random(size), side="right")
    # Guard against a uniform equal to the last cdf value after rounding.
    return np.minimum(out, len(probs) - 1).astype(np.int64)


def counts_categorical(probs: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """How many of ``size`` draws from a finite distribution fall on each output: one multinomial
    draw, the law of ``np.bincount(sample_categorical(probs, size, rng), minlength=len(probs))``."""
    p = np.asarray(probs, dtype=float)
    return rng.multinomial(size, p / p.sum()).astype(np.int64)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Log-probabilities ∝ exp(logits); entries of -inf get probability 0."""
    top = np.max(logits)
    require(bool(np.isfinite(top)), "utility", logits, "at least one action needs finite utility")
    shifted = logits - top
    return shifted - np.log(np.sum(np.exp(shifted)))


_PER_DATASET: weakref.WeakKeyDictionary[Any, dict] = weakref.WeakKeyDictionary()


def per_dataset(method: Callable) -> Callable:
    """Cache a mechanism's deterministic per-dataset work (a policy, a fit) across ``sample`` calls.

    The cache lives beside the dataset object (weakly keyed), so the work is done once per
    dataset and process, never once per chunk of samples, and mechanisms stay picklable.
    Mechanisms that are not hashable, or data that cannot be weakly referenced, are not cached.
    """

    @functools.wraps(method)
    def wrapper(self, data):
        try:
            slot = _PER_DATASET.setdefault(data, {})
            key = (method.__qualname__, self)
            if key in slot:
                return slot[key]
        except TypeError:
            return method(self, data)
        value = slot[key] = method(self, data)
        return value

    return wrapper
