"""Output keys and the scalar statistics the threshold and histogram views are built on.

Keys make outputs sortable and comparable: the values for scalars, a byte view per row for
vectors.

Statistics s(output), all fitted on the selection split only: the output itself (scalar
outputs); for vectors, the Fisher direction Σ⁻¹(μ_D − μ_D′) and a logistic-regression score
on featurised outputs (raw coordinates, indicators of each coordinate's frequent values,
and — for short vectors — squares and pairwise products, a small quadratic classifier for
when the linear one is weak).

Bins turn s into categories: atoms of s (values repeated in the sample, such as an abort
symbol −1 inside real outputs) and quantile bins of the rest, dense in both tails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.special import expit

_FIT_ROWS = 25_000         # logistic regression is fitted on at most this many selection rows per side
_NEWTON_STEPS = 12
_NEWTON_TOL = 1e-6
_MAX_ATOMS = 64


class Statistic(Protocol):
    """A named scalar function of outputs: one value per output (per row for vectors)."""

    @property
    def name(self) -> str: ...  # read-only, so the frozen dataclasses below satisfy it

    def __call__(self, outputs: np.ndarray) -> np.ndarray: ...


WIDE_ROW = 16  # values per row from which a row's key is a 128-bit hash of the row, not its bytes


def keys(outputs: np.ndarray) -> np.ndarray:
    """Sortable keys: the values for scalars, a byte view per row for vectors (a 128-bit hash of
    the row for rows of :data:`WIDE_ROW` values or more, :func:`row_hash`)."""
    if outputs.ndim == 1:
        if outputs.dtype == np.uint64:  # up to 2^64 - 1: as int64 they would wrap (and be shown negative)
            return outputs.copy()
        return outputs.astype(np.int64) if outputs.dtype.kind in "biu" else outputs.astype(float)
    rows = np.ascontiguousarray(outputs.astype(np.int64 if outputs.dtype.kind in "biu" else float))
    rows = rows.reshape(len(rows), int(np.prod(rows.shape[1:], dtype=np.int64)))  # -1 fails for no rows
    if rows.shape[1] >= WIDE_ROW:
        rows = row_hash(rows)
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()


def row_hash(rows: np.ndarray) -> np.ndarray:
    """(n, 2) uint64: each row's 8-byte values hashed to 128 bits, h_i = mix(Σ_j v_j a_ij mod 2^64)
    for two fixed vectors a_i of odd 64-bit multipliers.

    An event of the rows view is then a set of hash values, which is still a fixed set of outputs
    (those hashing into it): its bound keeps its confidence whatever the collisions, and two rows
    differing anywhere collide with probability about 2^-64 per hash.  A 3,000-wide row is sorted
    and compared as 16 bytes instead of 24,000."""
    m = rows.shape[1]
    a = np.random.default_rng([0x5EED, m]).integers(0, np.iinfo(np.uint64).max, size=(m, 2), dtype=np.uint64,
                                                    endpoint=True) | np.uint64(1)
    h = rows.view(np.uint64) @ a  # wraps mod 2^64
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    return np.ascontiguousarray(h)


_INT64_MAX = (1 << 63) - 1
_MAX_CODE = 1 << 62        # integer row codes stay below this (int64, with room for the sentinel)


def _wrapped(value: int) -> np.int64:
    """A Python integer as the int64 it is congruent to mod 2^64."""
    return np.int64(((value + (1 << 63)) % (1 << 64)) - (1 << 63))


NARROW_ROW = 64  # values per row up to which column extremes are taken column by column


def _column_extremes(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each column's minimum and maximum of the (n, w) matrix ``m``: column by column for narrow
    rows (a strided pass per column is several times faster than numpy's axis-0 reduction, whose
    inner loop is one short row), else by that reduction."""
    if m.shape[1] > NARROW_ROW:
        return m.min(axis=0), m.max(axis=0)
    cols = [m[:, j] for j in range(m.shape[1])]
    return np.array([c.min() for c in cols], dtype=m.dtype), np.array([c.max() for c in cols], dtype=m.dtype)


