"""Where the modules a user names are searched: the working folder last for everything but the
module the user named (standard library only: the console script calls it before anything else)."""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType

__all__ = ["import_user_module", "working_folder_last"]


def working_folder_last() -> None:
    """Search the working folder after dpaudit's own packages and the installed ones, never before.

    ``python -m`` puts the working folder first on ``sys.path``, where a user's ``audit.py``,
    ``reports.py`` or ``numpy.py`` would stand in for a library; the console script does not put it
    on the path at all.  Both end with it last, so a module the user names is still found."""
    cwd = os.getcwd()
    if sys.path and sys.path[0] in ("", cwd):  # the entry `python -m` put there (PYTHONPATH's stay)
        sys.path.pop(0)
    if cwd not in sys.path:
        sys.path.append(cwd)


def import_user_module(name: str) -> ModuleType:
    """Import the module ``name`` the user named, the working folder first for it alone.

    The user means their own ``mymod.py`` (or ``tests/plugins.py``) even where an installed
    distribution ships a module of the same name (diffprivlib installs a ``tests`` package), so
    the working folder leads while this one import runs, and goes back to last place after."""
    cwd = os.getcwd()  # sys.path is left as it was: a host process calling main() keeps its own order
    sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(cwd)
