"""Exact output laws and ceilings of the sparse-vector variants of Lyu, Su & Li (VLDB 2017, Fig. 1),
and their bench cases (``dpaudit bench``).

Each variant answers m queries q_i with ⊤ (1) when q_i + ν_i ≥ T + ρ and ⊥ (0) otherwise, ν_i ~
Lap(b_ν) i.i.d. (or none), ρ ~ Lap(b_ρ); with a cutoff c it stops after the c-th ⊤ (the rest is
−1).  Given ρ the answers are independent, so a row a of answers has

    P[a] = ∫ f_ρ(r) Π_{i answered} (a_i = 1 ? 1 − F_i(T + r) : F_i(T + r)) dr,   F_i(t) = P[q_i + ν_i < t],

integrated here on a grid of ρ (trapezoid, 40 001 points over ±50·b_ρ, 0 among them: the
Laplace kink).  Dwork & Roth's Algorithm 2 draws ρ anew after each ⊤, so its segments between
⊤s are independent and P[a] is the product of one such integral per segment.  Without query
noise (Algorithm 5) the answers are a step function of ρ and the integral is exact: the
Laplace mass of each interval between the breakpoints q_i − T.

The ceiling (:func:`dpaudit.engine.bounds.best_event`) searches every set of rows for at most 16 rows and,
beyond, the likelihood-ratio prefixes of the rows in both directions (Neyman–Pearson).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

import numpy as np
from scipy import stats

from dpaudit.catalog.family import BenchCase
from dpaudit.engine.bounds import Ceiling, all_subsets, best_event
from dpaudit.mechanisms.faulty import SparseVectorWithoutCutoff, SparseVectorWithoutQueryNoise
from dpaudit.mechanisms.vector import SparseVector, SparseVectorDworkRoth, SparseVectorLeeClifton

GRID = 40_001


def rows_of(m: int, cutoff: int | None) -> np.ndarray:
    """Every possible answer row of m queries: all of {0, 1}^m without a cutoff; with cutoff c,
    rows with fewer than c ones, and rows whose c-th one is followed by −1s."""
    if cutoff is None:
        return np.array(list(itertools.product((0, 1), repeat=m)), dtype=np.int8)
    out = []
    for tops in range(cutoff + 1):
        for where in itertools.combinations(range(m), tops):
            row = np.zeros(m, dtype=np.int8)
            row[list(where)] = 1
            if tops == cutoff:
                row[where[-1] + 1:] = -1
            out.append(row)
    return np.array(out)


def _grid(scale: float) -> tuple[np.ndarray, np.ndarray]:
    r = np.linspace(-50 * scale, 50 * scale, GRID)
    w = np.full(GRID, r[1] - r[0])
    w[[0, -1]] /= 2
    return r, w * stats.laplace.pdf(r, 0.0, scale)


def _segment_probs(rows: np.ndarray, q: np.ndarray, threshold: float, rho_scale: float, nu_scale: float
                   ) -> np.ndarray:
    """For each row, ∫ f_ρ Π_{answered i} P[a_i | ρ] dρ, one common ρ for the whole row."""
    w, log_below, log_above = _answer_logs(q, threshold, rho_scale, nu_scale)
    return _integrals(rows, log_below, log_above, w)


def _answer_logs(q: np.ndarray, threshold: float, rho_scale: float, nu_scale: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grid's weights w (f_ρ times the trapezoid's) and, per query i and grid point ρ, log P[⊥]
    and log P[⊤] given ρ (each element on its own: the rows of a slice of ``q`` are the same numbers)."""
    r, w = _grid(rho_scale)
    t = threshold + r[None, :] - q[:, None]                   # (m, G): ⊤ iff ν_i ≥ t
    with np.errstate(divide="ignore"):
        return w, stats.laplace.logcdf(t, 0.0, nu_scale), stats.laplace.logsf(t, 0.0, nu_scale)


