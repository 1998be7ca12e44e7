"""Monte Carlo: draw samples in chunks, select events, stream counts.

Every chunk has its own generator, spawned from the root seed by
``SeedSequence(seed, spawn_key=(*key, phase, side, chunk))``, and chunk sizes do not depend
on the number of workers, so one seed gives the same numbers for any ``n_jobs``.  Only the
selection split is held in memory; the estimation split is reduced to event counts chunk by
chunk, so memory is bounded whatever the sample budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from audit.estimate import Estimate, bound_from_counts, check_outputs, resolve_views
from audit.execution import Execution, Progress, events_fingerprint
from audit.selection import count_members, describe_outputs, select_events
from audit.tradeoff import tradeoff_points
from audit.views import Event
from dpcore import InputError

TRADEOFF_POINTS = 24

CHUNK = 1 << 18
SELECTION, ESTIMATION = 0, 1


class MechanismError(RuntimeError):
    """The audited mechanism raised or returned unusable outputs while sampling."""


def _rng(seed: int, key: tuple[int, ...], phase: int, side: int, chunk: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(*key, phase, side, chunk)))


def draw(mechanism: Any, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """``mechanism.sample(data, size, rng)``, validated; a failure names the mechanism."""
    name = getattr(mechanism, "name", type(mechanism).__name__)
    try:
        out = mechanism.sample(data, size, rng)
    except InputError:
        raise
    except Exception as exc:  # a user's mechanism may raise anything: report it, do not crash
        raise MechanismError(f"mechanism {name!r} raised {type(exc).__name__} while sampling: {exc}") from exc
    return check_outputs(out, size, where=f"mechanism {name!r} sample")


def _chunk_sizes(total: int) -> list[int]:
    full, rest = divmod(total, CHUNK)
    return [CHUNK] * full + ([rest] if rest else [])


def _draw_chunk(mechanism, data, size, seed, key, phase, side, chunk) -> np.ndarray:
    return draw(mechanism, data, size, _rng(seed, key, phase, side, chunk))


def _count_chunk(mechanism, data, size, seed, key, side, chunk, events: Sequence[Event]) -> np.ndarray:
    return count_members(_draw_chunk(mechanism, data, size, seed, key, ESTIMATION, side, chunk), events)


LOOKS = (0.125, 0.25, 0.5, 1.0)          # fractions of the estimation budget
SPENDING = (0.125, 0.125, 0.25, 0.5)      # share of alpha spent at each look (sums to 1)
RULE = ("alpha-spending over looks at 1/8, 1/4, 1/2 and all of the budget with alpha x (1/8, 1/8, 1/4, 1/2) "
        "(Bonferroni across looks: the stopped bound holds with the stated confidence)")


def estimate(mechanism: Any, d: Any, d_prime: Any, *, samples: int, levels: Sequence[tuple[float, float]],
             seed: int, execution: Execution | None = None, key: tuple[int, ...] = (),
             discrete: bool | None = None, events: str | Sequence[str] = "auto", selection_fraction: float = 0.2,
             sequential: bool = False, targets: dict[int, float] | None = None) -> Estimate:
    """ε lower bounds at each (δ, confidence) level from ``samples`` draws per side.

    With ``sequential``, the estimation split is counted in looks (:data:`LOOKS`) and the run
    stops at the first look where some level's bound exceeds its entry in ``targets`` (a
    violation is certified) or where no target can be reached even if the current
    frequencies held for the whole budget; each look's bounds use its share of α
    (:data:`RULE`), so the reported bound keeps its confidence.  ``execution`` says where
    chunks run and holds the checkpoint; chunks already in the checkpoint are not redrawn.
    """
    execution = execution or Execution()
    targets = targets or {}  # None and {} alike: nothing to stop for, a single look
    deltas = [lv[0] for lv in levels]
    confidences = [lv[1] for lv in levels]
    n_sel = max(1, int(samples * selection_fraction))
    n_est = samples - n_sel
    sides = (d, d_prime)
    tasks = [(mechanism, sides[s], size, seed, key, SELECTION, s, c)
             for s in (0, 1) for c, size in enumerate(_chunk_sizes(n_sel))]
    drawn = list(execution.map(_draw_chunk, tasks))
    half = len(tasks) // 2
    x, y = np.concatenate(drawn[:half]), np.concatenate(drawn[half:])
    if x.shape[1:] != y.shape[1:]:
        raise MechanismError(f"outputs under D have shape {x.shape[1:]} but under D' {y.shape[1:]}")
    chosen, family = select_events(x, y, deltas, (n_est, n_est), confidences, resolve_views(discrete, events), seed,
                                   tradeoff_points=TRADEOFF_POINTS)
    display = describe_outputs(x, y, chosen[0])
    counted = chosen + family
    del x, y, drawn
    sizes = _chunk_sizes(n_est)
    stops = sorted({max(1, int(np.ceil(len(sizes) * f))) for f in LOOKS}) if sequential and targets else [len(sizes)]
    spend = dict(zip(stops, SPENDING[-len(stops):], strict=True)) if len(stops) > 1 else {stops[-1]: 1.0}
    if len(stops) > 1:  # fewer looks than planned (a small budget): the spent shares still sum to 1
        total = sum(spend.values())
        spend = {k: v / total for k, v in spend.items()}
    k = np.zeros((2, len(counted)), dtype=np.int64)
    drawn_per_side = np.zeros(2, dtype=np.int64)
    fingerprint = events_fingerprint(counted, levels, n_est) if execution.checkpoint else ""
    name = getattr(mechanism, "name", type(mechanism).__name__)
    progress = Progress(execution.progress, 2 * n_est, name, execution.log_every)

    looked: list[float] = []  # the first level's bound at each finished look

    def running_epsilon() -> float | None:
        """What progress shows: for a sequential run the bound of the last look (None before
        the first); otherwise the bound of the chunks counted so far on both sides (a valid
        bound on its own), None before one chunk per side is in."""
        if len(stops) > 1:
            return looked[-1] if looked else None
        n_d, n_dp = (int(n) for n in drawn_per_side)
        if min(n_d, n_dp) == 0:
            return None
        return bound_from_counts(chosen[0], deltas[0], k[0, 0], n_d, k[1, 0], n_dp, confidences[0]).epsilon_lower

    first = np.zeros((2, len(sizes)), dtype=np.int64)  # per chunk, the first event's counts: convergence
    done, note = 0, None
    for look, stop in enumerate(stops):
        todo = []
        for s in (0, 1):
            for c in range(done, stop):
                saved = (execution.checkpoint.get(key, fingerprint, s, c, len(counted), sizes[c])
                         if execution.checkpoint else None)
                if saved is None:
                    todo.append((s, c))
                else:
                    k[s] += saved
                    first[s, c] = saved[0]
                    drawn_per_side[s] += sizes[c]
        results = execution.map(_count_chunk, [(mechanism, sides[s], sizes[c], seed, key, s, c, counted)
                                               for s, c in todo])
        for (s, c), counts in zip(todo, results, strict=True):
            k[s] += counts
            first[s, c] = counts[0]
            drawn_per_side[s] += sizes[c]
            if execution.checkpoint:
                execution.checkpoint.add(key, fingerprint, s, c, counts)
            progress.update(sizes[c], int(drawn_per_side.sum()), running_epsilon)
        k_d, k_dp = k[0], k[1]
        done = stop
        n_done = int(sum(sizes[:done]))
        share = spend[stop]
        bounds = tuple(bound_from_counts(ev, delta, k_d[i], n_done, k_dp[i], n_done, 1 - (1 - conf) * share)
                       for i, (ev, delta, conf) in enumerate(zip(chosen, deltas, confidences, strict=True)))
        looked.append(bounds[0].epsilon_lower)
        if len(stops) > 1:
            progress.update(0, int(drawn_per_side.sum()), running_epsilon)  # the look's bound, as soon as it is known
        if len(stops) > 1:
            note = f"{RULE}; look {look + 1} of {len(stops)} at {n_done} estimation samples per side"
            if any(bounds[i].epsilon_lower > t for i, t in targets.items()):
                note += ": stopped, violation certified"
                break
            if stop < len(sizes) and _futile(bounds, targets, n_est, 1 - (1 - confidences[0]) * SPENDING[-1]):
                note += ": stopped, no claim can be reached within the budget"
                break
    progress.close()
    n_done = int(sum(sizes[:done]))
    curve = tradeoff_points(family, k_d[len(chosen):], n_done, k_dp[len(chosen):], n_done, confidences[0])
    return Estimate(bounds, confidences[0], n_sel + n_done, n_sel, sequential=note, tradeoff=curve,
                    convergence=_convergence(chosen[0], deltas[0], confidences[0], first[:, :done], sizes[:done]),
                    display=display)


def _convergence(event: Event, delta: float, confidence: float, per_chunk: np.ndarray, sizes: list[int]
                 ) -> tuple[tuple[int, float], ...]:
    """ε_lower of the first level after 1, 2, 4, ... chunks and at the end (samples per side, bound).

    Each point is a valid bound on its own; the series shows convergence, not a sequential test."""
    if not sizes:
        return ()
    ends = sorted({*(2 ** i for i in range(int(np.log2(len(sizes))) + 1)), len(sizes)})
    cum, n = np.cumsum(per_chunk, axis=1), np.cumsum(sizes)
    return tuple((int(n[m - 1]), bound_from_counts(event, delta, cum[0, m - 1], int(n[m - 1]), cum[1, m - 1],
                                                   int(n[m - 1]), confidence).epsilon_lower) for m in ends)


def _futile(bounds, targets: dict[int, float], n_total: int, final_confidence: float) -> bool:
    """True when even the final look, with the current frequencies, would stay below every target."""
    for i, target in targets.items():
        k_d, n_d, k_dp, n_dp = bounds[i].counts
        projected = bound_from_counts(bounds[i].event, bounds[i].delta, k_d / n_d * n_total, n_total,
                                      k_dp / n_dp * n_total, n_total, final_confidence)
        if projected.epsilon_lower > target:
            return False
    return True
