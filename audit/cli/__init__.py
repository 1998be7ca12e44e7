"""``dpaudit`` (the console script; ``python -m dpaudit`` and ``python -m audit`` are the same
program): run the built-in suite or a user's mechanism, list what is built in.

Exit status: 0 when every verdict is as expected and no unexpected violation appears, 1 for a
privacy finding (an unexpected violation or a missed expected one), 2 for bad usage or input
(a mechanism that fails included), 3 for an internal or environment failure (disk full, a lost
cluster): a one-line message, the traceback in a log file — never a bare traceback, and a crash
is never reported as a finding.

Both entry points find a user's module (``--mechanism mymod:m``) in the current folder, which is
searched after dpaudit's own packages and the installed ones: a user's ``audit.py`` or
``reports.py`` never stands in for ours (:mod:`dpaudit.runs.syspath`).
"""

from __future__ import annotations

import importlib
import platform
import sys
from collections.abc import Sequence

from dpaudit import __version__
from dpaudit.cli import supervise
from dpaudit.cli.parser import UsageError, build_parser, with_hint
from dpaudit.runs.syspath import working_folder_last

EXIT_USAGE = 2


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dpaudit ARGS``: the exit status of the command (module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        print(f"error: {with_hint(str(exc), argv, parser)}", file=sys.stderr)
        return EXIT_USAGE
    if args.command is None and args.version:
        print(f"dpaudit {__version__} (Python {platform.python_version()})")
        return 0
    # The verbs and the engine are imported only now: --help and --version cost no numpy.
    commands = importlib.import_module("dpaudit.cli.commands")
    return commands.execute(args, argv)


def console_main() -> int:
    """The ``dpaudit`` console script: ``python -m dpaudit``, with the working folder searched last
    for the modules a user names (:func:`dpaudit.runs.syspath.working_folder_last`), run in a
    supervised child (:mod:`dpaudit.cli.supervise`) when this process is the console script itself."""
    working_folder_last()
    own = getattr(sys.modules.get("__main__"), "console_main", None) is console_main  # pip's script imports it
    return supervise.run(main, entry="script" if own else None)
