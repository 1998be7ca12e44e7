"""Monte Carlo: draw samples in chunks, select events, stream counts.

Every chunk has its own generator, spawned from the root seed by
``SeedSequence(seed, spawn_key=(*key, phase, side, chunk))``, and chunk sizes do not depend
on the number of workers, so one seed gives the same numbers for any ``n_jobs``.  Only the
selection split is held in memory; the estimation split is reduced to event counts chunk by
chunk, so memory is bounded whatever the sample budget.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from joblib import Parallel, delayed

from audit.estimate import Estimate, bound_from_counts, check_outputs, resolve_views
from audit.events import Event, select_events
from mechanisms.base import InputError

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
    out = _draw_chunk(mechanism, data, size, seed, key, ESTIMATION, side, chunk)
    return np.array([int(ev.contains(out).sum()) for ev in events], dtype=np.int64)


def _parallel(n_jobs: int, tasks: list, progress: bool, label: str) -> list:
    if n_jobs == 1:
        results = (fn(*args) for fn, args in tasks)
    else:
        results = Parallel(n_jobs=n_jobs, return_as="generator")(delayed(fn)(*args) for fn, args in tasks)
    if progress:
        from tqdm import tqdm
        results = tqdm(results, total=len(tasks), desc=label, unit="chunk", leave=False, file=sys.stderr)
    return list(results)


def estimate(mechanism: Any, d: Any, d_prime: Any, *, samples: int, deltas: Sequence[float],
             confidence: float, seed: int, n_jobs: int = 1, key: tuple[int, ...] = (),
             discrete: bool | None = None, events: str | Sequence[str] = "auto",
             selection_fraction: float = 0.2, progress: bool = False) -> Estimate:
    """ε lower bounds at each δ from ``samples`` draws per side (selection + estimation)."""
    n_sel = max(1, int(samples * selection_fraction))
    n_est = samples - n_sel
    sides = (d, d_prime)
    tasks = [(_draw_chunk, (mechanism, sides[s], size, seed, key, SELECTION, s, c))
             for s in (0, 1) for c, size in enumerate(_chunk_sizes(n_sel))]
    drawn = _parallel(n_jobs, tasks, False, "selection")
    half = len(tasks) // 2
    x, y = np.concatenate(drawn[:half]), np.concatenate(drawn[half:])
    if x.shape[1:] != y.shape[1:]:
        raise MechanismError(f"outputs under D have shape {x.shape[1:]} but under D' {y.shape[1:]}")
    chosen = select_events(x, y, deltas, (n_est, n_est), confidence, resolve_views(discrete, events), seed)
    del x, y, drawn
    tasks = [(_count_chunk, (mechanism, sides[s], size, seed, key, s, c, chosen))
             for s in (0, 1) for c, size in enumerate(_chunk_sizes(n_est))]
    counts = _parallel(n_jobs, tasks, progress, getattr(mechanism, "name", "sampling"))
    half = len(tasks) // 2
    k_d, k_dp = np.sum(counts[:half], axis=0), np.sum(counts[half:], axis=0)
    bounds = tuple(bound_from_counts(ev, delta, k_d[i], n_est, k_dp[i], n_est, confidence)
                   for i, (ev, delta) in enumerate(zip(chosen, deltas)))
    return Estimate(bounds, confidence, samples, n_sel)
