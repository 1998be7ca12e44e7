"""Inverses of the regularised incomplete beta function, each answer checked.

The Clopper–Pearson interval of k successes in n trials at level α is
[I⁻¹(α; k, n − k + 1), I⁻¹(1 − α; k + 1, n − k)], the quantiles of beta laws (Clopper and Pearson,
Biometrika 26, 1934).  ``scipy.special.betaincinv`` and ``betainccinv`` (which ``scipy.stats.beta``'s
``ppf`` and ``isf`` call) return wrong values at some arguments: with scipy 1.17.1 and a parameter of
exactly 1000, ``betaincinv(1000, 1e9 - 999, 0.0025)`` is 1.90·10⁻⁶ where the quantile is 9.13·10⁻⁷
(``betainc`` there is 1.0, not 0.0025), and ``betainccinv(1000, 1e9 - 999, 0.0025)`` is too small (its
tail there is 0.0044); with b = 1000 the same happens to 1 − x near 1 (the upper bound of 6.19·10⁹
successes and 1000 failures has 1 − x 60 % too large).  Each error makes a Clopper–Pearson bound
anti-conservative: an event counted exactly 1000 times on its favoured side would certify an ε up to
log 2 too large, and the joint test's correction, which scales with 1 − p, up to 0.47 too large.

So every inverse is checked against the function itself, which scipy evaluates accurately and which
is monotone in x: an answer x ≤ ½ is kept when I(x(1 − r)) ≤ p ≤ I(x(1 + r)) with r = 10⁻⁷ (the true
quantile lies within a relative 10⁻⁷ of x: scipy's answers are usually within 10⁻⁸, and a bound's
ε moves by at most about 10⁻⁷ within that), and otherwise solved again by Brent's method on
I(x) − p, bracketed on [0, 1], to machine precision; an answer above ½ likewise in t = 1 − x, through
I_x(a, b) = 1 − I_{1−x}(b, a).  The check costs two evaluations of I per
answer; a re-solve, about fifty, and happens only where scipy's inverse is wrong.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import special

__all__ = ["BRACKET_STEPS", "BRACKET_TINY", "BRACKET_WIDEN", "RELATIVE", "betainccinv", "betaincinv", "bracket"]

RELATIVE = 1e-7
"""How close (relative) the true quantile must be shown to lie to an answer of scipy's that is kept."""


BRACKET_WIDEN = 3 * RELATIVE
"""Relative widening of a quantile bracketed between two answers at anchor counts (:func:`bracket`):
each kept answer is within :data:`RELATIVE` of its quantile, so two answers' errors and rounding fit."""
BRACKET_TINY = 1e-280
"""An answer below this (a subnormal, kept unchecked or rounded to its safe end) brackets nothing from
below and this from above."""
BRACKET_STEPS = (64, 8)
"""Anchor spacings among the counts still in play before the remaining ones are inverted (the callers of
:func:`bracket`: :func:`dpaudit.engine.bounds.best_event`, :func:`dpaudit.engine.jointratio.joint_score_best`)."""


