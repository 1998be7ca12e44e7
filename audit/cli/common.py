"""What the verbs share: the usage error, a run's session, loading what the user names.
"""

from __future__ import annotations

import importlib
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpaudit import reports
from dpaudit.cli.parser import UsageError, program_name
from dpaudit.core import InputError, did_you_mean
from dpaudit.results.document import dumps
from dpaudit.runs.syspath import import_user_module

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
# An interrupted, incomplete run (Ctrl-C, `timeout -s INT`, a CI job cancelled), and `summary` of the
# file it left: 128 + SIGINT, the shell's code of a command that SIGINT stopped.  Not 0 (expectations
# went unchecked), not 2 (nothing the user gave is wrong), not 3 (nothing failed): a job that resumes
# or reruns tells it apart from a verdict, a bad input and a crash.  A finding among the scenarios
# that did run still exits 1: it holds at the stated confidence, whatever was not run.
EXIT_INTERRUPTED = 130


def load_attr(spec: str, flag: str) -> Any:
    """The object ``pkg.module:attr`` names (``attr`` may be dotted), imported as the user's code;
    any failure of the user's module is a :class:`UsageError` naming ``flag`` and ``spec``."""
    if ":" not in spec:
        raise UsageError(f"{flag} {spec!r} is invalid: use pkg.module:attr or a built-in name")
    module_name, _, attr = spec.partition(":")
    try:
        module = import_user_module(module_name)
    except InputError:
        raise
    except (Exception, SystemExit) as exc:  # a module's import may do anything, sys.exit included
        raise UsageError(f"{flag} {spec!r}: cannot import {module_name!r} ({type(exc).__name__}: {exc})") from None
    owner = module
    try:
        for part in attr.split("."):
            owner = module
            module = getattr(module, part)
    except AttributeError:
        raise UsageError(f"{flag} {spec!r}: module {module_name!r} has no attribute {attr!r}"
                         f"{_closest_attributes(owner, part)}") from None
    except (Exception, SystemExit) as exc:  # a module's __getattr__ or a property may do anything
        raise UsageError(f"{flag} {spec!r}: looking up {attr!r} in {module_name!r} raised {type(exc).__name__}: "
                         f"{exc}") from None
    return module


def _closest_attributes(owner: Any, part: str) -> str:
    """A "did you mean" among the public attributes of ``owner`` for the missing ``part`` (never
    raising: listing a user's object may do anything)."""
    try:
        names = [n for n in dir(owner) if isinstance(n, str) and not n.startswith("_")]
    except Exception:
        return ""
    return did_you_mean(part, names)


def resume_command(folder: Path) -> str:
    """The command that resumes the run in ``folder`` (an interrupted run's footer gives it)."""
    return f"{program_name()} run --resume {shlex.quote(str(folder))}"


def parse_params(items: Sequence[str]) -> dict[str, Any]:
    """``--param NAME=VALUE`` items as keyword arguments: each VALUE read as JSON (a list becomes a
    tuple), else kept as the string typed."""
    params = {}
    for item in items:
        name, eq, text = item.partition("=")
        if not eq or not name:
            raise UsageError(f"--param {item!r} is invalid: use NAME=VALUE")
        try:
            params[name] = json.loads(text)
        except json.JSONDecodeError:
            params[name] = text
        if isinstance(params[name], list):
            params[name] = tuple(params[name])
    return params


class Session:
    """What :func:`main` needs to report a failure: the run's folder, once there is one (the
    traceback log goes there, else to a temporary file)."""

    folder: Path | None = None


def report_families() -> tuple[tuple[str, str, frozenset[str], frozenset[str]], ...]:
    """:func:`dpaudit.catalog.report_families`, the catalog imported on first use: the supervising
    parent imports this module (through :mod:`dpaudit.cli.expectations`) to judge a child's results,
    and the catalog's families (~0.05 CPU s) are no part of that."""
    families: tuple[tuple[str, str, frozenset[str], frozenset[str]], ...]
    families = importlib.import_module("dpaudit.catalog").report_families()
    return families


def write_report(final: dict[str, Any], path: Path) -> bool:
    """``run --out``'s PDF; without the [report] extra the results and summary are written anyway
    and the run says the PDF was skipped (its exit status stays the verdicts').  True if written."""
    try:
        reports.write_pdf(json.loads(dumps(final)), path, families=report_families())
    except reports.ReportExtraMissing as exc:
        print(f"note: {path} skipped: {exc}", file=sys.stderr)
        return False
    return True
