"""ε lower bounds from samples: event selection and Clopper–Pearson (DESIGN.md, "Statistics").

For an event S with counts k1/n1 under the favoured side and k2/n2 under the other, at
confidence 1 − α,

    ε_lower(δ) = log((p1_lo − δ) / p2_hi),

with one-sided Clopper–Pearson bounds p1_lo, p2_hi each at level α/2 (so both hold
together with probability ≥ 1 − α by the union bound), reported as 0 when negative.

Validity rests on choosing S without looking at the counts of its interval: the samples
are split, S (and the side it favours) is chosen on the *selection* split, and its interval
uses only the *estimation* split.  On the selection split every candidate is scored by the
bound it would give with the estimation split's sample sizes (the confidence-adjusted
bound, not the raw ratio, with the selection split's own uncertainty carried over), so rare
events with lucky ratios do not win.  (Candidates are ranked with Wilson bounds and the best
few re-scored with exact Clopper–Pearson; only the selection depends on this.)

Candidates (both directions, every δ separately):

* finite outputs — prefixes of the outputs sorted by empirical likelihood ratio
  (Neyman–Pearson; complements are the prefixes of the other direction);
* scalar outputs — threshold events {s ≥ t} and {s ≤ t};
* vector outputs — threshold events on the Fisher direction Σ⁻¹(μ_D − μ_D′) learned on the
  selection split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy import stats

from mechanisms.base import InputError, require

SIDES = ("D", "D'")


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


def epsilon_from_bounds(p_lower: np.ndarray, q_upper: np.ndarray, delta: float) -> np.ndarray:
    """log((p_lo − δ)/q_hi), −inf where p_lo ≤ δ."""
    excess = np.asarray(p_lower, dtype=float) - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(excess > 0, np.log(np.maximum(excess, 1e-300)) - np.log(q_upper), -np.inf)
    return out


@dataclass(frozen=True, eq=False)
class Event:
    """An output event S and the side whose probability of S is bounded from below.

    ``kind`` is ``"set"`` (S = a finite set of outputs: scalars or rows) or ``"threshold"``
    (S = {s ≥ t} or {s ≤ t} for the statistic s = output, or output · projection).
    """

    kind: str
    favours: str
    values: np.ndarray | None = None
    threshold: float = 0.0
    upper: bool = True
    projection: np.ndarray | None = None

    def contains(self, outputs: np.ndarray) -> np.ndarray:
        """Membership of each output (rows for vector outputs) in S."""
        if self.kind == "set":
            return np.isin(_keys(outputs), self.values)
        s = statistic(outputs, self.projection)
        return s >= self.threshold if self.upper else s <= self.threshold

    def describe(self) -> str:
        other = SIDES[1 - SIDES.index(self.favours)]
        if self.kind == "set":
            shown = _show_values(self.values)
            head = f"output in {shown}"
        else:
            stat = "output" if self.projection is None else "w·output"
            head = f"{stat} {'>=' if self.upper else '<='} {self.threshold:.6g}"
        return f"{head} (more likely under {self.favours} than {other})"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "favours": self.favours, "text": self.describe()}
        if self.kind == "set":
            out["values"] = _values_list(self.values)
        else:
            out.update(threshold=self.threshold, upper=self.upper)
            if self.projection is not None:
                out["projection"] = self.projection.tolist()
        return out


@dataclass(frozen=True)
class Bound:
    """The ε lower bound at one δ, with its event and counts."""

    delta: float
    epsilon_lower: float
    event: Event
    counts: tuple[int, int, int, int]  # k under D, n under D, k under D', n under D'
    p_lower: float  # Clopper–Pearson lower bound of P[S] under the favoured side
    q_upper: float  # Clopper–Pearson upper bound of P[S] under the other side
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        k1, n1, k2, n2 = self.counts
        return {"delta": self.delta, "epsilon_lower": self.epsilon_lower,
                "event": self.event.to_dict(),
                "counts": {"D": [k1, n1], "D'": [k2, n2]},
                "p_lower": self.p_lower, "q_upper": self.q_upper, "confidence": self.confidence}


@dataclass(frozen=True)
class Estimate:
    """ε lower bounds at each requested δ, each holding with the stated confidence."""

    bounds: tuple[Bound, ...]
    confidence: float
    samples: int           # per side, selection + estimation
    selection_samples: int  # per side

    @property
    def epsilon_lower(self) -> float:
        """The bound at the first δ."""
        return self.bounds[0].epsilon_lower

    def at(self, delta: float) -> Bound:
        for b in self.bounds:
            if b.delta == delta:
                return b
        raise KeyError(f"no bound at delta={delta}; have {[b.delta for b in self.bounds]}")

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon_lower": self.epsilon_lower, "confidence": self.confidence,
                "samples": self.samples, "selection_samples": self.selection_samples,
                "bounds": [b.to_dict() for b in self.bounds]}


# --- outputs -----------------------------------------------------------------------------

def check_outputs(outputs: Any, size: int | None = None, where: str = "sample") -> np.ndarray:
    """Validate a batch of mechanism outputs: numeric, finite, shape (n,) or (n, k)."""
    arr = np.asarray(outputs)
    require(arr.dtype.kind in "biuf", f"{where} output dtype", arr.dtype.name,
            "outputs must be booleans, integers or real numbers")
    require(arr.ndim in (1, 2), f"{where} output shape", arr.shape, "must be (size,) or (size, k)")
    if size is not None:
        require(arr.shape[0] == size, f"{where} output length", arr.shape[0], f"must equal size={size}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise InputError(f"{where} returned non-finite outputs (NaN or inf): no verdict is computed on them")
    return arr


def is_discrete(outputs: np.ndarray) -> bool:
    """Integer or boolean outputs are treated as a finite output space."""
    return outputs.dtype.kind in "biu"


def _keys(outputs: np.ndarray) -> np.ndarray:
    """Hashable, sortable keys: the values for scalars, a byte view per row for vectors."""
    if outputs.ndim == 1:
        return outputs.astype(np.int64) if outputs.dtype.kind in "biu" else outputs
    rows = np.ascontiguousarray(outputs.astype(np.int64 if outputs.dtype.kind in "biu" else float))
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()


def _values_list(values: np.ndarray) -> list:
    if values.dtype.kind == "V":
        width = values.dtype.itemsize // 8
        return np.frombuffer(values.tobytes(), dtype=np.int64).reshape(-1, width).tolist()
    return values.tolist()


def _show_values(values: np.ndarray, limit: int = 8) -> str:
    items = _values_list(values)
    text = ", ".join(str(v) for v in items[:limit])
    return "{" + text + (f", … ({len(items)} outputs)" if len(items) > limit else "") + "}"


def statistic(outputs: np.ndarray, projection: np.ndarray | None) -> np.ndarray:
    if projection is None:
        return np.asarray(outputs, dtype=float).reshape(len(outputs))
    return np.asarray(outputs, dtype=float) @ projection


def fisher_direction(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Σ⁻¹(μ_x − μ_y) with the pooled covariance (ridge-regularised), unit norm."""
    diff = x.mean(axis=0) - y.mean(axis=0)
    cov = 0.5 * (np.cov(x, rowvar=False) + np.cov(y, rowvar=False))
    cov = np.atleast_2d(cov)
    ridge = 1e-9 * max(float(np.trace(cov)) / len(cov), 1e-300)
    w = np.linalg.solve(cov + ridge * np.eye(len(cov)), diff)
    norm = np.linalg.norm(w)
    return w / norm if norm > 0 and np.isfinite(norm) else np.ones(x.shape[1]) / math.sqrt(x.shape[1])


