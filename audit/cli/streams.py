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
