"""Multi-run plugins whose own code ends the process with sys.exit: in a ``name`` property, in a
class's ``__init__`` (built from a config's params).  Each is the user's fault (exit 2), never a pass."""

from __future__ import annotations

import sys

import numpy as np


class NameExits:
    def __init__(self, code: int = 0):
        self.code = code

    @property
    def name(self) -> str:
        sys.exit(self.code)

    def sample(self, data, size, rng):
        return np.zeros(size)


NAME_EXITS_0 = NameExits(0)
NAME_EXITS_1 = NameExits(1)


class InitExits:
    name = "init-exits"

    def __init__(self, epsilon: float, code: int = 0):
        sys.exit(code)

    def sample(self, data, size, rng):
        return np.zeros(size)
