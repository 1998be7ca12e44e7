"""The layout without links: real folders mapped by pyproject.toml's package-dir, one name per
module, and an import that needs nothing POSIX-only.

``dpaudit`` is the repository's ``audit/`` folder, ``dpaudit.mechanisms`` its ``mechanisms/``, and
so on; ``audit`` is only the command's name (``python -m audit``)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.layout import COMMAND, init_folders, module_files, package_dirs, setuptools_config

ROOT = Path(__file__).resolve().parents[1]


def _links_under(folder: Path) -> list[str]:
    found = []
    for here, subfolders, files in os.walk(folder):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d != "__pycache__"]
        found += [str(Path(here, n).relative_to(ROOT)) for n in [*subfolders, *files] if Path(here, n).is_symlink()]
    return found


def test_the_repository_holds_no_links():
    """A checkout without symlink support (Git for Windows' default) is the same checkout."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True)
        assert [line for line in listed.stdout.splitlines() if line.startswith("120000")] == []
    folders = [*package_dirs(ROOT).values(), ROOT / "tests", ROOT / "docs"]  # also where there is no git (an sdist)
    assert [p for f in folders for p in _links_under(f)] == []


def test_every_folder_with_an_init_is_a_listed_package():
    """setuptools installs the packages pyproject.toml lists, no more: a new subpackage must be listed."""
    listed = set(setuptools_config(ROOT)["packages"])
    assert init_folders(ROOT) == listed - {COMMAND}
    assert setuptools_config(ROOT)["package-dir"][COMMAND] == setuptools_config(ROOT)["package-dir"]["dpaudit"]


def test_a_folder_missing_from_the_list_is_caught(tmp_path: Path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for folder in package_dirs(ROOT).values():
        shutil.copytree(folder, tmp_path / folder.relative_to(ROOT), ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "audit" / "engine" / "newpart").mkdir()
    (tmp_path / "audit" / "engine" / "newpart" / "__init__.py").write_text("", encoding="utf-8")
    assert init_folders(tmp_path) - set(setuptools_config(tmp_path)["packages"]) == {"dpaudit.engine.newpart"}


ONE_COPY = """
import audit, dpaudit.core
assert audit.InputError is dpaudit.core.InputError and audit.__version__ == dpaudit.__version__
try:
    import audit.core
except ModuleNotFoundError as exc:
    print("refused", exc.name)
else:
    print("second copy", audit.core.InputError is dpaudit.core.InputError)
"""


@pytest.mark.parametrize("where", ["checkout", "elsewhere"])
def test_audit_is_only_the_command_and_never_a_second_copy(tmp_path: Path, where: str):
    """From the checkout's root ``audit`` is the whole audit/ folder (the working folder leads
    ``sys.path``), and an editable install maps it there too: its submodules are refused, so no
    class exists twice (an ``except dpaudit.core.InputError`` misses a second copy's)."""
    cwd = ROOT if where == "checkout" else tmp_path
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", ONE_COPY], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["refused", "audit.core"]
    command = subprocess.run([sys.executable, "-m", "audit", "--version"], cwd=cwd, env=env, capture_output=True,
                             text=True, timeout=120)
    assert command.returncode == 0 and command.stdout.startswith("dpaudit "), command.stderr


def test_python_m_audit_without_the_package_says_to_install_it():
    """The checkout's folders alone are not the package: say so (exit 3, an environment failure)."""
    # -S: no site-packages, so neither an installed dpaudit nor an editable install's finder
    proc = subprocess.run([sys.executable, "-S", "-m", "audit", "--version"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert "dpaudit is not installed" in proc.stderr and "pip install" in proc.stderr
    assert "Traceback" not in proc.stderr


WITHOUT_FCNTL = """
import sys
sys.modules["fcntl"] = None  # as on Windows: `import fcntl` raises ImportError
import dpaudit, dpaudit.engine.api, dpaudit.cli, dpaudit.runs.rundir
from dpaudit.runtime.files import FolderLock
from dpaudit.mechanisms.classic import Laplace
from dpaudit.neighbors import Dataset
result = dpaudit.audit_mechanism(Laplace(epsilon=1.0), Dataset({"value": [0.0]}), Dataset({"value": [0.0, 1.0]}),
                                 samples=20_000, seed=0)
print("audited", result.epsilon_lower >= 0)
try:
    FolderLock(sys.argv[1]).acquire()
except OSError as exc:
    print("lock refused:", exc.strerror)
"""


def test_the_package_and_an_audit_need_no_fcntl(tmp_path: Path):
    """fcntl is POSIX-only: only the lock on a run's folder needs it, and says so where it is missing."""
    proc = subprocess.run([sys.executable, "-c", WITHOUT_FCNTL, str(tmp_path)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "audited True"
    assert lines[1].startswith("lock refused: locking a run's folder") and "fcntl.flock" in lines[1]
    assert not (tmp_path / ".lock").exists()  # refused before the lock file is created


NUMBERS = ("scenario", "claim_id", "delta", "epsilon_lower", "epsilon_exact", "verdict", "event")


def _suite_numbers(cwd: Path, *backend: str) -> list[dict]:
    """``python -m dpaudit run --family classic`` from ``cwd`` as a user runs it (no PYTHONPATH): its records."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "dpaudit", "run", "--family", "classic", "--samples", "100000",
                           "--seed", "3", "--json", *backend], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [{k: r[k] for k in NUMBERS} for r in json.loads(proc.stdout)["records"]]


@pytest.mark.slow  # starts a Dask cluster (~20 s)
def test_the_dask_backend_runs_outside_the_checkout(tmp_path: Path):
    """The workers check that they can import dpaudit and the audited mechanisms' modules, nothing
    generic (a worker outside the checkout has no top-level `mechanisms`): the built-in family runs
    from a folder that is not the checkout and gives the numbers of the local backend."""
    pytest.importorskip("distributed")
    local = _suite_numbers(tmp_path)
    assert _suite_numbers(tmp_path, "--backend", "dask", "--jobs", "2") == local
    assert len(local) == 3 and all(r["verdict"] for r in local)


def test_the_type_check_names_each_real_file_by_its_import_name(monkeypatch):
    """.ci/typecheck.py hands mypy every file of the real folders once, under the name the wheel
    gives it, and keeps [tool.mypy]'s excludes (real paths) as silently analysed modules."""
    pytest.importorskip("mypy")
    spec = importlib.util.spec_from_file_location("typecheck", ROOT / ".ci" / "typecheck.py")
    typecheck = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(typecheck)
    monkeypatch.chdir(ROOT)
    found, options = typecheck.sources([])
    assert {s.module: Path(s.path).resolve() for s in found} == {n: p.resolve() for n, p in module_files(ROOT).items()}
    silent = {s.module for s in found if options.clone_for_module(s.module).ignore_errors}
    checked = {"dpaudit", "dpaudit.core", "dpaudit.engine.api", "dpaudit.runtime.files", "dpaudit.mechanisms.base",
               "dpaudit.cli.run", "dpaudit.neighbors", "dpaudit.reports", "dpaudit.catalog.kl"}
    assert not silent and checked <= {s.module for s in found}  # every module is checked: no exclude is left
    # an exclude (a real path, as mypy matches them) makes its folder's modules analysed silently
    found, options = typecheck.sources(["--exclude", "^mechanisms/", "--exclude", "^audit/cli/"])
    silent = {s.module for s in found if options.clone_for_module(s.module).ignore_errors}
    assert {"dpaudit.mechanisms", "dpaudit.mechanisms.base", "dpaudit.cli.run"} <= silent
    assert not {"dpaudit", "dpaudit.core", "dpaudit.engine.api", "dpaudit.neighbors"} & silent