def bracket(values: np.ndarray, known: np.ndarray, group: np.ndarray | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds, in [0, 1], of a quantile that does not decrease along the sorted counts
    (within each ``group``, whose equal values are contiguous), answered at the ``known`` anchors: the
    nearest known value at or below and at or above in the same group, widened by
    :data:`BRACKET_WIDEN` (0 and 1 where there is none; an anchor below :data:`BRACKET_TINY` gives 0 and
    BRACKET_TINY).  A Clopper–Pearson bound of k in n does not decrease in k at fixed n (beta laws are
    stochastically ordered in their parameters), so it lies in its bracket between two anchors."""
    index = np.arange(len(values))
    below = np.maximum.accumulate(np.where(known, index, -1))
    above = np.minimum.accumulate(np.where(known, index, len(values))[::-1])[::-1]
    at, near = np.maximum(below, 0), np.minimum(above, len(values) - 1)
    ok_below, ok_above = below >= 0, above < len(values)
    if group is not None:
        ok_below &= group[at] == group
        ok_above &= group[near] == group
    low = np.where(ok_below & (values[at] >= BRACKET_TINY), values[at] * (1 - BRACKET_WIDEN), 0.0)
    high = np.where(ok_above, np.minimum(np.maximum(values[near] * (1 + BRACKET_WIDEN), BRACKET_TINY), 1.0), 1.0)
    return low, high


def betaincinv(a: Any, b: Any, p: Any) -> np.ndarray:
    """x with I_x(a, b) = p, for arrays broadcast together (``scipy.special.betaincinv``, checked)."""
    return _checked(special.betaincinv, special.betainc, special.betaincc, a, b, p, increasing=True)


def betainccinv(a: Any, b: Any, p: Any) -> np.ndarray:
    """x with 1 − I_x(a, b) = p (``scipy.special.betainccinv``, checked)."""
    return _checked(special.betainccinv, special.betaincc, special.betainc, a, b, p, increasing=False)


def _checked(inverse: Callable[..., Any], function: Callable[..., Any], mirror: Callable[..., Any], a: Any, b: Any,
             p: Any, *, increasing: bool) -> np.ndarray:
    """``inverse(a, b, p)`` checked against ``function`` (module docstring).  An answer above ½ is
    checked and solved for in t = 1 − x, where ``function(a, b, 1 − t) = mirror(b, a, t)``: a window
    relative to x near 1 is no window for 1 − x, where scipy's error at b = 1000 sits (an upper bound
    of n − k = 1000 failures among 6·10⁹ has 1 − x off by 60 %)."""
    a, b, p = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, p)))
    shape = a.shape
    a, b, p = (np.ravel(v) for v in (a, b, p))
    x = np.array(inverse(a, b, p), dtype=float, ndmin=1)
    flip = x > 0.5
    t = np.where(flip, 1.0 - x, x)
    mirrored = np.flatnonzero(flip)

    def value(at: np.ndarray) -> np.ndarray:
        # each answer's own branch only (an elementwise ufunc gives the same value on a subset)
        if not mirrored.size:
            return function(a, b, at)
        out = np.empty_like(at)
        kept = ~flip
        out[kept] = function(a[kept], b[kept], at[kept])
        out[mirrored] = mirror(b[mirrored], a[mirrored], at[mirrored])
        return out

    below, above = t * (1 - RELATIVE), np.minimum(t * (1 + RELATIVE), 1.0)
    v_below, v_above = value(below), value(above)
    # a subnormal t has too few digits to be checked at this resolution: kept, within a few units in
    # its last place
    inside = ((np.minimum(v_below, v_above) <= p) & (p <= np.maximum(v_below, v_above))) | (below == t) | (
        above == t)
    # scipy answers the smallest normal double (2.2e-308) for a quantile below it (a parameter far
    # below 1, at a Clopper-Pearson ceiling's expected counts): the quantile is in [0, 2.2e-308],
    # given as its end on the side of a Clopper-Pearson bound's safety (0 for a lower bound, the
    # answer itself for an upper one) rather than solved for among subnormals
    tiny = ~flip & (x <= np.finfo(float).tiny)
    if increasing:  # I(x) > p: the quantile is below x
        rounded = ~inside & tiny & (v_below > p)
        x = np.where(rounded, 0.0, x)
    else:  # 1 - I(x) < p: the quantile is below x, which an upper bound may keep
        rounded = ~inside & tiny & (v_below < p)
    inside |= rounded
    # an answer of 0 or 1 at the ends of the domain is exact where p is the function's value there
    bad = ~inside & (t > 0) & (t < 1) & np.isfinite(t) & (a > 0) & (b > 0) & (p > 0) & (p < 1)
    for i in np.flatnonzero(bad):
        f, first, second = (mirror, float(b[i]), float(a[i])) if flip[i] else (function, float(a[i]), float(b[i]))
        # scipy.optimize on first use: only where scipy's inverse is wrong (loading a results file needs none)
        brentq = importlib.import_module("scipy.optimize").brentq
        root = brentq(lambda u, f=f, s=first, r=second, q=float(p[i]): float(f(s, r, u)) - q, 0.0, 1.0,
                      xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=1000)
        x[i] = 1.0 - root if flip[i] else root
    return x.reshape(shape)
