"""ε lower bounds from samples: one event, chosen on the selection split and bounded on the estimation split.

For an event S with counts k1/n1 under the favoured side and k2/n2 under the other, at
confidence 1 − α, ε_lower(δ) is the joint exact test of the ratio P₁[S]/P₂[S]
(:mod:`dpaudit.engine.jointratio`): given k1 + k2, k1 follows Fisher's noncentral hypergeometric
law in the odds ratio ψ, whose exact conditional lower bound ψ_lo (level 0.9 α) becomes a bound of
the ratio with a Clopper–Pearson bound of P₁[S] (level 0.1 α),

    ε_lower(δ) = log(ψ_lo − p1_hi·max(0, ψ_lo − 1)) + log(1 − δ/p1_lo),

the second term only when δ > 0 (p1_lo and p1_hi then at 0.05 α each), reported as 0 when
negative.  It is tighter than the pair log((p1_lo − δ)/p2_hi) of two one-sided Clopper–Pearson
bounds at α/2 each (valid, but above the truth in well under α of draws) on rare events, where the
odds ratio is the ratio; on common events (p ≳ 0.3) the odds are noisier than the probabilities and
the pair is tighter.  So each event carries the test that scores higher on the selection split
(:func:`dpaudit.engine.bounds.better_test`), fixed before its estimation counts are seen.  There is no
ceiling: an event seen under one side and never under the other gives the largest bound the sample
sizes can show.

Validity rests on choosing S without looking at the counts of its interval: the samples
are split, S (and the side it favours) is chosen on the *selection* split among the
candidates of :mod:`dpaudit.engine.views` (:mod:`dpaudit.engine.selection`), and its interval uses only the
*estimation* split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.core import InputError, require
from dpaudit.engine import stattests
from dpaudit.engine.bounds import clopper_pearson
from dpaudit.engine.selection import count_members, select_events
from dpaudit.engine.tradeoff import GDPEstimate, TradeoffPoint, gdp_estimate, tradeoff_points
from dpaudit.engine.views import VIEWS, Event


@dataclass(frozen=True)
class Level:
    """One bound an estimate is asked for: ε_lower at ``delta`` holding with ``confidence`` (a curve
    claim of K points asks each point at the Bonferroni confidence 1 − (1 − confidence)/K)."""

    delta: float
    confidence: float

    @classmethod
    def of(cls, level: Level | tuple[float, float]) -> Level:
        """``level``, or the level of a (δ, confidence) pair as callers before :class:`Level` pass it."""
        return level if isinstance(level, Level) else cls(delta=level[0], confidence=level[1])


@dataclass(frozen=True)
class Bound:
    """The ε lower bound at one δ, with its event and counts."""

    delta: float
    epsilon_lower: float
    event: Event
    counts: tuple[int, int, int, int]  # k under D, n under D, k under D', n under D'
    p_lower: float  # Clopper–Pearson lower bound of P[S] under the favoured side (level α/2)
    q_upper: float  # Clopper–Pearson upper bound of P[S] under the other side (level α/2)
    confidence: float
    # how epsilon_lower was computed from the counts: a registered test's name (dpaudit.engine.stattests),
    # saved with it; a record without the key predates the joint test: the Clopper–Pearson pair
    test: str = "joint"

    def witness(self) -> str:
        """The event and its counts in words, including evidence of infinite ε."""
        k = dict(zip(("D", "D'"), ((self.counts[0], self.counts[1]), (self.counts[2], self.counts[3])), strict=True))
        (kf, nf), (ko, no) = k[self.event.favours], k[self.event.other]
        text = (f"S = {self.event.describe()}: {kf}/{nf} under {self.event.favours}, {ko}/{no} under "
                f"{self.event.other}; P[S] >= {self.p_lower:.3g} and <= {self.q_upper:.3g} respectively "
                f"(Clopper-Pearson, confidence {self.confidence:g}); "
                f"epsilon_lower from {stattests.get(self.test).described}")
        if ko == 0 and kf > 0:
            text += (f". S was never observed under {self.event.other} in {no} samples: the true epsilon may be "
                     f"infinite, and {self.epsilon_lower:.4g} is the most {no} samples can certify")
        return text

    def to_dict(self) -> dict[str, Any]:
        k1, n1, k2, n2 = self.counts
        return {"delta": self.delta, "epsilon_lower": self.epsilon_lower,
                "event": self.event.to_dict(), "witness": self.witness(),
                "counts": {"D": [k1, n1], "D'": [k2, n2]},
                "p_lower": self.p_lower, "q_upper": self.q_upper, "confidence": self.confidence, "test": self.test}


@dataclass(frozen=True)
class Estimate:
    """ε lower bounds at each requested δ, each holding with the stated confidence."""

    bounds: tuple[Bound, ...]
    confidence: float
    samples: int           # per side, selection + estimation (fewer than the budget if stopped early)
    selection_samples: int  # per side
    sequential: str | None = None  # the stopping rule and where it stopped, for sequential runs
    tradeoff: tuple[TradeoffPoint, ...] = ()  # empirical (FPR, FNR) points with simultaneous bounds
    convergence: tuple[tuple[int, float], ...] = ()  # (estimation samples per side, eps_lower at the first delta)
    display: dict[str, Any] | None = None  # the selection split summarised for reports

    @property
    def epsilon_lower(self) -> float:
        """The bound at the first δ."""
        return self.bounds[0].epsilon_lower

    @property
    def measured(self) -> bool:
        """Whether estimation outputs of both sides were counted: False for an audit stopped before
        (:func:`unmeasured`), whose ε_lower of 0 is no evidence either way."""
        return all(b.counts[1] > 0 and b.counts[3] > 0 for b in self.bounds)

    @property
    def gdp(self) -> GDPEstimate | None:
        """μ-GDP fitted to the trade-off points — labelled: it assumes a Gaussian trade-off curve."""
        return gdp_estimate(self.tradeoff)

    def at(self, delta: float, index: int | None = None) -> Bound:
        """The bound at ``delta`` (or the ``index``-th bound)."""
        if index is not None:
            return self.bounds[index]
        for b in self.bounds:
            if b.delta == delta:
                return b
        raise KeyError(f"no bound at delta={delta}; have {[b.delta for b in self.bounds]}")

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon_lower": self.epsilon_lower, "confidence": self.confidence,
                "samples": self.samples, "selection_samples": self.selection_samples, "sequential": self.sequential,
                "tradeoff": [p.to_dict() for p in self.tradeoff],
                "gdp": None if self.gdp is None else self.gdp.to_dict(),
                "convergence": [list(c) for c in self.convergence], "display": self.display,
                "bounds": [b.to_dict() for b in self.bounds]}


# --- outputs -----------------------------------------------------------------------------

# Values per output row: wider rows are refused where they enter (each view then works on rows of
# at most this many values; a 50,000-wide row is a dataset, not an output).
MAX_WIDTH = 10_000
MIN_SAMPLES = 10  # per side in audit_samples: fewer leave an empty split

def _finite_sum(arr: np.ndarray) -> bool:
    """Whether the sum of ``arr`` is finite (then every value is: one pass, no mask)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.add.reduce(arr, axis=None)))


