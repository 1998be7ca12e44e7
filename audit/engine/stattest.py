"""A statistical test of an event's counts as one object, and the registry the engine reads.

An event S seen k₁ of n₁ times under the favoured side and k₂ of n₂ times under the other certifies
a lower bound of ε at some confidence; each way of computing it from the four counts is a
:class:`StatTest`, registered once by its name in the module that defines it (the Clopper–Pearson
pair in :mod:`dpaudit.engine.bounds`, the joint exact test of the ratio in
:mod:`dpaudit.engine.jointratio`; a user's own through :func:`dpaudit.engine.stattests.register`).

The engine reads the registry, never a list of names: the selection gives each event the registered
test with the highest bound of its projected counts (:func:`dpaudit.engine.bounds.better_test`), the
candidates' scores and the planner take the highest registered score
(:func:`dpaudit.engine.bounds.both_tests`), the ceiling raises the pair's bound of its shortlist to
every other registered bound (:func:`dpaudit.engine.bounds.best_event`), the detectable-leak model
takes a record's test by its saved name (:mod:`dpaudit.engine.detectable`), and the estimate and the
summary word it by its :attr:`StatTest.described` and :attr:`StatTest.title`.

Level convention.  Every bound function is called as ``bound(k_fav, n_fav, k_oth, n_oth, delta,
alpha)`` with arrays (or numbers) broadcast together and α = (1 − confidence)/2, the level of each
side of the Clopper–Pearson pair; a test spends :attr:`StatTest.spends`·α in all (2 for both built-in
tests: the pair by the union bound of its two sides, the joint test as one test at level 2α), and a
test spending more than 2α (more than the 1 − confidence asked for) is refused.  A bound returns
−inf where it certifies nothing and is not clipped at 0.

Ties between tests go to the one registered first (the joint test, then the pair: the order
:mod:`dpaudit.engine.bounds` imports and defines them in).  The registry is per process: the
selection and the bounds are computed in the process that calls the audit (worker processes only draw
outputs), and a process started afresh knows the tests its imported modules register.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from dpaudit.core import InputError, require

__all__ = ["BOUNDS", "BoundOfCounts", "StatTest", "get", "names", "register", "registered", "registering",
           "unregister"]

MAX_SPENDS = 2.0  # of α = (1 − confidence)/2: a test's whole level is at most 1 − confidence


class BoundOfCounts(Protocol):
    """ε lower bound (or a score of one) from counts: element-wise in the four counts, −inf where nothing
    is certified; ``alpha`` is (1 − confidence)/2 (module docstring)."""

    def __call__(self, k_fav: np.ndarray | float, n_fav: np.ndarray | float, k_oth: np.ndarray | float,
                 n_oth: np.ndarray | float, delta: float, alpha: float, /) -> np.ndarray: ...


@dataclass(frozen=True)
class StatTest:
    """One statistical test of an event's counts.

    ``name`` is what a results file saves with each bound (``test``) and never changes meaning;
    ``bound`` certifies; ``score`` (default: ``bound``) ranks candidates and plans budgets, never
    certifies (a cheaper form at large counts); ``rough`` (default: ``score``) is a closed form for
    searches that evaluate it over many projected sizes (the detectable-leak budget); ``title`` and
    ``described`` word the test in the summary and in a bound's witness; ``requires`` states what it
    needs to be valid; ``spends`` its whole level as a multiple of α (module docstring)."""

    name: str
    bound: BoundOfCounts
    title: str
    described: str
    requires: str
    spends: float = 2.0
    score: BoundOfCounts | None = None
    rough: BoundOfCounts | None = None

    @property
    def scorer(self) -> BoundOfCounts:
        """The form that ranks candidates and plans: ``score``, or the bound itself."""
        return self.bound if self.score is None else self.score

    @property
    def closed_form(self) -> BoundOfCounts:
        """The form searched over many sizes: ``rough``, or :attr:`scorer`."""
        return self.scorer if self.rough is None else self.rough


_REGISTRY: dict[str, StatTest] = {}


def _check(test: StatTest) -> None:
    require(isinstance(test, StatTest), "test", test, "must be a dpaudit.engine.stattests.StatTest")
    require(isinstance(test.name, str) and test.name != "" and test.name == test.name.strip()
            and test.name.isprintable(), "test name", test.name, "must be a non-empty printable string")
    for field in ("bound", "score", "rough"):
        value = getattr(test, field)
        require(callable(value) or (value is None and field != "bound"), f"test {field}", value,
                "must be callable" + ("" if field == "bound" else " or None"))
    for field in ("title", "described", "requires"):
        require(isinstance(getattr(test, field), str) and getattr(test, field) != "", f"test {field}",
                getattr(test, field), "must be a non-empty string")
    require(isinstance(test.spends, (int, float)) and not isinstance(test.spends, bool)
            and 0.0 < test.spends <= MAX_SPENDS, "test spends", test.spends,
            f"must be in (0, {MAX_SPENDS:g}]: a test spends at most 1 - confidence = {MAX_SPENDS:g} alpha")


def register(test: StatTest, *, replace: bool = False) -> StatTest:
    """Add ``test`` under its name (ties of later registered tests go to earlier ones) and return it; a
    name already registered is refused unless ``replace`` (which keeps its place in the order)."""
    _check(test)
    require(replace or test.name not in _REGISTRY, "test name", test.name,
            "is registered already (unregister it first, or pass replace=True)")
    _REGISTRY[test.name] = test
    return test


def unregister(name: str) -> StatTest:
    """Remove the test registered as ``name`` and return it."""
    test = get(name)
    del _REGISTRY[name]
    return test


def get(name: str) -> StatTest:
    """The test registered as ``name``."""
    if not isinstance(name, str) or name not in _REGISTRY:
        raise InputError(f"test: {name!r} is not a registered statistical test; registered: "
                         f"{', '.join(_REGISTRY) or 'none'}")
    return _REGISTRY[name]


def names() -> tuple[str, ...]:
    """The registered tests' names, in registration order (a results file's ``test`` takes one)."""
    return tuple(_REGISTRY)


def registered() -> tuple[StatTest, ...]:
    """The registered tests, in registration order."""
    return tuple(_REGISTRY.values())


@contextmanager
def registering(test: StatTest) -> Iterator[StatTest]:
    """``test`` registered within this block only."""
    register(test)
    try:
        yield test
    finally:
        _REGISTRY.pop(test.name, None)


class _Bounds(Mapping[str, Callable[..., np.ndarray]]):
    """The registered tests' bound functions by name, read live (a KeyError for an unknown name)."""

    def __getitem__(self, name: str) -> Callable[..., np.ndarray]:
        return _REGISTRY[name].bound

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(_REGISTRY))

    def __len__(self) -> int:
        return len(_REGISTRY)


BOUNDS: Mapping[str, Callable[..., np.ndarray]] = _Bounds()
