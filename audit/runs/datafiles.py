"""Datasets read from files a config or a flag names: ``.npz`` archives of named arrays and ``.csv``
tables, as regular files of bounded size, each bad value named by its key path."""

from __future__ import annotations

import csv
import math
import stat
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from dpaudit.core import InputError
from dpaudit.neighbors import Dataset
from dpaudit.runtime.execution import available_memory
from dpaudit.runtime.files import check_regular
from dpaudit.runtime.paths import path_problem

MAX_COLUMN_DIMS = 3     # a column holds scalars, vectors or matrices (one per record)
CONFIG = "config: "     # where a config's value came from: the ``prefix`` of dpaudit.core's validators


def fail(path: str, value: Any, allowed: str) -> NoReturn:
    raise InputError(f"{CONFIG}{path} = {value!r} is invalid: {allowed}")


def with_key_path(message: str, path: str, table: Mapping[str, Any]) -> str:
    """A validator's ``message`` about one key of ``table`` (``epsilon = 'one' is invalid: ...``,
    as :func:`dpaudit.core.require` words it) with the key's full path (``scenario[0].params.epsilon
    = 'one' ...``); a message about no single key gets ``path:`` in front."""
    field = message.partition(" = ")[0]
    if field in table:
        return f"{path}.{message}"
    return message if message.startswith(path) else f"{path}: {message}"


_NOT_REGULAR = ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                (stat.S_ISBLK, "block device"))


def not_a_data_file(target: Path) -> str:
    """Why nothing can be read at ``target`` as a data file: ``does not exist``, ``is a
    directory``, ``is not a regular file (FIFO)``...  Found by ``stat`` alone: opening a FIFO
    would block until a writer came."""
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return "does not exist"
    except (OSError, ValueError) as exc:
        return f"cannot be read ({getattr(exc, 'strerror', None) or exc})"
    if stat.S_ISDIR(mode):
        return "is a directory, not a data file"
    kind = next((name for test, name in _NOT_REGULAR if test(mode)), f"mode {stat.S_IFMT(mode):o}")
    return f"is not a regular file ({kind}): a data file must be a regular file"


def shown(name: str) -> str:
    """``name`` cut to a readable length for a message (a hostile config's name may be kilobytes)."""
    return name if len(name) <= 80 else f"{name[:60]}...({len(name)} characters)"


def inside(folder: Path, name: Any, path: str, suffixes: tuple[str, ...] = (".npz", ".csv")) -> Path:
    """The data file ``name`` (a config's ``file``, at key ``path``) inside the config's ``folder``,
    with one of ``suffixes``.  A name no file
    can have (a NUL byte, a lone surrogate, too long) or that cannot be resolved (a symbolic link
    loop) is the config's bad input, never an internal failure."""
    if not isinstance(name, str) or not name:
        fail(path, name, "must be a file name relative to the config's folder")
    problem = path_problem(name)
    if problem:
        fail(path, shown(name), problem)
    try:
        target = (folder / name).resolve()
        inside = not Path(name).is_absolute() and target.is_relative_to(folder.resolve())
        exists = inside and target.suffix in suffixes and target.is_file()
    except RuntimeError:  # Path.resolve's "Symlink loop" before Python 3.13 (an OSError after)
        fail(path, shown(name), "is a loop of symbolic links")
    except (OSError, ValueError) as exc:
        fail(path, shown(name), f"cannot be resolved ({getattr(exc, 'strerror', None) or exc})")
    if not inside:
        fail(path, shown(name), f"reaches outside the config's folder {folder}; data files must live inside it")
    if target.suffix not in suffixes:
        fail(path, shown(name), f"must be an {', '.join(suffixes[:-1])} or {suffixes[-1]} file")
    if not exists:
        fail(path, shown(name), not_a_data_file(target))
    return target


NPZ_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip archive (an empty one too)


