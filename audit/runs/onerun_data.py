"""The base data and canary rows of a one-run config scenario, read from files as the Python API
takes them (:func:`dpaudit.onerun.audit_one_run`'s ``base=`` and ``canaries=``)::

    canaries = { file = "data/canaries.npy" }          # m = its rows; a record each (user-level: a user)
    canaries = { file = "data/canaries.npz", key = "x", m = 500 }   # with runs = R: R·m rows, or m reused
    base = { file = "data/base.csv" }                  # the training data the canaries are added to

A file is ``.npy`` (one array), ``.npz`` (named arrays: ``key`` picks one, needed when it holds
several) or ``.csv`` (a header of column names; the columns side by side, one column: a vector),
inside the config's folder, read without pickles (:mod:`dpaudit.runs.datafiles`).  Row ``i`` is one
record.  The arrays reach the training function exactly as ``numpy.load`` gives them to the API: a
run's dataset is ``base`` with the included canary rows appended (``numpy.concatenate``), so a
trainer written for the API needs no adapter.  Each is checked where it enters: real numbers, finite,
the canary rows' shape and dtype joinable to the base's without loss, their count m or runs·m.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.core import InputError, check_integer, check_table, check_text
from dpaudit.runs.datafiles import CONFIG, fail, inside, load_columns, npz_arrays
from dpaudit.runtime.execution import available_memory
from dpaudit.runtime.files import check_regular

__all__ = ["CanaryRows", "check_joinable", "read_base", "read_canaries"]

SUFFIXES = (".npy", ".npz", ".csv")
NPY_MAGIC = b"\x93NUMPY"


@dataclass(frozen=True)
class CanaryRows:
    """The canaries of a scenario: ``rows`` (an array, or the integers 0..m−1 as a list) and m, the
    canaries per training run (``len(rows)`` is m, reused by every run, or runs·m)."""

    rows: Any
    m: int


def _npy(target: Path, where: str) -> np.ndarray:
    """One array from an ``.npy`` file: no pickled objects, no more than half the memory available."""
    check_regular(target, where)
    room, size = available_memory(), target.stat().st_size
    if room is not None and size > room // 2:
        raise InputError(f"{where}: {target.name} holds {size} bytes, more than half the memory available")
    try:
        with open(target, "rb") as fh:
            if fh.read(len(NPY_MAGIC)) != NPY_MAGIC:
                raise InputError(f"{where}: {target.name} is not an .npy array (save it with numpy.save)")
            fh.seek(0)
            return np.load(fh, allow_pickle=False)
    except InputError:
        raise
    except (OSError, ValueError, EOFError, MemoryError) as exc:
        raise InputError(f"{where}: {target.name} cannot be read as an .npy array ({type(exc).__name__}: "
                         f"{exc})") from None


def _array(spec: Mapping[str, Any], path: str, folder: Path) -> np.ndarray:
    """The array a ``{file, key}`` table names."""
    target = inside(folder, spec["file"], f"{path}.file", SUFFIXES)
    where = f"{CONFIG}{path}.file"
    if target.suffix == ".npy":
        if "key" in spec:
            fail(f"{path}.key", spec["key"], "an .npy file holds one array: drop key")
        return _npy(target, where)
    columns = (npz_arrays(target, where) if target.suffix == ".npz"
               else dict(load_columns(target, f"{path}.file").columns))
    names = list(columns)
    if "key" in spec:
        key = check_text(f"{path}.key", spec["key"], prefix=CONFIG)
        if key not in names:
            fail(f"{path}.key", key, f"{target.name} holds no array {key!r}; it holds: {', '.join(names)}")
        return np.asarray(columns[key])
    if target.suffix == ".npz":
        if len(names) != 1:
            fail(f"{path}.key", None, f"is required: {target.name} holds {len(names)} arrays ({', '.join(names)})")
        return np.asarray(columns[names[0]])
    # a CSV table: its columns side by side, one row per record (one column: a vector)
    table = np.column_stack([columns[n] for n in names])
    return table[:, 0] if len(names) == 1 else table


def _rows(raw: Any, path: str, folder: Path, keys: set[str]) -> np.ndarray:
    """The rows a file table names: real numbers, all finite, at least one row."""
    spec = check_table(path, raw, allowed=keys, required={"file"}, prefix=CONFIG)
    arr = _array(spec, path, folder)
    shown = f"<{arr.shape} array of {arr.dtype}>"
    if arr.dtype.kind not in "biuf":
        fail(f"{path}.file", shown, "must hold real numbers (booleans, integers or floats), one row per record")
    if arr.ndim == 0 or len(arr) == 0:
        fail(f"{path}.file", shown, "must hold at least one row (one record per row)")
    if arr.dtype.kind == "f" and not bool(np.all(np.isfinite(arr))):
        fail(f"{path}.file", shown, f"holds {int(np.sum(~np.isfinite(arr)))} NaN or infinite values: records "
             "must be finite numbers")
    return arr


def read_base(raw: Any, path: str, folder: Path, user_level: bool) -> np.ndarray:
    """A scenario's ``base``: the training data every run holds (user-level: one user per row)."""
    base = _rows(raw, path, folder, {"file", "key"})
    if user_level and base.ndim < 2:
        fail(f"{path}.file", f"<{base.shape} array>", "user-level: each row is one user, an array of their records "
             "(at least 2 dimensions)")
    return base


