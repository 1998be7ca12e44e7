"""Honest packaging: metadata without invented URLs, the Apache-2.0 LICENSE, py.typed, lower
bounds only, matplotlib in a [report] extra (and clear behaviour without it), extras that let
the fast tier run without dask or statsmodels, a wheel that ships every module of the real
folders and the sample configs, and an sdist that mirrors the repository."""

import json
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.layout import module_files

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
PACKAGES = ("audit", "mechanisms", "neighbors", "reports")  # the folders `dpaudit` is made of


def test_metadata_is_complete_and_invents_no_url():
    assert PROJECT["license"] == "Apache-2.0" and PROJECT["license-files"] == ["LICENSE"]
    assert PROJECT["authors"] and all("@" not in a.get("email", "") for a in PROJECT["authors"])
    assert len(PROJECT["keywords"]) >= 3 and "Typing :: Typed" in PROJECT["classifiers"]
    assert "urls" not in PROJECT  # no public home page, repository or tracker exists to point at
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_dependencies_have_lower_bounds_only_and_the_extras_are_split():
    for requirement in PROJECT["dependencies"]:
        assert ">=" in requirement and "<" not in requirement, requirement
    assert not any(r.startswith("matplotlib") for r in PROJECT["dependencies"])
    extras = PROJECT["optional-dependencies"]
    assert [r.split(">=")[0] for r in extras["report"]] == ["matplotlib", "reportlab"]
    test = " ".join(extras["test"])
    assert "pytest" in test and "pypdf" in test and "dpaudit[report]" in test
    assert "pytest-xdist" in test  # the README's test command runs on both cores (-n 2)
    assert "dask" not in test and "statsmodels" not in test
    dev = " ".join(extras["dev"])
    # CI installs dev: every extra the tests and the README's examples need (dp-accounting via onerun)
    for name in ("dpaudit[test,dask,onerun,opendp]", "statsmodels", "ruff", "mypy"):
        assert name in dev
    assert [r.split(">=")[0] for r in extras["onerun"]] == ["dp-accounting"]
    ci = (ROOT / ".ci" / "run").read_text()
    # dev and docs, with the audited libraries' extras; torch's CPU build pinned before them (a bare
    # torch, which the opacus extra asks for, would pull a CUDA build)
    assert "-e '.[dev,docs,opacus,libraries]'" in ci
    assert ci.index("install --quiet --disable-pip-version-check torch==2.13.0") < ci.index("'.[dev,docs,")
    assert [r.split(">=")[0] for r in extras["docs"]] == ["sphinx", "sphinx-mathjax-offline"]


def _version(text: str) -> tuple[int, ...]:
    parts = tuple(int(p) for p in text.strip().split("."))
    return parts + (0,) * (3 - len(parts))


def floors() -> dict[str, tuple[int, ...]]:
    """name -> lower bound of every direct dependency of `.[test]`: the package's own, `report`'s and `test`'s."""
    extras = PROJECT["optional-dependencies"]
    requirements = [*PROJECT["dependencies"], *extras["report"], *extras["test"]]
    return {r.split(">=")[0]: _version(r.split(">=")[1]) for r in requirements if not r.startswith("dpaudit")}


def pins(text: str) -> dict[str, tuple[int, ...]]:
    lines = [line.split("#")[0].strip() for line in text.splitlines()]
    return {line.split("==")[0]: _version(line.split("==")[1]) for line in lines if line}


def test_the_oldest_versions_ci_runs_are_exactly_the_lower_bounds_of_the_test_install():
    """.ci/oldest.txt pins every direct dependency of `.[test]` at its lower bound, so CI's fast tier on
    those pins tests the bounds pyproject.toml states: a raised bound without a raised pin (or the
    reverse), or a dependency without a pin, fails here."""
    assert pins((ROOT / ".ci" / "oldest.txt").read_text()) == floors()


def test_the_oldest_pins_check_catches_a_pin_above_its_bound():
    text = (ROOT / ".ci" / "oldest.txt").read_text()
    assert "scipy==1.12.0" in text
    assert pins(text.replace("scipy==1.12.0", "scipy==1.13.0")) != floors()


def test_every_package_is_typed_and_the_configs_are_package_data():
    for package in PACKAGES:
        assert (ROOT / package / "py.typed").exists(), package
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert data["*"] == ["py.typed"] and "configs/*.toml" in data["dpaudit"] and "configs/data/*" in data["dpaudit"]
    configs = ROOT / "audit" / "configs"  # a real folder inside the package's folder, as package data must be
    assert not configs.is_symlink() and (configs / "kl-rlhf.toml").is_file() and (configs / "data").is_dir()


def test_the_readme_keeps_two_set_up_commands_that_install_the_extras_they_need():
    readme = (ROOT / "README.md").read_text()
    setup = readme[readme.index("## Set up"):readme.index("## Use")]
    commands = [block.strip() for block in setup.split("```bash")[1:]]
    commands = [c[:c.index("```")].strip() for c in commands]
    assert commands == ["python3 -m pip install '.[report]' && python3 -m dpaudit run --out audit-run",
                        "python3 -m pip install -e '.[test]' && python3 -m pytest -q -m \"not slow\" -n 2"]