def read_npz(target: Path, where: str) -> Dataset:
    """A dataset from an ``.npz`` archive of named arrays (:func:`npz_arrays`), columns of one length."""
    columns = npz_arrays(target, where)
    try:
        return Dataset(columns)
    except InputError as exc:
        raise InputError(f"{where}: {target.name}: {exc}") from None


def npz_arrays(target: Path, where: str) -> dict[str, np.ndarray]:
    """The named arrays of an ``.npz`` archive, at least one; anything else (an ``.npy`` renamed, a
    truncated archive, pickled objects, arrays too large for memory) is an :class:`InputError`
    that names ``where`` and the file."""
    check_regular(target, where)
    try:
        with open(target, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise InputError(f"{where}: {target} cannot be read ({exc.strerror or exc})") from None
    if head not in NPZ_MAGIC:
        what = "an .npy array, not an .npz archive" if head.startswith(b"\x93NUM") else "not a zip archive"
        raise InputError(f"{where}: {target.name} is not an .npz archive of named columns ({what}; save the "
                         "columns with numpy.savez)")
    try:
        with np.load(target, allow_pickle=False) as npz:
            size = sum(info.file_size for info in npz.zip.infolist())
            room = available_memory()
            if room is not None and size > room // 2:
                raise InputError(f"{where}: {target.name} unpacks to {size} bytes, more than half the memory "
                                 "available")
            columns = {k: npz[k] for k in npz.files}
    except InputError:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, RuntimeError, MemoryError) as exc:
        raise InputError(f"{where}: {target.name} cannot be read as an .npz archive ({type(exc).__name__}: "
                         f"{exc})") from None
    if not columns:
        raise InputError(f"{where}: {target.name} holds no arrays: a dataset needs at least one column")
    return columns


def load_columns(target: Path, path: str) -> Dataset:
    """A dataset from an .npz (named arrays) or .csv (header of unique column names) file."""
    if target.suffix == ".npz":
        return read_npz(target, f"config: {path}")
    check_regular(target, f"config: {path}")
    try:
        with open(target, newline="", encoding="utf-8-sig") as fh:  # -sig: a byte-order mark is not a name
            rows = list(csv.reader(fh))
    except (OSError, ValueError, csv.Error) as exc:
        fail(path, str(target.name), f"cannot be read ({exc})")
    if not rows:
        fail(path, target.name, "is empty: a header row of column names is required")
    header, body = [h.strip() for h in rows[0]], rows[1:]
    for i, h in enumerate(header):
        if not h:
            fail(path, target.name, f"header column {i + 1} has no name")
        if header.index(h) != i:
            fail(path, target.name, f"the header names column {h!r} twice: each column needs a unique name")
    columns: dict[str, list] = {h: [] for h in header}
    for line, row in enumerate(body, start=2):
        if len(row) != len(header):
            fail(path, target.name, f"line {line} has {len(row)} fields, the header has {len(header)}")
        for h, cell in zip(header, row, strict=True):
            try:
                value = int(cell) if cell.strip().lstrip("-").isdigit() else float(cell)
            except ValueError:
                fail(path, target.name, f"line {line}, column {h!r}: {cell!r} is not a number")
            if not math.isfinite(value):
                fail(path, target.name, f"line {line}, column {h!r}: {cell!r} is not a finite number")
            columns[h].append(value)
    try:
        return Dataset({h: np.asarray(values) for h, values in columns.items()})
    except InputError as exc:
        raise InputError(f"config: {path}: {exc}") from None


def column(value: Any, path: str) -> np.ndarray:
    """An inline column: a rectangular array of numbers (one entry per record), never ragged."""
    if not isinstance(value, list) or not value:
        fail(path, value, "must be a non-empty array of numbers (one entry per record)")
    try:
        arr = np.array(value)
    except (ValueError, TypeError):
        fail(path, value, "must be rectangular: every record's entry must have the same shape")
    if arr.dtype.kind not in "biuf" or arr.ndim > MAX_COLUMN_DIMS:
        fail(path, value, f"must hold numbers (one number, vector or matrix per record; at most "
              f"{MAX_COLUMN_DIMS} dimensions)")
    return arr


