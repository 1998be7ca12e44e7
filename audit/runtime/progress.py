"""Progress of an audit: a tqdm bar on a terminal, plain lines in a log (see :class:`Progress`).

Labelled by scenario, with an overall line of scenarios done in a run of several; the projected
end counts to the sample count where the sequential rule is expected to stop
(:mod:`dpaudit.engine.expected_stop`), and carries its date when it falls on another day.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from tqdm import tqdm

__all__ = ["Heartbeat", "Progress", "progress_line", "projected_end"]

HEARTBEAT_SECONDS = 10.0  # a long computation without its own progress says it is alive this often
_LAST_LINE = [time.monotonic()]  # when a progress line last reached stderr (a heartbeat stays quiet after one)


def progress_line(text: str) -> None:
    """A progress line on stderr, flushed at once: a pipe or a CI log gets it as it is written, not
    when a block buffer fills (stderr is not a terminal there)."""
    print(text, file=sys.stderr, flush=True)
    _LAST_LINE[0] = time.monotonic()


def _span(seconds: float) -> str:
    days = seconds / 86_400
    return (f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min" if seconds < 7200
            else f"{seconds / 3600:.1f} h" if seconds < 172_800 else f"{days:.1f} days" if days < 730
            else f"{days / 365.25:.3g} years")


def projected_end(remaining: int, rate: float, now: float | None = None) -> str:
    """", projected end in 2.5 min (at 14:03:10)" for ``remaining`` samples at ``rate`` per second;
    empty before there is a rate or when nothing remains.  The end carries its date when it falls
    on another day than ``now`` (a wall-clock time, default the current one)."""
    if remaining <= 0 or not rate > 0:
        return ""
    left = remaining / rate
    if left >= 730 * 86_400:  # years away: a date means nothing (and past year 9999 it cannot be written)
        return f", projected end in {_span(left)}"
    now = time.time() if now is None else now
    same_day = time.localtime(now + left)[:3] == time.localtime(now)[:3]
    at = time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S", time.localtime(now + left))
    return f", projected end in {_span(left)} (at {at})"


ANNOUNCE_SECONDS = 600.0  # a budget projected to take longer is announced with its end at the start


class Progress:
    """A tqdm bar on a terminal (with its rate and remaining time); in a log, a plain line every
    ``every`` seconds from a timer thread — also while a slow chunk is still running, so a log
    never stays silent for longer than ``every`` (``every`` = 0: a line at each update instead) —
    with samples done, samples per second, the projected end and the current ε_lower; nothing
    when off.

    ``label`` names the scenario (two scenarios of one mechanism are told apart); ``position``
    (index, total) of a run of several scenarios adds an overall line, scenarios done out of
    total.  The projected end is that of the sample count :meth:`expect` announces — where the
    sequential rule is expected to stop — not of the whole budget.  ``clock`` (seconds, for the
    rate) and ``wall`` (the time of day, for the end) are injectable."""

    def __init__(self, mode: str, total: int, label: str, every: float = 5.0, *,
                 position: tuple[int, int] | None = None, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        self.mode, self.total, self.label, self.every = mode, total, label, every
        self.clock, self.wall = clock, wall
        self.start = clock()
        self.done = 0
        self.stop, self.stop_note = total, ""  # the expected stop (samples, both sides) and which look it is
        self._epsilon: Callable[[], float | None] = lambda: None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.bar = self.overall = None
        if position is not None and position[1] > 1:  # one scenario needs no overall line
            index, count = position
            if mode == "bar":
                self.overall = tqdm(total=count, initial=index, desc="scenarios done", unit="scenario",
                                    leave=False, file=sys.stderr, position=0)
            elif mode == "log":
                progress_line(f"[dpaudit] scenarios: {index} of {count} done, now {label} ({index + 1} of {count})")
        if mode == "bar":
            self.bar = tqdm(total=total, desc=label, unit="sample", unit_scale=True, leave=False, file=sys.stderr,
                            position=None if self.overall is None else 1)
        elif mode == "log" and every > 0:
            self._thread = threading.Thread(target=self._tick, name="dpaudit-progress", daemon=True)
            self._thread.start()

    def expect(self, stop: int, note: str) -> None:
        """The run is expected to stop after ``stop`` samples (both sides), at ``note`` (e.g. "look 2
        of 4"); the projected end and the bar's remaining time count to there."""
        self.stop, self.stop_note = min(max(int(stop), 0), self.total), note
        if self.bar is not None:
            self.bar.total = max(self.stop, self.done)
            self.bar.set_description_str(self.label + (f" (expected stop: {note})" if self.stop < self.total else ""),
                                         refresh=False)

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            self._line()

    def _line(self) -> None:
        rate = self.done / max(self.clock() - self.start, 1e-9)
        try:
            value = self._epsilon()
            bound = "eps_lower pending" if value is None else f"current eps_lower {value:.4g}"
        except Exception:  # read while the counts change: the next line will have it
            bound = "current eps_lower ?"
        early = self.done < self.stop < self.total  # past a stale expectation: the budget's end
        end = projected_end((self.stop if early else self.total) - self.done, rate, self.wall())
        if end and early:  # the sequential rule is expected to stop early
            end += f", expected stop at {self.stop_note} ({self.stop} samples; the whole budget: " \
                   f"{_span((self.total - self.done) / rate)})"
        progress_line(f"[dpaudit] {self.label}: {self.done}/{self.total} samples, {rate:.3g}/s, {bound}{end}")

    def announce(self, longer_than: float = ANNOUNCE_SECONDS) -> None:
        """At the start (after the first chunk), the budget's projected end at the rate so far, when
        it is more than ``longer_than`` seconds away: a budget that cannot end in reasonable time
        still runs, and the user learns at once what it costs and that Ctrl-C stops it with a
        partial result."""
        if self.mode == "off" or not self.done:
            return
        rate = self.done / max(self.clock() - self.start, 1e-9)
        if (self.total - self.done) / rate <= longer_than:
            return
        text = (f"[dpaudit] {self.label}: {self.total:.3g} samples planned (both sides) at {rate:.3g}/s"
                f"{projected_end(self.total - self.done, rate, self.wall())}; Ctrl-C stops with a partial result "
                "of the samples counted so far")
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)
        else:
            progress_line(text)

    def update(self, samples: int, done: int, epsilon: Callable[[], float | None]) -> None:
        """``samples`` more drawn (``done`` in all); ``epsilon()`` is the current bound, or None
        while it means nothing yet (before the first estimation chunk on both sides, or before
        the first look of a sequential run), when it is not shown."""
        self.done, self._epsilon = done, epsilon
        if self.bar is not None:
            if done > (self.bar.total or 0):  # past the expected stop: the run went on
                self.bar.total = self.total
            self.bar.update(samples)
            value = epsilon()
            if value is not None:
                self.bar.set_postfix_str(f"eps_lower {value:.4g}", refresh=False)
        elif self.mode == "log" and self.every <= 0:
            self._line()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        for bar in (self.bar, self.overall):
            if bar is not None:
                bar.close()


