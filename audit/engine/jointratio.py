"""A joint exact lower confidence bound of P₁[S] / P₂[S] from two binomial counts.

Let k₁ ~ Bin(n₁, p) and k₂ ~ Bin(n₂, q) be independent (an event S counted under the favoured
side and under the other).  Given m = k₁ + k₂, k₁ follows Fisher's noncentral hypergeometric
law in the odds ratio ψ = p(1 − q) / (q(1 − p)) (Fisher 1935; Cornfield 1956):

    P_ψ(k₁ = x | m) ∝ C(n₁, x) · C(n₂, m − x) · ψˣ,   max(0, m − n₂) ≤ x ≤ min(n₁, m),

whose upper tail P_ψ(k₁ ≥ x | m) increases with ψ.  The exact one-sided lower bound ψ_lo solves
P_ψ(k₁ ≥ k₁_obs | m) = α_ψ (0 when k₁_obs is the least value of the support): conditionally on
m, and therefore unconditionally, P[ψ_lo > ψ] ≤ α_ψ.  This is the interval
``scipy.stats.contingency.odds_ratio(..., kind="conditional")`` computes (tests check the two agree);
scipy sums the whole support, which takes seconds at counts of 10⁴.  Here both sums run over a
window of k₁ ± (z_α + 8) large-sample standard deviations (plus 30 terms, for the skewed laws of
small counts): at ψ_lo the law is centred about z_α = Φ⁻¹(1 − α_ψ) s.d. below k₁, so the window
reaches 8 s.d. beyond the centre on either side, where the log-concave weights are below e⁻³² of
the peak.  (Mass cut below the window only enlarges the tail's share, which lowers ψ_lo.)  The root
is found by safeguarded Newton steps in log ψ, for many events at once.

From odds to probabilities: with r = p/q, ψ = r(1 − q)/(1 − p) and q = p/r give ψ = (r − p)/(1 − p),

    r = ψ(1 − p) + p.

It increases in ψ, so r ≥ ψ_lo(1 − p) + p = ψ_lo − p(ψ_lo − 1); when ψ_lo ≥ 1 this decreases in p,
so with a Clopper–Pearson upper bound p_hi of p (level α_p) both events together give

    r ≥ r_lo = ψ_lo − p_hi · max(0, ψ_lo − 1)     (= ψ_lo(1 − p_hi) + p_hi when ψ_lo ≥ 1;
                                                     ψ_lo when ψ_lo < 1, the minimum over p ≥ 0)

with probability ≥ 1 − α_ψ − α_p (union bound), α_ψ = 0.9 α and α_p = 0.1 α.

With δ > 0 the bound wanted is of (p − δ)/q = r(1 − δ/p).  With p_lo, p_hi the two one-sided
Clopper–Pearson bounds of p at α_p/2 each, (p − δ)/q ≥ r_lo (1 − δ/p_lo) whenever p_lo > δ (both
factors are lower bounds of non-negative quantities), again with probability ≥ 1 − α.  So

    ε_lower(δ) = log r_lo + log(1 − δ/p_lo)   (the second term absent at δ = 0; −inf when p_lo ≤ δ).

The bound is valid for every (p, q, n₁, n₂): unlike a Poisson ratio test (k₁ | m as a binomial), it
uses the exact conditional law of two binomials.  Real-valued counts (expected counts projected to
another sample size, used only to score or plan) are rounded to the nearest integer.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dpaudit.engine import betainv
from dpaudit.engine.stattest import StatTest, register

ODDS_SHARE = 0.9      # of α spent on the conditional test of ψ; the rest bounds p (the correction)
WINDOW_SD = 8.0       # half-width of the summed window beyond z_α, in standard deviations of k₁ given m ...
WINDOW_EXTRA = 30     # ... plus this many terms (skewed laws at small counts)
BATCH_TERMS = 2_000_000  # terms summed at once (memory: a few arrays of this many floats)
MAX_TERMS = 4_000_000    # the largest window summed exactly (beyond: the Clopper-Pearson pair, epsilon_lower)
CACHE_SIZE = 100_000   # solved events kept (a selection scores, then bounds, the same projected counts)
_CACHE: dict[tuple[float, ...], float] = {}
_TOL = 1e-12          # on log ψ
_MAX_STEPS = 200
_JUMP = 4.0          # largest step in log ψ (a factor e⁴): a flat tail far from the root asks for huge ones


def _support(k1: np.ndarray, n1: np.ndarray, k2: np.ndarray, n2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m = k1 + k2
    return np.maximum(0, m - n2), np.minimum(n1, m)


def _windows(k1: np.ndarray, n1: np.ndarray, k2: np.ndarray, n2: np.ndarray, alpha: float
             ) -> tuple[np.ndarray, np.ndarray]:
    """[a, b] per event: the part of the support within ±(z_α + WINDOW_SD) conditional standard
    deviations (the large-sample variance 1/(1/k₁ + 1/(n₁−k₁) + 1/k₂ + 1/(n₂−k₂)), halves added) of k₁."""
    lo, hi = _support(k1, n1, k2, n2)
    var = 1.0 / (1 / (k1 + 0.5) + 1 / (n1 - k1 + 0.5) + 1 / (k2 + 0.5) + 1 / (n2 - k2 + 0.5))
    half = np.ceil((max(0.0, -special.ndtri(alpha)) + WINDOW_SD) * np.sqrt(var)) + WINDOW_EXTRA
    return np.maximum(lo, k1 - half).astype(np.int64), np.minimum(hi, k1 + half).astype(np.int64)


def _log_weights(a: int, b: int, n1: float, n2: float, m: float) -> np.ndarray:
    """log C(n₁, x) + log C(n₂, m − x) for x = a..b, up to a constant: cumulated log ratios of
    consecutive terms (exact to rounding at any n, unlike differences of log-gamma values ~ n log n)."""
    x = np.arange(a, b, dtype=float)
    step = np.log((n1 - x) * (m - x)) - np.log((x + 1) * (n2 - m + x + 1))
    return np.concatenate([[0.0], np.cumsum(step)])


Counts = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _counts(k1: np.ndarray | float, n1: np.ndarray | float, k2: np.ndarray | float, n2: np.ndarray | float
            ) -> Counts:
    """The four counts broadcast to one shape, rounded to integers (as floats), k clipped to [0, n]."""
    b = [np.rint(np.asarray(v, dtype=float)) for v in np.broadcast_arrays(k1, n1, k2, n2)]
    return np.clip(b[0], 0, b[1]), b[1], np.clip(b[2], 0, b[3]), b[3]


def odds_ratio_lower(k1: np.ndarray | float, n1: np.ndarray | float, k2: np.ndarray | float,
                     n2: np.ndarray | float, alpha: float) -> np.ndarray:
    """The exact conditional one-sided lower bound ψ_lo at level ``alpha`` of the odds ratio
    p(1 − q)/(q(1 − p)) from k₁/n₁ and k₂/n₂ (broadcast; counts rounded to integers)."""
    k1, n1, k2, n2 = _counts(k1, n1, k2, n2)
    out = np.zeros(k1.shape)
    lo, _ = _support(k1, n1, k2, n2)
    active = np.flatnonzero((k1 > lo).ravel())
    if active.size == 0:
        return out
    f = [v.ravel()[active] for v in (k1, n1, k2, n2)]
    known = np.array([_CACHE.get((*key, alpha), np.nan) for key in zip(*f, strict=True)])
    flat = out.reshape(-1)
    flat[active] = known
    if not np.isnan(known).any():
        return flat.reshape(k1.shape)
    active, f = active[np.isnan(known)], [v[np.isnan(known)] for v in f]
    a, b = _windows(f[0], f[1], f[2], f[3], alpha)
    start = _start(f[0], f[1], f[2], f[3], alpha)
    # batches of at most BATCH_TERMS summed terms (a few large windows, or many small ones)
    batch = np.concatenate([[0], np.cumsum(b - a + 1) // BATCH_TERMS])
    for group in np.unique(batch[1:]):
        idx = np.flatnonzero(batch[1:] == group)
        segments = [_log_weights(int(a[i]), int(b[i]), f[1][i], f[3][i], f[0][i] + f[2][i]) for i in idx]
        flat[active[idx]] = np.exp(_solve(segments, (f[0][idx] - a[idx]).astype(np.int64), start[idx], np.log(alpha)))
    if len(_CACHE) > CACHE_SIZE:
        _CACHE.clear()
    _CACHE.update({(*key, alpha): v for *key, v in zip(*f, flat[active], strict=True)})
    return flat.reshape(k1.shape)


def _start(k1: np.ndarray, n1: np.ndarray, k2: np.ndarray, n2: np.ndarray, alpha: float) -> np.ndarray:
    """Woolf's large-sample lower bound of log ψ (halves added to every cell): Newton's first guess."""
    cells = (k1 + 0.5, n1 - k1 + 0.5, k2 + 0.5, n2 - k2 + 0.5)
    log_psi = np.log(cells[0]) - np.log(cells[1]) - np.log(cells[2]) + np.log(cells[3])
    return log_psi + special.ndtri(alpha) * np.sqrt(sum(1 / c for c in cells))


def window_terms(k1: np.ndarray, n1: np.ndarray, k2: np.ndarray, n2: np.ndarray, alpha: float) -> np.ndarray:
    """How many terms the exact bound of each event at level ``alpha`` sums (its cost)."""
    k1, n1, k2, n2 = _counts(k1, n1, k2, n2)
    a, b = _windows(k1, n1, k2, n2, alpha)
    return np.maximum(b - a + 1, 0)


def approximate_epsilon(k1: np.ndarray, n1: np.ndarray, k2: np.ndarray, n2: np.ndarray, delta: float,
                        alpha: float) -> np.ndarray:
    """:func:`epsilon_lower` with Woolf's large-sample ψ_lo (:func:`_start`) in place of the exact one:
    a closed form for screening at large counts, never a bound."""
    k1, n1, k2, n2 = _counts(k1, n1, k2, n2)
    return _corrected(np.exp(_start(k1, n1, k2, n2, ODDS_SHARE * alpha)), k1, n1, delta, alpha)


def _solve(segments: list[np.ndarray], cut: np.ndarray, start: np.ndarray, log_alpha: float) -> np.ndarray:
    """Per segment h (log weights of x = a.., a + len − 1) and tail start ``cut`` (k₁ − a), the t = log ψ
    (from ``start``) with log Σ_{x ≥ cut} e^{h + xt} − log Σ_x e^{h + xt} = log α, by Newton steps kept
    inside a bracket.

    Both sums are over the same window, so the tail is an exponential family's in t, increasing: the
    bracket only shrinks, and a step leaving it is replaced by bisection (steps are at most ±4).  Only
    the segments not yet converged are summed at each step."""
    t = start.astype(float)
    lo, hi = np.full(len(t), -np.inf), np.full(len(t), np.inf)
    todo = np.arange(len(t))
    flat = _flatten(segments, cut, todo)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for _ in range(_MAX_STEPS):
            g, slope = _gap(*flat, t[todo], log_alpha)
            lo[todo], hi[todo] = np.where(g < 0, t[todo], lo[todo]), np.where(g >= 0, t[todo], hi[todo])
            step = -g / slope  # the Newton step: also the error of t[todo] to first order
            new = t[todo] + np.clip(step, -_JUMP, _JUMP)
            jump = np.where(np.isfinite(lo[todo]), t[todo] + _JUMP, t[todo] - _JUMP)
            middle = np.where(np.isfinite(lo[todo]) & np.isfinite(hi[todo]), 0.5 * (lo[todo] + hi[todo]), jump)
            new = np.where((new > lo[todo]) & (new < hi[todo]), new, middle)
            tol = _TOL * np.maximum(1.0, np.abs(t[todo]))
            done = (np.abs(new - t[todo]) < tol) | (np.abs(step) < tol) | (hi[todo] - lo[todo] < tol) | (g == 0)
            t[todo[~done]] = new[~done]
            if done.all():
                break
            if done.any():
                todo = todo[~done]
                flat = _flatten(segments, cut, todo)
    return t


def _flatten(segments: list[np.ndarray], cut: np.ndarray, which: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ``which`` segments as flat arrays: h, x (offset in its window), segment index (0..), segment
    starts, and whether x is in the tail."""
    parts = [segments[i] for i in which]
    sizes = [len(s) for s in parts]
    x = np.concatenate([np.arange(n, dtype=float) for n in sizes])
    seg = np.repeat(np.arange(len(parts)), sizes)
    return np.concatenate(parts), x, seg, np.cumsum([0, *sizes[:-1]]), x >= cut[which][seg]


