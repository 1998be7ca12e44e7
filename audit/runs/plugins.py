"""Importing the modules a user names (``--mechanism mymod:m``, a config's allowed plugin)."""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType


def working_folder_last() -> None:
    """Search the working folder after dpaudit's own packages and the installed ones, never before.

    ``python -m`` puts the working folder first on ``sys.path``, where a user's ``audit.py``,
    ``reports.py`` or ``numpy.py`` would stand in for a library; the console script does not put it
    on the path at all.  Both end with it last, so a module the user names is still found."""
    cwd = os.getcwd()
    while sys.path and sys.path[0] in ("", cwd):
        sys.path.pop(0)
    if cwd not in sys.path:
        sys.path.append(cwd)


def import_user_module(name: str) -> ModuleType:
    """Import the user's module ``name``, from the working folder too (searched last)."""
    working_folder_last()
    return importlib.import_module(name)