@dataclass(frozen=True, eq=False)
class RowCodec:
    """Integer outputs (scalars or rows of integer vectors) as one int64 code each: the mixed-radix
    number Σ_j (v_j − low_j)·stride_j over the box [low, high] seen on the selection split.

    A row outside the box gets −1: it was never seen on the selection split, so no event chosen
    there contains it.  Codes are ordered as the rows are lexicographically.
    """

    low: np.ndarray      # (m,) int64
    high: np.ndarray     # (m,) int64
    strides: np.ndarray  # (m,) int64
    scalar: bool         # outputs are scalars (m = 1), not vectors

    @classmethod
    def fit(cls, *parts: np.ndarray) -> RowCodec | None:
        """The codec of the box around ``parts`` (integer outputs), or None when its codes would
        not fit in an int64 (the caller falls back to byte keys)."""
        mats = [np.asarray(p).reshape(len(p), -1) for p in parts if len(p)]
        extremes = [_column_extremes(m) for m in mats]
        # Python integers: uint64 outputs up to 2^64 - 1 do not fit an int64 (cast, they would wrap).
        lows = [min(int(v) for v in col) for col in zip(*(e[0] for e in extremes), strict=True)]
        highs = [max(int(v) for v in col) for col in zip(*(e[1] for e in extremes), strict=True)]
        if max(highs) > _INT64_MAX or min(lows) < -_INT64_MAX - 1:
            return None  # the byte keys (dpaudit.engine.statistics.keys) tell such rows apart
        spans = [h - lo + 1 for lo, h in zip(lows, highs, strict=True)]
        if math.prod(spans) >= _MAX_CODE:
            return None
        low, high = np.asarray(lows, dtype=np.int64), np.asarray(highs, dtype=np.int64)
        strides = np.ones(len(spans), dtype=np.int64)
        for j in range(len(spans) - 2, -1, -1):
            strides[j] = strides[j + 1] * spans[j + 1]
        return cls(low, high, strides, scalar=np.asarray(parts[0]).ndim == 1)

    @property
    def size(self) -> int:
        """The number of codes of the box."""
        return int(self.strides[0] * (self.high[0] - self.low[0] + 1))

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        """Σ_j v_j·stride_j − Σ_j low_j·stride_j in wrapping int64 arithmetic: exact for a row in the
        box, whose code lies in [0, 2^62) (arithmetic mod 2^64 is exact on results in range, so
        v_j·stride_j may wrap); a row outside gets −1.  One integer product of the rows with the
        strides (einsum: int64 sums of products, no float rounding, no (n, m) temporary), the
        outside mask only where the outputs' extremes leave the box."""
        x = np.asarray(outputs).reshape(len(outputs), -1)
        offset = _wrapped(sum(int(lo) * int(st) for lo, st in zip(self.low, self.strides, strict=True)))
        if x.dtype.kind not in "biu" or (x.dtype.kind == "u" and x.dtype.itemsize == 8):
            return self._by_column(x, offset)
        codes = np.einsum("ij,j->i", x, self.strides)
        codes -= offset
        if len(x) and not (x.min() >= self.low.max() and x.max() <= self.high.min()):  # else: all in the box
            lows, highs = _column_extremes(x)
            leave = np.flatnonzero((lows < self.low) | (highs > self.high))  # the columns that leave the box
            if len(leave):
                outside = np.zeros(len(x), dtype=bool)
                for j in leave:
                    col = x[:, j]
                    outside |= (col < self.low[j]) | (col > self.high[j])
                codes[outside] = -1
        return codes

    def _by_column(self, x: np.ndarray, offset: np.int64) -> np.ndarray:
        """:meth:`__call__` column by column, for uint64 values (compared as int64, not as the float64
        numpy mixes uint64 and int64 in) and any other dtype."""
        codes = np.zeros(len(x), dtype=np.int64)
        outside = np.zeros(len(x), dtype=bool)
        for j in range(x.shape[1]):
            col = x[:, j]
            if col.dtype.kind == "u":
                outside |= col > _INT64_MAX
                col = col.astype(np.int64)
            outside |= (col < self.low[j]) | (col > self.high[j])
            codes += col.astype(np.int64) * self.strides[j]
        codes -= offset
        codes[outside] = -1
        return codes

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """The rows (k, m) of ``codes``."""
        spans = self.high - self.low + 1
        return (np.asarray(codes, dtype=np.int64)[:, None] // self.strides) % spans + self.low


def as_matrix(outputs: np.ndarray) -> np.ndarray:
    """Outputs as a float matrix, one row per output."""
    return np.asarray(outputs, dtype=float).reshape(len(outputs), -1)


@dataclass(frozen=True, eq=False)
class Identity:
    """The scalar output itself."""

    name: str = "output"

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        return np.asarray(outputs, dtype=float).reshape(len(outputs))


def _raw_features(outputs: np.ndarray, atoms: tuple[tuple[int, float], ...], quadratic: bool) -> np.ndarray:
    """Raw coordinates, indicators of the ``atoms`` (coordinate, value), optional quadratic terms."""
    x = as_matrix(outputs)
    cols = [x] + [(x[:, [j]] == v).astype(float) for j, v in atoms]
    if quadratic:
        iu = np.triu_indices(x.shape[1])
        cols.append(x[:, iu[0]] * x[:, iu[1]])
    return np.hstack(cols)


@dataclass(frozen=True, eq=False)
class Features:
    """Raw coordinates, indicators of frequent values per coordinate, optional quadratic terms,
    standardised with selection-split moments."""

    atoms: tuple[tuple[int, float], ...]
    quadratic: bool
    mean: np.ndarray
    scale: np.ndarray

    def raw(self, outputs: np.ndarray) -> np.ndarray:
        return _raw_features(outputs, self.atoms, self.quadratic)

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        return (self.raw(outputs) - self.mean) / self.scale

    def score(self, outputs: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """``self(outputs) @ weights`` without the feature matrix: the standardisation is folded
        into the weights, indicators are added column by column and the quadratic terms are one
        quadratic form, x·Qx (one pass over the outputs per kind of feature)."""
        x = as_matrix(outputs)
        v = weights / self.scale
        m = x.shape[1]
        s = x @ v[:m] - float(self.mean @ v)
        for a, (j, value) in enumerate(self.atoms):
            s += v[m + a] * (x[:, j] == value)
        if self.quadratic:
            q = np.zeros((m, m))
            q[np.triu_indices(m)] = v[m + len(self.atoms):]
            s += np.einsum("ij,ij->i", x @ q, x)
        return s


@dataclass(frozen=True, eq=False)
class Linear:
    """s = features(output) · w (Fisher direction on raw coordinates, or a logistic score)."""

    name: str
    weights: np.ndarray
    features: Features | None = None

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        if self.features is None:
            return as_matrix(outputs) @ self.weights
        return self.features.score(outputs, self.weights)


@dataclass(frozen=True, eq=False)
class Bins:
    """Category of s: an atom's index, else len(atoms) + its quantile bin."""

    atoms: np.ndarray
    edges: np.ndarray

    def __call__(self, s: np.ndarray) -> np.ndarray:
        codes = len(self.atoms) + np.searchsorted(self.edges, s, side="right")
        if len(self.atoms):
            pos = np.clip(np.searchsorted(self.atoms, s), 0, len(self.atoms) - 1)
            hit = self.atoms[pos] == s
            codes[hit] = pos[hit]
        return codes

    @property
    def n_codes(self) -> int:
        return len(self.atoms) + len(self.edges) + 1

    def counts_sorted(self, s: np.ndarray) -> np.ndarray:
        """``np.bincount(self(s), minlength=self.n_codes)`` for sorted ``s``, by binary searches of
        the edges and atoms into ``s``: bin j holds edges[j−1] ≤ s < edges[j], less the atoms in it."""
        below = np.searchsorted(s, self.edges, "left")
        cells = np.diff(np.concatenate([[0], below, [len(s)]]))
        atoms = np.searchsorted(s, self.atoms, "right") - np.searchsorted(s, self.atoms, "left")
        np.subtract.at(cells, np.searchsorted(self.edges, self.atoms, "right"), atoms)
        return np.concatenate([atoms, cells])


WIDE_FIT = 256  # values per output beyond which only the diagonal Fisher direction is fitted


def fisher(x: np.ndarray, y: np.ndarray, diagonal: bool = False) -> Linear:
    """Σ⁻¹(μ_x − μ_y) with the pooled covariance (ridge-regularised), unit norm; with ``diagonal``,
    the covariance's diagonal only (O(n·m) for m-wide outputs instead of O(n·m² + m³))."""
    x, y = as_matrix(x), as_matrix(y)
    diff = x.mean(axis=0) - y.mean(axis=0)
    if diagonal:
        var = 0.5 * (x.var(axis=0) + y.var(axis=0))
        w = diff / np.where(var > 0, var, 1.0)
        norm = np.linalg.norm(w)
        w = w / norm if norm > 0 and np.isfinite(norm) else np.ones(x.shape[1]) / math.sqrt(x.shape[1])
        return Linear("fisher-diagonal", w)
    cov = np.atleast_2d(0.5 * (np.cov(x, rowvar=False) + np.cov(y, rowvar=False)))
    ridge = 1e-9 * max(float(np.trace(cov)) / len(cov), 1e-300)
    w = np.linalg.solve(cov + ridge * np.eye(len(cov)), diff)
    norm = np.linalg.norm(w)
    w = w / norm if norm > 0 and np.isfinite(norm) else np.ones(x.shape[1]) / math.sqrt(x.shape[1])
    return Linear("fisher", w)


def _frequent_values(column: np.ndarray, limit: int = 8, share: float = 0.01) -> list[float]:
    values, counts = np.unique(column, return_counts=True)
    keep = counts >= max(5, share * len(column))
    order = np.argsort(-counts[keep])[:limit]
    return values[keep][order].tolist()


def logistic(x: np.ndarray, y: np.ndarray, quadratic: bool, rng: np.random.Generator) -> Linear:
    """A ridge logistic regression of "output came from D" on featurised outputs.

    Fitted by Newton's method on a random subsample of at most :data:`_FIT_ROWS` rows per side
    (the direction's error shrinks as 1/√n while its cost grows as n: past a few ten thousand
    rows the event's bound no longer moves), stopping when no weight moves by more than
    :data:`_NEWTON_TOL` or after :data:`_NEWTON_STEPS` steps."""
    x, y = as_matrix(x), as_matrix(y)
    if len(x) > _FIT_ROWS:
        x = x[np.sort(rng.choice(len(x), _FIT_ROWS, replace=False))]
    if len(y) > _FIT_ROWS:
        y = y[np.sort(rng.choice(len(y), _FIT_ROWS, replace=False))]
    pooled = np.vstack([x, y])
    atoms = tuple((j, v) for j in range(pooled.shape[1]) for v in _frequent_values(pooled[:, j])
                  if 0 < np.mean(pooled[:, j] == v) < 0.999)
    raw = _raw_features(pooled, atoms, quadratic)
    scale = raw.std(axis=0)
    feats = Features(atoms, quadratic, raw.mean(axis=0), np.where(scale > 0, scale, 1.0))
    labels = np.concatenate([np.ones(len(x)), np.zeros(len(y))])
    f = np.hstack([(raw - feats.mean) / feats.scale, np.ones((len(raw), 1))])
    w = np.zeros(f.shape[1])
    ridge = 1e-3 * len(f) / 1000
    for _ in range(_NEWTON_STEPS):
        p = expit(f @ w)
        grad = f.T @ (p - labels) + ridge * w
        hess = (f * (p * (1 - p))[:, None]).T @ f
        hess[np.diag_indices_from(hess)] += ridge
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < _NEWTON_TOL:
            break
    return Linear("logistic-quadratic" if quadratic else "logistic", w[:-1], feats)


def fit_statistics(x: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> list[Statistic]:
    """The statistics for outputs ``x`` (under D) and ``y`` (under D′): the output itself for
    scalars; Fisher, logistic and (up to 8 coordinates) quadratic logistic for vectors."""
    if x.ndim == 1 or x.shape[1] == 1:
        return [Identity()]
    if as_matrix(x[:1]).shape[1] > WIDE_FIT:  # a covariance or a Hessian of m^2 entries, solved in m^3
        return [fisher(x, y, diagonal=True)]
    out: list[Statistic] = [fisher(x, y), logistic(x, y, quadratic=False, rng=rng)]
    if x.shape[1] <= 8:
        out.append(logistic(x, y, quadratic=True, rng=rng))
    return out


def sorted_unique(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(s, return_counts=True)`` through a stable sort, which is linear on the
    concatenated sorted runs the selection split hands over (see selection.candidate_views); an
    array already in order (the pooled fitting values, :attr:`Split.pooled_fit`) is not sorted again, and
    is itself the answer's values when it has no ties."""
    if not (len(s) < 2 or bool(np.all(s[1:] >= s[:-1]))):  # NaN compares false: sorted then, as before
        s = np.sort(s, kind="stable")
    if len(s) == 0:
        return s, np.zeros(0, dtype=np.int64)
    new = s[1:] != s[:-1]
    if new.all():  # no ties (a continuous statistic): s itself, without three index arrays of its length
        return s, np.ones(len(s), dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], new]))
    return s[starts], np.diff(np.append(starts, len(s)))


def quantile_bins(s: np.ndarray, inner: int = 256) -> Bins:
    """Atoms (values repeated ≥ 5 times and ≥ 0.1 % of the sample) and bin edges at quantiles
    of the rest, dense in both tails."""
    values, counts = sorted_unique(s)
    is_atom = counts >= max(5, 1e-3 * len(s))
    if is_atom.any():
        atoms = values[is_atom][np.argsort(-counts[is_atom])[:_MAX_ATOMS]]
        atoms = np.sort(atoms)
        kept = ~np.isin(values, atoms)
        rest = np.repeat(values[kept], counts[kept])  # sorted already: no second sort
    else:  # no atom: every value is kept (the same arrays, without the membership test and copies)
        atoms = np.empty(0, dtype=values.dtype)  # not values[:0]: a view would keep all of values alive
        rest = values if len(values) == len(s) else np.repeat(values, counts)  # no ties: each value once
    if len(rest) == 0:
        return Bins(atoms, np.array([]))
    n = len(rest)
    ranks = np.linspace(0, n - 1, min(inner, max(2, n // 50))).astype(int)
    tail = np.unique(np.geomspace(1, max(1, n / 8), 24).astype(int))
    ranks = np.unique(np.concatenate([ranks, tail - 1, n - tail]))
    return Bins(atoms, np.unique(rest[np.clip(ranks, 0, n - 1)]))
