"""Large budgets in bounded time and memory: counted draws, and a capped selection split.

Two hooks of :func:`dpaudit.engine.runner.estimate`, kept here so the runner's loop stays as it is.

* **Counts.**  A mechanism with finite outputs may implement ``sample_counts(data, size, rng)``
  (:class:`dpaudit.mechanisms.base.HasSampleCounts`): the vector c of how many of ``size`` draws equal
  each output 0..k−1, distributed as ``np.bincount(sample(data, size, rng))`` (a multinomial
  draw, O(k) whatever ``size``).  Counting is additive over outputs, so an event S counts
  ``Σ_i c_i 1[i ∈ S]``, and ``1[i ∈ S]`` is computed by the same view code that counts
  sampled outputs, on the k outcomes.  The estimation counts then have exactly the law they
  have when drawn, and the Clopper–Pearson intervals keep their confidence.  Since a chunk
  costs microseconds, a counts-capable mechanism's estimation chunks grow with the budget, up
  to :data:`COUNTS_CHUNK_FACTOR` times the usual size (:func:`chunk_size`: fixed by the budget
  alone, so one seed gives the same numbers for any number of workers).  Without ``sample_counts`` nothing changes.
* **Selection cap and tail pilot.**  The selection split is held in memory (outputs, fitted
  features), so it is capped at :data:`SELECTION_CAP` per side whatever the budget.  That
  finds the statistic (and, for finite outputs, the event), but not a threshold deep in a
  tail: the engine scores candidates with Clopper–Pearson pessimism on its own counts, right
  when the selection split is a quarter of the estimation split, but at a ratio of 1 : 100 it
  pulls a threshold toward the centre, where the likelihood ratio is too small to refute a
  claim with a thin margin (e.g. the zero-out Gaussian shift, tight ε 0.566 vs claimed 0.5).
  So for a budget past ``SELECTION_CAP / fraction`` per side, :func:`refine_thresholds`
  streams a *tail pilot* (the rest of the selection share, at most :data:`PILOT_CAP` per
  side, its own random streams): each threshold event's statistic is counted on a grid of
  thresholds dense in both tails, chunk by chunk, and the threshold is chosen again on these
  counts (:func:`pilot_scores`).  The pilot is part of the selection split: the estimation
  counts stay independent of the choice, so the bound keeps its confidence.  Only
  ``SELECTION_CAP + PILOT_CAP`` outputs per side choose events, the rest only counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpaudit.core import InputError
from dpaudit.engine.bounds import joint_score
from dpaudit.engine.jointratio import joint_score_best
from dpaudit.engine.selection import count_members
from dpaudit.engine.statistics import Statistic
from dpaudit.engine.views import SIDES, Event
from dpaudit.runtime.blame import what_code_did

SELECTION_CAP = 3_000_000   # in-memory selection outputs per side (about 1.2 GB for 4-vectors at the peak)
PILOT_CAP = 100_000_000     # streamed tail-pilot outputs per side
COUNTS_CHUNK_FACTOR = 1024
COUNTS_MIN_CHUNKS = 64
PILOT = 2                   # the tail pilot's phase in the chunks' spawn keys (selection 0, estimation 1)
GRID = 160                  # thresholds per tail of the pilot's grid
CHUNK = 1 << 18             # pilot chunk size (the runner's: one chunk of outputs per task)
Kind = tuple[str, tuple[int, ...]]  # (dtype.str, shape of one output), as dpaudit.engine.runner.output_kind

__all__ = ["COUNTS_CHUNK_FACTOR", "COUNTS_MIN_CHUNKS", "PILOT_CAP", "SELECTION_CAP", "chunk_size", "count_from_counts",
           "counts_capable", "membership", "pilot_best", "pilot_scores", "pilot_size", "refine_thresholds",
           "selection_size", "threshold_grid"]


SELECTION_FRACTION = 0.2  # the selection split's share of a budget (selection.DISCRETE_VECTOR_FRACTION: when it grows)


def selection_size(samples: int, fraction: float, cap: int = SELECTION_CAP) -> int:
    """Selection outputs per side for a budget of ``samples``: ``fraction`` of it, at most ``cap``
    (and at least 1)."""
    return max(1, min(int(samples * fraction), cap))


def pilot_size(samples: int, fraction: float, n_sel: int, cap: int = PILOT_CAP) -> int:
    """Tail-pilot outputs per side: what the selection share ``fraction`` of ``samples`` leaves
    beyond the in-memory ``n_sel``, at most ``cap`` (0 for budgets the selection cap does not bind)."""
    return max(0, min(int(samples * fraction) - n_sel, cap))


def counts_capable(mechanism: Any) -> bool:
    """Whether ``mechanism`` hands back draws as counts (``sample_counts`` is callable)."""
    return callable(getattr(mechanism, "sample_counts", None))


def chunk_size(mechanism: Any, chunk: int, total: int) -> int:
    """The estimation chunk size for ``total`` outputs per side: ``chunk``; or, when the mechanism's
    draws are counted (nothing per output is held, only the per-task cost matters), ``total`` /
    :data:`COUNTS_MIN_CHUNKS` within [``chunk``, :data:`COUNTS_CHUNK_FACTOR` × ``chunk``], so a
    large budget is a few dozen tasks and the sequential rule still has its looks."""
    if not counts_capable(mechanism):
        return chunk
    return int(min(chunk * COUNTS_CHUNK_FACTOR, max(chunk, -(-total // COUNTS_MIN_CHUNKS))))


def _checked_counts(raw: Any, size: int, where: str, error: type[Exception]) -> np.ndarray:
    counts = np.asarray(raw)
    if counts.ndim != 1 or counts.size == 0 or counts.dtype.kind not in "iu":
        raise error(f"{where} returned {counts.dtype} of shape {counts.shape}: it must be a non-empty vector of "
                    "integer counts, one per output 0..k-1")
    if counts.min() < 0 or int(counts.sum()) != size:
        raise error(f"{where} returned counts summing to {int(counts.sum())} (min {int(counts.min())}) for "
                    f"size = {size}: they must be >= 0 and sum to size")
    return counts.astype(np.int64)


def count_from_counts(mechanism: Any, data: Any, size: int, rng: np.random.Generator, events: Sequence[Event],
                      kind: Kind | None, where: str, error: type[Exception] = RuntimeError,
                      conform: Callable[[np.ndarray, Kind, str], np.ndarray] | None = None) -> np.ndarray | None:
    """Members of each event among ``size`` draws, from one ``sample_counts`` call; None when the
    mechanism has no counts capability or the outputs' kind is not known yet (the caller then
    draws the outputs).

    ``kind`` is what the selection split's outputs were: the outcomes 0..k−1 get its dtype (through
    ``conform``, the runner's check) so the events compare them as they compared drawn outputs.
    A failure of the mechanism, or counts that are not counts of ``size`` draws, raise ``error``
    naming ``where``; an :class:`~dpaudit.core.InputError` passes through."""
    if not counts_capable(mechanism) or kind is None:
        return None
    dtype, shape = np.dtype(kind[0]), tuple(kind[1])
    if shape or dtype.kind not in "biu":
        raise error(f"{where} has sample_counts, but its sample returns {dtype} outputs of shape {shape}: counts "
                    "need scalar integer outputs 0..k-1")
    try:
        raw = mechanism.sample_counts(data, size, rng)
    except InputError:
        raise
    except KeyboardInterrupt:  # the user's Ctrl-C or the mechanism's own: the runner tells them apart
        raise
    except BaseException as exc:  # a user's mechanism may raise anything, sys.exit included: report it, do not crash
        raise error(f"{where} sample_counts {what_code_did(exc)}: {exc}") from None
    counts = _checked_counts(raw, size, f"{where} sample_counts", error)
    outcomes = np.arange(len(counts)).astype(dtype)
    if conform is not None:
        outcomes = conform(outcomes, kind, f"{where} sample_counts")
    return membership(outcomes, events).T @ counts


def membership(outcomes: np.ndarray, events: Sequence[Event]) -> np.ndarray:
    """(outcomes × events) 0/1 matrix: whether each outcome is in each event, by the views' own
    counting code applied to one outcome at a time (so it agrees with counting drawn outputs)."""
    return np.stack([count_members(outcomes[i:i + 1], events) for i in range(len(outcomes))]).astype(np.int64)


# --- the tail pilot ---------------------------------------------------------------------------

def _statistic_values(statistic: Statistic, outputs: np.ndarray, block: int = 1 << 18) -> np.ndarray:
    """``statistic`` on ``outputs`` block by block (a fitted feature map of millions of rows at once
    would hold several times their memory)."""
    return np.concatenate([statistic(outputs[i:i + block]) for i in range(0, len(outputs), block)])


def threshold_grid(values: np.ndarray, keep: Sequence[float] = (), per_tail: int = GRID) -> np.ndarray:
    """Candidate thresholds: the pooled selection values of a statistic at ranks spaced
    geometrically from each end (down to the most extreme value) and linearly in between, plus
    ``keep`` (the thresholds already chosen)."""
    s = np.sort(values)
    n = len(s)
    ranks = np.unique(np.geomspace(1, max(1, n // 2), per_tail).astype(np.int64)) - 1
    middle = np.linspace(0, n - 1, 64).astype(np.int64)
    picked = np.concatenate([s[ranks], s[n - 1 - ranks], s[middle], np.asarray(keep, dtype=float)])
    return np.unique(picked[np.isfinite(picked)])


def pilot_chunk(draw: Callable[..., np.ndarray], mechanism: Any, data: Any, size: int, seed: int,
                key: tuple[int, ...], side: int, chunk: int, kind: Kind | None,
                statistics: Sequence[Statistic], grids: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """One pilot chunk: per statistic, #(s ≥ g_j) and #(s ≤ g_j) for each grid threshold g_j."""
    outputs = draw(mechanism, data, size, seed, key, PILOT, side, chunk, kind)
    out = []
    for statistic, grid in zip(statistics, grids, strict=True):
        s = statistic(outputs)
        above = np.bincount(np.searchsorted(grid, s, side="right"), minlength=len(grid) + 1)
        below = np.bincount(np.searchsorted(grid, s, side="left"), minlength=len(grid) + 1)
        ge = np.cumsum(above[::-1])[::-1][1:]    # s ≥ g_j  ⇔  more than j grid points are ≤ s
        le = np.cumsum(below)[:-1]               # s ≤ g_j  ⇔  at most j grid points are < s
        out.append((ge.astype(np.int64), le.astype(np.int64)))
    return out


