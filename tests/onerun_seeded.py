"""A design's one-run game at the secret its seed drew before the secret came from fresh entropy.

The game's secret no longer follows the seed (issue 37, item 3); tests whose statistics were
stated per seed ("on seed 0", "never refuted over seeds 2000-2099") pass the very secret each seed
drew then, ``SeedSequence(seed, spawn_key=(0,))``, so their numbers and their checks are unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def seeded_secret(seed: int, size: int) -> np.ndarray:
    """The inclusion bits the game drew from ``seed`` before: Bernoulli(½), int8."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,))).integers(0, 2, size=size,
                                                                                        dtype=np.int8)


def seeded(design: Any, seed: int, **kwargs: Any) -> Any:
    """``design.audit(seed)`` with the secret of ``seed`` (all runs of the design)."""
    size = design.m * int(getattr(design, "runs", 1))
    return design.audit(seed, secret=seeded_secret(seed, size), **kwargs)
