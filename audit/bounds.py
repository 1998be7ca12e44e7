"""Binomial bounds, the ε they certify, and how candidate events are scored.

For k successes in n trials, the one-sided Clopper–Pearson bounds at level α are

    p_lo = Beta⁻¹(α; k, n − k + 1)   (0 when k = 0),
    p_hi = Beta⁻¹(1 − α; k + 1, n − k)   (1 when k = n),

and an event S seen k1/n1 times under the favoured side and k2/n2 under the other certifies

    ε ≥ log((p1_lo − δ) / p2_hi)   (−inf when p1_lo ≤ δ).

Candidates are scored by the bound they would give on the estimation split: the selection
split's own pessimistic bounds are projected to the estimation sample sizes and bounded
again.  Wilson score bounds, a closed form, rank all candidates; the best few are re-scored
with Clopper–Pearson.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import stats

Bounds = Callable[[np.ndarray, float, float], tuple[np.ndarray, np.ndarray]]


def clopper_pearson(k: np.ndarray | float, n: np.ndarray | float, alpha: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson bounds (lower, upper), each at level ``alpha``.

    lower = Beta⁻¹(α; k, n − k + 1) (0 when k = 0), upper = Beta⁻¹(1 − α; k + 1, n − k)
    (1 when k = n).  Real-valued k is allowed (used for projected counts).
    """
    k, n = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    lower = np.zeros(k.shape)
    upper = np.ones(k.shape)
    pos, below = k > 0, k < n
    lower[pos] = stats.beta.ppf(alpha, k[pos], n[pos] - k[pos] + 1)
    upper[below] = stats.beta.isf(alpha, k[below] + 1, n[below] - k[below])
    return lower, upper


def wilson(k: np.ndarray, n: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Wilson score bounds (lower, upper): a closed-form proxy for Clopper–Pearson,
    used only to rank candidates."""
    z = stats.norm.isf(alpha)
    p = np.asarray(k, dtype=float) / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(np.maximum(p * (1 - p), 0) / n + z * z / (4 * n * n)) / denom
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def epsilon_from_bounds(p_lower: np.ndarray, q_upper: np.ndarray, delta: float) -> np.ndarray:
    """log((p_lo − δ)/q_hi), −inf where p_lo ≤ δ."""
    excess = np.asarray(p_lower, dtype=float) - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(excess > 0, np.log(np.maximum(excess, 1e-300)) - np.log(q_upper), -np.inf)


def _projected(k_fav: np.ndarray, k_oth: np.ndarray, n_sel: tuple[int, int], n_est: tuple[int, int],
               delta: float, alpha: float, bounds: Bounds) -> np.ndarray:
    """The ε the selection split's pessimistic bounds would certify at the estimation sizes."""
    p_sel, _ = bounds(k_fav, n_sel[0], alpha)
    _, q_sel = bounds(k_oth, n_sel[1], alpha)
    lo, _ = bounds(p_sel * n_est[0], n_est[0], alpha)
    _, hi = bounds(q_sel * n_est[1], n_est[1], alpha)
    return epsilon_from_bounds(lo, hi, delta)


def best_candidate(k_fav: np.ndarray, k_oth: np.ndarray, n_sel: tuple[int, int], n_est: tuple[int, int],
                   delta: float, alpha: float, shortlist: int = 16) -> tuple[float, int]:
    """Index and score of the candidate with the best confidence-adjusted bound.

    The selection split's own Clopper–Pearson bounds (pessimistic for the candidate) are
    projected to the estimation sample sizes and bounded again; projecting raw counts
    instead lets a tail event with 3-vs-0 counts look like a sure win and then fail.
    All candidates are ranked with Wilson bounds and the ``shortlist`` best re-scored
    exactly.  ``n_sel``/``n_est`` are (favoured side, other side).
    """
    k_fav, k_oth = np.asarray(k_fav, dtype=float), np.asarray(k_oth, dtype=float)
    rough = _projected(k_fav, k_oth, n_sel, n_est, delta, alpha, wilson)
    top = np.argsort(-rough, kind="stable")[:shortlist]
    exact = _projected(k_fav[top], k_oth[top], n_sel, n_est, delta, alpha, clopper_pearson)
    j = int(np.argmax(exact))
    return float(exact[j]), int(top[j])
