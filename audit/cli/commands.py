"""Running one command: dispatch to its verb, and classify what goes wrong (exit 2 for the user's
input or code, 3 for the environment or our own bug, with the traceback in a log file)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Sequence
from concurrent.futures import BrokenExecutor

from dpaudit.cli.common import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, Session
from dpaudit.cli.listing import list_command
from dpaudit.cli.parser import COMMANDS, UsageError, build_parser
from dpaudit.cli.plan import plan_command
from dpaudit.cli.report import report_command
from dpaudit.cli.run import run_command
from dpaudit.cli.summary import summary_command
from dpaudit.cli.sweep import sweep_command
from dpaudit.core import InputError
from dpaudit.engine import runner
from dpaudit.reports.text import printable
from dpaudit.results.document import dumps
from dpaudit.runs import bench
from dpaudit.runs.rundir import ERROR_LOG
from dpaudit.runtime import interrupts
from dpaudit.runtime.blame import user_frame, what_code_did, where_and_log
from dpaudit.runtime.execution import EnvironmentFailure
from dpaudit.runtime.files import check_output, write_atomic


def _dispatch(args: argparse.Namespace, argv: list[str], session: Session) -> int:
    if args.command == "run":
        return run_command(args, argv, session)
    if args.command == "list":
        return list_command(args)
    if args.command == "sweep":
        return sweep_command(args, argv)
    if args.command == "report":
        return report_command(args)
    if args.command == "plan":
        return plan_command(args)
    if args.command == "bench":
        if args.out:
            check_output(args.out, "bench --out", folder=False)
        report = bench.run(samples=args.samples, seeds=args.seeds, quick=args.quick, families=args.family,
                           reps=args.reps, only=args.only, errata=args.errata, tests=args.tests)
        sys.stdout.write(dumps(report) + "\n" if args.json else bench.table(report))
        if args.out:
            write_atomic(args.out, dumps(report))
            print(f"wrote {args.out}")
        return EXIT_OK
    if args.command == "summary":
        return summary_command(args)
    build_parser().print_help()
    print(f"error: no command given: choose one of {', '.join(COMMANDS)}", file=sys.stderr)
    return EXIT_USAGE


def execute(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Run the parsed command ``args`` (from ``argv``) to its exit status; never a bare traceback."""
    argv = list(argv)
    session = Session()
    handler = None
    if threading.current_thread() is threading.main_thread():  # a real Ctrl-C is told apart from a mechanism's
        # `run` ends an interrupted audit with a partial result; the other commands stop at once
        handler = signal.signal(signal.SIGINT, interrupts.note_user_interrupt if args.command == "run"
                                else interrupts.note_user_abort)
    try:
        return _dispatch(args, argv, session)
    except (UsageError, InputError, runner.MechanismError) as exc:
        _error(str(exc) + (where_and_log(exc, session.folder) if isinstance(exc, runner.MechanismError) else ""))
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        where = None if interrupts.USER_INTERRUPT.is_set() or handler is None else user_frame(exc)
        if where is not None:  # no Ctrl-C arrived: the user's code raised it (at import, in a property...)
            _error(f"your code raised KeyboardInterrupt at {where}: a mechanism, its builder or a property must "
                   "return or raise an ordinary exception, not interrupt the command")
            return EXIT_USAGE
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemExit as exc:  # no command of ours exits: this is user code's sys.exit, never a pass
        where = user_frame(exc)
        _error(f"your code {what_code_did(exc)}" + (f" at {where}" if where else "") + ": a mechanism, "
               "its builder or a property must return or raise, not end the process")
        return EXIT_USAGE
    except (OSError, MemoryError, EnvironmentFailure, BrokenExecutor) as exc:
        log = _log_failure(session)
        _error(f"environment failure: {_explain(exc)} (traceback in {log})")
        return EXIT_INTERNAL
    except BaseException as exc:  # a bug of ours: one line and a log, never a traceback on the terminal
        log = _log_failure(session)
        where = user_frame(exc)
        if where is not None:  # raised through the user's code (dpaudit.runtime.blame): their fault, exit 2
            _error(f"your code raised {_explain(exc)} at {where} (traceback in {log})")
            return EXIT_USAGE
        _error(f"internal error: {_explain(exc)} (traceback in {log}; please report it)")
        return EXIT_INTERNAL
    finally:
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
        interrupts.USER_INTERRUPT.clear()


def _error(message: str) -> None:
    """The one-line message of a failure, on stderr, printable: it may quote a name from a config or
    a results file (:func:`dpaudit.reports.text.printable`)."""
    print(f"error: {printable(message)}", file=sys.stderr)


def _log_failure(session: Session) -> str:
    """Write the current traceback to ``DIR/error.log`` (or a temporary file); its path."""
    text = traceback.format_exc()
    if session.folder is not None:
        try:
            write_atomic(session.folder / ERROR_LOG, text)
            return str(session.folder / ERROR_LOG)
        except (OSError, InputError):
            pass
    try:
        fd, name = tempfile.mkstemp(prefix="dpaudit-error-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return name
    except OSError:
        return "nowhere: the disk cannot be written"


def _explain(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return f"{type(exc).__name__}: {exc}"
