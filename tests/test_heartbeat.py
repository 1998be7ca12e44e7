"""A long call of the user's code says it is still running (issue 41, item 5): before, a single
training run or sample call printed nothing between its start and its end, in a log or a CI job."""

from __future__ import annotations

import io
import time

import numpy as np

from dpaudit.engine.api import audit_mechanism
from dpaudit.runtime import heartbeat


class Slow:
    """Its first sample call returns only once stderr says it is still running (never a clock)."""

    name = "slow"

    def __init__(self, stream: io.StringIO) -> None:
        self.stream = stream
        self.waited = False

    def sample(self, data, size, rng):
        if not self.waited:
            self.waited = True
            deadline = time.monotonic() + 120
            while "still running" not in self.stream.getvalue() and time.monotonic() < deadline:
                time.sleep(0.01)
        return np.rint(float(np.sum(data)) + rng.laplace(0.0, 1.0, size))


def test_a_long_sample_call_prints_a_heartbeat_with_the_time_elapsed(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    heartbeat.configure(interval=0.05)
    try:
        audit_mechanism(Slow(stream), 0, 1, samples=200, seed=0, epsilon=1.0)
    finally:
        heartbeat.configure(interval=None)
    line = next(line for line in stream.getvalue().splitlines() if "still running" in line)
    assert line.startswith("... mechanism 'slow' sample(size=") and " elapsed" in line and " min " in line


def test_off_by_default_and_after_configure_none(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    heartbeat.configure(interval=None)
    with heartbeat.beating("quiet"):
        time.sleep(0.2)
    assert stream.getvalue() == ""
