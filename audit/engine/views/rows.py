"""The ``rows`` view: each distinct output (a scalar, or a row of an integer vector) is a category.

S = a prefix of the distinct outputs in likelihood-ratio order (:func:`prefix_families`), or, for
integer vectors, an interval of the first top's position or of the count of tops
(:mod:`dpaudit.engine.views.pooled`: rare rows pooled with their neighbours).
Only integer (or boolean) outputs have categories, and the view is skipped when there are
more than :data:`MAX_ROWS` distinct outputs to count; the statistic views are the fallback.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from dpaudit.engine.statistics import RowCodec, Statistic, keys
from dpaudit.engine.views.base import (
    ChunkCache,
    Event,
    Family,
    Split,
    category_counts,
    halves_memo,
    prefix_families,
)
from dpaudit.engine.views.pooled import interval_families

MAX_ROWS = 20_000          # distinct outputs beyond which the rows view is skipped
DENSE_CODES = 1 << 22      # boxes of at most this many codes are counted with one bincount per chunk
WELL_OBSERVED = 100        # fitting-half count from which a category's frequency is known within ~10 %


def _values_list(values: np.ndarray) -> list:
    if values.dtype.kind == "V":
        width = values.dtype.itemsize // 8
        return np.frombuffer(values.tobytes(), dtype=np.int64).reshape(-1, width).tolist()
    return values.tolist()


def _runs(items: list[int]) -> list[tuple[int, int]]:
    """Sorted integers as (first, last) runs of consecutive values."""
    runs: list[tuple[int, int]] = []
    for v in items:
        if runs and v == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


def _show(values: np.ndarray, limit: int = 8, vectors: int = 3) -> str:
    """The set in words: scalar outputs as runs (``{0..16, 18, 20..25}``; a run of three or more
    consecutive integers is an interval), vector outputs as the first ``vectors`` rows; past
    ``limit`` items (``vectors`` rows), "… and N more" counts the outputs left out."""
    items = _values_list(values)
    if values.dtype.kind == "V":  # vector rows
        shown = [str(v) for v in items[:vectors]]
        rest = len(items) - len(shown)
    else:
        parts = []
        for a, b in _runs(sorted(int(v) for v in items)):
            parts += [f"{a}..{b}"] if b - a >= 2 else [str(v) for v in range(a, b + 1)]
        shown = parts[:limit]
        rest = len(items) - sum(int(p.split("..")[1]) - int(p.split("..")[0]) + 1 if ".." in p else 1
                                for p in shown)
    return "{" + ", ".join(shown) + (f", … and {rest} more" if rest else "") + "}"


def _members(event: Event) -> np.ndarray:
    # Structural: rows events are built by Rows.candidates, always with the keys of their outputs.
    assert event.members is not None, "a rows event has members"
    return event.members


def _shown(event: Event) -> np.ndarray:
    """The event's outputs as keys (decoded from their integer codes when it has a codec)."""
    members = _members(event)
    if event.codec is None:
        return members
    rows = event.codec.decode(members)
    return rows[:, 0] if event.codec.scalar else keys(rows)


