"""No function of the package over 80 lines (.ci/function_lengths.py, which CI runs through this test).

A function that reads as steps fits on a screen: the check measures every function and method of
the package's folders from its ``def`` line to its last, docstring included, and names each one
over the limit.  The twin tests show the check can fail: a synthetic 81-line function in a
temporary folder is named with its path, line and length, and an 80-line one is not.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "function_lengths.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("function_lengths", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def _function(name: str, lines: int, indent: str = "") -> str:
    """A function ``lines`` long from its ``def`` to its last line (docstring and body included)."""
    body = [f'{indent}    """A synthetic function of {lines} lines."""'] + [f"{indent}    x{i} = {i}"
                                                                             for i in range(lines - 3)]
    return "\n".join([f"{indent}def {name}() -> int:", *body, f"{indent}    return 0"]) + "\n"


def test_no_function_of_the_package_is_over_80_lines():
    """Run as CI runs it: every offender is named (path:line name N lines) and the exit is 1."""
    done = subprocess.run([sys.executable, str(SCRIPT)], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"functions over 80 lines (split each into steps):\n{done.stdout}{done.stderr}"


def test_the_check_scans_the_package_folders():
    """An empty scan would pass anything: the folders exist and hold the package's largest modules."""
    check = _script()
    assert check.FOLDERS == ("audit", "mechanisms", "neighbors", "reports")
    files = {p.relative_to(ROOT).as_posix() for folder in check.FOLDERS for p in check.python_files(ROOT / folder)}
    assert {"audit/engine/runner.py", "audit/cli/run.py", "mechanisms/__init__.py", "reports/pdf.py"} <= files
    assert len(files) > 100


def test_a_function_over_80_lines_is_named_with_its_path_line_and_length(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "short.py").write_text(_function("fits", 80))
    (package / "long.py").write_text("import os\n\n\n" + _function("too_long", 81)
                                      + "\n\nclass Holder:\n" + _function("method", 95, indent="    "))
    done = subprocess.run([sys.executable, str(SCRIPT), str(package)], cwd=tmp_path, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 1
    assert done.stdout.splitlines() == ["pkg/long.py:4 too_long 81 lines", "pkg/long.py:88 Holder.method 95 lines"]
    assert "fits" not in done.stdout and "2 function(s) over 80 lines" in done.stderr


def test_a_nested_function_and_an_async_one_are_measured(tmp_path):
    outer = "def outer() -> None:\n" + _function("inner", 90, indent="    ")
    (tmp_path / "nested.py").write_text(outer + "\n\nasync " + _function("waits", 82))
    found = _script().scan([tmp_path], base=tmp_path)
    assert [str(f) for f in found] == ["nested.py:1 outer 91 lines", "nested.py:2 outer.inner 90 lines",
                                       "nested.py:94 waits 82 lines"]


def test_a_folder_within_the_limit_passes_and_a_missing_one_is_bad_input(tmp_path):
    (tmp_path / "ok.py").write_text(_function("fits", 80))
    assert _script().main([str(tmp_path)]) == 0
    assert _script().main([str(tmp_path / "absent")]) == 2
