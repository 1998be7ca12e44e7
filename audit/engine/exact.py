"""Exact privacy loss of a pair of finite output distributions (white box).

For p = P[M(D) = ·] and q = P[M(D′) = ·] on a finite set:

* ε(0) = max_a |log p(a)/q(a)|, infinite when the supports differ;
* δ(ε) = max(Σ_a (p(a) − e^ε q(a))_+, Σ_a (q(a) − e^ε p(a))_+);
* ε(δ) = the smallest ε ≥ 0 with δ(ε) ≤ δ.

By Neyman–Pearson the supremum of p(S) − e^ε q(S) over events S is attained on a prefix of
the outputs sorted by likelihood ratio p/q.  With cumulative masses A_j = p(S_j) and
B_j = q(S_j) over those prefixes, δ(ε) = max_j (A_j − e^ε B_j)_+ and therefore
ε(δ) = max(0, max_j log((A_j − δ)/B_j)) in closed form, no root finding.
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit.core import require


def _distribution(name: str, p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    require(p.ndim == 1 and p.size > 0, name, p, "must be a non-empty vector of probabilities")
    require(bool(np.all(np.isfinite(p)) and np.all(p >= 0)), name, p, "entries must be finite and >= 0")
    require(abs(p.sum() - 1.0) <= 1e-6, name, float(p.sum()), "entries must sum to 1")
    return p


def _prefixes(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative (p(S_j), q(S_j)) over prefixes S_j of the outputs in decreasing p/q order."""
    with np.errstate(divide="ignore"):
        log_ratio = np.log(p) - np.log(q)
    keep = p > 0  # outputs with p = 0 never help p(S) − e^ε q(S)
    order = np.argsort(-log_ratio[keep], kind="stable")
    return np.cumsum(p[keep][order]), np.cumsum(q[keep][order])


def _directional_epsilon(p: np.ndarray, q: np.ndarray, delta: float) -> float:
    a, b = _prefixes(p, q)
    excess = a - delta
    if np.any((b <= 0) & (excess > 1e-15)):
        return math.inf
    ok = (b > 0) & (excess > 0)
    if not ok.any():
        return 0.0
    return max(0.0, float(np.max(np.log(excess[ok]) - np.log(b[ok]))))


def epsilon_for_delta(p: np.ndarray, q: np.ndarray, delta: float = 0.0) -> float:
    """Exact ε(δ) of the pair (p, q): both directions, inf when no finite ε reaches δ."""
    p, q = _distribution("p", p), _distribution("q", q)
    require(p.shape == q.shape, "q", q.shape, f"must have the shape of p {p.shape}")
    require(0.0 <= delta <= 1.0, "delta", delta, "must be in [0, 1]")
    return max(_directional_epsilon(p, q, delta), _directional_epsilon(q, p, delta))


def delta_for_epsilon(p: np.ndarray, q: np.ndarray, epsilon: float) -> float:
    """Exact δ(ε) = max over directions of Σ (p − e^ε q)_+ (the hockey-stick divergence)."""
    p, q = _distribution("p", p), _distribution("q", q)
    require(p.shape == q.shape, "q", q.shape, f"must have the shape of p {p.shape}")
    require(epsilon >= 0 and not math.isnan(epsilon), "epsilon", epsilon, "must be >= 0")
    scale = math.exp(min(epsilon, 700.0))
    return float(max(np.clip(p - scale * q, 0, None).sum(), np.clip(q - scale * p, 0, None).sum()))


def pure_epsilon(p: np.ndarray, q: np.ndarray) -> float:
    """ε(0) = max |log p/q| over outputs of positive probability (inf if supports differ)."""
    return epsilon_for_delta(p, q, 0.0)