def pilot_scores(k_fav: np.ndarray, k_oth: np.ndarray, n_pilot: int, n_est: int, delta: float, alpha: float
                 ) -> np.ndarray:
    """The ε a candidate is expected to certify on ``n_est`` estimation outputs per side, from its
    pilot counts: each probability moved one standard error the pessimistic way (so a 3-vs-0
    tail does not look like a sure win, without the full Clopper–Pearson pessimism that pulls
    thresholds toward the centre), then the estimator's joint test (``alpha`` per side of the pair it
    replaces; :func:`dpaudit.engine.bounds.joint_score`, a close approximation at large counts) on ``n_est``."""
    p, q = _pessimistic(k_fav, k_oth, n_pilot)
    return joint_score(p * n_est, n_est, q * n_est, n_est, delta, alpha)


def pilot_best(k_fav: np.ndarray, k_oth: np.ndarray, n_pilot: int, n_est: int, delta: float, alpha: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per row (candidates on the last axis): the index and value of the largest :func:`pilot_scores`,
    exactly ``np.argmax`` of them, with the costly inversions only for candidates that can still win
    (:func:`dpaudit.engine.jointratio.joint_score_best`)."""
    p, q = _pessimistic(k_fav, k_oth, n_pilot)
    return joint_score_best(p * n_est, n_est, q * n_est, n_est, delta, alpha)


def _pessimistic(k_fav: np.ndarray, k_oth: np.ndarray, n_pilot: int) -> tuple[np.ndarray, np.ndarray]:
    """(p, q) of pilot counts, each moved one standard error the pessimistic way (:func:`pilot_scores`)."""
    k_fav, k_oth = np.asarray(k_fav, dtype=float), np.asarray(k_oth, dtype=float)
    p = np.maximum(k_fav - np.sqrt(k_fav), 0.0) / n_pilot
    q = np.minimum(k_oth + np.sqrt(k_oth) + 1.0, n_pilot) / n_pilot
    return p, q


def refine_thresholds(events: Sequence[Event], x: np.ndarray, y: np.ndarray, *, n_pilot: int, n_est: int,
                      deltas: Sequence[float], confidences: Sequence[float], mechanism: Any, sides: tuple[Any, Any],
                      seed: int, key: tuple[int, ...], kinds: Sequence[Kind | None], execution: Any,
                      draw: Callable[..., np.ndarray], on_chunk: Callable[[int], None] = lambda size: None
                      ) -> tuple[list[Event], int]:
    """The events with each threshold event's threshold (and direction) chosen again on a streamed
    tail pilot of ``n_pilot`` outputs per side (module docstring), and the pilot outputs drawn per
    side (0 when no event is a threshold event: then nothing is drawn and the events are kept).
    ``n_est`` is the estimation split the choice is for (after the pilot).

    ``x``, ``y`` are the in-memory selection outputs (they place the grid), ``draw`` the runner's
    chunk drawer, ``execution`` its :class:`~dpaudit.runtime.execution.Execution`; pilot chunks use phase
    :data:`PILOT` of the spawn key, so their streams are the run's own and independent of the
    estimation split."""
    chosen = list(events)
    targets = [i for i, ev in enumerate(chosen) if ev.view == "threshold" and ev.statistic is not None]
    if n_pilot <= 0 or not targets:
        return chosen, 0
    statistics: list[Statistic] = []
    for i in targets:
        if all(chosen[i].statistic is not s for s in statistics):
            statistics.append(chosen[i].statistic)  # type: ignore[arg-type]
    grids = []
    for stat in statistics:
        pooled = np.concatenate([_statistic_values(stat, x), _statistic_values(stat, y)])
        grids.append(threshold_grid(pooled, [chosen[i].threshold for i in targets if chosen[i].statistic is stat]))
    sizes = [CHUNK] * (n_pilot // CHUNK) + ([n_pilot % CHUNK] if n_pilot % CHUNK else [])
    tasks = [(s, c) for s in (0, 1) for c in range(len(sizes))]
    totals = [[np.zeros(len(g), dtype=np.int64) for g in grids] for _ in range(4)]  # (side, ge/le) per statistic
    for (s, c), found in zip(tasks, execution.map(pilot_chunk, [
            (draw, mechanism, sides[s], sizes[c], seed, key, s, c, kinds[s], statistics, grids) for s, c in tasks]),
            strict=True):
        for j, (ge, le) in enumerate(found):
            totals[2 * s][j] += ge
            totals[2 * s + 1][j] += le
        on_chunk(sizes[c])
    for i in targets:
        j = next(j for j, st in enumerate(statistics) if st is chosen[i].statistic)
        alpha = (1 - confidences[i]) / 2
        best: tuple[float, int, bool, int] | None = None
        for upper in (True, False):
            for fav in (0, 1):
                k_fav, k_oth = totals[2 * fav + (0 if upper else 1)][j], totals[2 * (1 - fav) + (0 if upper else 1)][j]
                score = pilot_scores(k_fav, k_oth, n_pilot, n_est, deltas[i], alpha)
                g = int(np.argmax(score))
                if best is None or score[g] > best[0]:
                    best = (float(score[g]), fav, upper, g)
        assert best is not None  # structural: four candidate families were scored
        _, fav, upper, g = best
        chosen[i] = Event(SIDES[fav], "threshold", chosen[i].statistic, threshold=float(grids[j][g]), upper=upper)
    return chosen, n_pilot
