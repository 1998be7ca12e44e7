"""Mechanisms that misbehave, for the hostile-input tests."""

import numpy as np


class _Base:
    def __init__(self, name, sample):
        self.name = name
        self._sample = sample

    def sample(self, data, size, rng):
        return self._sample(data, size, rng)


calls = {"n": 0}


def _raise_later(data, size, rng):
    calls["n"] += 1
    if calls["n"] > 1:  # per process: a worker pool also reaches it (every worker runs >= 1 chunk)
        raise RuntimeError("the GPU fell over")
    return rng.random(size)


wrong_shape = _Base("wrong-shape", lambda d, size, rng: rng.random(size + 1))
wrong_dtype = _Base("wrong-dtype", lambda d, size, rng: np.array(["a"] * size))
nan_outputs = _Base("nan-outputs", lambda d, size, rng: np.where(rng.random(size) < 0.5, np.nan, 1.0))
raises_mid_run = _Base("raises-mid-run", _raise_later)
mixed_shapes = _Base("mixed-shapes", lambda d, size, rng: rng.random((size, 2)) if len(d) > 2 else rng.random(size))