def _integrals(rows: np.ndarray, log_below: np.ndarray, log_above: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Σ_ρ w(ρ) Π_i P[a_i | ρ] for each row a (its columns those of ``log_below`` and ``log_above``)."""
    out = np.empty(len(rows))
    for s in range(0, len(rows), 64):                         # (64, G) at a time
        block = rows[s:s + 64].astype(float)
        log_p = (block == 1) @ log_above + (block == 0) @ log_below
        out[s:s + 64] = np.exp(log_p) @ w
    return out


def _step_probs(rows: np.ndarray, q: np.ndarray, threshold: float, rho_scale: float) -> np.ndarray:
    """No query noise: ⊤ iff ρ ≤ q_i − T, so the answers are constant between the sorted
    breakpoints q_i − T; each interval's Laplace mass goes to the row it gives (exact)."""
    cuts = np.unique(q - threshold)
    edges = np.concatenate([[-np.inf], cuts, [np.inf]])
    mass = np.diff(stats.laplace.cdf(edges, 0.0, rho_scale))
    mids = np.concatenate([[cuts[0] - 1.0], (cuts[:-1] + cuts[1:]) / 2, [cuts[-1] + 1.0]])
    index = {r.tobytes(): i for i, r in enumerate(rows)}
    out = np.zeros(len(rows))
    for rho, p in zip(mids, mass, strict=True):
        out[index[(q >= threshold + rho).astype(np.int8).tobytes()]] += p
    return out


def output_law(mechanism: SparseVector, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, P[row]) of a sparse vector on answers ``q``: Algorithms 1, 4, 5 and 6
    (:class:`SparseVector` and its variants) and Algorithm 2's redrawn threshold
    (:class:`SparseVectorDworkRoth`)."""
    q = np.asarray(q, dtype=float)
    rows = rows_of(len(q), mechanism.cutoff)
    rho_scale, nu_scale = mechanism.noise_scales
    if nu_scale == 0:
        return rows, _step_probs(rows, q, mechanism.threshold, rho_scale)
    if not isinstance(mechanism, SparseVectorDworkRoth):
        return rows, _segment_probs(rows, q, mechanism.threshold, rho_scale, nu_scale)
    return rows, _redrawn_probs(rows, q, mechanism.threshold, rho_scale, nu_scale)


def _redrawn_probs(rows: np.ndarray, q: np.ndarray, threshold: float, rho_scale: float, nu_scale: float
                   ) -> np.ndarray:
    """Algorithm 2: one independent ρ per segment between ⊤s, P[row] the product of the segments'
    integrals (:func:`_segment_probs` of the segment on its queries).  The per-query logs are computed
    once for all queries, and each distinct segment (its span and answers; rows share most of theirs)
    integrated once: the same numbers, the slices copied to arrays of their own as the segment's own
    computation has them."""
    w, log_below, log_above = _answer_logs(q, threshold, rho_scale, nu_scale)
    integral: dict[tuple[int, int, bytes], float] = {}
    probs = np.ones(len(rows))
    for k, row in enumerate(rows):                           # one independent ρ per segment
        tops = list(np.flatnonzero(row == 1))
        starts = [0] + [i + 1 for i in tops]
        ends = [i + 1 for i in tops] + [len(q)]
        for a, b in zip(starts, ends, strict=True):
            seg = row[a:b]
            if len(seg) and (seg != -1).any():
                key = (int(a), int(b), seg.tobytes())
                if key not in integral:
                    integral[key] = float(_integrals(seg[None, :], np.array(log_below[a:b]), np.array(log_above[a:b]),
                                                     w)[0])
                probs[k] *= integral[key]
    return probs


def prefix_events(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """P[S] under each side and the membership (events × atoms) of the likelihood-ratio prefixes
    in both directions."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.log(p) - np.log(q)
    masks = []
    for sign in (1, -1):
        order = np.argsort(-sign * np.nan_to_num(lr, nan=0.0, posinf=1e300, neginf=-1e300), kind="stable")
        rank = np.empty(len(p), dtype=np.int64)
        rank[order] = np.arange(len(p))
        masks.append(rank[None, :] <= np.arange(len(p))[:, None])
    member = np.concatenate(masks)
    return member @ p, member @ q, member


def _codes(rows: np.ndarray) -> np.ndarray:
    """Rows of answers in {−1, 0, 1} as base-3 integers."""
    return (rows.astype(np.int64) + 1) @ (3 ** np.arange(rows.shape[1], dtype=np.int64))


def law_ceiling(law: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]], delta: float = 0.0):
    """The ceiling of a finite law ``law() = (rows, P_D, P_D′)`` (computed when first asked): every
    set of rows for at most 16 rows, else the likelihood-ratio prefixes."""
    @functools.cache
    def events() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        rows, p, q = law()
        if len(rows) <= 16:
            pd, pq = all_subsets(p, q)
            member = ((np.arange(1, 1 << len(rows))[:, None] >> np.arange(len(rows))) & 1).astype(bool)
        else:
            pd, pq, member = prefix_events(p, q)
        return rows, pd, pq, member

    def at(n: int, confidence: float) -> Ceiling:
        rows, pd, pq, member = events()
        eps, i, favours = best_event(pd, pq, n, delta, confidence)
        chosen = _codes(rows[member[i]])

        def contains(outputs: np.ndarray) -> np.ndarray:
            return np.isin(_codes(np.asarray(outputs)), chosen)
        return Ceiling(eps, favours, contains)
    return at


SVT_PAIR = (np.zeros(10), np.array([1.0] * 5 + [-1.0] * 5))  # the classic benchmark's half-half pattern


def variants(epsilon: float) -> list[tuple[str, SparseVector]]:
    """The discrete-output variants of Lyu, Su & Li's Fig. 1 at ``epsilon`` (cutoff 1, Algorithm 2
    at cutoff 2 where its redrawn threshold shows; 5 and 6 have no cutoff).  Algorithm 3 releases
    q_i + ν_i, a real number, and is not among them."""
    return [(f"svt alg1 eps={epsilon:g}", SparseVector(epsilon, cutoff=1)),
            (f"svt alg2 c=2 eps={epsilon:g}", SparseVectorDworkRoth(epsilon, cutoff=2)),
            (f"svt alg4 lee-clifton eps={epsilon:g}", SparseVectorLeeClifton(epsilon, cutoff=1)),
            (f"svt alg5 eps={epsilon:g}", SparseVectorWithoutQueryNoise(epsilon)),
            (f"svt alg6 eps={epsilon:g}", SparseVectorWithoutCutoff(epsilon))]


def bench_cases(epsilons: tuple[float, ...] = (0.1, 1.0)) -> list[BenchCase]:
    """One bench case per variant and ε₀ on the half-half pair, m = 10, with its exact ceiling."""
    out = []
    for eps in epsilons:
        for name, mech in variants(eps):
            def law(mech: SparseVector = mech) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
                rows, p = output_law(mech, SVT_PAIR[0])
                _, q = output_law(mech, SVT_PAIR[1])
                return rows, p / p.sum(), q / q.sum()

            def reference(rng: np.random.Generator, n: int, mech: SparseVector = mech) -> int:
                return int(np.count_nonzero(mech.sample(SVT_PAIR[0], n, rng)[:, 0] == 1))
            out.append(BenchCase(name, mech, *SVT_PAIR, reference, ceiling=law_ceiling(law)))
    return out
