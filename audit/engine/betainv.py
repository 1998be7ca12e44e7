"""Inverses of the regularised incomplete beta function, each answer checked.

The Clopper–Pearson interval of k successes in n trials at level α is
[I⁻¹(α; k, n − k + 1), I⁻¹(1 − α; k + 1, n − k)], the quantiles of beta laws (Clopper and Pearson,
Biometrika 26, 1934).  ``scipy.special.betaincinv`` and ``betainccinv`` (which ``scipy.stats.beta``'s
``ppf`` and ``isf`` call) return wrong values at some arguments: with scipy 1.17.1 and a parameter of
exactly 1000, ``betaincinv(1000, 1e9 - 999, 0.0025)`` is 1.90·10⁻⁶ where the quantile is 9.13·10⁻⁷
(``betainc`` there is 1.0, not 0.0025), and ``betainccinv(1000, 1e9 - 999, 0.0025)`` is too small (its
tail there is 0.0044).  Either error makes a Clopper–Pearson bound anti-conservative: an event counted
exactly 1000 times on its favoured side would certify an ε up to log 2 too large.

So every inverse is checked against the function itself, which scipy evaluates accurately and which
is monotone in x: an answer x is kept when I(x(1 − r)) ≤ p ≤ I(x(1 + r)) with r = 10⁻⁷ (the true
quantile lies within a relative 10⁻⁷ of x: scipy's answers are usually within 10⁻⁸, and a bound's
ε moves by at most about 10⁻⁷ within that), and otherwise solved again by Brent's method on
I(x) − p, bracketed on [0, 1], to machine precision.  The check costs two evaluations of I per
answer; a re-solve, about fifty, and happens only where scipy's inverse is wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import optimize, special

__all__ = ["RELATIVE", "betainccinv", "betaincinv"]

RELATIVE = 1e-7
"""How close (relative) the true quantile must be shown to lie to an answer of scipy's that is kept."""


def betaincinv(a: Any, b: Any, p: Any) -> np.ndarray:
    """x with I_x(a, b) = p, for arrays broadcast together (``scipy.special.betaincinv``, checked)."""
    return _checked(special.betaincinv, special.betainc, a, b, p, increasing=True)


def betainccinv(a: Any, b: Any, p: Any) -> np.ndarray:
    """x with 1 − I_x(a, b) = p (``scipy.special.betainccinv``, checked)."""
    return _checked(special.betainccinv, special.betaincc, a, b, p, increasing=False)


def _checked(inverse: Callable[..., Any], function: Callable[..., Any], a: Any, b: Any, p: Any, *,
             increasing: bool) -> np.ndarray:
    a, b, p = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, p)))
    x = np.array(inverse(a, b, p), dtype=float, ndmin=1 if a.ndim else 0)
    below, above = x * (1 - RELATIVE), np.minimum(x * (1 + RELATIVE), 1.0)
    low, high = function(a, b, below), function(a, b, above)
    if not increasing:
        low, high = high, low
    # a subnormal x has too few digits to be checked at this resolution: kept, within a few units in
    # its last place
    inside = ((low <= p) & (p <= high)) | (below == x) | (above == x)
    # scipy answers the smallest normal double (2.2e-308) for a quantile below it (a parameter far
    # below 1, at a Clopper-Pearson ceiling's expected counts): the quantile is in [0, 2.2e-308],
    # given as its end on the side of a Clopper-Pearson bound's safety (0 for a lower bound, the
    # answer itself for an upper one) rather than solved for among subnormals
    tiny = x <= np.finfo(float).tiny
    if increasing:  # I(x) > p: the quantile is below x
        rounded = ~inside & tiny & (low > p)
        x = np.where(rounded, 0.0, x)
    else:  # 1 - I(x) < p: the quantile is below x, which an upper bound may keep
        rounded = ~inside & tiny & (high < p)
    inside |= rounded
    # an answer of 0 or 1 at the ends of the domain is exact where p is the function's value there
    bad = ~inside & (x > 0) & (x < 1) & np.isfinite(x) & (a > 0) & (b > 0) & (p > 0) & (p < 1)
    if np.any(bad):
        flat = np.flatnonzero(bad) if x.ndim else None
        for i in (flat if flat is not None else (None,)):
            ai, bi, pi = (float(v[i] if i is not None else v) for v in (a, b, p))
            root = optimize.brentq(lambda t, ai=ai, bi=bi, pi=pi: float(function(ai, bi, t)) - pi, 0.0, 1.0,
                                   xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=1000)
            if i is None:
                x = np.asarray(root)
            else:
                x.flat[i] = root
    return x
