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
import re
import sysconfig
import traceback
from pathlib import Path
from types import TracebackType

from dpaudit.core import InputError
from dpaudit.runtime.files import write_atomic

ERROR_LOG = "error.log"  # in the run's folder (dpaudit.runs.rundir names the same file)


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


_REMOTE_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>.+)$')


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from (causes, then contexts), each once."""
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in out):
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def _innermost(exc: BaseException) -> BaseException:
    """The exception the chain started from (a worker's text traceback stands for none)."""
    return [e for e in _chain(exc) if not isinstance(getattr(e, "tb", None), str)][-1]


def user_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """The frames of the user's code (:func:`is_user_file`: not dpaudit's, not the interpreter's, not
    an installed package's such as numpy's or joblib's) in ``exc``'s traceback and those it was raised
    from, innermost last; a worker process's traceback, which joblib sends back as text (the cause
    it raises from, with its ``tb``), is read from that text."""
    frames: list[traceback.FrameSummary] = []
    for current in reversed(_chain(exc)):  # the user's exception first, the one that reached us last
        remote = getattr(current, "tb", None)
        if isinstance(remote, str):
            lines = remote.splitlines()
            for i, line in enumerate(lines):
                found = _REMOTE_FRAME.match(line)
                if found and is_user_file(found["file"]):
                    code = lines[i + 1].strip() if i + 1 < len(lines) and not _REMOTE_FRAME.match(lines[i + 1]) else ""
                    frames.append(traceback.FrameSummary(found["file"], int(found["line"]), found["name"],
                                                         lookup_line=False, line=code))
            continue
        frames += [f for f in traceback.extract_tb(current.__traceback__) if is_user_file(f.filename)]
    return frames


def where_and_log(exc: BaseException, folder: Path | None) -> str:
    """What a one-line error about the user's code adds (" (at FILE:LINE in NAME; ...)"), or "":
    the innermost frame of the user's own code, and with a run folder (``--out``) the user's frames
    of the traceback written to ``folder/error.log`` (only theirs: dpaudit's, numpy's and joblib's
    frames say nothing the user can change), with where it is."""
    frames = user_frames(exc)
    if not frames:
        return ""
    last = frames[-1]
    said = f"at {last.filename}:{last.lineno} in {last.name}"
    if folder is None:
        return f" ({said})"
    text = ("Your code's frames of the traceback, innermost last (dpaudit's, the interpreter's and installed "
            "packages' frames left out):\n" + "".join(traceback.format_list(frames))
            + "".join(traceback.format_exception_only(_innermost(exc))))
    path = Path(folder) / ERROR_LOG
    try:
        write_atomic(path, text)
    except (OSError, InputError):  # an unwritable folder: the line still says where
        return f" ({said})"
    return f" ({said}; your code's frames of the traceback in {path})"
