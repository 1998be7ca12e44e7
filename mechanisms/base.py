"""The mechanism protocol, the `Guarantee` record, and input validation.

A mechanism is anything with a ``name`` and ``sample(data, size, rng)``; the white-box
methods ``output_distribution`` and ``guarantees`` are optional.  Nothing here must be
subclassed: :class:`Mechanism` is a structural ``Protocol``.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

RELATIONS = ("add-remove", "swap", "label-flip", "zero-out", "user-level")
CLAIM_KINDS = ("printed", "corrected", "tight")


class InputError(ValueError):
    """A value that entered from outside is invalid; the message names field, value and rule."""


def require(ok: bool, field: str, value: Any, allowed: str) -> None:
    """Raise :class:`InputError` naming ``field``, ``value`` and what is ``allowed`` unless ``ok``."""
    if not ok:
        raise InputError(f"{field} = {value!r} is invalid: {allowed}")


def check_positive(field: str, value: Any) -> float:
    """A finite real number > 0."""
    require(_is_real(value) and math.isfinite(value) and value > 0, field, value,
            "must be a finite number > 0")
    return float(value)


def check_nonnegative(field: str, value: Any) -> float:
    """A finite real number >= 0."""
    require(_is_real(value) and math.isfinite(value) and value >= 0, field, value,
            "must be a finite number >= 0")
    return float(value)


def check_probability_vector(field: str, value: Any, size: int) -> np.ndarray:
    """A length-``size`` vector of finite non-negative numbers summing to 1 (to 1e-9)."""
    arr = np.asarray(value, dtype=float)
    require(arr.shape == (size,), field, value, f"must be a vector of length {size}")
    require(bool(np.all(np.isfinite(arr)) and np.all(arr >= 0)), field, value,
            "entries must be finite and >= 0")
    require(abs(float(arr.sum()) - 1.0) <= 1e-9, field, value, "entries must sum to 1")
    return arr


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Guarantee:
    """An analytic (ε, δ) claim about a mechanism, evaluated on one dataset.

    ``claim_id`` is the stable identifier users pin in regression tests; ``kind`` is
    ``printed`` (as the source states it), ``corrected`` (a repaired statement) or ``tight``
    (an exact or analytic reference curve).  A claim whose preconditions fail on the
    dataset carries ``applicable=False``, ``epsilon=inf`` and the reason in ``note``.
    """

    epsilon: float
    delta: float = 0.0
    relation: str = "add-remove"
    source: str = ""
    claim_id: str = ""
    kind: str = "printed"
    applicable: bool = True
    note: str = ""

    def __post_init__(self) -> None:
        require(_is_real(self.epsilon) and not math.isnan(self.epsilon) and self.epsilon >= 0,
                "Guarantee.epsilon", self.epsilon, "must be a number >= 0 (inf allowed)")
        require(_is_real(self.delta) and 0.0 <= self.delta <= 1.0, "Guarantee.delta", self.delta,
                "must be in [0, 1]")
        require(self.relation in RELATIONS, "Guarantee.relation", self.relation,
                f"must be one of {', '.join(RELATIONS)}")
        require(self.kind in CLAIM_KINDS, "Guarantee.kind", self.kind,
                f"must be one of {', '.join(CLAIM_KINDS)}")
        require(self.applicable or bool(self.note), "Guarantee.note", self.note,
                "a not-applicable claim must say why")

    @classmethod
    def not_applicable(cls, reason: str, **fields: Any) -> "Guarantee":
        """A claim whose preconditions fail on the dataset, with the reason."""
        return cls(epsilon=math.inf, applicable=False, note=reason, **fields)


@runtime_checkable
class Mechanism(Protocol):
    """What dpaudit needs to audit a mechanism as a black box.

    ``sample`` returns ``size`` independent outputs: shape ``(size,)`` for discrete or
    scalar outputs, ``(size, k)`` for vectors.  Optional white-box methods:
    ``output_distribution(data) -> probabilities over outputs 0..k-1``,
    ``guarantees(data, relation) -> list[Guarantee]``, and
    ``pair_guarantees(d, d_prime, relation)`` for claims whose free parameters depend on
    both datasets of the pair (e.g. the smallest admissible B of the KL paper's RLHF bounds).
    """

    name: str

    def sample(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray: ...


def sample_categorical(probs: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws from a finite distribution by inverse CDF (one uniform per draw)."""
    cdf = np.cumsum(probs)
    cdf /= cdf[-1]
    out = np.searchsorted(cdf, rng.random(size), side="right")
    # Guard against a uniform equal to the last cdf value after rounding.
    return np.minimum(out, len(probs) - 1).astype(np.int64)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Log-probabilities ∝ exp(logits); entries of -inf get probability 0."""
    top = np.max(logits)
    require(bool(np.isfinite(top)), "utility", logits, "at least one action needs finite utility")
    shifted = logits - top
    return shifted - np.log(np.sum(np.exp(shifted)))


_PER_DATASET: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


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
