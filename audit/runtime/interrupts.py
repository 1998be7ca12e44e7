"""The user's Ctrl-C, told apart from a KeyboardInterrupt that a mechanism raises itself.

The application installs :func:`note_user_interrupt` as its SIGINT handler.  The first Ctrl-C sets
:data:`USER_INTERRUPT` and raises KeyboardInterrupt where the run is: the audit in progress then
ends with a partial result, whatever its phase — with the bound of the estimation outputs counted
so far, or with no bound when none was counted yet (:func:`dpaudit.engine.estimate.unmeasured`).  A
second Ctrl-C raises :class:`Abort`, which nothing turns into a result: the run stops at once.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

__all__ = ["USER_INTERRUPT", "Abort", "dask_setup", "note_user_abort", "note_user_interrupt",
           "stopped_by_user"]

# Set by the application's SIGINT handler (:func:`note_user_interrupt`): a KeyboardInterrupt then
# comes from the user, not from a mechanism that raised it itself.
USER_INTERRUPT = threading.Event()


class Abort(KeyboardInterrupt):
    """The user's second Ctrl-C: the run stops at once, with no partial result."""


def note_user_interrupt(signum: int, frame: Any) -> None:
    """A SIGINT handler: the first Ctrl-C is remembered and interrupts as Python would (the audit in
    progress then ends with a partial result, whatever its phase); a second one is :class:`Abort`."""
    if USER_INTERRUPT.is_set():
        raise Abort
    USER_INTERRUPT.set()
    raise KeyboardInterrupt


def note_user_abort(signum: int, frame: Any) -> None:
    """The SIGINT handler of a command that has no partial result to give (``sweep``, ``plan``,
    ``bench``): the Ctrl-C is the user's (not a mechanism's) and stops the command at once."""
    USER_INTERRUPT.set()
    raise Abort


def stopped_by_user(exc: BaseException) -> bool:
    """Whether ``exc`` (a KeyboardInterrupt) is the user's first Ctrl-C, which ends the audit with
    a partial result; a mechanism's own KeyboardInterrupt, an interrupt of a library caller that
    installed no handler, and a second Ctrl-C (:class:`Abort`) go on."""
    return USER_INTERRUPT.is_set() and not isinstance(exc, Abort)


def dask_setup(worker: Any) -> None:
    """Run in each worker process of the local Dask cluster the run starts (its ``preload``): the
    worker ignores SIGINT.  A Ctrl-C at a terminal goes to the whole process group; the run's own
    process ends the run with a partial result and closes the cluster, where each worker would
    otherwise print a KeyboardInterrupt traceback of its event loop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
