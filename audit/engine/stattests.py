"""The public entry point of statistical tests: the interface, the registry, and the built-in tests.

A statistical test turns an event's counts (k₁ of n₁ under the favoured side, k₂ of n₂ under the
other) into an ε lower bound; :class:`StatTest` is one (:mod:`dpaudit.engine.stattest` states the
interface and its level convention).  Importing this module registers the built-in tests, in this
order: ``"joint"``, the joint exact test of the ratio (:data:`JOINT`, :mod:`dpaudit.engine.jointratio`),
and ``"clopper-pearson"``, the Clopper–Pearson pair (:data:`PAIR`, :mod:`dpaudit.engine.bounds`).
A test of one's own is added with :func:`register` (or for a block, :func:`registering`) and then
competes in every selection, score, plan and ceiling of the process::

    from dpaudit.engine import stattests

    stattests.register(stattests.StatTest(name="mine", bound=my_bound, title="my test",
                                          described="my test of the counts", requires="..."))

:func:`names` is what a results file's ``test`` may hold.
"""

from __future__ import annotations

from dpaudit.engine.bounds import PAIR
from dpaudit.engine.jointratio import JOINT
from dpaudit.engine.stattest import (
    BOUNDS,
    BoundOfCounts,
    StatTest,
    get,
    names,
    register,
    registered,
    registering,
    unregister,
)

__all__ = ["BOUNDS", "BUILT_IN", "JOINT", "PAIR", "BoundOfCounts", "StatTest", "get", "names", "register",
           "registered", "registering", "unregister"]

BUILT_IN: tuple[StatTest, ...] = (JOINT, PAIR)  # in registration order: ties go to the joint test