def _gap(h: np.ndarray, x: np.ndarray, seg: np.ndarray, starts: np.ndarray, tail: np.ndarray, t: np.ndarray,
         log_alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Per segment, log P_t(tail) − log α and its derivative in t, E[x | tail] − E[x]."""
    logw = h + x * t[seg]
    # each sum scaled by its own largest term: the tail may be e^-800 of the whole far from the root
    peak, peak_tail = np.maximum.reduceat(logw, starts), np.maximum.reduceat(np.where(tail, logw, -np.inf), starts)
    w, w_tail = np.exp(logw - peak[seg]), np.where(tail, np.exp(logw - peak_tail[seg]), 0.0)
    total, upper = np.add.reduceat(w, starts), np.add.reduceat(w_tail, starts)
    mean, mean_tail = np.add.reduceat(w * x, starts) / total, np.add.reduceat(w_tail * x, starts) / upper
    g = peak_tail + np.log(upper) - peak - np.log(total) - log_alpha
    return g, np.maximum(mean_tail - mean, 1e-300)


def clopper_pearson_upper(k: np.ndarray, n: np.ndarray, alpha: float) -> np.ndarray:
    """Beta⁻¹(1 − α; k + 1, n − k), 1 when k = n."""
    below = k < n
    out = np.ones(np.shape(k))
    out[below] = betainv.betainccinv(k[below] + 1, n[below] - k[below], alpha)
    return out


def clopper_pearson_lower(k: np.ndarray, n: np.ndarray, alpha: float) -> np.ndarray:
    """Beta⁻¹(α; k, n − k + 1), 0 when k = 0."""
    pos = k > 0
    out = np.zeros(np.shape(k))
    out[pos] = betainv.betaincinv(k[pos], n[pos] - k[pos] + 1, alpha)
    return out


def epsilon_lower(k1: np.ndarray | float, n1: np.ndarray | float, k2: np.ndarray | float,
                  n2: np.ndarray | float, delta: float, alpha: float) -> np.ndarray:
    """ε_lower(δ) = log r_lo + log(1 − δ/p_lo) at total level ``alpha`` (module docstring), −inf where
    nothing is certified (p_lo ≤ δ, or r_lo = 0); not clipped at 0.

    An event whose exact window would sum more than :data:`MAX_TERMS` terms (counts of the order of
    10¹² and more, where the two tests agree to a few parts in 10⁴) gets the Clopper–Pearson pair at
    the same total level instead, log((p_lo − δ)/q_hi) with each bound at α/2: valid as well, and its
    memory does not grow with the counts."""
    k1, n1, k2, n2 = np.broadcast_arrays(*_counts(k1, n1, k2, n2))
    huge = window_terms(k1, n1, k2, n2, ODDS_SHARE * alpha) > MAX_TERMS
    if not huge.any():
        return _corrected(odds_ratio_lower(k1, n1, k2, n2, ODDS_SHARE * alpha), k1, n1, delta, alpha)
    out = np.empty(k1.shape)
    small = ~huge
    if small.any():
        out[small] = _corrected(odds_ratio_lower(k1[small], n1[small], k2[small], n2[small], ODDS_SHARE * alpha),
                                k1[small], n1[small], delta, alpha)
    p_lo = clopper_pearson_lower(k1[huge], n1[huge], alpha / 2)
    q_hi = clopper_pearson_upper(k2[huge], n2[huge], alpha / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        out[huge] = np.where(p_lo > delta, np.log(np.maximum(p_lo - delta, 1e-300) / np.maximum(q_hi, 1e-300)),
                             -np.inf)
    return out


def _corrected(psi: np.ndarray, k1: np.ndarray, n1: np.ndarray, delta: float, alpha: float) -> np.ndarray:
    """log of the bound of (p − δ)/q from ψ_lo and the Clopper–Pearson bounds of p (module docstring)."""
    p_hi, p_lo = _p_bounds(k1, n1, delta, alpha)
    return _corrected_from(psi, p_hi, p_lo, delta)


def _p_bounds(k1: np.ndarray, n1: np.ndarray, delta: float, alpha: float) -> tuple[np.ndarray, np.ndarray | None]:
    """(p_hi, p_lo) of :func:`_corrected`: the Clopper–Pearson bounds of p at their shares of ``alpha``
    (p_lo only when δ > 0)."""
    alpha_p = (1.0 - ODDS_SHARE) * alpha
    p_hi = clopper_pearson_upper(k1, n1, alpha_p if delta == 0 else alpha_p / 2)
    return p_hi, (clopper_pearson_lower(k1, n1, alpha_p / 2) if delta > 0 else None)


def _corrected_from(psi: np.ndarray, p_hi: np.ndarray, p_lo: np.ndarray | None, delta: float) -> np.ndarray:
    """log(ψ − p_hi·max(0, ψ − 1)) + log(1 − δ/p_lo) (module docstring): non-increasing in p_hi,
    non-decreasing in p_lo (−inf where the ratio is ≤ 0 or p_lo ≤ δ)."""
    ratio = psi - p_hi * np.maximum(0.0, psi - 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.where(ratio > 0, np.log(np.maximum(ratio, 1e-300)), -np.inf)
        if delta > 0:
            assert p_lo is not None  # structural: _p_bounds gives p_lo whenever delta > 0
            eps = np.where(p_lo > delta, eps + np.log1p(-delta / np.maximum(p_lo, 1e-300)), -np.inf)
    return eps


def joint_epsilon(k_fav: np.ndarray | float, n_fav: np.ndarray | float, k_oth: np.ndarray | float,
                  n_oth: np.ndarray | float, delta: float, alpha: float) -> np.ndarray:
    """The ε lower bound that counts k_fav/n_fav (favoured side) and k_oth/n_oth certify: the joint
    exact test of the ratio (:func:`epsilon_lower`) at total level 2·``alpha``.

    ``alpha`` is the level of each bound of the Clopper–Pearson pair it replaces, (1 − confidence)/2,
    the convention of every caller here (:mod:`dpaudit.engine.stattest`); −inf where nothing is
    certified, not clipped at 0."""
    return epsilon_lower(k_fav, n_fav, k_oth, n_oth, delta, 2.0 * alpha)


SCREEN_TERMS = 2_000  # joint_score: windows up to this size are solved exactly


def joint_score(k_fav: np.ndarray | float, n_fav: np.ndarray | float, k_oth: np.ndarray | float,
                n_oth: np.ndarray | float, delta: float, alpha: float) -> np.ndarray:
    """The joint test's bound where it is cheap, a close approximation where it is not: to rank
    candidates and plan, never to certify.

    The exact test sums about 20 conditional standard deviations of k₁ per event (10⁴–10⁵ terms at
    the counts of 10⁷–10⁹ outputs that the planner and the tail pilot project, for hundreds of
    thresholds).  A window over :data:`SCREEN_TERMS` terms means a variance over 10,000 at confidence
    0.95 (7,000 at 0.999), so every cell of the 2×2 table holds more than that many counts, and there the closed form of
    :func:`approximate_epsilon` (Woolf's normal bound of log ψ) is within a fraction of a
    per cent of the exact one."""
    k1, n1, k2, n2 = (np.asarray(v, dtype=float) for v in np.broadcast_arrays(k_fav, n_fav, k_oth, n_oth))
    out = np.empty(k1.shape)
    small = window_terms(k1, n1, k2, n2, ODDS_SHARE * 2.0 * alpha) <= SCREEN_TERMS
    # each part computed only where it is the answer (element-wise: the same numbers as computing the
    # closed form everywhere first, without its Clopper-Pearson inversions for the small windows)
    out[small] = joint_epsilon(k1[small], n1[small], k2[small], n2[small], delta, alpha)
    out[~small] = approximate_epsilon(k1[~small], n1[~small], k2[~small], n2[~small], delta, 2.0 * alpha)
    return out


PRUNE_MARGIN = 1e-9    # in ε: a candidate is dropped only this far below its row's sure maximum (rounding ~1e-15)


def joint_score_best(k_fav: np.ndarray, n_fav: np.ndarray | float, k_oth: np.ndarray, n_oth: np.ndarray | float,
                     delta: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row (the last axis holds one ranking's candidates): the index and the value of the largest
    :func:`joint_score`, exactly ``j = np.argmax(s, axis=-1)`` and ``s[..., j]`` of ``s = joint_score(...)``,
    with the Clopper–Pearson inversions of p (``betainccinv``, the cost of a score at large counts) only
    for the candidates that can still win.

    Why it is exact: at large counts the score is :func:`_corrected_from` of ψ (closed form, computed
    for all) and of p_hi, p_lo, the Clopper–Pearson bounds of p = k₁/n₁, which both increase with k₁ at
    fixed n₁ (beta quantiles are stochastically ordered in their parameters).  With the bounds inverted
    at a few anchor counts, each count k₁ between two anchors a ≤ k₁ ≤ b gets p(a) ≤ p(k₁) ≤ p(b)
    (widened as :func:`~dpaudit.engine.betainv.bracket` says); the score is non-increasing in p_hi and
    non-decreasing in p_lo, so these give a lower and an upper bound of every candidate's score.  The
    largest lower bound of a row is at most the row's maximum; a candidate whose upper bound is below it
    by more than :data:`PRUNE_MARGIN` (far above the formula's rounding) is strictly below the maximum,
    so it is neither the argmax nor tied with it, and is dropped.  Anchors get denser among the live
    candidates (:data:`~dpaudit.engine.betainv.BRACKET_STEPS`) until every live count is inverted
    exactly, by the same calls (elementwise) as :func:`joint_score`'s (checked inversions,
    :mod:`dpaudit.engine.betainv`, monotone in k₁ where scipy's alone are not).  Windows of at most
    :data:`SCREEN_TERMS` terms are scored by the exact test, as there, each distinct table once, unless
    one evaluation of its tail shows it below its rows' best large candidate (:func:`_may_reach`)."""
    arrays = np.broadcast_arrays(k_fav, n_fav, k_oth, n_oth)
    shape = arrays[0].shape
    if len(shape) == 0 or shape[-1] == 0:
        raise ValueError(f"joint_score_best: the counts' shape {shape} has no candidate axis (the last one)")
    k1, n1, k2, n2 = (np.asarray(v, dtype=float).reshape(-1, shape[-1]) for v in arrays)
    level = 2.0 * alpha
    exact = np.full(k1.shape, -np.inf)
    small = window_terms(k1, n1, k2, n2, ODDS_SHARE * level) <= SCREEN_TERMS
    counts = _counts(k1, n1, k2, n2)
    rows = np.broadcast_to(np.arange(len(k1))[:, None], k1.shape)
    big = ~small
    if big.any():
        c1, c_n1, c2, c_n2 = (v[big] for v in counts)
        psi = np.exp(_start(c1, c_n1, c2, c_n2, ODDS_SHARE * level))
        exact[big] = _pruned_scores(psi, c1, c_n1, rows[big], exact.max(axis=1), delta, level)
    if small.any():  # each distinct (rounded) table solved once, if it can reach its rows' best large one
        tables, where = np.unique(np.stack([v[small] for v in counts], axis=1), axis=0, return_inverse=True)
        floor = np.full(len(tables), np.inf)
        np.minimum.at(floor, where.reshape(-1), exact.max(axis=1)[rows[small]])
        solved = np.full(len(tables), -np.inf)
        keep = _may_reach(tables, floor, delta, level)
        solved[keep] = joint_epsilon(tables[keep, 0], tables[keep, 1], tables[keep, 2], tables[keep, 3], delta, alpha)
        exact[small] = solved[where.reshape(-1)]
    best = np.argmax(exact, axis=1)
    return best.reshape(shape[:-1]), exact[np.arange(len(exact)), best].reshape(shape[:-1])


def _pruned_scores(psi: np.ndarray, k1: np.ndarray, n1: np.ndarray, rows: np.ndarray, floor: np.ndarray,
                   delta: float, alpha: float) -> np.ndarray:
    """The scores :func:`_corrected` gives (ψ, k₁, n₁ per candidate, ``rows`` its row), or −inf for a
    candidate shown to be below its row's maximum (:func:`joint_score_best`); ``floor`` per row is a
    known lower bound of that maximum (the exactly scored small windows')."""
    pairs, where = np.unique(np.stack([n1, k1], axis=1), axis=0, return_inverse=True)
    where = where.reshape(-1)
    known = np.zeros(len(pairs), dtype=bool)
    p_hi, p_lo = np.ones(len(pairs)), np.ones(len(pairs))
    live = np.ones(len(k1), dtype=bool)
    floor = floor.astype(float)
    for step in (*betainv.BRACKET_STEPS, 1):
        wanted = np.unique(where[live])
        wanted = np.union1d(wanted[::step], wanted[-1:])
        wanted = wanted[~known[wanted]]
        hi, lo = _p_bounds(pairs[wanted, 1], pairs[wanted, 0], delta, alpha)
        p_hi[wanted], known[wanted] = hi, True
        if lo is not None:
            p_lo[wanted] = lo
        if step == 1:
            break
        (hi_low, hi_high), (lo_low, lo_high) = (betainv.bracket(v, known, pairs[:, 0]) for v in (p_hi, p_lo))
        i = where[live]
        low = _corrected_from(psi[live], hi_high[i], lo_low[i] if delta > 0 else None, delta)
        high = _corrected_from(psi[live], hi_low[i], lo_high[i] if delta > 0 else None, delta)
        np.maximum.at(floor, rows[live], low)
        drop = high < floor[rows[live]] - PRUNE_MARGIN  # NaN never drops
        live[np.flatnonzero(live)[drop]] = False
    out = np.full(len(k1), -np.inf)
    out[live] = _corrected_from(psi[live], p_hi[where[live]], p_lo[where[live]] if delta > 0 else None, delta)
    return out


def _may_reach(tables: np.ndarray, floor: np.ndarray, delta: float, alpha: float) -> np.ndarray:
    """Whether each table's exact bound (:func:`epsilon_lower` at level ``alpha``) may reach ``floor``
    − :data:`PRUNE_MARGIN`; False only where it provably does not.

    The exact bound is log r_lo + log(1 − δ/p_lo) with r_lo = ψ_lo − p_hi·max(0, ψ_lo − 1) ≤ ψ_lo, so it
    is below t + log(1 − δ/p_lo) whenever log ψ_lo < t.  The windowed tail share that ψ_lo solves for
    (:func:`_solve`) increases in log ψ: where it is above α at t (one evaluation, no Newton steps), the
    root is below t, and the solver's answer with it (its tolerance, 10⁻¹², is far inside the slack)."""
    keep = np.ones(len(tables), dtype=bool)
    k1, n1, k2, n2 = (tables[:, j] for j in range(4))
    extra = np.zeros(len(tables))
    with np.errstate(divide="ignore", invalid="ignore"):
        if delta > 0:
            p_lo = clopper_pearson_lower(k1, n1, (1.0 - ODDS_SHARE) * alpha / 2)
            extra = np.where(p_lo > delta, np.log1p(-delta / np.maximum(p_lo, 1e-300)), -np.inf)
        need = floor - PRUNE_MARGIN - extra  # log ψ_lo must reach this for the bound to reach the floor
        need = need - PRUNE_MARGIN * np.maximum(1.0, np.abs(need))
    keep[extra == -np.inf] = False  # the bound is -inf whatever ψ_lo is
    test = np.flatnonzero(keep & np.isfinite(need) & (k1 > _support(k1, n1, k2, n2)[0]))
    if test.size:
        level = ODDS_SHARE * alpha
        a, b = _windows(k1[test], n1[test], k2[test], n2[test], level)
        segments = [_log_weights(int(a[i]), int(b[i]), n1[j], n2[j], k1[j] + k2[j]) for i, j in enumerate(test)]
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            gap, _ = _gap(*_flatten(segments, (k1[test] - a).astype(np.int64), np.arange(test.size)), need[test],
                          np.log(level))
        keep[test[gap > PRUNE_MARGIN]] = False  # NaN keeps
    return keep


def woolf_epsilon(k1: np.ndarray | float, n1: np.ndarray | float, k2: np.ndarray | float, n2: np.ndarray | float,
                  delta: float, alpha: float) -> np.ndarray:
    """The joint test's closed form (Woolf's normal bound of log ψ, corrected): ``alpha`` per bound of
    the pair it replaces, as every test's bound takes it; the detectable-leak budget's search form."""
    k1, n1, k2, n2 = (np.asarray(v, dtype=float) for v in np.broadcast_arrays(k1, n1, k2, n2))
    return np.asarray(approximate_epsilon(k1, n1, k2, n2, delta, 2.0 * alpha), dtype=float)


# Registered here, where it is defined; dpaudit.engine.bounds imports this module before it registers the
# Clopper–Pearson pair, so the joint test comes first and takes ties.
JOINT = register(StatTest(
    name="joint", bound=joint_epsilon, score=joint_score, rough=woolf_epsilon,
    title="joint exact test of the ratio",
    described="the exact conditional test of the odds ratio, corrected to the ratio of probabilities",
    requires="the two counts independent binomials (k1 ~ Bin(n1, p), k2 ~ Bin(n2, q)); real-valued counts "
             "are rounded", spends=2.0))
