"""Whose fault an unexpected exception is: the user's code, or ours.

Every call dpaudit makes into a user's code (``sample``, ``sample_counts``, ``guarantees``,
``exact_epsilon``, a plugin's import) is guarded where it is made and fails with exit status 2,
naming the part.  This module is the net under those guards: an exception that still reaches
the command line's top level is the user's when its traceback passes through a file that is
neither dpaudit's nor the interpreter's nor an installed package's (a ``--mechanism`` module, a
``--pair`` module, a config's plugin), and then too it is exit status 2 naming that file and
line — "internal error … please report it" stays for tracebacks that lie in our code alone.
"""

from __future__ import annotations

import importlib.util
import sysconfig
from pathlib import Path
from types import TracebackType


def _package_folders(*names: str) -> tuple[str, ...]:
    """Where dpaudit's packages are, found without importing them (the engine imports no report code)."""
    found = []
    for name in names:
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            found.append(str(Path(folder).resolve()))
    return tuple(found)


_OURS = _package_folders("dpaudit", "dpaudit.mechanisms", "dpaudit.neighbors", "dpaudit.reports")
_SYSTEM = tuple({str(Path(p).resolve()) for key in ("stdlib", "platstdlib", "purelib", "platlib")
                 if (p := sysconfig.get_paths().get(key))})


def is_user_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):  # <frozen ...>, <string>: the interpreter's
        return False
    try:
        resolved = str(Path(filename).resolve())
    except (OSError, ValueError, RuntimeError):
        return False
    return not resolved.startswith(_OURS) and not resolved.startswith(_SYSTEM)


def user_frame(exc: BaseException) -> str | None:
    """``file:line in function`` of the innermost frame of the user's code in ``exc``'s traceback
    (following the causes it was raised from), or None when no user's code is in it."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found = None
        tb: TracebackType | None = current.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if is_user_file(code.co_filename):
                found = f"{code.co_filename}:{tb.tb_lineno} in {code.co_name}"
            tb = tb.tb_next
        if found is not None:
            return found
        current = current.__cause__ or current.__context__
    return None


def what_code_did(exc: BaseException, *, detail: bool = False) -> str:
    """What a user's code did, as every message that blames it says it: ``called sys.exit(CODE)``
    for a :class:`SystemExit` (its code as ``repr``: a ``sys.exit(0)`` is a failure too, never a
    pass), else ``raised NAME`` and, with ``detail``, ``: MESSAGE``."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    return f"raised {type(exc).__name__}" + (f": {exc}" if detail else "")
