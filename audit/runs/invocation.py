"""The command as the user typed it, for every record that names it (``results.json``'s and
``--json``'s ``command``, ``sweep.json``, the PDF's reproducibility block): ``dpaudit run ...`` for
the console script, ``python -m dpaudit ...`` or ``python -m audit ...`` as typed.

Standard library only: the supervisor (:mod:`dpaudit.cli.supervise`) imports it before anything
heavy.  The supervised child is started with the same command line, but its interpreter is
``sys.executable`` (an absolute path), so the parent hands its own ``sys.orig_argv`` over
(:data:`TYPED_ENV`) and the child adopts it (:func:`adopt`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

__all__ = ["TYPED_ENV", "adopt", "typed_command"]

TYPED_ENV = "DPAUDIT_TYPED_ARGV"  # the supervisor's sys.orig_argv, NUL-free, joined by UNIT SEPARATOR
SEPARATOR = "\x1f"
DOCUMENTED = "dpaudit"  # what a host process that calls main(argv) itself is recorded as

_typed: list[str] | None = None


def adopt(encoded: str | None) -> None:
    """In the supervised child: take the parent's command line (``TYPED_ENV``'s value) as typed."""
    global _typed
    _typed = encoded.split(SEPARATOR) if encoded else None  # empty: not carried (encode)


def encode(argv: Sequence[str]) -> str:
    """``argv`` as :data:`TYPED_ENV` carries it (an argument holding the separator cannot be
    carried: the child then records from its own command line)."""
    return SEPARATOR.join(argv) if not any(SEPARATOR in a for a in argv) else ""


def typed_command(argv: Sequence[str]) -> list[str]:
    """The program as typed, then ``argv`` (the command's own arguments).

    The program is read off the process's command line (``sys.orig_argv``): ``-m NAME`` gives
    ``[python, -m, NAME]`` (the interpreter by its file name, as typed, never a machine's path;
    its options are left out: they change nothing a record reproduces); a script (the console
    script) gives its name (``dpaudit``, with Windows' ``.exe``/``-script.py`` removed).  Where the
    command line does not end with ``argv`` (a host process calling ``main(argv)``), the
    documented command ``dpaudit``."""
    argv = list(argv)
    typed = _typed if _typed else list(getattr(sys, "orig_argv", []))
    cut = len(typed) - len(argv)
    if cut >= 2 and typed[cut:] == argv:
        program = _program(typed[:cut])
        if program is not None:
            return [*program, *argv]
    return [DOCUMENTED, *argv]


def _program(head: list[str]) -> list[str] | None:
    """``[interpreter, *options, -m, NAME]`` or ``[interpreter, *options, SCRIPT]`` as recorded."""
    interpreter = os.path.basename(head[0]) or "python"
    if len(head) >= 3 and head[-2] == "-m":
        return [interpreter.removesuffix(".exe"), "-m", head[-1]]
    if head[-1].startswith("-m") and len(head[-1]) > 2:  # python -mdpaudit
        return [interpreter.removesuffix(".exe"), "-m", head[-1][2:]]
    script = os.path.basename(head[-1])
    if script and not script.startswith("-") and (len(head) < 3 or head[-2] != "-c"):
        for suffix in ("-script.pyw", "-script.py", ".exe", ".py"):
            script = script.removesuffix(suffix)
        return [script]
    return None