def read_canaries(raw: Any, path: str, folder: Path, *, runs: int, max_m: int, user_level: bool) -> CanaryRows:
    """A scenario's ``canaries``: an integer m (the integers 0..m−1, as before) or a file table whose
    rows are m canaries reused by every run, or runs·m of them (``m`` given)."""
    if not isinstance(raw, Mapping):
        m = check_integer(path, raw, low=2, high=max_m, prefix=CONFIG)
        return CanaryRows([[j] for j in range(m)] if user_level else list(range(m)), m)
    arr = _rows(raw, path, folder, {"file", "key", "m"})
    if "m" in raw:
        m = check_integer(f"{path}.m", raw["m"], low=2, high=max_m, prefix=CONFIG)
    elif runs == 1:
        m = len(arr)
    else:
        fail(f"{path}.m", None, f"is required with runs = {runs}: the canaries per run ({len(arr)} rows = m, the same "
             f"canaries in every run, or runs x m, each run its own)")
    if len(arr) not in (m, runs * m) or not 2 <= m <= max_m:
        fail(f"{path}.file", f"<{len(arr)} rows>", f"must hold m = {m} canaries (reused by every run) or runs x m = "
             f"{runs * m}" + ("" if 2 <= m <= max_m else f"; m must be in [2, {max_m}]"))
    if user_level and arr.ndim < 2:
        fail(f"{path}.file", f"<{arr.shape} array>", "user-level: each row is one canary user, an array of their "
             "records (at least 2 dimensions)")
    return CanaryRows(arr, m)


def check_joinable(canaries: CanaryRows, base: np.ndarray, path: str) -> None:
    """A canary row joins the base data as one more row: same row shape, and values the base's dtype
    holds unchanged (the game casts the appended rows to it: float canaries into an integer base
    would be cut without a word).  The integers 0..m−1 are checked by their smallest and largest."""
    rows = canaries.rows if isinstance(canaries.rows, np.ndarray) else np.array([0, canaries.m - 1])
    if rows.shape[1:] != base.shape[1:]:
        fail(path, f"<rows of shape {rows.shape[1:]}>", f"each canary row must have the base data's row shape "
             f"{base.shape[1:]}: a canary is appended to the base as one more record")
    with np.errstate(all="ignore"):
        lossless = bool(np.array_equal(rows.astype(base.dtype), rows))
    if not lossless:
        fail(path, f"<{rows.dtype} rows>", f"the base data is {base.dtype}: the canary rows change when cast to it, as "
             "a training run's dataset does (save both with one dtype)")
