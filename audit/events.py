"""Output events and how they are chosen on the selection split.

An :class:`Event` is a set S of outputs and the side (D or D′) whose probability of S is
bounded from below.  Candidates come from several *views* of the outputs, all fitted on the
selection split only (so choosing among them costs no confidence):

* ``rows``       — each distinct output (scalar or row of an integer vector) is a category;
  skipped when there are too many distinct outputs to count (the fallback is the views below);
* ``threshold``  — S = {s ≥ t} or {s ≤ t} for a scalar statistic s;
* ``histogram``  — categories = atoms of s (values repeated in the sample, such as an abort
  symbol −1 inside real outputs) and quantile bins of the rest, dense in both tails;
  S = a prefix in likelihood-ratio order, which captures non-monotone ratios and
  shifted supports that no single threshold can.

Statistics: the output itself (scalar outputs); for vectors, the Fisher direction
Σ⁻¹(μ_D − μ_D′) and a logistic-regression score on featurised outputs (raw coordinates,
indicators of each coordinate's frequent values, and — for short vectors — squares and
pairwise products, a small quadratic classifier for when the linear one is weak).

Within a view, set candidates are prefixes of the categories sorted by empirical likelihood
ratio (Neyman–Pearson; complements are the prefixes of the other direction).  Every
candidate, in both directions, is scored by the Clopper–Pearson bound it would give on the
estimation split, starting from the selection split's own pessimistic bounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats
from scipy.special import expit

from dpcore import require

SIDES = ("D", "D'")
VIEWS = ("rows", "threshold", "histogram")
MAX_ROWS = 20_000          # distinct outputs beyond which the rows view is skipped
_FIT_ROWS = 200_000        # logistic regression is fitted on at most this many selection rows
_MAX_ATOMS = 64


# --- bounds used for scoring -----------------------------------------------------------

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


def _projected(k_fav, k_oth, n_sel, n_est, delta, alpha, bounds) -> np.ndarray:
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


# --- statistics and categories -----------------------------------------------------------

def keys(outputs: np.ndarray) -> np.ndarray:
    """Sortable keys: the values for scalars, a byte view per row for vectors."""
    if outputs.ndim == 1:
        return outputs.astype(np.int64) if outputs.dtype.kind in "biu" else outputs.astype(float)
    rows = np.ascontiguousarray(outputs.astype(np.int64 if outputs.dtype.kind in "biu" else float))
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()


def as_matrix(outputs: np.ndarray) -> np.ndarray:
    return np.asarray(outputs, dtype=float).reshape(len(outputs), -1)


@dataclass(frozen=True, eq=False)
class Identity:
    """The scalar output itself."""

    name: str = "output"

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        return np.asarray(outputs, dtype=float).reshape(len(outputs))


@dataclass(frozen=True, eq=False)
class Features:
    """Raw coordinates, indicators of frequent values per coordinate, optional quadratic terms,
    standardised with selection-split moments."""

    atoms: tuple[tuple[int, float], ...]
    quadratic: bool
    mean: np.ndarray = field(default=None)
    scale: np.ndarray = field(default=None)

    def raw(self, outputs: np.ndarray) -> np.ndarray:
        x = as_matrix(outputs)
        cols = [x] + [(x[:, [j]] == v).astype(float) for j, v in self.atoms]
        if self.quadratic:
            iu = np.triu_indices(x.shape[1])
            cols.append(x[:, iu[0]] * x[:, iu[1]])
        return np.hstack(cols)

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        return (self.raw(outputs) - self.mean) / self.scale


@dataclass(frozen=True, eq=False)
class Linear:
    """s = features(output) · w (Fisher direction on raw coordinates, or a logistic score)."""

    name: str
    weights: np.ndarray
    features: Features | None = None

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        x = as_matrix(outputs) if self.features is None else self.features(outputs)
        return x @ self.weights


@dataclass(frozen=True, eq=False)
class Bins:
    """Category of s: an atom's index, else len(atoms) + its quantile bin."""

    atoms: np.ndarray
    edges: np.ndarray

    def __call__(self, s: np.ndarray) -> np.ndarray:
        codes = len(self.atoms) + np.searchsorted(self.edges, s, side="right")
        if len(self.atoms):
            pos = np.clip(np.searchsorted(self.atoms, s), 0, len(self.atoms) - 1)
            hit = self.atoms[pos] == s
            codes[hit] = pos[hit]
        return codes

    @property
    def n_codes(self) -> int:
        return len(self.atoms) + len(self.edges) + 1


