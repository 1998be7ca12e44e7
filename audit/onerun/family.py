"""The strongest rejected curve of a one-parameter family of curve claims (e.g. DP-SGD's
accountant curves at fixed q and T, σ varied), read as ε at one δ.

Mahloujifar, Melis, Chaudhuri (ICML 2025, Algorithm 2 and Theorem 9) reject one claimed curve
at level τ.  A family {f_σ} ordered by privacy (σ < σ′ ⇒ f_σ ≤ f_σ′, i.e. f_σ′ is the stronger
claim) is searched like GDP's μ: rejecting f_σ implies rejecting every stronger f_σ′, so the
rejected set is an up-set [σ*, ∞) and one bisection finds its least private member σ*.  If the
mechanism is f_σ₀-DP for a member of the family, σ₀ ≥ σ* happens only when f_σ₀ is rejected,
probability ≤ τ: "the mechanism is not f_σ-DP for any σ ≥ σ*" holds at confidence 1 − τ.

DP-SGD's curves are ordered in σ: a Gaussian of larger σ is a post-processing (added noise) of
one of smaller σ, and subsampling and composition keep the order.  Reading σ* as ε(σ*, δ) is a
statement about **that family only**, like GDP's μ: it is never an (ε, δ) lower bound (a
mechanism outside the family can be far more private at δ than the member it fails).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dpaudit.core import require
from dpaudit.onerun.curves import CurveClaim
from dpaudit.onerun.fdp import rejects_claim
from dpaudit.onerun.rules import Test

__all__ = ["FamilyRejection", "strongest_rejected"]


@dataclass(frozen=True)
class FamilyRejection:
    """``parameter``: the least private family member the run rejects (None: none in range);
    ``epsilon``: that member's ε at ``delta`` (0 when none) — valid against the family only."""

    family: str
    parameter_name: str
    parameter: float | None
    epsilon: float
    delta: float
    validity: str
    evaluations: int
    method: str | None = None  # None: the f-DP recursion

    def to_dict(self) -> dict[str, object]:
        return {"family": self.family, "parameter": {self.parameter_name: self.parameter},
                "epsilon_read": self.epsilon, "delta": self.delta, "validity": self.validity,
                "method": self.method or "Mahloujifar-Melis-Chaudhuri 2025, Alg. 2, bisection over an ordered family"}


def _recursion_rejects(claim: CurveClaim, tests: Sequence[Test]) -> bool:
    # Each test at its own level (α, or α/G on a Bonferroni grid), as for a single curve claim.
    return any(rejects_claim(claim, m=t.m, c_prime=t.r, c=t.v, tau=t.alpha) for t in tests)


def strongest_rejected(tests: Sequence[Test], curve: Callable[[float], CurveClaim], *, lower: float, upper: float,
                       read: Callable[[float], float], delta: float, family: str, parameter_name: str = "sigma",
                       tolerance: float = 0.01, rejects: Callable[[CurveClaim], bool] | None = None,
                       method: str | None = None) -> FamilyRejection:
    """Bisection (geometric) for the least private rejected member in [lower, upper].

    ``curve(p)`` is the member of parameter p, more private as p grows; ``read(p)`` its ε at
    ``delta``.  The returned parameter is always one the run rejected (the bracket's rejected
    end), so the statement is conservative to within ``tolerance`` (relative).  ``rejects``: the
    test of one member when it is not the f-DP recursion over ``tests`` (the independent-canary
    test, :mod:`dpaudit.onerun.isolated`; ``method`` then names it in the record)."""
    require(0 < lower < upper and math.isfinite(upper), "lower/upper", (lower, upper), "must satisfy 0 < lower < upper")
    require(rejects is not None or len(tests) >= 1, "tests", tests, "must hold the rule's tests")
    label = f"valid against the {family} family only; not an (epsilon, delta) lower bound"

    def _rejected(claim: CurveClaim, tests: Sequence[Test]) -> bool:
        return rejects(claim) if rejects is not None else _recursion_rejects(claim, tests)

    calls = 1
    if not _rejected(curve(upper), tests):
        return FamilyRejection(family, parameter_name, None, 0.0, delta, label, calls, method)
    calls += 1
    if _rejected(curve(lower), tests):
        hi = lower
    else:
        lo, hi = lower, upper
        while hi / lo > 1.0 + tolerance:
            mid = math.sqrt(lo * hi)
            calls += 1
            if _rejected(curve(mid), tests):
                hi = mid
            else:
                lo = mid
    return FamilyRejection(family, parameter_name, float(hi), float(read(hi)), delta, label, calls, method)