def check_outputs(outputs: Any, size: int | None = None, where: str = "sample") -> np.ndarray:
    """Validate a batch of mechanism outputs: numeric, finite, shape (n,) or (n, k)."""
    try:
        arr = np.asarray(outputs)
    except Exception as exc:  # an object's own __array__ may raise anything
        raise InputError(f"{where}: a {type(outputs).__name__} that cannot be read as an array of outputs "
                         f"({type(exc).__name__}: {exc})") from None
    require(arr.dtype.kind in "biuf", f"{where} output dtype", arr.dtype.name,
            "outputs must be booleans, integers or real numbers")
    require(arr.ndim in (1, 2), f"{where} output shape", arr.shape, "must be (size,) or (size, k)")
    require(arr.ndim == 1 or 1 <= arr.shape[1] <= MAX_WIDTH, f"{where} output shape", arr.shape,
            f"each output must hold 1 to {MAX_WIDTH} values")
    if size is not None:
        require(arr.shape[0] == size, f"{where} output length", arr.shape[0], f"must equal size={size}")
    # A finite sum has no NaN or infinity among its terms (each would make it NaN or infinite);
    # only a sum that is not finite (an overflow of finite values included) needs the element check.
    if arr.dtype.kind == "f" and not _finite_sum(arr) and not np.all(np.isfinite(arr)):
        raise InputError(f"{where} returned non-finite outputs (NaN or inf): no verdict is computed on them")
    return arr


