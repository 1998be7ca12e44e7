"""Neighbour relations: pairs (D, D′) that differ in one record.

* add/remove — D′ = D ∪ {z} or D′ = D ∖ {z} (both directions);
* swap — D′ = D ∖ {z} ∪ {z′} (replace one record, |D′| = |D|);
* label-flip — one record keeps its features and has y ↦ 1 − y (KL paper, Definition 3);
* zero-out — one record's features are set to 0 and n is kept (the relation of the alignment
  paper's Lemma A.7 proof).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dpaudit.core import RELATIONS, Relation, require
from dpaudit.neighbors.dataset import Dataset


@dataclass(frozen=True)
class Pair:
    """Two neighbouring datasets and how they differ."""

    d: Any
    d_prime: Any
    description: str
    relation: str = "add-remove"

    def __post_init__(self) -> None:
        require(self.relation in RELATIONS, "relation", self.relation,
                f"must be one of {', '.join(RELATIONS)}")


def format_record(record: Mapping[str, Any]) -> str:
    """A record as the pair descriptions print it: ``(name=value, ...)``."""
    return "(" + ", ".join(f"{k}={v}" for k, v in record.items()) + ")"


def add_remove(base: Dataset, candidates: Iterable[Mapping[str, Any]] = ()) -> Iterator[Pair]:
    """Every removal of a distinct record of ``base`` and every addition of a candidate."""
    for i in base.unique_records():
        yield Pair(base, base.remove(i), f"remove record {i} {format_record(base.record(i))}", "add-remove")
    for z in candidates:
        yield Pair(base, base.add(z), f"add record {format_record(z)}", "add-remove")


def swap(base: Dataset, candidates: Iterable[Mapping[str, Any]]) -> Iterator[Pair]:
    """Every replacement of a distinct record of ``base`` by a different candidate."""
    candidates = list(candidates)
    for i in base.unique_records():
        old = base.record(i)
        for z in candidates:
            if dict(z) != old:
                yield Pair(base, base.replace(i, z),
                           f"replace record {i} {format_record(old)} by {format_record(z)}", "swap")


def label_flip(base: Dataset, column: str = "label") -> Iterator[Pair]:
    """Every flip of the 0/1 ``column`` of a distinct record of ``base``."""
    for i in base.unique_records():
        y = int(base[column][i])
        yield Pair(base, base.flip(i, column),
                   f"flip {column} of record {i} {format_record(base.record(i))}: {y} -> {1 - y}", "label-flip")


def neighbours(relation: Relation | str, base: Dataset, candidates: Iterable[Mapping[str, Any]] = (),
               label_column: str = "label", feature_columns: Iterable[str] = ()) -> Iterator[Pair]:
    """Pairs of ``base`` under ``relation`` (add-remove, swap, label-flip, or zero-out of
    ``feature_columns``)."""
    require(relation in (Relation.ADD_REMOVE, Relation.SWAP, Relation.LABEL_FLIP, Relation.ZERO_OUT), "relation",
            relation, "neighbours can be enumerated for add-remove, swap, label-flip and zero-out")
    if relation == Relation.ZERO_OUT:
        require(bool(tuple(feature_columns)), "feature_columns", feature_columns,
                "zero-out needs the feature columns to zero")
        return zero_out(base, feature_columns)
    if relation == Relation.ADD_REMOVE:
        return add_remove(base, candidates)
    if relation == Relation.SWAP:
        return swap(base, candidates)
    return label_flip(base, label_column)


def zero_out(base: Dataset, columns: Iterable[str]) -> Iterator[Pair]:
    """Every zeroing of the feature ``columns`` of a distinct, not already zero, record of ``base``."""
    columns = tuple(columns)
    for i in base.unique_records():
        rec = base.record(i)
        if all(not any(_flat(rec[c])) for c in columns):
            continue
        yield Pair(base, base.zero_out(i, columns), f"zero out record {i} {format_record(rec)}", "zero-out")


def _flat(value: Any) -> list:
    if isinstance(value, list):
        return [x for v in value for x in _flat(v)]
    return [value]
