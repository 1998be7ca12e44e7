"""A fitted statistic of integer vector outputs, evaluated once per possible row.

The sparse vector's outputs are rows of {−1, 0, 1}^m: at m = 10 there are 3^10 = 59 049 possible
rows, and a linear or logistic statistic (:mod:`dpaudit.engine.statistics`) evaluated on 10^6 outputs
recomputes the same few thousand values per chunk (Algorithm 6 at ε = 0.1: 1.9 s of a 6.5 s
audit went to the logistic score).  :class:`Tabulated` evaluates the statistic once on every row
of the outputs' integer box (:class:`dpaudit.engine.statistics.RowCodec`) and looks it up by the row's
code; a row outside the box gets the statistic computed directly.  The values are those of the
table on the selection split and on the estimation split alike, so a threshold chosen on one
cuts the other at the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpaudit.engine.statistics import Linear, RowCodec, Statistic

MAX_TABLE = 1 << 17   # codes of a box tabulated at most (131 072 doubles, 1 MB)


@dataclass(frozen=True, eq=False)
class Tabulated(Linear):
    """``base`` (a :class:`Linear` statistic) read from ``table[codec(row)]``; the name, weights
    and features are ``base``'s, so records show the statistic that was fitted."""

    codec: RowCodec | None = None
    table: np.ndarray | None = None
    base: Statistic | None = None

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        # Structural: built only by tabulate, with all three set.
        assert self.codec is not None and self.table is not None and self.base is not None
        codes = self.codec(outputs)
        out = self.table[np.maximum(codes, 0)]
        outside = codes < 0
        if outside.any():
            out = out.copy()
            out[outside] = self.base(np.asarray(outputs)[outside])
        return out


def tabulate(statistics: list[Statistic], codec: RowCodec | None) -> list[Statistic]:
    """``statistics`` as :class:`Tabulated` ones over ``codec``'s box when it has at most
    :data:`MAX_TABLE` codes (vector outputs only), else unchanged."""
    if codec is None or codec.scalar or codec.size > MAX_TABLE:
        return statistics
    rows = codec.decode(np.arange(codec.size, dtype=np.int64))
    return [Tabulated(s.name, s.weights, s.features, codec=codec, table=np.asarray(s(rows), dtype=float), base=s)
            if isinstance(s, Linear) else s for s in statistics]
