"""python-dp (Google's differential-privacy library) algorithms as audits, unseeded.

python-dp's algorithms (``BoundedSum``, ``BoundedMean``, ``BoundedVariance``,
``BoundedStandardDeviation``, ``Count``, ``Percentile``, ``Median``, ``Max``, ``Min`` of
``pydp.algorithms.laplacian``) state ``epsilon`` and ``delta`` for one privacy unit contributing
at most ``l0_sensitivity`` partitions and ``linf_sensitivity`` records (1 and 1 by default: one
record added or removed, add-remove).  The library draws its noise from its own secure generator,
so the audit cannot seed it: each release is ``quick_result(records)`` on an algorithm built once
per process (:func:`dpaudit.adapters.from_factory`), and the record says "unseeded".

:func:`from_pydp` takes a ``functools.partial`` of the algorithm class with its keyword arguments
(the bounds are read from it: the built object does not expose them); an algorithm object itself
is taken too, with the pair given.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dpaudit.adapters import from_factory, per_call
from dpaudit.core import Guarantee, InputError, Relation
from dpaudit.libraries.common import LibraryAudit, library_version, load_library
from dpaudit.neighbors import Pair

__all__ = ["ALGORITHMS", "from_pydp", "quick_result"]

ALGORITHMS = ("BoundedSum", "BoundedMean", "BoundedVariance", "BoundedStandardDeviation", "Count", "Percentile",
              "Median", "Max", "Min")
DEFAULT_SIZE = 10  # records of the default pair's dataset


def quick_result(algorithm: Any, data: Any) -> float:
    """One release: python-dp's ``quick_result`` on the records (a fresh draw each call)."""
    values = np.asarray(data).tolist()
    return float(algorithm.quick_result(values))


def _class_of(obj: Any) -> type:
    cls = obj.func if isinstance(obj, functools.partial) else type(obj)
    if not (isinstance(cls, type) and cls.__module__.startswith("pydp.algorithms") and cls.__name__ in ALGORITHMS):
        raise InputError(f"from_pydp does not know {obj!r}: supported are python-dp's {', '.join(ALGORITHMS)} "
                         "(pydp.algorithms.laplacian), as an object or a functools.partial of the class")
    return cls


def _default_pair(keywords: dict[str, Any], integer: bool) -> Pair:
    low, high = keywords.get("lower_bound"), keywords.get("upper_bound")
    if low is None or high is None:
        low, high = 0, 1
    far, near = (high, low) if abs(high) >= abs(low) else (low, high)
    kind = int if integer else float
    base = [kind(near)] * DEFAULT_SIZE
    return Pair(np.array(base), np.array([*base, kind(far)]), f"{DEFAULT_SIZE} records {near}; add a record {far}",
                Relation.ADD_REMOVE.value)


def from_pydp(algorithm: Any, *, d: Any = None, d_prime: Any = None, name: str = "", claim_id: str = "",
              n_jobs: int = 1) -> LibraryAudit:
    """A python-dp algorithm (a ``functools.partial`` of its class, or an object) as an audit.

    The claim is the algorithm's own ``epsilon`` and ``delta`` under add-remove (one record, with
    the default contribution bounds ``l0_sensitivity = linf_sensitivity = 1``)."""
    load_library("pydp", "python-dp")
    cls = _class_of(algorithm)
    if (d is None) != (d_prime is None):
        raise InputError("give both d and d_prime (a neighbouring pair), or neither (the default pair)")
    partial = isinstance(algorithm, functools.partial)
    if not partial and d is None:
        raise InputError(f"a {cls.__name__} object does not expose its bounds: give d and d_prime, or pass "
                         f"functools.partial({cls.__name__}, epsilon=..., lower_bound=..., upper_bound=...)")
    built = algorithm() if partial else algorithm
    if (built.l0_sensitivity, built.linf_sensitivity) != (1, 1):
        raise InputError(f"l0_sensitivity = {built.l0_sensitivity}, linf_sensitivity = {built.linf_sensitivity}: "
                         "the adapter audits one record's contribution (both 1)")
    integer = str(getattr(built, "dtype", "float")).startswith("int")
    pair = _default_pair(dict(algorithm.keywords), integer) if d is None else Pair(
        d, d_prime, "the given pair", Relation.ADD_REMOVE.value)
    claim = Guarantee(epsilon=float(built.epsilon), delta=float(built.delta), relation=pair.relation,
                      source=f"python-dp {library_version('python-dp')}, {cls.__name__}(epsilon={built.epsilon})",
                      claim_id=claim_id)
    label = name or f"pydp-{cls.__name__}"
    if partial:
        mech: Any = from_factory(algorithm, name=label, release=quick_result, n_jobs=n_jobs)
    else:  # an object cannot be pickled: it stays in this process
        mech = per_call(functools.partial(quick_result, built), name=label, n_jobs=1)
    return LibraryAudit("python-dp", library_version("python-dp"), mech, pair, (claim,),
                        f"the object's parameters: {claim.source}", seeded=False)
