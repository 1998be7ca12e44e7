"""Rewrites whose total cost stays a small share of the work between them.

A run rewrites its partial ``results.json`` as scenarios finish, so a crash or ``kill -9`` leaves a
readable file.  Each rewrite encodes every result so far, so rewriting after every one of n
scenarios costs O(n²) encoding: in the default suite (45 scenarios) about 17 CPU s of a 55 s run.
:class:`Amortised` lets a rewrite happen only once the time since the last one is at least
``ratio`` times what that one cost: the rewrites then cost at most 1/``ratio`` of the run, and a
partial file is never older than ``ratio`` times one rewrite (under a second for the default
suite).  The first rewrite is always made.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Amortised"]


@dataclass
class Amortised:
    """Call :meth:`maybe` after each unit of work; it runs ``write`` when one is due."""

    ratio: float = 20.0
    clock: Callable[[], float] = field(default=time.perf_counter, repr=False)
    _due: float = field(default=float("-inf"), init=False, repr=False)

    def maybe(self, write: Callable[[], object]) -> bool:
        """Run ``write`` if the work since the last write took at least ``ratio`` × its cost; say
        whether it ran."""
        start = self.clock()
        if start < self._due:
            return False
        write()
        end = self.clock()
        self._due = end + self.ratio * (end - start)
        return True
