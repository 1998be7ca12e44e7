import sys
from pathlib import Path

# Tests run against the checkout (also when it is installed in editable mode).
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

pytest_plugins = ["pytester"]

import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import pytest  # noqa: E402

from tests.clirun import in_process  # noqa: E402


@dataclass(frozen=True)
class SuiteRun:
    """The artefacts of one ``python -m audit run --out DIR`` of the default suite."""

    code: int
    stdout: str
    stderr: str
    out: Path                 # DIR: results.json, summary.txt, report.pdf, ...
    results: dict             # DIR/results.json, parsed
    summary: str              # DIR/summary.txt


@pytest.fixture(scope="session")
def default_suite_run(tmp_path_factory):
    """The default suite, run ONCE per test session exactly as the README says
    (``python -m audit run --out DIR`` in a subprocess, against this checkout), shared by the
    CLI and report tests.  It takes 1.5-2 min (the audits, then the report PDF): its tests are
    in the slow tier."""
    out = tmp_path_factory.mktemp("default-run")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "audit", "run", "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert (out / "results.json").exists(), f"exit {proc.returncode}, no results.json:\n{proc.stderr[-4000:]}"
    return SuiteRun(code=proc.returncode, stdout=proc.stdout, stderr=proc.stderr, out=out,
                    results=json.loads((out / "results.json").read_text()),
                    summary=(out / "summary.txt").read_text() if (out / "summary.txt").exists() else "")


@pytest.fixture
def cli():
    """``cli("run", ...)``: the command line run in this process (the same ``audit.cli.main``
    that ``python -m audit`` calls, without a new interpreter's ~2 s start), for tests of
    what the CLI says and returns.  Tests of the process itself (signals, start-up imports,
    ``python -m``) keep a subprocess."""
    return in_process
