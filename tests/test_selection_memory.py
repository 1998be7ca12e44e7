"""What the selection and the exact 1-D curve hold in memory: nothing of a finished audit is kept
alive by a reference cycle, a small result does not pin a large array it was cut from, and the
1-D curve never asks its model for the whole grid at once.

These are shapes of memory, not sizes of a machine: each is checked by a weak reference, an
array's base or tracemalloc's count of the bytes numpy asked for, all exact and deterministic.
Each has a twin showing the check sees the fault it guards against."""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from dpaudit.catalog.alignment import mle, mle_pair_1d
from dpaudit.engine import selection
from dpaudit.engine.statistics import quantile_bins
from dpaudit.engine.views import ChunkCache
from dpaudit.engine.views.base import Split
from dpaudit.mechanisms import align_mle


@contextmanager
def _no_cycle_collector() -> Iterator[None]:
    """Only reference counts free objects inside: what a cycle holds stays held."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _freed_without_the_collector(select: Callable[[np.ndarray, np.ndarray, ChunkCache], Any]) -> bool:
    """Whether the selection split is freed as soon as ``select``'s caller drops it and the memo."""
    rng = np.random.default_rng(8)
    x, y = rng.normal(size=(4000, 3)), rng.normal(0.3, size=(4000, 3))
    split = weakref.ref(x)
    with _no_cycle_collector():
        memo = ChunkCache()
        select(x, y, memo)
        del x, y, memo
        return split() is None


def test_the_selection_split_is_freed_without_the_cycle_collector():
    """A statistic's values kept in the memo for the report once pointed back at the memo, which holds
    the split: every scenario's selection split (10⁷ samples of a 2×2 matrix in align-alg2-swap, 122 MB)
    then lived until the collector's oldest generation ran, and the default run peaked at 660 MB
    instead of 420."""
    def select(x: np.ndarray, y: np.ndarray, memo: ChunkCache) -> None:
        events, _ = selection.select_events(x, y, [0.0], (4000, 4000), 0.95, memo=memo)
        assert memo.get(("values", events[0].statistic)) is not None  # the report's values are kept
        selection.describe_outputs(x, y, events[0], memo=memo)

    assert _freed_without_the_collector(select)

    def cyclic(x: np.ndarray, y: np.ndarray, memo: ChunkCache) -> None:  # twin: a cycle through the memo
        select(x, y, memo)
        memo.keep(("values", "cyclic"), Split(x, y, x, y, memo))

    assert not _freed_without_the_collector(cyclic)


def test_quantile_bins_keep_no_array_of_the_sample_size():
    """The bins live as long as the events that use them (the chosen ones, for the whole run): an
    empty slice of the sorted values as the atoms once kept all of them (15 MB per statistic at 10⁶)."""
    s = np.sort(np.random.default_rng(9).normal(size=10_000))
    for bins in (quantile_bins(s), quantile_bins(np.round(s, 1))):  # without atoms, and with
        for part in (bins.atoms, bins.edges):
            assert part.base is None or part.base.nbytes <= 64 * part.itemsize + part.nbytes
    assert s[:0].base.nbytes > 64 * s.itemsize  # twin: an empty slice keeps its base


def _traced_peak(compute: Callable[[], Any]) -> int:
    """Bytes allocated at the peak of ``compute()`` beyond those held when it started."""
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        compute()
        return tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def test_the_1d_curve_evaluates_its_grid_in_chunks(monkeypatch):
    """The model's terms take a (grid points × records) matrix: 160 MB over the whole 400,001-point
    grid for the 50 records of align-alg1-exact-1d, 3.2 GB at 1,000.  In chunks of CURVE_CHUNK points
    the curve's peak is its grid and densities plus one chunk's matrix: 23 % of the whole matrix on
    this 100,001-point grid, where the whole grid at once peaks above it."""
    mech, pair = mle("pairwise", lambda_r=8.55, output_noise=False), mle_pair_1d()
    points, records = 100_001, len(pair.d)
    whole = points * records * 8
    chunked = _traced_peak(lambda: align_mle.objective_curve_1d.__wrapped__(mech, pair.d, pair.d_prime, points))
    assert chunked < whole / 2
    monkeypatch.setattr(align_mle, "CURVE_CHUNK", points)  # twin: the whole grid at once
    assert _traced_peak(lambda: align_mle.objective_curve_1d.__wrapped__(mech, pair.d, pair.d_prime, points)) > whole
