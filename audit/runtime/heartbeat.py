"""A line on stderr while one long call of the user's code runs (a training run, a sample call).

The progress display counts chunks and games as they finish; a single call that takes twenty
minutes (one DP-SGD training run of a one-run audit, one huge ``sample``) finished nothing, so a
log or a CI job showed nothing between its start and its end and looked hung.  :func:`beating`
prints, every :data:`INTERVAL` seconds while its block runs, what is running and for how long.

Off until the command line turns it on (:func:`configure`): a library call and ``--quiet`` print
nothing, and worker processes (which do not share this setting) neither.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm import tqdm

__all__ = ["INTERVAL", "beating", "configure"]

INTERVAL = 30.0  # seconds: often enough for a person or a CI log, rare enough to say little
_interval: list[float] = []  # the interval while on (empty: off)


def configure(*, interval: float | None) -> None:
    """Heartbeats every ``interval`` seconds from now on (None: none)."""
    _interval.clear()
    if interval is not None:
        _interval.append(interval)


@contextmanager
def beating(what: str) -> Iterator[None]:
    """While the block runs, every interval ``"... <what>: still running, <elapsed> elapsed"`` on
    stderr (written through tqdm, so a progress bar on a terminal stays whole)."""
    if not _interval:
        yield
        return
    interval, done, start = _interval[0], threading.Event(), time.monotonic()

    def beat() -> None:
        while not done.wait(interval):
            elapsed = round(time.monotonic() - start)
            try:
                tqdm.write(f"... {what}: still running, {elapsed // 60} min {elapsed % 60:02d} s elapsed",
                           file=sys.stderr)
            except (OSError, ValueError):  # no reader: nothing to tell
                return

    thread = threading.Thread(target=beat, name="dpaudit-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
