"""Mechanisms that misbehave, for the hostile-input tests."""

import numpy as np
from dpaudit.mechanisms.classic import on_grid


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


def _exit(data, size, rng):
    import sys
    sys.exit(0)


def _interrupt(data, size, rng):
    raise KeyboardInterrupt


def _rr_rows(data, size, rng):
    """Randomized response (eps = ln 2) on whether D' (3 records) is the input, as integer rows."""
    truth = int(len(data) > 2)
    bit = np.where(rng.random(size) < 2 / 3, truth, 1 - truth)
    return np.stack([bit, 1 - bit], axis=1)


def _drift(data, size, rng):
    rows = _rr_rows(data, size, rng)
    drifts = size == 1 << 18 and len(data) > 2  # full chunks under D': the same rows, as floats
    return rows.astype(np.float64) if drifts else rows


def _drift_lossy(data, size, rng):
    rows = _rr_rows(data, size, rng)
    return rows + 0.5 if size == 1 << 18 else rows  # full chunks: other values altogether


def _record_pid(data, size, rng):
    import os
    folder = os.environ.get("DPAUDIT_PID_DIR")
    if folder:
        open(os.path.join(folder, str(os.getpid())), "w").close()
    return on_grid(float(np.sum(data)) + rng.laplace(0.0, 1.0, size))


exits = _Base("exits", _exit)
interrupts = _Base("interrupts", _interrupt)
drift = _Base("dtype-drift", _drift)
drift_lossy = _Base("dtype-drift-lossy", _drift_lossy)
numbered = _Base(42, lambda d, size, rng: rng.random(size))
dollars = _Base("price $5 and $x^2$ {cost}", lambda d, size, rng: on_grid(float(len(d)) + rng.laplace(0.0, 1.0, size)))
records_pid = _Base("records-pid", _record_pid)


def _sleep(data, size, rng):
    import time
    time.sleep(3)
    return on_grid(float(np.sum(data)) + rng.laplace(0.0, 1.0, size))


sleepy = _Base("sleepy", _sleep)


def _stall(data, size, rng):
    import time
    time.sleep(3600)  # until the test kills the run
    return on_grid(float(np.sum(data)) + rng.laplace(0.0, 1.0, size))


stalled = _Base("stalled", _stall)
