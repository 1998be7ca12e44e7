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


def own_and_direct(design: Any, picks: tuple[int, ...], seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """A dedicated design's release on its canaries ``picks`` (``design.mechanism.run``) beside the wrapped
    mechanism's own ``sample`` on the full dataset those canaries make, both drawn from ``default_rng(seed)``:
    the two are equal when the design's release is the mechanism's output."""
    w = design.mechanism
    records = [design.canaries[i] for i in picks]
    ours = w.run(records, np.random.default_rng(seed))
    return ours, w.mech.sample(w.full_dataset(records), 1, np.random.default_rng(seed))[0]
