"""OpenDP measurements as audits: the mechanism, the neighbours of its input metric, and ``map(d_in)``.

An OpenDP measurement carries its own privacy statement: its input metric says which datasets are
neighbours at distance ``d_in``, and its privacy map gives the bound ``map(d_in)`` in its output
measure.  :func:`from_opendp` reads all three from the measurement and converts the bound:

* ``MaxDivergence`` → ε-DP (δ = 0);
* ``Approximate<MaxDivergence>`` (fixed smoothed max divergence) → one (ε, δ) point;
* ``SmoothedMaxDivergence`` (a privacy profile δ ↦ ε(δ)) → the points (ε(δ), δ) at ``deltas``;
* ``ZeroConcentratedDivergence`` → ρ-zCDP (:class:`dpaudit.claims.ZCDP`, audited through the (ε, δ)
  curve it implies by Canonne, Kamath and Steinke 2020, Prop. 12);
* ``Approximate<ZeroConcentratedDivergence>`` with δ = 0 → ρ-zCDP as well.

Neighbours by input metric: ``SymmetricDistance`` / ``InsertDeleteDistance`` (one record added or
removed: add-remove; on a domain of known size n a change is distance 2: swap),
``ChangeOneDistance`` / ``HammingDistance`` (one record replaced: swap), and the bounded distances
``AbsoluteDistance``, ``L1Distance``, ``L2Distance``, ``LInfDistance`` on a query's answer (the
pair's own distance is ``d_in``).  OpenDP draws its noise from the operating system, so the
mechanism is unseeded (:func:`dpaudit.adapters.per_call`, or :func:`dpaudit.adapters.from_factory`
when a picklable factory is given, which also lets the audit use worker processes).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpaudit.adapters import from_factory, per_call
from dpaudit.claims import ZCDP
from dpaudit.core import Guarantee, InputError, Relation
from dpaudit.libraries.common import LibraryAudit, library_version, opendp_core
from dpaudit.neighbors import Pair

__all__ = ["MEASURES", "METRICS", "from_opendp", "opendp_claims", "opendp_distance", "opendp_pair"]

MEASURES = ("MaxDivergence", "Approximate<MaxDivergence>", "SmoothedMaxDivergence", "ZeroConcentratedDivergence",
            "Approximate<ZeroConcentratedDivergence>")
DATASET_METRICS = ("SymmetricDistance", "InsertDeleteDistance", "ChangeOneDistance", "HammingDistance")
ANSWER_METRICS = ("AbsoluteDistance", "L1Distance", "L2Distance", "LInfDistance")
METRICS = DATASET_METRICS + ANSWER_METRICS
DEFAULT_SIZE = 10  # records of the default pair on a change-one domain of unknown size


def _plain(data: Any) -> Any:
    """What an OpenDP function takes: Python lists and scalars, not numpy arrays."""
    if isinstance(data, np.ndarray):
        return data.tolist()
    if isinstance(data, np.generic):
        return data.item()
    return list(data) if isinstance(data, tuple) else data


def release(measurement: Any, data: Any) -> Any:
    """One release of ``measurement`` on ``data`` (numpy input made plain first)."""
    return measurement(_plain(data))


def _metric_name(measurement: Any) -> str:
    return str(measurement.input_metric.type).split("<")[0].split("::")[-1]  # e.g. opendp::metrics::LInfDistance<i32>


def opendp_distance(metric: str, d: Any, d_prime: Any) -> float:
    """The distance of ``d`` and ``d_prime`` under OpenDP's input metric named ``metric``."""
    if metric in ("SymmetricDistance", "InsertDeleteDistance", "ChangeOneDistance"):
        a, b = Counter(_plain(d)), Counter(_plain(d_prime))
        moved = sum(((a - b) + (b - a)).values())
        if metric == "ChangeOneDistance":
            if len(_plain(d)) != len(_plain(d_prime)):
                raise InputError(f"d and d_prime have {len(_plain(d))} and {len(_plain(d_prime))} records: "
                                 "ChangeOneDistance compares datasets of one size")
            return moved / 2
        return float(moved)
    if metric == "HammingDistance":
        x, y = _plain(d), _plain(d_prime)
        if len(x) != len(y):
            raise InputError(f"d and d_prime have {len(x)} and {len(y)} records: HammingDistance compares "
                             "datasets of one size")
        return float(sum(u != v for u, v in zip(x, y, strict=True)))
    diff = np.abs(np.asarray(d, dtype=float) - np.asarray(d_prime, dtype=float)).ravel()
    norms = {"AbsoluteDistance": float(diff.max(initial=0.0)), "L1Distance": float(diff.sum()),
             "L2Distance": float(np.sqrt(np.sum(diff**2))), "LInfDistance": float(diff.max(initial=0.0))}
    return norms[metric]