def bound_from_counts(event: Event, delta: float, k_d: float, n_d: int, k_dp: float, n_dp: int,
                      confidence: float) -> Bound:
    """The ε lower bound for ``event`` from estimation counts by the event's test (chosen with it on the
    selection split: the joint test of the ratio, :func:`dpaudit.engine.bounds.joint_epsilon`, or the
    Clopper–Pearson pair), with the Clopper–Pearson bounds of each side for the witness."""
    alpha = (1.0 - confidence) / 2.0
    (k1, n1), (k2, n2) = ((k_d, n_d), (k_dp, n_dp)) if event.favours == "D" else ((k_dp, n_dp), (k_d, n_d))
    lo, _ = clopper_pearson(k1, n1, alpha)
    _, hi = clopper_pearson(k2, n2, alpha)
    eps = float(stattests.get(event.test).bound(k1, n1, k2, n2, delta, alpha))
    return Bound(delta=float(delta), epsilon_lower=max(0.0, eps), event=event,
                 counts=(int(k_d), int(n_d), int(k_dp), int(n_dp)),
                 p_lower=float(lo), q_upper=float(hi), confidence=confidence, test=event.test)


def check_deltas(deltas: Sequence[float]) -> tuple[float, ...]:
    require(len(deltas) > 0, "deltas", deltas, "must hold at least one δ")
    for d in deltas:
        require(isinstance(d, (int, float)) and 0.0 <= d < 1.0, "delta", d, "must be in [0, 1)")
    return tuple(float(d) for d in deltas)


def check_confidence(confidence: float) -> float:
    require(isinstance(confidence, (int, float)) and 0.5 <= confidence < 1.0, "confidence", confidence,
            "must be in [0.5, 1)")
    return float(confidence)


def resolve_views(discrete: bool | None = None, events: str | Sequence[str] = "auto") -> tuple[str, ...]:
    """The event views to search: ``events`` ("auto", a view name, or a list of them);
    ``discrete=True`` forces the rows view, ``discrete=False`` excludes it."""
    if isinstance(events, str):
        # "auto": every view that is on by default (the floating view is asked for by name: see its module)
        events = tuple(n for n, v in VIEWS.items() if getattr(v, "by_default", True)) if events == "auto" else (events,)
    views = tuple(events)
    for v in views:
        require(v in VIEWS, "events", v, f"must be 'auto' or among {', '.join(VIEWS)}")
    if discrete is True:
        views = ("rows",)
    elif discrete is False:
        views = tuple(v for v in views if v != "rows")
    require(bool(views), "events", events, "leaves no view to search")
    return views