def fisher(x: np.ndarray, y: np.ndarray) -> Linear:
    """Σ⁻¹(μ_x − μ_y) with the pooled covariance (ridge-regularised), unit norm."""
    x, y = as_matrix(x), as_matrix(y)
    diff = x.mean(axis=0) - y.mean(axis=0)
    cov = np.atleast_2d(0.5 * (np.cov(x, rowvar=False) + np.cov(y, rowvar=False)))
    ridge = 1e-9 * max(float(np.trace(cov)) / len(cov), 1e-300)
    w = np.linalg.solve(cov + ridge * np.eye(len(cov)), diff)
    norm = np.linalg.norm(w)
    w = w / norm if norm > 0 and np.isfinite(norm) else np.ones(x.shape[1]) / math.sqrt(x.shape[1])
    return Linear("fisher", w)


def _frequent_values(column: np.ndarray, limit: int = 8, share: float = 0.01) -> list[float]:
    values, counts = np.unique(column, return_counts=True)
    keep = counts >= max(5, share * len(column))
    order = np.argsort(-counts[keep])[:limit]
    return values[keep][order].tolist()


def logistic(x: np.ndarray, y: np.ndarray, quadratic: bool, rng: np.random.Generator) -> Linear:
    """A ridge logistic regression of "output came from D" on featurised outputs (IRLS)."""
    pooled = np.vstack([as_matrix(x), as_matrix(y)])
    atoms = tuple((j, v) for j in range(pooled.shape[1]) for v in _frequent_values(pooled[:, j])
                  if 0 < np.mean(pooled[:, j] == v) < 0.999)
    probe = Features(atoms, quadratic)
    raw = probe.raw(pooled)
    scale = raw.std(axis=0)
    feats = Features(atoms, quadratic, raw.mean(axis=0), np.where(scale > 0, scale, 1.0))
    labels = np.concatenate([np.ones(len(x)), np.zeros(len(y))])
    if len(labels) > _FIT_ROWS:
        pick = rng.choice(len(labels), _FIT_ROWS, replace=False)
        raw, labels = raw[pick], labels[pick]
    f = np.hstack([(raw - feats.mean) / feats.scale, np.ones((len(raw), 1))])
    w = np.zeros(f.shape[1])
    ridge = 1e-3 * np.eye(f.shape[1]) * len(f) / 1000
    for _ in range(25):
        p = expit(f @ w)
        grad = f.T @ (p - labels) + ridge @ w
        hess = (f * (p * (1 - p))[:, None]).T @ f + ridge
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return Linear("logistic-quadratic" if quadratic else "logistic", w[:-1], feats)


