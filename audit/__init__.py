"""dpaudit: empirical differential-privacy auditing.

Public entry points::

    audit_samples(x, y, *, deltas=(0.0,), confidence=0.95, discrete=None) -> Estimate
    audit_mechanism(mechanism, d, d_prime, *, samples=1_000_000, deltas=(0.0,), confidence=0.95,
                    seed=0, n_jobs=1, relation="add-remove", claims=None) -> AuditResult
    assert_private(mechanism, d, d_prime, *, epsilon, delta=0.0, ...)   # for test suites
    search_pair(mechanism, QueryVectors(dim) | RecordSpace(base, records), *, samples, ...) -> AuditResult

Names are imported on first use (PEP 562), so ``import audit`` — and the pytest plugin that
pytest loads in every run — costs nothing until an audit is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> module that owns it
_EXPORTS = {
    "audit_mechanism": "audit.api",
    "audit_samples": "audit.estimate",
    "Estimate": "audit.estimate",
    "Bound": "audit.estimate",
    "AuditResult": "audit.results",
    "ClaimCheck": "audit.results",
    "Event": "audit.views",
    "assert_private": "audit.testing",
    "search_pair": "audit.search",
    "QueryVectors": "audit.search",
    "RecordSpace": "audit.search",
    "Dataset": "neighbors",
    "Pair": "neighbors",
    "Mechanism": "mechanisms.base",
    "Guarantee": "dpcore",
    "InputError": "dpcore",
}

__all__ = sorted([*_EXPORTS, "__version__"])

if TYPE_CHECKING:  # the same names for type checkers; "x as x" marks them as re-exports
    from audit.api import audit_mechanism as audit_mechanism
    from audit.estimate import Bound as Bound
    from audit.estimate import Estimate as Estimate
    from audit.estimate import audit_samples as audit_samples
    from audit.results import AuditResult as AuditResult
    from audit.results import ClaimCheck as ClaimCheck
    from audit.search import QueryVectors as QueryVectors
    from audit.search import RecordSpace as RecordSpace
    from audit.search import search_pair as search_pair
    from audit.testing import assert_private as assert_private
    from audit.views import Event as Event
    from dpcore import Guarantee as Guarantee
    from dpcore import InputError as InputError
    from mechanisms.base import Mechanism as Mechanism
    from neighbors import Dataset as Dataset
    from neighbors import Pair as Pair


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'audit' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