def _d_in(measurement: Any, distance: float) -> Any:
    """``distance`` in the metric's distance type (integers rounded up: never a smaller d_in)."""
    kind = str(measurement.input_metric.distance_type)
    return math.ceil(distance) if kind[0] in "iu" else float(distance)


def _relation(metric: str, d: Any, d_prime: Any) -> str:
    if metric in ("SymmetricDistance", "InsertDeleteDistance") and len(_plain(d)) != len(_plain(d_prime)):
        return Relation.ADD_REMOVE.value
    return Relation.SWAP.value


def opendp_claims(measurement: Any, d_in: Any, *, relation: str, deltas: Sequence[float] = (1e-6,),
                  claim_id: str = "", source: str = "") -> tuple[tuple[Any, ...], str]:
    """The claims ``measurement.map(d_in)`` states in its output measure, and how they were read."""
    measure = str(measurement.output_measure.type)
    if measure not in MEASURES:
        raise InputError(f"output measure {measure} ({measurement.output_measure}) of the measurement cannot be "
                         "converted to a dpaudit claim: "
                         f"supported are {', '.join(MEASURES)}")
    value = measurement.map(d_in)
    reading = f"map({d_in}) under {measure} = {value}"
    fields: dict[str, Any] = {"relation": relation, "claim_id": claim_id,
                              "source": source or f"OpenDP {library_version('opendp')} privacy map"}
    if measure == "MaxDivergence":
        return (Guarantee(epsilon=float(value), **fields),), reading
    if measure == "SmoothedMaxDivergence":
        return tuple(Guarantee(epsilon=float(value.epsilon(delta)), delta=float(delta), **fields)
                     for delta in deltas), reading
    if measure == "ZeroConcentratedDivergence":
        return (ZCDP(float(value), **fields),), reading
    first, delta = value
    if measure == "Approximate<MaxDivergence>":
        return (Guarantee(epsilon=float(first), delta=float(delta), **fields),), reading
    if delta != 0:
        raise InputError(f"output measure {measure} with delta = {delta} (approximate zCDP) cannot be converted "
                         f"to a dpaudit claim: supported are {', '.join(MEASURES)} (the last with delta = 0)")
    return (ZCDP(float(first), **fields),), reading


def _typed(element: Any, value: float) -> Any:
    return int(value) if str(element.carrier_type)[0] in "iu" else float(value)


