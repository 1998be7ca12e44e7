"""The package's layout as pyproject.toml states it: which real folder holds which ``dpaudit``
package (setuptools' ``package-dir``), and every module's import name and file.

Read from the source tree, never through an import: the architecture and packaging tests judge the
folders a contributor edits (and a copy of them), whatever is installed."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

COMMAND = "audit"  # the two-file package of `python -m audit`: the same folder as `dpaudit`, not a package of its own


def setuptools_config(root: Path) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def package_dirs(root: Path) -> dict[str, Path]:
    """``dpaudit``'s mapped packages -> their real folders (``dpaudit`` -> ``audit/``, ...)."""
    mapping = setuptools_config(root)["package-dir"]
    return {name: root / folder for name, folder in mapping.items() if name != COMMAND}


def folder_of(package: str, dirs: dict[str, Path]) -> Path:
    """The folder of any ``dpaudit`` package: its nearest mapped ancestor's folder, then the rest."""
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        if ".".join(parts[:cut]) in dirs:
            return dirs[".".join(parts[:cut])].joinpath(*parts[cut:])
    raise LookupError(f"{package} is under no folder of [tool.setuptools.package-dir]")


def module_files(root: Path) -> dict[str, Path]:
    """Import name -> file of every module of ``dpaudit`` (each file once, under its real path).

    Raises ``LookupError`` when a package pyproject.toml lists has no ``__init__.py`` in its folder,
    so a test that reads an empty or moved tree fails instead of finding nothing to object to."""
    dirs = package_dirs(root)
    found: dict[str, Path] = {}
    for package, folder in dirs.items():
        for here, subfolders, files in os.walk(folder):  # links are not followed: there are none to follow
            subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
            parts = Path(here).relative_to(folder).parts
            for name in sorted(files):
                if name.endswith(".py"):
                    stem = name.removesuffix(".py")
                    found[".".join([package, *parts, *([] if stem == "__init__" else [stem])])] = Path(here) / name
    listed = [p for p in setuptools_config(root)["packages"] if p != COMMAND]
    missing = [p for p in listed if p not in found]
    if missing:
        raise LookupError(f"packages listed in pyproject.toml with no __init__.py in their folder: {missing}")
    return found


def init_folders(root: Path) -> set[str]:
    """The import names of every folder with an ``__init__.py`` under the mapped folders."""
    return {name for name, path in module_files(root).items() if path.name == "__init__.py"}