def quantile_bins(s: np.ndarray, inner: int = 256) -> Bins:
    """Atoms (values repeated ≥ 5 times and ≥ 0.1 % of the sample) and bin edges at quantiles
    of the rest, dense in both tails."""
    values, counts = np.unique(s, return_counts=True)
    is_atom = counts >= max(5, 1e-3 * len(s))
    atoms = values[is_atom][np.argsort(-counts[is_atom])[:_MAX_ATOMS]]
    atoms = np.sort(atoms)
    rest = np.sort(s[~np.isin(s, atoms)]) if len(atoms) else np.sort(s)
    if len(rest) == 0:
        return Bins(atoms, np.array([]))
    n = len(rest)
    ranks = np.linspace(0, n - 1, min(inner, max(2, n // 50))).astype(int)
    tail = np.unique(np.geomspace(1, max(1, n / 8), 24).astype(int))
    ranks = np.unique(np.concatenate([ranks, tail - 1, n - tail]))
    return Bins(atoms, np.unique(rest[np.clip(ranks, 0, n - 1)]))


# --- events ------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Event:
    """An output event S and the side whose probability of S is bounded from below."""

    favours: str
    view: str
    statistic: Any = None
    members: np.ndarray | None = None   # keys (rows view) or codes (histogram view)
    bins: Bins | None = None
    threshold: float = 0.0
    upper: bool = True

    def contains(self, outputs: np.ndarray) -> np.ndarray:
        """Membership of each output (rows for vector outputs) in S."""
        if self.view == "rows":
            return np.isin(keys(outputs), self.members)
        s = self.statistic(outputs)
        if self.view == "histogram":
            return np.isin(self.bins(s), self.members)
        return s >= self.threshold if self.upper else s <= self.threshold

    @property
    def other(self) -> str:
        return SIDES[1 - SIDES.index(self.favours)]

    def describe(self) -> str:
        if self.view == "rows":
            head = f"output in {_show(self.members)}"
        elif self.view == "histogram":
            head = f"{self.statistic.name} in {len(self.members)} of {self.bins.n_codes} likelihood-ratio cells"
        else:
            head = f"{self.statistic.name} {'>=' if self.upper else '<='} {self.threshold:.6g}"
        return f"{head} (more likely under {self.favours} than {self.other})"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"view": self.view, "favours": self.favours, "text": self.describe()}
        if self.statistic is not None:
            out["statistic"] = self.statistic.name
            if isinstance(self.statistic, Linear):
                out["weights"] = self.statistic.weights.tolist()
        if self.view == "rows":
            out["values"] = _values_list(self.members)
        elif self.view == "histogram":
            out.update(cells=len(self.members), atoms=self.bins.atoms.tolist())
        else:
            out.update(threshold=self.threshold, upper=self.upper)
        return out


def _values_list(values: np.ndarray) -> list:
    if values.dtype.kind == "V":
        width = values.dtype.itemsize // 8
        return np.frombuffer(values.tobytes(), dtype=np.int64).reshape(-1, width).tolist()
    return values.tolist()


def _show(values: np.ndarray, limit: int = 8) -> str:
    items = _values_list(values)
    text = ", ".join(str(v) for v in items[:limit])
    return "{" + text + (f", … ({len(items)} outputs)" if len(items) > limit else "") + "}"


# --- selection ---------------------------------------------------------------------------

def _prefix_ends(n: int, inner: int = 1000) -> np.ndarray:
    if n <= 2 * inner:
        return np.arange(n)
    tail = np.unique(np.geomspace(1, n / 4, 200).astype(int))
    return np.unique(np.concatenate([np.linspace(0, n - 1, inner).astype(int), tail - 1, n - tail]))


@dataclass
class _Counts:
    """Per-category (or per-threshold) counts of a view on the selection split."""

    k_fav: np.ndarray          # candidate counts under the favoured side
    k_oth: np.ndarray          # and under the other side
    fav: int                   # 0: favours D, 1: favours D′
    make: Any                  # builds the Event of candidate j


def _set_view(fit: tuple[np.ndarray, np.ndarray], score: tuple[np.ndarray, np.ndarray], n_fit, make
              ) -> list[_Counts]:
    """Prefixes in likelihood-ratio order: the order from the fitting half's counts ``fit``,
    the candidates' counts from the scoring half ``score`` (so the order's noise is not scored)."""
    out = []
    for fav in (0, 1):
        ff, fo = fit[fav], fit[1 - fav]
        ratio = (ff + 0.5) / n_fit[fav] / ((fo + 0.5) / n_fit[1 - fav])
        order = np.argsort(-ratio, kind="stable")
        ends = _prefix_ends(len(order))
        out.append(_Counts(np.cumsum(score[fav][order])[ends], np.cumsum(score[1 - fav][order])[ends], fav,
                           lambda j, fav=fav, order=order, ends=ends: make(SIDES[fav], order[: ends[j] + 1])))
    return out


def _threshold_view(stat, fit_pooled, sx, sy) -> list[_Counts]:
    sx, sy = np.sort(sx), np.sort(sy)
    pooled = np.sort(fit_pooled)
    t = np.unique(pooled[_prefix_ends(len(pooled))])
    ge = (len(sx) - np.searchsorted(sx, t, "left"), len(sy) - np.searchsorted(sy, t, "left"))
    le = (np.searchsorted(sx, t, "right"), np.searchsorted(sy, t, "right"))
    out = []
    for upper, counts in ((True, ge), (False, le)):
        for fav in (0, 1):
            out.append(_Counts(counts[fav].astype(float), counts[1 - fav].astype(float), fav,
                               lambda j, fav=fav, upper=upper: Event(SIDES[fav], "threshold", stat,
                                                                      threshold=float(t[j]), upper=upper)))
    return out


def _halves(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = len(a) // 2
    return a[:h], a[h:]


def candidate_views(x: np.ndarray, y: np.ndarray, views: Sequence[str], rng: np.random.Generator
                    ) -> tuple[list[_Counts], tuple[int, int]]:
    """Candidate families on the selection samples ``x`` (D) and ``y`` (D′), and the sample
    sizes their counts come from.

    Each view's structure (likelihood-ratio order, bin edges, classifier) is fitted on the
    first half of the selection samples and its candidates are counted on the second, so
    views compete on scores their own fitting did not inflate.
    """
    (fx, x2), (fy, y2) = _halves(x), _halves(y)
    n_fit, n_score = (len(fx), len(fy)), (len(x2), len(y2))
    out: list[_Counts] = []
    if "rows" in views and x.dtype.kind in "biu" and y.dtype.kind in "biu":
        parts = [keys(a) for a in (fx, fy, x2, y2)]
        values, inverse = np.unique(np.concatenate(parts), return_inverse=True)
        if len(values) <= MAX_ROWS:
            bounds = np.cumsum([0] + [len(p) for p in parts])
            c = [np.bincount(inverse[bounds[i]:bounds[i + 1]], minlength=len(values)).astype(float) for i in range(4)]
            out += _set_view((c[0], c[1]), (c[2], c[3]), n_fit,
                             lambda fav, idx: Event(fav, "rows", members=np.sort(values[idx])))
    if {"threshold", "histogram"} & set(views):
        for stat in _statistics(fx, fy, rng):
            fit_x, fit_y, sx, sy = stat(fx), stat(fy), stat(x2), stat(y2)
            if "threshold" in views:
                out += _threshold_view(stat, np.concatenate([fit_x, fit_y]), sx, sy)
            if "histogram" in views:
                bins = quantile_bins(np.concatenate([fit_x, fit_y]))
                if bins.n_codes >= 3:
                    count = lambda s, bins=bins: np.bincount(bins(s), minlength=bins.n_codes).astype(float)  # noqa: E731
                    out += _set_view((count(fit_x), count(fit_y)), (count(sx), count(sy)), n_fit,
                                     lambda fav, idx, stat=stat, bins=bins: Event(
                                         fav, "histogram", stat, members=np.sort(idx), bins=bins))
    return out, n_score


def _statistics(x: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> list:
    if x.ndim == 1 or x.shape[1] == 1:
        return [Identity()]
    stats_ = [fisher(x, y), logistic(x, y, quadratic=False, rng=rng)]
    if x.shape[1] <= 8:
        stats_.append(logistic(x, y, quadratic=True, rng=rng))
    return stats_


def choose(families: Sequence[_Counts], n_sel: tuple[int, int], n_est: tuple[int, int], delta: float,
           alpha: float) -> tuple[Event, _Counts, int]:
    """The best event over every candidate of every view, for one δ (``n_sel``: the sizes the
    candidates were counted on), with its family and index there."""
    best: tuple[float, _Counts, int] | None = None
    for fam in families:
        fav = fam.fav
        score, j = best_candidate(fam.k_fav, fam.k_oth, (n_sel[fav], n_sel[1 - fav]),
                                  (n_est[fav], n_est[1 - fav]), delta, alpha)
        if best is None or score > best[0]:
            best = (score, fam, j)
    return best[1].make(best[2]), best[1], best[2]


def nested_family(fam: _Counts, best: int, points: int) -> list[Event]:
    """``points`` nested events of one view family (thresholds, or likelihood-ratio prefixes),
    spread over its range and including the chosen one: the empirical trade-off curve."""
    idx = np.unique(np.concatenate([np.linspace(0, len(fam.k_fav) - 1, points).astype(int), [best]]))
    return [fam.make(int(j)) for j in idx]


def count_members(outputs: np.ndarray, events: Sequence[Event]) -> np.ndarray:
    """How many outputs fall in each event, computing each shared statistic once."""
    cache: dict[int, np.ndarray] = {}

    def once(key: int, compute) -> np.ndarray:
        if key not in cache:
            cache[key] = compute()
        return cache[key]

    # Set events count through a per-chunk histogram of their cells, so a nested family of
    # events costs one pass over the chunk, not one per event.
    out = np.empty(len(events), dtype=np.int64)
    for i, ev in enumerate(events):
        if ev.view == "rows":
            values, counts = once(-1, lambda: np.unique(keys(outputs), return_counts=True))
            out[i] = int(counts[np.isin(values, ev.members)].sum())
            continue
        s = once(id(ev.statistic), lambda ev=ev: ev.statistic(outputs))
        if ev.view == "histogram":
            cells = once(id(ev.bins), lambda ev=ev, s=s: np.bincount(ev.bins(s), minlength=ev.bins.n_codes))
            out[i] = int(cells[ev.members].sum())
        else:
            out[i] = int((s >= ev.threshold).sum() if ev.upper else (s <= ev.threshold).sum())
    return out


def select_events(x: np.ndarray, y: np.ndarray, deltas: Sequence[float], n_est: tuple[int, int],
                  confidence: float | Sequence[float], views: Sequence[str] = VIEWS, seed: int = 0,
                  tradeoff_points: int = 0) -> tuple[list[Event], list[Event]]:
    """One event per δ, chosen on the selection samples ``x`` (under D) and ``y`` (under D′),
    and (with ``tradeoff_points``) a nested family of the first δ's view for the trade-off curve.

    ``confidence`` may be one value or one per δ (a curve claim tested at Bonferroni levels).
    """
    confidences = [confidence] * len(deltas) if np.isscalar(confidence) else list(confidence)
    require(len(confidences) == len(deltas), "confidence", confidence, "one value, or one per delta")
    for v in views:
        require(v in VIEWS, "events", v, f"views are {', '.join(VIEWS)}")
    families, n_score = candidate_views(x, y, views, np.random.default_rng(seed))
    require(bool(families), "events", list(views), "no view applies to these outputs (rows needs integer outputs)")
    picks = [choose(families, n_score, n_est, d, (1 - c) / 2) for d, c in zip(deltas, confidences)]
    family = nested_family(picks[0][1], picks[0][2], tradeoff_points) if tradeoff_points else []
    return [p[0] for p in picks], family


def describe_outputs(x: np.ndarray, y: np.ndarray, event: Event, bins: int = 40, top: int = 12) -> dict[str, Any]:
    """What the selection split looked like, for reports: the most frequent outputs (rows view)
    or a histogram of the chosen statistic, under D and D′."""
    if event.view == "rows":
        kx, ky = keys(x), keys(y)
        values, inverse = np.unique(np.concatenate([kx, ky]), return_inverse=True)
        cx = np.bincount(inverse[: len(kx)], minlength=len(values))
        cy = np.bincount(inverse[len(kx):], minlength=len(values))
        order = np.argsort(-(cx + cy), kind="stable")[:top]
        return {"kind": "outputs", "values": [str(v) for v in _values_list(values[order])],
                "D": cx[order].tolist(), "D'": cy[order].tolist(), "n": [len(x), len(y)],
                "in_event": np.isin(values[order], event.members).tolist()}
    sx, sy = event.statistic(x), event.statistic(y)
    pooled = np.concatenate([sx, sy])
    lo, hi = np.quantile(pooled, [0.001, 0.999])
    if not hi > lo:
        lo, hi = float(pooled.min()) - 0.5, float(pooled.max()) + 0.5
    edges = np.linspace(lo, hi, bins + 1)
    return {"kind": "histogram", "statistic": event.statistic.name, "edges": edges.tolist(),
            "D": np.histogram(sx, edges)[0].tolist(),
            "D'": np.histogram(sy, edges)[0].tolist(), "n": [len(x), len(y)],
            "threshold": event.threshold if event.view == "threshold" else None,
            "upper": event.upper if event.view == "threshold" else None}
