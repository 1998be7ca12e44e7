"""Tests grouped by kind without moving files (issue 34): tests/kinds.py gives every test file one
kind (unit, statistical, cli, report), pyproject.toml registers the four markers, and
tests/conftest.py's ``pytest_collection_modifyitems`` marks each test with its file's kind, so
``pytest -m statistical`` selects the statistical tests.  No statistics here: the checks are of
files and of a collection."""

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.kinds import KIND_OF_FILE, KINDS, MIXED

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def _test_files() -> set[str]:
    """The files pytest collects under tests/, as the table names them (relative to tests/)."""
    return {path.relative_to(TESTS).as_posix() for path in TESTS.rglob("test_*.py")}


def test_every_test_file_has_a_kind() -> None:
    missing = sorted(_test_files() - set(KIND_OF_FILE))
    assert not missing, f"test files with no kind in tests/kinds.py: {missing}"


def test_every_file_the_table_names_exists() -> None:
    stale = sorted(set(KIND_OF_FILE) - _test_files()) + sorted(set(MIXED) - _test_files())
    assert not stale, f"tests/kinds.py names files that are not test files: {stale}"


def test_each_kind_is_one_of_the_four_and_a_mixed_file_names_other_kinds() -> None:
    assert {kind for kind in KIND_OF_FILE.values()} <= set(KINDS)
    for name, others in MIXED.items():
        assert others and set(others) <= set(KINDS) and KIND_OF_FILE[name] not in others, name


def test_the_four_kinds_are_registered_markers_with_a_meaning() -> None:
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    meanings = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in markers}
    for kind in KINDS:
        assert meanings.get(kind), f"marker {kind!r} is not registered with its meaning in pyproject.toml"


def _collected(marker: str, *files: str) -> set[str]:
    """The files of the tests ``pytest --collect-only -m MARKER FILES`` selects (a subprocess:
    the collection hook of tests/conftest.py runs as in a user's session)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-m", marker, *(f"tests/{name}" for name in files)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 5), proc.stdout[-2000:] + proc.stderr[-2000:]  # 5: none selected
    return {line.split("::", 1)[0].removeprefix("tests/") for line in proc.stdout.splitlines() if "::" in line}


def test_every_test_of_this_session_carries_its_files_kind(request: pytest.FixtureRequest) -> None:
    # The hook has run on this session's collection, whichever files it holds (this one at least).
    for item in request.session.items:
        name = Path(item.path).resolve().relative_to(TESTS).as_posix()
        kinds = {mark.name for mark in item.iter_markers() if mark.name in KINDS}
        assert kinds == {KIND_OF_FILE[name]}, (item.nodeid, kinds)


def test_minus_m_statistical_selects_the_statistical_files_only() -> None:
    # One light file of each kind (they import little), collected with `-m statistical` as a user
    # types it: only the statistical file's tests are selected.
    files = ("test_neighbors.py", "test_tail_thresholds.py", "test_list_hints.py", "test_onerun_table.py")
    assert {KIND_OF_FILE[name] for name in files} == set(KINDS)
    assert _collected("statistical", *files) == {"test_tail_thresholds.py"}
