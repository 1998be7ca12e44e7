"""What the selection computes once and its report reads again (the selection memo), and the
dense counting shortcuts: each must give exactly the values of the computation it replaces.

Every comparison is exact (``==`` on floats and lists): the shortcuts are claimed to be the same
numbers, not close ones.  Each equality test has a twin showing the comparison can fail."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.engine import selection
from dpaudit.engine.statistics import Identity, RowCodec, sorted_unique
from dpaudit.engine.views import VIEWS, ChunkCache
from dpaudit.engine.views.base import category_counts, statistic_histogram
from dpaudit.engine.views.floating import codes


def _outputs(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "laplace":
        return rng.laplace(size=n)
    if kind == "zeros":  # exact zeros of both signs among the tails' order statistics
        v = np.round(rng.normal(size=n), 1)
        v[rng.random(n) < 0.3] = -0.0
        return v
    if kind == "ties":  # a few atoms
        return rng.integers(0, 5, size=n).astype(float)
    if kind == "heavy":
        return rng.standard_cauchy(size=n) * 1e300
    if kind == "tiny":
        return rng.normal(size=n) * 5e-324
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["laplace", "zeros", "ties", "heavy", "tiny"])
@pytest.mark.parametrize("n", [40, 5_000])
def test_display_from_the_memo_is_the_display_computed_again(kind, n):
    rng = np.random.default_rng(n)
    x, y = _outputs(kind, n, rng), _outputs(kind, n + 3, rng) + 0.5
    memo = ChunkCache()
    with np.errstate(all="ignore"):
        families, _ = selection.candidate_views(x, y, ("threshold", "histogram"), np.random.default_rng(0), memo)
    event = families[0].make(0)
    stat = event.statistic
    assert memo.get(("values", stat)) is not None  # the display below reads the memo
    assert statistic_histogram(x, y, stat, 40, memo) == statistic_histogram(x, y, stat, 40)
    assert selection.describe_outputs(x, y, event, memo=memo) == selection.describe_outputs(x, y, event)


def test_the_memo_is_ignored_for_other_arrays():
    """A memo recorded for other samples is not read: the display is that of the samples given."""
    rng = np.random.default_rng(1)
    x, y = rng.laplace(size=2000), rng.laplace(size=2000) + 1
    memo = ChunkCache()
    families, _ = selection.candidate_views(x, y, ("threshold",), np.random.default_rng(0), memo)
    event = families[0].make(0)
    other = x + 5
    shown = selection.describe_outputs(other, y, event, memo=memo)
    assert shown == selection.describe_outputs(other, y, event)
    assert shown != selection.describe_outputs(x, y, event)  # the twin: the samples do change the display


@pytest.mark.parametrize("view", ["rows", "floating"])
def test_rows_and_floating_displays_from_the_memo(view):
    rng = np.random.default_rng(2)
    if view == "rows":
        x, y = rng.integers(-1, 2, size=(3000, 4)), rng.integers(-1, 2, size=(3000, 4))
        y[:300] = 1
    else:
        x, y = rng.laplace(size=3000), np.round(rng.laplace(size=3000) * 64) / 64
    memo = ChunkCache()
    families, _ = selection.candidate_views(x, y, (view,), np.random.default_rng(0), memo)
    event = families[0].make(len(families[0].k_fav) // 2)
    assert VIEWS[view].display(x, y, event, 40, 12, memo) == VIEWS[view].display(x, y, event, 40, 12)


def _unique_counts(parts):
    values, inverse = np.unique(np.concatenate(parts), return_inverse=True)
    ends = np.cumsum([0] + [len(p) for p in parts])
    return values, [np.bincount(inverse[ends[i]:ends[i + 1]], minlength=len(values)).astype(float)
                    for i in range(len(parts))]


@pytest.mark.parametrize("low", [-7, 0, 3, 2**40])
def test_dense_category_counts_are_uniques(low):
    rng = np.random.default_rng(3)
    parts = [rng.integers(low, low + 50, size=s) for s in (100, 80, 120, 1)]
    values, counts = category_counts(parts, 10_000)
    ref_values, ref_counts = _unique_counts(parts)
    assert np.array_equal(values, ref_values) and values.dtype == ref_values.dtype
    assert all(np.array_equal(a, b) for a, b in zip(counts, ref_counts, strict=True))
    assert category_counts(parts, len(values) - 1) is None  # too many categories: none, as before
    shifted = [p + 1 for p in parts]
    assert not np.array_equal(category_counts(shifted, 10_000)[0], ref_values)  # twin


def test_floating_codes_table_is_the_trailing_zero_count():
    rng = np.random.default_rng(4)
    v = np.concatenate([rng.laplace(size=5000), np.round(rng.laplace(size=5000) * 8) / 8, [0.0, -0.0, 1.0, 5e-324,
                                                                                          -np.inf, np.nan]])
    bits = v.view(np.uint64)
    mantissa = bits & np.uint64((1 << 52) - 1)
    lowest = mantissa & (~mantissa + np.uint64(1))
    trailing = np.where(mantissa == 0, 4, np.log2(np.maximum(lowest, 1).astype(np.float64)))
    expected = (bits >> np.uint64(52)).astype(np.int64) * 5 + np.minimum(trailing, 4).astype(np.int64)
    assert np.array_equal(codes(v), expected)
    assert not np.array_equal(codes(v * 3), expected)  # twin


def _codes_by_column(codec: RowCodec, outputs: np.ndarray) -> np.ndarray:
    """RowCodec's codes as first defined: (v_j − low_j)·stride_j summed column by column in int64."""
    x = np.asarray(outputs).reshape(len(outputs), -1)
    out = np.zeros(len(x), dtype=np.int64)
    outside = np.zeros(len(x), dtype=bool)
    for j in range(x.shape[1]):
        col = x[:, j]
        if col.dtype.kind == "u":
            outside |= col > (1 << 63) - 1
            col = col.astype(np.int64)
        outside |= (col < codec.low[j]) | (col > codec.high[j])
        out += (col.astype(np.int64) - codec.low[j]) * codec.strides[j]
    out[outside] = -1
    return out


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int64, np.uint8, np.uint32, np.uint64, np.bool_])
@pytest.mark.parametrize("width", [1, 3, 10])
def test_row_codes_are_the_column_sums(dtype, width):
    rng = np.random.default_rng(width)
    if dtype is np.bool_:
        x = rng.integers(0, 2, size=(400, width)).astype(bool)
    else:
        info = np.iinfo(dtype)
        lo, hi = max(int(info.min), -9), min(int(info.max), 9)
        x = rng.integers(lo, hi, size=(400, width), dtype=dtype, endpoint=True)
        if dtype is np.int64:
            x += 10**15  # products beyond 2^53 (and past 2^63 before the offset is taken off)
    fit = x[:250] if dtype is np.bool_ else np.clip(x[:250], x.min() + 2, x.max() - 2)
    codec = RowCodec.fit(fit)  # a box narrower than the outputs': some rows lie outside it
    assert codec is not None
    got, expected = codec(x), _codes_by_column(codec, x)
    assert np.array_equal(got, expected) and got.dtype == expected.dtype
    if dtype is not np.bool_:
        assert (expected == -1).any() and (expected >= 0).any()  # rows outside and inside are exercised
    assert not np.array_equal(RowCodec.fit(x)(x), expected) or not (expected == -1).any()  # twin: the box matters


