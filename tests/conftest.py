"""The tests run against the installed ``dpaudit`` (an editable install of this checkout in
development and CI, a wheel or the sdist's install in the packaging checks): the checkout's
folders are not importable as ``dpaudit`` by themselves (``package-dir`` in pyproject.toml maps
them), so nothing here puts the checkout on ``sys.path`` for the package (pytest puts the
checkout's root there for the ``tests`` package itself)."""

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

try:
    import dpaudit
except ModuleNotFoundError as exc:  # say what to do, not a collection error per test file
    if exc.name != "dpaudit":
        raise
    raise pytest.UsageError("dpaudit is not installed in this Python: the tests run against the installed "
                            "package (pip install -e '.[test]' in the checkout)") from None

from tests.clirun import CliRun, in_process, skip_report_pdf
from tests.kinds import KIND_OF_FILE

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent

pytest_plugins = ["pytester"]


def pytest_report_header() -> str:
    """Which dpaudit the session tests: the editable checkout, or an installed wheel or sdist."""
    return f"dpaudit {dpaudit.__version__} from {Path(dpaudit.__file__).parent}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its file's kind (tests/kinds.py), so ``pytest -m statistical`` selects
    a kind without moving files.  A file missing from the table is left unmarked here (a run of
    other tests goes on) and fails tests/test_test_kinds.py; tests of a pytester session in a
    temporary folder are not this suite's and stay unmarked."""
    for item in items:
        try:
            name = Path(item.path).resolve().relative_to(TESTS).as_posix()
        except ValueError:
            continue
        kind = KIND_OF_FILE.get(name)
        if kind is not None:
            item.add_marker(kind)


@dataclass(frozen=True)
class SuiteRun:
    """The artefacts of one ``python -m audit run --out DIR`` of the default suite."""

    code: int
    stdout: str
    stderr: str
    out: Path                 # DIR: results.json, summary.txt, report.pdf, ...
    results: dict             # DIR/results.json, parsed
    summary: str              # DIR/summary.txt


def _run_default_suite(out: Path) -> dict:
    # As the README's first command: the installed package, `python -m audit` from the checkout's root.
    proc = subprocess.run([sys.executable, "-m", "audit", "run", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    return {"code": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


@pytest.fixture(scope="session")
def default_suite_run(tmp_path_factory):
    """The default suite, run ONCE per test session exactly as the README says
    (``python -m audit run --out DIR`` in a subprocess, from the checkout's root), shared by the
    CLI and report tests.  It takes 1.5-2 min (the audits, then the report PDF): its tests are
    in the slow tier.  Under pytest-xdist the workers share one run: the first to need it runs it
    under an exclusive lock in the session's common temporary folder, the others wait and read
    it (the tests only read the folder)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        out = tmp_path_factory.getbasetemp().parent / "default-run"  # one per session, shared by its workers
        out.mkdir(exist_ok=True)
        # a failed run is not shared: the next worker tries again
        found = _once_per_session(tmp_path_factory, "default-run", lambda: _run_default_suite(out),
                                  keep=lambda _: (out / "results.json").exists())
    else:
        out = tmp_path_factory.mktemp("default-run")
        found = _run_default_suite(out)
    assert (out / "results.json").exists(), f"exit {found['code']}, no results.json:\n{found['stderr'][-4000:]}"
    return SuiteRun(code=found["code"], stdout=found["stdout"], stderr=found["stderr"], out=out,
                    results=json.loads((out / "results.json").read_text()),
                    summary=(out / "summary.txt").read_text() if (out / "summary.txt").exists() else "")


@pytest.fixture(scope="session")
def listed_json(tmp_path_factory):
    """``list --json`` in this process (the ``cli`` fixture's way), run once per test session and
    shared by the tests that read its output: it builds every built-in suite's scenarios (the
    one-run designs from their registered summaries, not built), 2-5 CPU s with the imports of the
    libraries suite.  The tests only read the returned text; under pytest-xdist the workers share
    one call (:func:`_once_per_session`)."""
    return CliRun(**_once_per_session(tmp_path_factory, "list-json", lambda: vars(in_process("list", "--json"))))


def _once_per_session(tmp_path_factory, name: str, compute: Callable[[], dict],
                      keep: Callable[[dict], bool] = lambda _: True) -> dict:
    """``compute()`` (a JSON object) once per test session: under pytest-xdist the first worker to
    need it computes it under an exclusive lock in the session's common temporary folder and saves
    it when ``keep`` says so; the others wait and read it.  Without xdist, computed here."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return compute()
    common = tmp_path_factory.getbasetemp().parent  # one per session, shared by its workers
    record = common / f"{name}.json"
    with open(common / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if record.exists():
            return json.loads(record.read_text())
        found = compute()
        if keep(found):
            record.write_text(json.dumps(found))
        return found


@pytest.fixture
def cli():
    """``cli("run", ...)``: the command line run in this process (the same ``dpaudit.cli.main``
    that ``python -m audit`` calls, without a new interpreter's ~2 s start), for tests of
    what the CLI says and returns.  Tests of the process itself (signals, start-up imports,
    ``python -m``) keep a subprocess."""
    return in_process


# One-run games draw their secret and their tie-break seed from fresh entropy (no seed a user's code
# could know fixes them).  A test's statistics must not depend on the machine's entropy: in this test
# process, every test gets the two draws from one fixed stream instead (still i.i.d. Bernoulli(1/2)
# bits and uniform seeds, now reproducible), unless it is marked `fresh_entropy` because it checks the
# draws themselves.  Subprocesses draw fresh entropy, as a user's run does.
ENTROPY_SEED = 20261127


@pytest.fixture(autouse=True)
def _reproducible_one_run_entropy(request, monkeypatch):
    if request.node.get_closest_marker("fresh_entropy") is not None:
        yield
        return
    import numpy as np

    stream = np.random.default_rng(ENTROPY_SEED)
    monkeypatch.setattr("dpaudit.onerun.game.fresh_secret",
                        lambda size: stream.integers(0, 2, size=size, dtype=np.int8))
    monkeypatch.setattr("dpaudit.onerun.bound.fresh_tiebreak", lambda: int(stream.integers(0, 2**63)))
    yield


@pytest.fixture
def no_report_pdf(monkeypatch):
    """The test's ``run --out`` writes no report.pdf (:func:`tests.clirun.skip_report_pdf`)."""
    skip_report_pdf(monkeypatch)