def audit_samples(x: Any, y: Any, *, deltas: Sequence[float] = (0.0,), confidence: float = 0.95,
                  discrete: bool | None = None, events: str | Sequence[str] = "auto",
                  selection_fraction: float = 0.2, seed: int = 0) -> Estimate:
    """ε lower bounds from samples ``x`` ~ M(D) and ``y`` ~ M(D′) already drawn.

    A random ``selection_fraction`` of each sample (drawn with ``seed``) chooses the event per δ
    among the ``events`` views (:mod:`dpaudit.engine.views`); the rest gives its bound (the joint
    test of the ratio, module docstring).  Each bound holds with probability ≥ ``confidence`` whatever order the samples
    come in: the split is random, so sorted samples or samples rebuilt from a count table
    (``np.repeat``) are split as i.i.d. draws would be.  ``seed`` also fixes the subsample a
    classifier view is fitted on.  ``confidence`` defaults to 0.95, as every audit's (0.99 in
    :func:`~dpaudit.testing.assert_private`, which fails builds).
    """
    require(isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0, "seed", seed,
            "must be an integer >= 0")
    x, y = check_outputs(x, where="x"), check_outputs(y, where="y")
    for field, arr in (("x", x), ("y", y)):
        require(len(arr) >= MIN_SAMPLES, f"{field} length", len(arr),
                f"need at least {MIN_SAMPLES} samples per side (a selection and an estimation split)")
    require(x.shape[1:] == y.shape[1:], "y shape", y.shape, f"must match x's output shape {x.shape[1:]}")
    deltas, confidence = check_deltas(deltas), check_confidence(confidence)
    require(0 < selection_fraction < 1, "selection_fraction", selection_fraction, "must be in (0, 1)")
    sx, sy = max(1, int(len(x) * selection_fraction)), max(1, int(len(y) * selection_fraction))
    require(len(x) - sx >= 1 and len(y) - sy >= 1, "samples", (len(x), len(y)),
            "need at least 2 samples per side")
    # Exchangeable split: the confidence of the estimation counts needs the selection rows to be a
    # random subset, which the caller's order does not guarantee.
    shuffle = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0x5EED,)))
    x, y = x[shuffle.permutation(len(x))], y[shuffle.permutation(len(y))]
    chosen, family = select_events(x[:sx], y[:sy], deltas, (len(x) - sx, len(y) - sy), confidence,
                                   resolve_views(discrete, events), seed, tradeoff_points=24)
    kx, ky = count_members(x[sx:], chosen + family), count_members(y[sy:], chosen + family)
    nx, ny = len(x) - sx, len(y) - sy
    bounds = tuple(bound_from_counts(ev, d, kx[i], nx, ky[i], ny, confidence)
                   for i, (ev, d) in enumerate(zip(chosen, deltas, strict=True)))
    curve = tradeoff_points(family, kx[len(chosen):], nx, ky[len(chosen):], ny, confidence)
    return Estimate(bounds, confidence, min(len(x), len(y)), min(sx, sy), tradeoff=curve)


# --- the runner's helpers: the convergence series, the sequential rule's futility, no bound ----------

def convergence(event: Event, delta: float, confidence: float, series: list[tuple[int, int, int]]
                ) -> tuple[tuple[int, float], ...]:
    """ε_lower of the first level after 1, 2, 4, ... chunk pairs and at the end (samples per side,
    bound), from ``series`` of (estimation samples per side, count under D, count under D′).

    Each point is a valid bound on its own; the series shows convergence, not a sequential test."""
    return tuple((n, bound_from_counts(event, delta, kd, n, kdp, n, confidence).epsilon_lower)
                 for n, kd, kdp in series if n > 0)


def futile(bounds, targets: dict[int, float], n_total: int, final_confidence: float) -> bool:
    """True when even the final look, with the current frequencies, would stay below every target."""
    for i, target in targets.items():
        k_d, n_d, k_dp, n_dp = bounds[i].counts
        projected = bound_from_counts(bounds[i].event, bounds[i].delta, k_d / n_d * n_total, n_total,
                                      k_dp / n_dp * n_total, n_total, final_confidence)
        if projected.epsilon_lower > target:
            return False
    return True


def unmeasured(levels: Sequence[Level | tuple[float, float]], samples: int, note: str) -> Estimate:
    """The estimate of an audit stopped before an estimation output of each side was counted (the
    user's Ctrl-C during the selection, the tail pilot, or the first chunk pair): no bound.

    Each level (δ, confidence) gets ε_lower = 0 from no counts: the empty event S = ∅, 0 of 0
    under each side, which certifies nothing.
    ``samples`` are the selection outputs drawn per side (the fewer side's); ``note`` says where the
    audit stopped.  :attr:`Estimate.measured` is False: a claim must not be read against it."""
    nothing = Event("D", "rows", members=np.zeros(0, dtype=np.int64))
    asked = [Level.of(lv) for lv in levels]
    bounds = tuple(bound_from_counts(nothing, lv.delta, 0, 0, 0, 0, lv.confidence) for lv in asked)
    return Estimate(bounds, asked[0].confidence, samples, samples, sequential=note)