def opendp_pair(measurement: Any) -> Pair:
    """A neighbouring pair from the measurement's input domain: records at its bounds, one added
    (symmetric distance), or one of n replaced (a sized domain, change-one, Hamming); for a scalar
    answer under a bounded distance, 0 and 1.  Other domains need the pair given."""
    domain, metric = measurement.input_domain, _metric_name(measurement)
    kind = str(domain.type)
    if kind.startswith("AtomDomain") and metric in ANSWER_METRICS:
        return Pair(_typed(domain, 0), _typed(domain, 1), f"answers 0 and 1 ({metric})", Relation.SWAP.value)
    element = getattr(domain, "element_domain", None)
    if not kind.startswith("VectorDomain<AtomDomain") or element is None or str(element.carrier_type) in (
            "String", "bool") or metric not in DATASET_METRICS:
        raise InputError(f"the measurement's input domain {domain} under {metric} has no default pair: give "
                         "d and d_prime (a neighbouring pair of inputs)")
    low, high = element.bounds if element.bounds is not None else (0, 1)
    far, near = (high, low) if abs(high) >= abs(low) else (low, high)
    far, near = _typed(element, far), _typed(element, near)
    size = domain.size
    if size is None and metric in ("SymmetricDistance", "InsertDeleteDistance"):
        return Pair(np.array([near]), np.array([near, far]), f"add a record {far} to [{near}]",
                    Relation.ADD_REMOVE.value)
    n = size or DEFAULT_SIZE
    return Pair(np.array([near] * n), np.array([near] * (n - 1) + [far]),
                f"{n} records {near}; one replaced by {far}", Relation.SWAP.value)


def _measurement(obj: Any, dp: Any) -> tuple[Any, Callable[[], Any] | None]:
    """(the measurement, its factory or None) from what the user gave."""
    if isinstance(obj, dp.Measurement):
        return obj, None
    if isinstance(obj, dp.Transformation):
        raise InputError("from_opendp takes a Measurement: this is a Transformation, which adds no noise; chain it "
                         "with a measurement (e.g. >> dp.m.then_laplace(scale=...))")
    if callable(obj) and not isinstance(obj, type):
        built = obj()
        if isinstance(built, dp.Measurement):
            return built, obj
        raise InputError(f"the factory returned a {type(built).__name__}: it must return an opendp Measurement")
    raise InputError(f"from_opendp takes an opendp Measurement (or a picklable factory returning one), not a "
                     f"{type(obj).__name__}")


def from_opendp(measurement: Any, *, d: Any = None, d_prime: Any = None, deltas: Sequence[float] = (1e-6,),
                name: str = "", claim_id: str = "", n_jobs: int = 1) -> LibraryAudit:
    """An OpenDP ``measurement`` (or a picklable zero-argument factory returning one) as an audit.

    The pair is ``(d, d_prime)`` when given (checked against the input metric: its distance is the
    ``d_in`` of the claim), else :func:`opendp_pair`.  The claim is ``map(d_in)`` in the measurement's
    output measure (see the module's list; ``deltas`` are the points of a privacy profile)."""
    dp = opendp_core()
    meas, factory = _measurement(measurement, dp)
    metric = _metric_name(meas)
    if metric not in METRICS:
        raise InputError(f"input metric {meas.input_metric} has no dpaudit neighbour relation: supported are "
                         f"{', '.join(METRICS)}")
    if (d is None) != (d_prime is None):
        raise InputError("give both d and d_prime (a neighbouring pair), or neither (the default pair)")
    if d is None:
        pair = opendp_pair(meas)
    else:
        pair = Pair(d, d_prime, "the given pair", _relation(metric, d, d_prime))
    distance = opendp_distance(metric, pair.d, pair.d_prime)
    if distance <= 0:
        raise InputError(f"d and d_prime are equal under {metric}: a neighbouring pair must differ")
    d_in = _d_in(meas, distance)
    pair = Pair(pair.d, pair.d_prime, f"{pair.description}; {metric} d_in = {d_in}", pair.relation)
    claims, reading = opendp_claims(meas, d_in, relation=pair.relation, deltas=deltas, claim_id=claim_id)
    label = name or f"opendp-{metric}-{meas.output_measure.type!s}"
    if factory is None:
        mech: Any = per_call(lambda data: release(meas, data), name=label, n_jobs=1)
    else:
        mech = from_factory(factory, name=label, release=release, n_jobs=n_jobs)
    return LibraryAudit("opendp", library_version("opendp"), mech, pair, claims, reading, seeded=False)