def test_sorted_unique_of_sorted_and_unsorted_input():
    rng = np.random.default_rng(5)
    s = rng.integers(0, 30, size=1000).astype(float)
    c = rng.laplace(size=1000)  # no ties: the shortcut that hands the sorted input back
    for values in (s, np.sort(s), np.append(np.sort(s), np.nan), c, np.sort(c), np.append(np.sort(c), [np.nan] * 2),
                   c[:1]):
        got, ref = sorted_unique(values), np.unique(values, return_counts=True, equal_nan=False)
        assert np.array_equal(got[0], ref[0], equal_nan=True) and np.array_equal(got[1], ref[1])


def test_rows_exhaustive_from_the_memo():
    rng = np.random.default_rng(6)
    for k in (3, 40):  # few rows (exhaustive) and many (not)
        x, y = rng.integers(0, k, size=(4000, 2)), rng.integers(0, k, size=(4000, 2))
        memo = ChunkCache()
        selection.candidate_views(x, y, ("rows",), np.random.default_rng(0), memo)
        fx, fy = x[:2000], y[:2000]
        distinct = memo.get(("rows-fit-distinct",))
        assert (distinct <= np.sqrt(2000)) == selection.rows_exhaustive(fx, fy) == (k == 3)


def test_identity_statistic_halves_rejoin_to_the_whole():
    x = np.random.default_rng(7).laplace(size=101)
    h = len(x) // 2
    assert np.array_equal(np.concatenate([Identity()(x[:h]), Identity()(x[h:])]), Identity()(x))


