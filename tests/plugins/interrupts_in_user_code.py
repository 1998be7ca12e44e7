"""Multi-run plugins whose own code raises KeyboardInterrupt (no Ctrl-C was pressed): in a ``name``
property and in a class's ``__init__`` built from a config's params.  The user's fault (exit 2)."""

from __future__ import annotations

import numpy as np


class NameInterrupts:
    @property
    def name(self) -> str:
        raise KeyboardInterrupt

    def sample(self, data, size, rng):
        return np.zeros(size)


NAME_INTERRUPTS = NameInterrupts()


class InitInterrupts:
    name = "init-interrupts"

    def __init__(self, epsilon: float):
        raise KeyboardInterrupt

    def sample(self, data, size, rng):
        return np.zeros(size)
