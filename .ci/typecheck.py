"""mypy over dpaudit's real folders, each file under its import name (``python3 .ci/typecheck.py``).

mypy names a module after its folders (``audit/core/x.py`` would be ``audit.core.x``) and has no
setting for setuptools' ``package-dir``, and it cannot follow the import hook of an editable
install.  So this hands mypy every file of the package with the name pyproject.toml's
``[tool.setuptools.package-dir]`` gives it (``audit/`` is ``dpaudit``, ``mechanisms/`` is
``dpaudit.mechanisms``, ...): each file is checked once, its errors name its real path, and every
``dpaudit.*`` import resolves to a checked module (never to ``Any``).

The rest of the settings are ``[tool.mypy]``'s.  Its ``exclude`` (real paths) keeps working as it
did with ``follow_imports = "silent"``: an excluded module is analysed, so its types reach the
modules that import it, and its own errors are not reported.  Extra arguments go to mypy
(``python3 .ci/typecheck.py --no-incremental``).  Exit 0 clean, 1 errors, 2 mypy could not run.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from pathlib import Path

from mypy import build
from mypy.errors import CompileError
from mypy.main import process_options
from mypy.modulefinder import BuildSource
from mypy.options import Options

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "audit"  # `python -m audit`'s two-file package: the same folder as `dpaudit`, checked as dpaudit


def package_dirs() -> dict[str, str]:
    """Package -> its real folder (relative to the checkout), from pyproject.toml."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return {name: folder for name, folder in setuptools["package-dir"].items() if name != COMMAND}


def import_name(path: str, dirs: dict[str, str]) -> str:
    """``audit/engine/api.py`` -> ``dpaudit.engine.api``; ``mechanisms/__init__.py`` -> ``dpaudit.mechanisms``."""
    parts = Path(path).with_suffix("").parts
    for package, folder in sorted(dirs.items(), key=lambda item: -len(Path(item[1]).parts)):
        top = Path(folder).parts
        if parts[: len(top)] == top:
            rest = [p for p in parts[len(top):] if p != "__init__"]
            return ".".join([package, *rest])
    raise LookupError(f"{path} is in no folder of [tool.setuptools.package-dir]")


def sources(args: list[str]) -> tuple[list[BuildSource], Options]:
    dirs = package_dirs()
    _, options = process_options(args, require_targets=False)  # pyproject.toml's [tool.mypy]
    out = []
    for folder in dirs.values():
        for path in sorted(Path(folder).rglob("*.py")):
            name = import_name(str(path), dirs)
            out.append(BuildSource(str(path), name))
            if any(re.search(pattern, path.as_posix()) for pattern in options.exclude):  # as mypy matches paths
                # analysed, its errors silent (what follow_imports = "silent" did for an excluded file)
                options.per_module_options[name] = {**options.per_module_options.get(name, {}), "ignore_errors": True}
    options.build_per_module_cache()
    return out, options


def main(args: list[str]) -> int:
    os.chdir(ROOT)
    found, options = sources(args)
    try:
        result = build.build(found, options)
    except CompileError as exc:  # a blocking error (a syntax error, a bad option)
        print("\n".join(exc.messages), file=sys.stderr)
        return 2
    for message in result.errors:
        print(message)
    errors = [m for m in result.errors if ": error:" in m]
    silent = sum(options.per_module_options.get(s.module, {}).get("ignore_errors") is True for s in found)
    checked = f"{len(found) - silent} source files checked, {silent} excluded ones analysed silently"
    if errors:
        print(f"Found {len(errors)} errors in {len({m.split(':')[0] for m in errors})} files ({checked})")
        return 1
    print(f"Success: no issues found ({checked})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
