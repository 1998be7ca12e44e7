"""dpaudit: empirical differential-privacy auditing.

Public entry points::

    audit_samples(x, y, *, deltas=(0.0,), confidence=0.95, discrete=None) -> Estimate
    audit_mechanism(mechanism, d, d_prime, *, samples=1_000_000, deltas=(0.0,), confidence=0.95,
                    seed=0, n_jobs=1, relation="add-remove", claims=None) -> AuditResult
"""

from audit.api import audit_mechanism
from audit.estimate import Bound, Estimate, audit_samples
from audit.results import AuditResult, ClaimCheck
from audit.views import Event
from mechanisms.base import Guarantee, InputError

__version__ = "0.1.0"

__all__ = ["AuditResult", "Bound", "ClaimCheck", "Estimate", "Event", "Guarantee", "InputError",
           "audit_mechanism", "audit_samples", "__version__"]
