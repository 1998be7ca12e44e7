"""``--json`` owns stdout: while the user's code runs, what it prints goes to stderr.

A training loop's "epoch 0 loss ..." on stdout would land before the JSON document and make it
unparseable.  Python-level prints are redirected (``sys.stdout`` is ``sys.stderr``), and so is
file descriptor 1 itself (``dup2(2, 1)``): a C extension writes to it, and the worker processes
the run starts (joblib's loky, a local Dask cluster) inherit it, so their prints go to stderr too.
The document itself is written through the saved descriptor (:meth:`StdoutToStderr.write`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from types import TracebackType
from typing import TextIO

__all__ = ["StdoutToStderr"]


class StdoutToStderr:
    """A context in which stdout (the Python stream and descriptor 1) is stderr; :meth:`write`
    writes to the real stdout.  Where a descriptor cannot be duplicated (closed, or no real file
    behind the streams, as in an in-process test), only the Python stream is redirected."""

    def __init__(self) -> None:
        self._stdout: TextIO = sys.stdout
        self._saved: int | None = None
        self._redirect = contextlib.redirect_stdout(sys.stderr)

    def __enter__(self) -> StdoutToStderr:
        self._stdout = sys.stdout
        _flush(self._stdout)
        if _on_descriptor(self._stdout, 1):
            try:
                self._saved = os.dup(1)
                os.dup2(2, 1)
            except OSError:  # no descriptor 2, or none left: the Python-level redirect still holds
                self._close_saved()
        self._redirect.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._redirect.__exit__(kind, exc, tb)
        _flush(sys.stderr)
        if self._saved is not None:
            os.dup2(self._saved, 1)
            self._close_saved()

    def write(self, text: str) -> None:
        """``text`` on the real stdout (descriptor 1 restored for as long as it takes)."""
        _flush(sys.stderr)
        if self._saved is not None:
            os.dup2(self._saved, 1)
        try:
            self._stdout.write(text)
            _flush(self._stdout)
        finally:
            if self._saved is not None:
                os.dup2(2, 1)

    def _close_saved(self) -> None:
        if self._saved is not None:
            os.close(self._saved)
            self._saved = None


def _on_descriptor(stream: TextIO, fd: int) -> bool:
    """Whether ``stream`` writes to descriptor ``fd`` (not a StringIO a test put there)."""
    try:
        return stream.fileno() == fd
    except (AttributeError, OSError, ValueError):
        return False


def _flush(stream: TextIO) -> None:
    with contextlib.suppress(AttributeError, OSError, ValueError):
        stream.flush()


# --- closed and broken standard streams ---------------------------------------------------------
#
# A reader that goes away (``dpaudit run | head -1``, a ``tee`` that dies) breaks the pipe under
# stdout or stderr, and a launcher may start the command with a stream closed (``>&-``, ``2>&-``,
# cron).  Neither says anything about the audit: its checks run to the end, its files are written,
# and it exits with the audit's own status (0, 1 for a finding, ...), never 1 for a lost reader and
# never an "internal error".  The output that has no reader is dropped, as a well-behaved Unix filter
# drops it: quietly, with no second error written to the broken stream.  (Tools killed by SIGPIPE
# exit 141 instead; dpaudit's results are already saved when the table is printed, so the status a
# script acts on stays the audit's.)


def open_standard_descriptors() -> list[str]:
    """Descriptors 0, 1 and 2 that are closed are opened on ``/dev/null`` (before anything else
    opens a file or a pipe: one would otherwise take the number and be written as stdout), and the
    Python streams the interpreter left as None are rebuilt on them.  The names of those that were
    closed (``"stdout"``, ``"stderr"``)."""
    closed = []
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            os.set_inheritable(fd, True)  # a standard descriptor: the processes this one starts share it
            closed.append(name)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))  # noqa: SIM115 - lives as long as the process
    return [name for name in closed if name != "stdin"]


class DroppingStream:
    """A standard stream whose writes never fail for want of a reader: on a broken pipe (or any
    other failure to write, a closed file included) the descriptor is pointed at ``/dev/null`` and
    the text dropped, from then on.  Everything else is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.dropped = False

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except (OSError, ValueError):
            self._drop()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            self._drop()

    def _drop(self) -> None:
        """Point the descriptor at /dev/null (worker processes and C code sharing it stop failing
        too) and retry the flush there, so what the buffer holds leaves it."""
        self.dropped = True
        with contextlib.suppress(OSError, ValueError, AttributeError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())
            os.close(null)
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def tolerate_lost_readers() -> None:
    """:func:`open_standard_descriptors`, then ``sys.stdout`` and ``sys.stderr`` as
    :class:`DroppingStream`: a closed stream runs the command with its output dropped (a closed
    stdout is said on stderr, which may still have a reader)."""
    closed = open_standard_descriptors()
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, DroppingStream):
            setattr(sys, name, DroppingStream(stream))
    if closed == ["stdout"]:
        print("note: stdout is closed: the table is dropped (results are written to --out as usual)",
              file=sys.stderr)
