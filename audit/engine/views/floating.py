"""The ``floating`` view: categories of the binary representation of real outputs.

A mechanism computed in doubles does not output a real number but a double, and the sets of
doubles it can reach may differ between neighbours (Mironov, CCS 2012): ``q + L`` with a
double L is rounded onto the grid of its binade, so for q = 1 every output in [−1, −0.5) is a
multiple of 2^−52 — its last mantissa bit is 0 — while for q = 0 half of them end in 1.  Such
an event has probability 0 on one side, so its ε is infinite, yet no threshold or histogram
of the *values* can see it.

Each output y (a scalar double) falls in the category

    (sign of y, binary exponent of y, min(trailing zero bits of y's 52-bit mantissa, 4)),

the exponent bucketing magnitudes and the trailing zeros the coarsest grid y lies on (a
multiple of 2^(e − 52 + t)), which is what an input grid leaves reachable.  It is among the
``"auto"`` views, so ``q + noise`` computed in doubles is refuted by default.  S = a prefix of the
categories in likelihood-ratio order (:func:`~dpaudit.engine.views.base.prefix_families`), fitted and
scored on the selection split like every view, so a certified event is an ordinary event.  The
view applies to real scalar outputs only (integers and vectors are skipped); on outputs that
are reals in the mathematical sense (a snapped grid, or a reference that draws exact
multiples) its categories are a coarse log-scale histogram.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from dpaudit.engine.statistics import Statistic
from dpaudit.engine.views.base import ChunkCache, Event, Family, Split, category_counts, prefix_families, rejoined

TRAILING_CAP = 4       # trailing zero bits beyond this share a category
MAX_CATEGORIES = 4096  # beyond this many categories the view is skipped
_LOW_BITS = np.uint64((1 << TRAILING_CAP) - 1)
# min(trailing zero bits, TRAILING_CAP) of each value of the mantissa's lowest TRAILING_CAP bits
# (all zero: TRAILING_CAP or more, a zero mantissa included)
_TRAILING = np.array([TRAILING_CAP] + [(v & -v).bit_length() - 1 for v in range(1, 1 << TRAILING_CAP)],
                     dtype=np.int64)


def applies(outputs: np.ndarray) -> bool:
    """Real scalar outputs (shape (n,) or (n, 1))."""
    return outputs.dtype.kind == "f" and (outputs.ndim == 1 or outputs.shape[1] == 1)


def codes(outputs: np.ndarray) -> np.ndarray:
    """The category code of each output: (sign·2048 + biased exponent)·(cap + 1) + trailing class."""
    bits = np.ascontiguousarray(outputs, dtype=np.float64).reshape(len(outputs)).view(np.uint64)
    head = (bits >> np.uint64(52)).astype(np.int64)  # sign bit and the 11 exponent bits
    # min(trailing zero bits of the mantissa, cap) depends only on its lowest cap bits: a table lookup
    return head * (TRAILING_CAP + 1) + _TRAILING[(bits & _LOW_BITS).astype(np.intp)]


def describe_code(code: int) -> str:
    """A category in words: sign, binade and grid."""
    head, trailing = divmod(int(code), TRAILING_CAP + 1)
    sign, biased = divmod(head, 2048)
    binade = f"[{'-' if sign else ''}2^{biased - 1023}, {'-' if sign else ''}2^{biased - 1022})"
    grid = f">= {TRAILING_CAP}" if trailing == TRAILING_CAP else f"= {trailing}"
    return f"{binade} with trailing zero bits {grid}"


def _members(event: Event) -> np.ndarray:
    # Structural: floating events are built by Floating.candidates, always with their category codes.
    assert event.members is not None, "a floating event has members"
    return event.members


class Floating:
    """S = a set of (sign, exponent, trailing-zeros) categories of the outputs' doubles."""

    name = "floating"
    statistic_based: ClassVar[bool] = False
    by_default: ClassVar[bool] = True  # among the "auto" views (dpaudit.engine.estimate.resolve_views)

    def candidates(self, split: Split, statistic: Statistic | None = None) -> list[Family]:
        if not (applies(split.fit_x) and applies(split.fit_y)):
            return []
        parts = [codes(a) for a in (split.fit_x, split.fit_y, split.score_x, split.score_y)]
        if split.memo is not None:
            split.memo.once(("floating",), lambda: parts)  # for display: codes computed once
        found = category_counts(parts, MAX_CATEGORIES)
        if found is None or len(found[0]) < 2:
            return []
        values, c = found
        return prefix_families((c[0], c[1]), (c[2], c[3]), split.n_fit,
                               lambda fav, idx: Event(fav, self.name, members=np.sort(values[idx])))

    def count(self, outputs: np.ndarray, events: Sequence[Event], cache: ChunkCache) -> np.ndarray:
        values, counts = cache.once(("floating",), lambda: np.unique(codes(outputs), return_counts=True))
        return np.array([int(counts[np.isin(values, _members(ev))].sum()) for ev in events], dtype=np.int64)

    def contains(self, event: Event, outputs: np.ndarray) -> np.ndarray:
        return np.isin(codes(outputs), _members(event))

    def describe(self, event: Event) -> str:
        members = _members(event)
        shown = "; ".join(describe_code(c) for c in members[:3])
        more = f"; … and {len(members) - 3} more" if len(members) > 3 else ""
        return f"output's double in {len(members)} sign/binade/trailing-zero categories: {shown}{more}"

    def fields(self, event: Event) -> dict[str, Any]:
        return {"categories": [describe_code(c) for c in _members(event)]}

    def display(self, x: np.ndarray, y: np.ndarray, event: Event, bins: int, top: int,
                memo: ChunkCache | None = None) -> dict[str, Any]:
        """The ``top`` most frequent categories with their counts under D and D′."""
        known = rejoined(memo, ("floating",), x, y)
        cx, cy = known if known is not None else (codes(x), codes(y))
        found = category_counts([cx, cy], len(cx) + len(cy))
        assert found is not None  # structural: at most one category per output
        values, (kx, ky) = found[0], [c.astype(np.int64) for c in found[1]]
        order = np.argsort(-(kx + ky), kind="stable")[:top]
        return {"kind": "outputs", "values": [describe_code(v) for v in values[order]],
                "D": kx[order].tolist(), "D'": ky[order].tolist(), "n": [len(x), len(y)],
                "in_event": np.isin(values[order], _members(event)).tolist()}
