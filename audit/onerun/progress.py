"""Progress of a one-run game: training runs done, the time per run and the projected end.

A game of R training runs reports, on stderr, a line after a run when at least ``every`` seconds
(5 s) passed since the last line — a line per run, or every 5 s, whichever is rarer — and the line
of the last run always; while one run is still training, a heartbeat every ``heartbeat`` seconds
(60 s) says which run and for how long, so a long training run is never silent.  Lines look like
the multi-run progress log (:mod:`dpaudit.runtime.progress`): ``[dpaudit] LABEL: ...``.

The game calls the reporter as ``progress(done, runs)`` (:meth:`dpaudit.onerun.game.CanaryGame.play`);
the API is quiet unless asked, the command line asks unless ``--quiet``.  :func:`reporting` makes a
reporter the one games in its ``with`` block use when their caller gave none (how the run's
one-run phase reaches the games of the catalog's designs, which take no progress argument).
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TextIO

from dpaudit.runtime.progress import projected_end

__all__ = ["TrainingProgress", "current", "reporting"]

Reporter = Callable[[int, int], None]
_CURRENT: contextvars.ContextVar[Reporter | None] = contextvars.ContextVar("dpaudit_onerun_progress", default=None)


def current() -> Reporter | None:
    """The reporter of the enclosing :func:`reporting` block (None: quiet)."""
    return _CURRENT.get()


@contextlib.contextmanager
def reporting(reporter: Reporter | None) -> Iterator[None]:
    """Games played in this block report to ``reporter`` unless their caller gave their own."""
    token = _CURRENT.set(reporter)
    try:
        yield
    finally:
        _CURRENT.reset(token)


class TrainingProgress:
    """A reporter for one game (see the module docstring); a context manager that runs the heartbeat.

    ``clock`` (seconds, for rates) and ``wall`` (time of day, for the projected end) are injectable."""

    def __init__(self, label: str, every: float = 5.0, heartbeat: float = 60.0, *, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        self.label, self.every, self.heartbeat = label, every, heartbeat
        self.stream, self.clock, self.wall = stream, clock, wall
        self.start = self.last = clock()
        self.done, self.runs = 0, 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> TrainingProgress:
        self.start = self.last = self.clock()
        if self.heartbeat > 0:
            self._thread = threading.Thread(target=self._beat, name="dpaudit-onerun-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def __call__(self, done: int, runs: int) -> None:
        with self._lock:
            self.done, self.runs = done, runs
            now = self.clock()
            if done >= runs or now - self.last >= self.every:
                per_run = (now - self.start) / max(done, 1)
                end = projected_end(runs - done, 1.0 / per_run if per_run > 0 else 0.0, self.wall())
                self._say(f"{done} of {runs} training run(s) done, {per_run:.3g} s per run{end}", now)

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat):
            with self._lock:
                now = self.clock()
                if now - self.last >= self.heartbeat:
                    total = f" of {self.runs}" if self.runs else ""
                    self._say(f"training run {self.done + 1}{total} in progress, {now - self.start:.0f} s so far "
                              f"({self.done} done)", now)

    def _say(self, text: str, now: float) -> None:
        self.last = now
        print(f"[dpaudit] {self.label}: {text}", file=self.stream or sys.stderr, flush=True)