# --- selection ---------------------------------------------------------------------------

def _candidate_ranks(n: int, inner: int = 1000) -> np.ndarray:
    """Ranks covering the bulk evenly and both tails geometrically (deep tail events)."""
    if n <= 2 * inner:
        return np.arange(n)
    tail = np.unique(np.geomspace(1, n / 4, 200).astype(int))
    return np.unique(np.concatenate([np.linspace(0, n - 1, inner).astype(int), tail - 1, n - tail]))


def wilson(k: np.ndarray, n: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Wilson score bounds (lower, upper) at level ``alpha``: a closed-form proxy for
    Clopper–Pearson used only to rank candidate events."""
    z = stats.norm.isf(alpha)
    p = np.asarray(k, dtype=float) / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(np.maximum(p * (1 - p), 0) / n + z * z / (4 * n * n)) / denom
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def _projected_score(k_fav, k_oth, n_sel, n_est, delta, alpha, fav_index, bounds) -> np.ndarray:
    nf_sel, no_sel = n_sel[fav_index], n_sel[1 - fav_index]
    nf_est, no_est = n_est[fav_index], n_est[1 - fav_index]
    p_sel, _ = bounds(k_fav, nf_sel, alpha)
    _, q_sel = bounds(k_oth, no_sel, alpha)
    lo, _ = bounds(p_sel * nf_est, nf_est, alpha)
    _, hi = bounds(q_sel * no_est, no_est, alpha)
    return epsilon_from_bounds(lo, hi, delta)


def _best(k_fav: np.ndarray, k_oth: np.ndarray, n_sel: tuple[int, int], n_est: tuple[int, int],
          delta: float, alpha: float, fav_index: int, shortlist: int = 16) -> tuple[float, int]:
    """Best candidate by the confidence-adjusted bound it would give on the estimation split.

    The selection split's own Clopper–Pearson bounds (pessimistic for the candidate) are
    projected to the estimation sample sizes and bounded again; projecting raw counts
    instead lets a tail event with 3-vs-0 counts look like a sure win and then fail.
    All candidates are ranked with Wilson bounds and the ``shortlist`` best re-scored
    with exact Clopper–Pearson, which costs 100× less than scoring all exactly.
    """
    k_fav, k_oth = np.asarray(k_fav, dtype=float), np.asarray(k_oth, dtype=float)
    rough = _projected_score(k_fav, k_oth, n_sel, n_est, delta, alpha, fav_index, wilson)
    top = np.argsort(-rough, kind="stable")[:shortlist]
    exact = _projected_score(k_fav[top], k_oth[top], n_sel, n_est, delta, alpha, fav_index, clopper_pearson)
    j = int(np.argmax(exact))
    return float(exact[j]), int(top[j])


def select_events(x: np.ndarray, y: np.ndarray, deltas: Sequence[float], n_est: tuple[int, int],
                  confidence: float, discrete: bool | None = None) -> list[Event]:
    """One event per δ, chosen on the selection samples ``x`` (under D) and ``y`` (under D′)."""
    alpha = (1.0 - confidence) / 2.0
    n_sel = (len(x), len(y))
    if discrete is None:
        discrete = is_discrete(x) and is_discrete(y)
    if discrete:
        return [_select_set(x, y, d, n_sel, n_est, alpha) for d in deltas]
    projection = fisher_direction(x, y) if x.ndim == 2 and x.shape[1] > 1 else None
    return [_select_threshold(x, y, projection, d, n_sel, n_est, alpha) for d in deltas]


def _select_set(x, y, delta, n_sel, n_est, alpha) -> Event:
    kx, ky = _keys(x), _keys(y)
    values, inverse = np.unique(np.concatenate([kx, ky]), return_inverse=True)
    cx = np.bincount(inverse[: len(kx)], minlength=len(values)).astype(float)
    cy = np.bincount(inverse[len(kx):], minlength=len(values)).astype(float)
    best = (-np.inf, None)
    for fav, (cf, co) in enumerate(((cx, cy), (cy, cx))):
        ratio = (cf + 0.5) / n_sel[fav] / ((co + 0.5) / n_sel[1 - fav])
        order = np.argsort(-ratio, kind="stable")
        ends = _candidate_ranks(len(order))
        k_f, k_o = np.cumsum(cf[order])[ends], np.cumsum(co[order])[ends]
        score, j = _best(k_f, k_o, n_sel, n_est, delta, alpha, fav)
        if score > best[0] or best[1] is None:
            best = (score, Event("set", SIDES[fav], values=np.sort(values[order[: ends[j] + 1]])))
    return best[1]


def _select_threshold(x, y, projection, delta, n_sel, n_est, alpha) -> Event:
    sx, sy = np.sort(statistic(x, projection)), np.sort(statistic(y, projection))
    pooled = np.sort(np.concatenate([sx, sy]))
    thresholds = np.unique(pooled[_candidate_ranks(len(pooled))])
    ge = (len(sx) - np.searchsorted(sx, thresholds, "left"), len(sy) - np.searchsorted(sy, thresholds, "left"))
    le = (np.searchsorted(sx, thresholds, "right"), np.searchsorted(sy, thresholds, "right"))
    best = (-np.inf, None)
    for upper, (cx, cy) in ((True, ge), (False, le)):
        for fav, (cf, co) in enumerate(((cx, cy), (cy, cx))):
            score, j = _best(cf.astype(float), co.astype(float), n_sel, n_est, delta, alpha, fav)
            if score > best[0] or best[1] is None:
                best = (score, Event("threshold", SIDES[fav], threshold=float(thresholds[j]), upper=upper,
                                     projection=projection))
    return best[1]


def bound_from_counts(event: Event, delta: float, k_d: int, n_d: int, k_dp: int, n_dp: int,
                      confidence: float) -> Bound:
    """The Clopper–Pearson ε lower bound for ``event`` from estimation counts."""
    alpha = (1.0 - confidence) / 2.0
    (k1, n1), (k2, n2) = ((k_d, n_d), (k_dp, n_dp)) if event.favours == "D" else ((k_dp, n_dp), (k_d, n_d))
    lo, _ = clopper_pearson(k1, n1, alpha)
    _, hi = clopper_pearson(k2, n2, alpha)
    eps = float(epsilon_from_bounds(lo, hi, delta))
    return Bound(delta=float(delta), epsilon_lower=max(0.0, eps), event=event,
                 counts=(int(k_d), int(n_d), int(k_dp), int(n_dp)),
                 p_lower=float(lo), q_upper=float(hi), confidence=confidence)


def check_deltas(deltas: Sequence[float]) -> tuple[float, ...]:
    require(len(deltas) > 0, "deltas", deltas, "must hold at least one δ")
    for d in deltas:
        require(isinstance(d, (int, float)) and 0.0 <= d < 1.0, "delta", d, "must be in [0, 1)")
    return tuple(float(d) for d in deltas)


def check_confidence(confidence: float) -> float:
    require(isinstance(confidence, (int, float)) and 0.5 <= confidence < 1.0, "confidence", confidence,
            "must be in [0.5, 1)")
    return float(confidence)


def audit_samples(x: Any, y: Any, *, deltas: Sequence[float] = (0.0,), confidence: float = 0.95,
                  discrete: bool | None = None, selection_fraction: float = 0.1) -> Estimate:
    """ε lower bounds from samples ``x`` ~ M(D) and ``y`` ~ M(D′) already drawn.

    The first ``selection_fraction`` of each sample chooses the event per δ; the rest
    gives its Clopper–Pearson interval.  Each bound holds with probability ≥ ``confidence``.
    """
    x, y = check_outputs(x, where="x"), check_outputs(y, where="y")
    require(x.shape[1:] == y.shape[1:], "y shape", y.shape, f"must match x's output shape {x.shape[1:]}")
    deltas, confidence = check_deltas(deltas), check_confidence(confidence)
    require(0 < selection_fraction < 1, "selection_fraction", selection_fraction, "must be in (0, 1)")
    sx, sy = max(1, int(len(x) * selection_fraction)), max(1, int(len(y) * selection_fraction))
    require(len(x) - sx >= 1 and len(y) - sy >= 1, "samples", (len(x), len(y)),
            "need at least 2 samples per side")
    events = select_events(x[:sx], y[:sy], deltas, (len(x) - sx, len(y) - sy), confidence, discrete)
    bounds = []
    for ev, d in zip(events, deltas):
        bounds.append(bound_from_counts(ev, d, int(ev.contains(x[sx:]).sum()), len(x) - sx,
                                        int(ev.contains(y[sy:]).sum()), len(y) - sy, confidence))
    return Estimate(tuple(bounds), confidence, min(len(x), len(y)), min(sx, sy))