@pytest.mark.parametrize("seed", range(20))
def test_tail_ends_are_numpys_quantiles(seed):
    """The range of the display from the sorted halves is numpy's quantile of the pooled values
    (sizes drawn at random, among them pooled sizes n where (n - 1)·q is a whole number)."""
    from dpaudit.engine.views.base import QUANTILES, Split, tail_ends
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 4000, size=4) if seed % 4 else (250, 250, 250, 251)  # n - 1 = 1000
    parts = [rng.laplace(size=s) * 10.0 ** rng.integers(-5, 5) + i for i, s in enumerate(sizes)]
    ends = tail_ends(Split(*parts))
    assert ends is not None  # the shortcut is taken here
    assert tuple(ends) == tuple(np.quantile(np.concatenate(parts), QUANTILES))
    assert tuple(ends) != tuple(np.quantile(np.concatenate(parts[:3]), QUANTILES))  # twin: every part counts


def _quantile_bins_as_before(s, inner=256):
    """quantile_bins as first written (every branch through the membership test and np.repeat)."""
    values, counts = sorted_unique(s)
    is_atom = counts >= max(5, 1e-3 * len(s))
    atoms = np.sort(values[is_atom][np.argsort(-counts[is_atom])[:64]])
    kept = ~np.isin(values, atoms)
    rest = np.repeat(values[kept], counts[kept])
    if len(rest) == 0:
        return atoms, np.array([])
    n = len(rest)
    ranks = np.linspace(0, n - 1, min(inner, max(2, n // 50))).astype(int)
    tail = np.unique(np.geomspace(1, max(1, n / 8), 24).astype(int))
    ranks = np.unique(np.concatenate([ranks, tail - 1, n - tail]))
    return atoms, np.unique(rest[np.clip(ranks, 0, n - 1)])


@pytest.mark.parametrize("kind", ["continuous", "ties", "atoms"])
def test_quantile_bins_as_before(kind):
    from dpaudit.engine.statistics import quantile_bins
    rng = np.random.default_rng(8)
    s = {"continuous": rng.laplace(size=20_000), "ties": np.round(rng.laplace(size=20_000) * 10_000),
         "atoms": np.where(rng.random(20_000) < 0.2, -1.0, rng.normal(size=20_000))}[kind]
    bins, (atoms, edges) = quantile_bins(np.sort(s)), _quantile_bins_as_before(np.sort(s))
    assert np.array_equal(bins.atoms, atoms) and bins.atoms.dtype == atoms.dtype
    assert np.array_equal(bins.edges, edges)
    assert (len(atoms) > 0) == (kind == "atoms")  # both branches are exercised
    assert (len(np.unique(s)) < len(s)) == (kind != "continuous")  # and ties without atoms


def test_the_rows_view_keeps_every_distinct_row():
    """settled() reads the distinct rows of the split from the rows view's memo of each half: they
    are the distinct rows of the outputs (in lexicographic order once pooled)."""
    rng = np.random.default_rng(9)
    x, y = rng.integers(-1, 2, size=(3000, 5), dtype=np.int8), rng.integers(-1, 2, size=(3000, 5), dtype=np.int8)
    y[:, 0] = np.maximum(y[:, 0], 0)  # one column's box differs between the halves' codecs
    kept = []
    for a, b in ((x[:1500], y[:1500]), (x[1500:], y[1500:])):
        memo = ChunkCache()
        selection.candidate_views(a, b, ("rows",), np.random.default_rng(0), memo)
        codec, values = memo.get(("rows-seen",))
        kept.append(codec.decode(values))
    pooled = np.unique(np.concatenate(kept), axis=0)
    assert np.array_equal(pooled, np.unique(np.concatenate([x, y]).astype(np.int64), axis=0))
    assert not np.array_equal(np.unique(kept[0], axis=0), pooled) or len(pooled) == len(kept[0])  # twin


@pytest.mark.parametrize("shift", [0.0, 3.0])
def test_settled_on_clear_and_unclear_choices(shift):
    """Two halves of outputs with a clear best row agree (settled); with none (the same law) they
    mostly do not: the check still tells the two apart."""
    rng = np.random.default_rng(10)
    n = 40_000
    x = rng.integers(0, 3, size=(n, 3))
    y = rng.integers(0, 3, size=(n, 3))
    if shift:
        y[rng.random(n) < 0.3] = (2, 2, 2)
    assert selection.settled(x, y, 0.0, (10 * n, 10 * n), 0.95) == bool(shift)