def test_ci_runs_both_tiers_on_both_cores_and_names_each_lines_30_slowest_tests():
    """Issue 45: CI's log names the slowest 30 tests of every pytest line; the fast tier (as the README
    runs it) and the slow tier use both cores; the oldest-versions tier runs the unit and report kinds (each
    pinned dependency at its floor; the statistical kind's rates and bounds run once, in the main tiers)."""
    ci = (ROOT / ".ci" / "run").read_text()
    lines = [line for line in ci.splitlines() if "-m pytest" in line and not line.lstrip().startswith("#")]
    assert len(lines) == 4 and all("--durations=30" in line for line in lines), lines
    assert 'python3 -m pytest -q -m "not slow" -n 2 --durations=30' in ci
    assert "python3 -m pytest -q -m slow -n 2 --dist loadfile --durations=30" in ci  # a file's module fixtures once
    assert '-m pytest -q -m "(unit or report) and not slow" -p no:cacheprovider --durations=30' in ci


WITHOUT_MATPLOTLIB = ("import sys; sys.modules['matplotlib'] = None\n"
                      "from dpaudit.cli import main\n"
                      "sys.exit(main(sys.argv[1:]))")


def run_without_matplotlib(*args, cwd):
    return subprocess.run([sys.executable, "-c", WITHOUT_MATPLOTLIB, *args], cwd=cwd, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)


@pytest.mark.slow  # over 4 s in the fast tier (issue #12: the fast tier within 180 s)
def test_without_matplotlib_run_out_writes_results_and_says_the_pdf_was_skipped(tmp_path):
    out = tmp_path / "run"
    proc = run_without_matplotlib("run", "--mechanism", "tests.plugins.user_mechanisms:correct", "--pair",
                                  "tests.plugins.user_mechanisms:pair", "--epsilon", "1", "--samples", "20000",
                                  "--quiet", "--out", str(out), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert (out / "results.json").exists() and (out / "summary.txt").exists() and not (out / "report.pdf").exists()
    assert "report.pdf skipped: the PDF report needs the [report] extra: pip install 'dpaudit[report]'" in proc.stderr
    assert "Traceback" not in proc.stderr

    report = run_without_matplotlib("report", str(out / "results.json"), "-o", str(tmp_path / "r.pdf"), cwd=ROOT)
    assert report.returncode == 3
    assert "error: the PDF report needs the [report] extra: pip install 'dpaudit[report]'" in report.stderr
    assert "Traceback" not in report.stderr and not (tmp_path / "r.pdf").exists()
    assert json.loads((out / "results.json").read_text())["as_expected"]


def wheel_paths(root: Path) -> list[str]:
    """Where each module of the real folders lands in a wheel (`mechanisms/base.py` at `dpaudit/mechanisms/base.py`)."""
    return sorted(name.replace(".", "/") + ("/__init__.py" if path.name == "__init__.py" else ".py")
                  for name, path in module_files(root).items())


@pytest.mark.slow  # builds a wheel in an isolated environment (pip fetches setuptools)
def test_the_wheel_ships_the_configs_py_typed_and_the_license(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and "No matching distribution" in proc.stderr:
        pytest.skip("the build backend cannot be fetched here")
    assert proc.returncode == 0, proc.stderr
    names = zipfile.ZipFile(next(tmp_path.glob("dpaudit-*.whl"))).namelist()
    assert sorted(n for n in names if n.startswith("dpaudit/") and n.endswith(".py")) == wheel_paths(ROOT)
    for expected in ("dpaudit/configs/classic.toml", "dpaudit/configs/kl-rlhf.toml",
                     "dpaudit/configs/data/bandit_log.csv", "dpaudit/py.typed", "dpaudit/mechanisms/py.typed",
                     "dpaudit/neighbors/py.typed", "dpaudit/reports/py.typed", "dpaudit/core/__init__.py",
                     "dpaudit/engine/runner.py", "dpaudit/testing/pytest_plugin.py"):
        assert expected in names, expected
    # One import name of ours, and the two-file `audit` that keeps `python -m audit`: nothing generic
    # (mechanisms, neighbors, reports, dpcore) is installed at the top level.
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"dpaudit", "audit"}, tops
    assert sorted(n for n in names if n.startswith("audit/")) == ["audit/__init__.py", "audit/__main__.py",
                                                                  "audit/py.typed"]
    entry_points = zipfile.ZipFile(next(tmp_path.glob("dpaudit-*.whl"))).read(
        next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "dpaudit = dpaudit.cli:console_main" in entry_points
    assert "dpaudit = dpaudit.testing.pytest_plugin" in entry_points
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(next(tmp_path.glob("dpaudit-*.whl"))).read(metadata).decode()
    assert "License-Expression: Apache-2.0" in text and "Provides-Extra: report" in text
    assert "Requires-Dist: matplotlib>=3.8; extra == \"report\"" in text


@pytest.mark.slow  # builds the sdist in an isolated environment (build fetches setuptools)
def test_the_sdist_mirrors_the_repository(tmp_path):
    """Every file git tracks is in the sdist (MANIFEST.in), so its tests run from it: CI installs the
    sdist and runs its fast tier from the unpacked folder (.ci/run)."""
    pytest.importorskip("build")
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout: nothing to compare the sdist with")
    proc = subprocess.run([sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and "No matching distribution" in proc.stdout + proc.stderr:
        pytest.skip("the build backend cannot be fetched here")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with tarfile.open(next(tmp_path.glob("dpaudit-*.tar.gz"))) as sdist:
        names = {m.name.split("/", 1)[1] for m in sdist.getmembers() if m.isfile()}
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    missing = sorted(f for f in tracked.stdout.split("\0") if f and (ROOT / f).is_file() and f not in names)
    assert missing == []
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