def _code_counts(codec: RowCodec, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct codes, their counts) of the in-box ``codes``."""
    codes = codes[codes >= 0]
    if codec.size <= DENSE_CODES:
        cells = np.bincount(codes, minlength=codec.size)
        present = np.flatnonzero(cells)
        return present, cells[present]
    return np.unique(codes, return_counts=True)


def _counts_of(codec: RowCodec, values: np.ndarray, codes: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Each part's count of each of the distinct in-box ``values`` (every code of ``codes`` is one
    of them): one bincount over the box when it is small beside the parts, else a binary search
    of each code among the values first."""
    if codec.size <= max(DENSE_CODES // 4, sum(len(k) for k in codes)):
        return [np.bincount(k, minlength=codec.size)[values].astype(float) for k in codes]
    return [np.bincount(np.searchsorted(values, k), minlength=len(values)).astype(float) for k in codes]


def well_observed(counts: np.ndarray, n: int) -> bool:
    """Few categories (at most √n for ``n`` fitting samples per side), each seen at least
    :data:`WELL_OBSERVED` times on the fitting half: the prefixes are then scored at one
    standard error (:func:`prefix_families`)."""
    return 0 < len(counts) <= math.isqrt(n) and bool(counts.min() >= WELL_OBSERVED)


def _chunk_codes(cache: ChunkCache, codec: RowCodec, outputs: np.ndarray) -> np.ndarray:
    return cache.once(("rows-codes", id(codec)), lambda: codec(outputs))


def _chunk_cells(cache: ChunkCache, codec: RowCodec, outputs: np.ndarray) -> np.ndarray:
    """The chunk's count of every code of ``codec``'s box (one bincount, shared by its events)."""
    def compute() -> np.ndarray:
        codes = _chunk_codes(cache, codec, outputs)
        inside = codes if not len(codes) or codes.min() >= 0 else codes[codes >= 0]  # no mask when all are in the box
        return np.bincount(inside, minlength=codec.size)
    return cache.once(("rows-cells", id(codec)), compute)


def _chunk_unique(cache: ChunkCache, codec: RowCodec, outputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The chunk's distinct codes and counts, for boxes too large for one bincount."""
    return cache.once(("rows-unique", id(codec)), lambda: _code_counts(codec, _chunk_codes(cache, codec, outputs)))


def _display_counts(codec: RowCodec, x: np.ndarray, y: np.ndarray, memo: ChunkCache | None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct codes of ``x`` and ``y`` and each side's count of each: read from the selection's
    per-half counts (``memo``; the codec was fitted on those four halves, so they hold every
    code of x and y), else counted again."""
    held = halves_memo(memo, x, y)
    known = held.get(("rows-counts", codec)) if held is not None else None
    if known is not None:
        values, c = known
        return values, (c[0] + c[2]).astype(np.int64), (c[1] + c[3]).astype(np.int64)
    cx_codes, cy_codes = codec(x), codec(y)
    values = _code_counts(codec, np.concatenate([cx_codes, cy_codes]))[0]
    cx, cy = (np.bincount(np.searchsorted(values, c[c >= 0]), minlength=len(values)) for c in (cx_codes, cy_codes))
    return values, cx, cy


class Rows:
    """S = a set of distinct outputs (``members`` holds their keys)."""

    name = "rows"
    statistic_based: ClassVar[bool] = False

    def candidates(self, split: Split, statistic: Statistic | None = None) -> list[Family]:
        if split.fit_x.dtype.kind not in "biu" or split.fit_y.dtype.kind not in "biu":
            return []
        halves = (split.fit_x, split.fit_y, split.score_x, split.score_y)
        codec = RowCodec.fit(*halves)
        if codec is not None:
            codes = [codec(a) for a in halves]
            values = _code_counts(codec, np.concatenate(codes))[0]
            if len(values) > MAX_ROWS:
                return []
            c = _counts_of(codec, values, codes)
            if split.memo is not None:  # for display: every distinct code of the split and its counts
                split.memo.once(("rows-counts", codec), lambda: (values, c))
                # for dpaudit.engine.selection.rows_exhaustive: the distinct rows of the fitting halves
                split.memo.once(("rows-fit-distinct",), lambda: int(np.count_nonzero(c[0] + c[1])))
                split.memo.keep(("rows-seen",), (codec, values))  # every distinct row of the split, as codes

            def make(fav: str, idx: np.ndarray) -> Event:
                return Event(fav, self.name, members=np.sort(values[idx]), codec=codec)
            families = prefix_families((c[0], c[1]), (c[2], c[3]), split.n_fit, make,
                                       pooled=well_observed(c[0] + c[1], min(split.n_fit)))
            if not codec.scalar:  # vectors: rows pooled by the tops' statistics (dpaudit.engine.views.pooled)
                families += interval_families(codec.decode(values), (c[0], c[1]), (c[2], c[3]), make)
            return families
        found = category_counts([keys(a) for a in (split.fit_x, split.fit_y, split.score_x, split.score_y)], MAX_ROWS)
        if found is None:
            return []
        values, c = found
        return prefix_families((c[0], c[1]), (c[2], c[3]), split.n_fit,
                               lambda fav, idx: Event(fav, self.name, members=np.sort(values[idx])))

    def count(self, outputs: np.ndarray, events: Sequence[Event], cache: ChunkCache) -> np.ndarray:
        """Through the chunk's distinct outputs and their counts, computed once per chunk (as
        integer codes when the events have a codec): each event then sums the counts of its members."""
        out = np.empty(len(events), dtype=np.int64)
        for i, ev in enumerate(events):
            members, codec = _members(ev), ev.codec
            if codec is None:
                values, counts = cache.once(("rows",), lambda: np.unique(keys(outputs), return_counts=True))
                out[i] = int(counts[np.isin(values, members)].sum())
            elif codec.size <= DENSE_CODES:
                out[i] = int(_chunk_cells(cache, codec, outputs)[members].sum())
            else:
                values, counts = _chunk_unique(cache, codec, outputs)
                out[i] = int(counts[np.isin(values, members)].sum())
        return out

    def contains(self, event: Event, outputs: np.ndarray) -> np.ndarray:
        if event.codec is not None:
            return np.isin(event.codec(outputs), _members(event))
        return np.isin(keys(outputs), _members(event))

    def describe(self, event: Event) -> str:
        return f"output in {_show(_shown(event))}"

    def fields(self, event: Event) -> dict[str, Any]:
        return {"values": _values_list(_shown(event))}

    def display(self, x: np.ndarray, y: np.ndarray, event: Event, bins: int, top: int,
                memo: ChunkCache | None = None) -> dict[str, Any]:
        """The ``top`` most frequent outputs with their counts under D and D′."""
        codec = event.codec
        if codec is not None:  # integer codes: no byte keys to sort
            values, cx, cy = _display_counts(codec, x, y, memo)
            order = np.argsort(-(cx + cy), kind="stable")[:top]
            rows = codec.decode(values[order])
            return {"kind": "outputs", "values": [str(v) for v in (rows[:, 0] if codec.scalar else rows).tolist()],
                    "D": cx[order].tolist(), "D'": cy[order].tolist(), "n": [len(x), len(y)],
                    "in_event": np.isin(values[order], _members(event)).tolist()}
        kx, ky = keys(x), keys(y)
        values, inverse = np.unique(np.concatenate([kx, ky]), return_inverse=True)
        cx = np.bincount(inverse[: len(kx)], minlength=len(values))
        cy = np.bincount(inverse[len(kx):], minlength=len(values))
        order = np.argsort(-(cx + cy), kind="stable")[:top]
        return {"kind": "outputs", "values": [str(v) for v in _values_list(values[order])],
                "D": cx[order].tolist(), "D'": cy[order].tolist(), "n": [len(x), len(y)],
                "in_event": np.isin(values[order], _shown(event)).tolist()}
