"""A dataset: named numpy columns with one row per record.

Datasets are immutable; neighbouring datasets are built with :meth:`Dataset.add`,
:meth:`Dataset.remove`, :meth:`Dataset.replace`, :meth:`Dataset.zero_out` and :meth:`Dataset.flip`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpaudit.core import InputError, require


def _freeze(name: str, values: Any) -> np.ndarray:
    arr = np.array(values)
    require(arr.ndim >= 1, f"column {name!r}", values, "must be a sequence (one entry per record)")
    require(arr.dtype.kind in "biuf", f"column {name!r}", arr.dtype.name,
            "must hold booleans, integers or real numbers")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr)
        if bad.any():
            row = int(np.argwhere(bad)[0][0])
            raise InputError(f"column {name!r} has a non-finite value {arr.reshape(len(arr), -1)[row]} "
                             f"in record {row}: every value must be finite")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class Dataset:
    """Named columns of equal length; row ``i`` of every column is record ``i``.

    Compared and hashed by identity (use :attr:`fingerprint` to compare contents).
    """

    columns: Mapping[str, np.ndarray] = field(default_factory=dict)

    # Written out (dataclass keeps a class's own __init__) so that the argument may be any array-like
    # per column (lists included) while the field, once frozen, holds read-only arrays.
    def __init__(self, columns: Mapping[str, ArrayLike] = MappingProxyType({})) -> None:
        require(isinstance(columns, Mapping), "dataset", columns,
                "must be a mapping from column name to values")
        frozen = {str(k): _freeze(str(k), v) for k, v in columns.items()}
        lengths = {k: len(v) for k, v in frozen.items()}
        require(len(set(lengths.values())) <= 1, "dataset column lengths", lengths,
                "every column must have one entry per record")
        object.__setattr__(self, "columns", frozen)

    @classmethod
    def from_columns(cls, **columns: Any) -> Dataset:
        return cls(columns)

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.columns:
            raise InputError(f"dataset has no column {name!r}: columns are {sorted(self.columns)}")
        return self.columns[name]

    def __contains__(self, name: object) -> bool:
        return name in self.columns

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    @cached_property
    def fingerprint(self) -> str:
        """A content hash: equal datasets share it (used to cache per-dataset work)."""
        h = hashlib.sha1()
        for name in sorted(self.columns):
            col = np.ascontiguousarray(self.columns[name])
            h.update(name.encode())
            h.update(str((col.dtype.str, col.shape)).encode())
            h.update(col.tobytes())
        return h.hexdigest()

    def record(self, i: int) -> dict[str, Any]:
        """Record ``i`` as a mapping column -> value."""
        require(0 <= i < len(self), "record index", i, f"must be in [0, {len(self)})")
        return {k: v[i].tolist() for k, v in self.columns.items()}

    def _check_record(self, record: Mapping[str, Any]) -> None:
        require(set(record) == set(self.columns), "record", dict(record),
                f"must have exactly the columns {sorted(self.columns)}")
        for k, v in self.columns.items():
            shape = np.shape(record[k])
            require(shape == v.shape[1:], f"record[{k!r}]", record[k],
                    f"must have shape {v.shape[1:]} like the column's entries")
            value = np.asarray(record[k])
            require(value.dtype.kind in "biuf" and bool(np.all(np.isfinite(value))), f"record[{k!r}]", record[k],
                    "must be finite numbers")

    def add(self, record: Mapping[str, Any]) -> Dataset:
        """D ∪ {record}."""
        self._check_record(record)
        return Dataset({k: np.concatenate([v, np.asarray([record[k]], dtype=v.dtype)])
                        for k, v in self.columns.items()})

    def remove(self, i: int) -> Dataset:
        """D without record ``i``."""
        self.record(i)
        return Dataset({k: np.delete(v, i, axis=0) for k, v in self.columns.items()})

    def replace(self, i: int, record: Mapping[str, Any]) -> Dataset:
        """D with record ``i`` replaced by ``record`` (a swap neighbour)."""
        self.record(i)
        self._check_record(record)
        cols = {}
        for k, v in self.columns.items():
            new = v.copy()
            new[i] = record[k]
            cols[k] = new
        return Dataset(cols)

    def zero_out(self, i: int, columns: tuple[str, ...] | list[str]) -> Dataset:
        """D with record ``i``'s ``columns`` set to zero: its contribution removed, n kept (zero-out)."""
        record = self.record(i)
        for name in columns:
            self[name]
        return self.replace(i, {**record, **{c: np.zeros_like(self[c][i]).tolist() for c in columns}})

    def flip(self, i: int, column: str = "label") -> Dataset:
        """D with the 0/1 ``column`` of record ``i`` flipped (a label-flip neighbour)."""
        labels = self[column]
        require(bool(np.isin(labels, (0, 1)).all()), f"column {column!r}", labels,
                "a label column must hold only 0 and 1")
        return self.replace(i, {**self.record(i), column: 1 - int(labels[i])})

    def unique_records(self) -> list[int]:
        """Index of the first occurrence of each distinct record."""
        if len(self) == 0:
            return []
        table = np.column_stack([np.asarray(v, dtype=float).reshape(len(self), -1)
                                 for _, v in sorted(self.columns.items())])
        _, first = np.unique(table, axis=0, return_index=True)
        return sorted(first.tolist())

    def describe(self) -> str:
        head = ", ".join(f"{k}{list(v.shape[1:]) or ''}" for k, v in self.columns.items())
        return f"{len(self)} records ({head})"
