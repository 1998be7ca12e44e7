"""Datasets are handed to a mechanism read-only.

An audit's record names the pair (D, D′) its samples came from, so every chunk must be drawn from
exactly that pair.  A mechanism that writes to its input (``data -= 5`` on every call) would draw
each chunk from a different dataset, and the bound would be about a pair no record names (the
hostile sweep saw ε_lower 6.52 for a mechanism whose true ε is 1).  Arrays therefore reach
``sample`` and ``sample_counts`` as read-only views (no copy: the view shares the memory), and a
write raises numpy's ``ValueError: assignment destination is read-only``, which
:func:`wrote_to_input` recognises so the failure names the mechanism and what it did.  Data that
cannot be frozen (a list, a user's object) is compared before and after the audit instead
(:func:`dpaudit.engine.api.audit_mechanism`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpaudit.neighbors import Dataset


def read_only(data: Any) -> Any:
    """``data`` with its arrays read-only: an array as a read-only view, a tuple of arrays as a tuple
    of views, a :class:`~neighbors.Dataset`'s columns frozen again (a worker's unpickled copy of a
    frozen Dataset is writable: pickling does not keep numpy's flags); anything else unchanged."""
    if isinstance(data, np.ndarray):
        if not data.flags.writeable:
            return data
        view = data.view()
        view.setflags(write=False)
        return view
    if isinstance(data, Dataset):
        for column in data.columns.values():
            if column.flags.writeable:
                column.setflags(write=False)
        return data
    if type(data) is tuple:
        return tuple(read_only(v) for v in data)
    return data


def wrote_to_input(exc: BaseException) -> bool:
    """Whether ``exc`` is numpy's refusal to write into a read-only array."""
    return isinstance(exc, ValueError) and "read-only" in str(exc)


WROTE_TO_INPUT = ("wrote to its dataset ({detail}): datasets are handed to sample read-only, so that every "
                  "chunk is drawn from the pair the record names; a mechanism must copy its input before "
                  "changing it")