class Heartbeat:
    """A line on stderr at least every ``every`` seconds while a long computation runs, for the parts
    of it that have no progress of their own (a planner's simulations, its timed chunks): a pipe or a
    CI log is never silent for minutes.  It stays quiet while :class:`Progress` lines flow (it speaks
    only after ``every`` seconds without any), and says the time so far and the process's CPU time,
    so a reader sees the work go on.  A context manager: ``with Heartbeat("plan X"): ...``."""

    def __init__(self, label: str, every: float | None = None, *, enabled: bool = True) -> None:
        self.label, self.enabled = label, enabled
        self.every = HEARTBEAT_SECONDS if every is None else every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.start = time.monotonic()
        self.cpu = time.process_time()

    def __enter__(self) -> Heartbeat:
        if self.enabled and self.every > 0:
            self.start, self.cpu = time.monotonic(), time.process_time()
            self._thread = threading.Thread(target=self._beat, name="dpaudit-heartbeat", daemon=True)
            self._thread.start()
        return self

    def _beat(self) -> None:
        while not self._stop.wait(min(self.every, 1.0)):
            now = time.monotonic()
            if now - _LAST_LINE[0] >= self.every:
                progress_line(f"[dpaudit] {self.label}: still working, {_span(now - self.start)} so far "
                     f"({_span(time.process_time() - self.cpu)} of CPU)")

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
