"""How much memory an audit holds, checked before it starts: the selection split of both sides
in memory and one chunk per worker in flight (:func:`dpaudit.engine.runner.estimate`)."""

from __future__ import annotations

import numpy as np

from dpaudit.core import InputError
from dpaudit.engine.streaming import CHUNK, SELECTION_FRACTION, selection_size
from dpaudit.runtime.execution import available_memory

# A sample call is asked for at most this many bytes of outputs (dpaudit.engine.runner.part_size):
# 1,024 bytes per output (128 float64) at the chunk of 2^18, so narrower outputs are drawn as always.
PART_BYTES = 256 << 20


def outputs_per_part(width: int, itemsize: int) -> int:
    """Outputs of ``width`` values of ``itemsize`` bytes that fit in :data:`PART_BYTES` (at least one)."""
    return max(1, PART_BYTES // max(1, width * itemsize))


def memory_needed(samples: int, width: int, itemsize: int, workers: int,
                  selection_fraction: float = SELECTION_FRACTION) -> int:
    """Bytes an audit of ``samples`` per side holds at its peak: the selection split of both sides
    (as drawn, concatenated, and as the float matrices the statistics fit), plus one chunk per
    worker in flight.  An estimate, on the high side."""
    n_sel = selection_size(samples, selection_fraction)
    selection = 2 * n_sel * width * (2 * itemsize + 2 * 8)
    chunks = (workers + 1) * min(CHUNK, samples, outputs_per_part(width, itemsize)) * width * (itemsize + 8)
    return selection + chunks


def human_size(n: float) -> str:
    """``n`` bytes in the largest binary unit under 1024 of it, to three significant digits."""
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024 or unit == "PB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PB"


# Samples per side at most: event counts are int64, and the counts of both sides are summed
# (pooled frequencies, the progress total); 2^62 per side keeps every such sum below 2^63.
MAX_SAMPLES = 1 << 62


def check_memory(samples: int, width: int, itemsize: int, workers: int,
                 selection_fraction: float = SELECTION_FRACTION) -> None:
    """An :class:`InputError` with the estimate when an audit cannot fit in the memory available
    (instead of growing until the OOM killer ends the run with no message), or when ``samples``
    overflows what the counters hold (:data:`MAX_SAMPLES`)."""
    if not isinstance(samples, int | np.integer) or not 1 <= samples <= MAX_SAMPLES:
        raise InputError(f"samples = {samples!r} per side: the counters hold at most {MAX_SAMPLES} (2^62) per side "
                         "(64-bit counts of both sides summed); give a budget from 1 to 2^62")
    need = memory_needed(samples, width, itemsize, workers, selection_fraction)
    have = available_memory()
    if have is not None and need > have:
        n_sel = selection_size(samples, selection_fraction)
        raise InputError(f"samples = {samples}: this audit needs about {human_size(need)} of memory ({n_sel} selection "
                         f"outputs per side of {width} value(s), plus {workers} part(s) of chunks in flight) but "
                         f"about {human_size(have)} is available: lower the sample budget (--samples, samples_factor)")
