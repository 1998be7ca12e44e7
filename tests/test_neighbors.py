"""Datasets and neighbour relations."""

import numpy as np
import pytest

from dpaudit.core import InputError
from dpaudit.neighbors import Dataset, add_remove, label_flip, neighbours, swap


def test_dataset_rejects_malformed_columns():
    with pytest.raises(InputError, match="lengths"):
        Dataset({"a": [1, 2], "b": [1.0]})
    with pytest.raises(InputError, match="non-finite"):
        Dataset({"a": [1.0, np.nan]})
    with pytest.raises(InputError, match="column 'a'"):
        Dataset({"a": ["x", "y"]})


def test_dataset_is_immutable_and_neighbours_are_new_objects():
    d = Dataset({"x": [1, 2, 3]})
    with pytest.raises(ValueError):
        d["x"][0] = 5
    assert len(d.add({"x": 4})) == 4 and len(d.remove(0)) == 2 and len(d) == 3
    with pytest.raises(InputError, match="columns"):
        d.add({"y": 1})


def test_add_remove_enumerates_distinct_removals_and_candidate_additions():
    d = Dataset({"action": [0, 0, 1], "reward": [1.0, 1.0, 0.0]})
    pairs = list(add_remove(d, [{"action": 1, "reward": 1.0}]))
    assert [len(p.d_prime) for p in pairs] == [2, 2, 4]  # two distinct records removed, one added
    assert all(p.relation == "add-remove" and p.d is d for p in pairs)


def test_swap_keeps_size_and_skips_identical_replacements():
    d = Dataset({"x": [0, 1]})
    pairs = list(swap(d, [{"x": 0}, {"x": 1}]))
    assert len(pairs) == 2 and all(len(p.d_prime) == 2 for p in pairs)


def test_label_flip_changes_only_the_label():
    d = Dataset({"z": [2.0, 2.0, -2.0], "label": [1, 0, 1]})
    pairs = list(label_flip(d))
    assert len(pairs) == 3
    p = pairs[0]
    assert np.array_equal(p.d_prime["z"], d["z"]) and p.d_prime["label"].tolist() == [0, 0, 1]
    with pytest.raises(InputError, match="0 and 1"):
        list(label_flip(Dataset({"label": [0, 2]})))


def test_unknown_relation_is_rejected():
    with pytest.raises(InputError, match="relation"):
        neighbours("teleport", Dataset({"x": [1]}))
