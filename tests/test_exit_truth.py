"""Exit codes tell the truth (issue 37): a run that did not check every expectation never exits 0.

Before: a run stopped by SIGINT (a Ctrl-C, ``timeout -s INT``, a cancelled CI job) printed "every
verdict as expected" and exited 0, although the scenarios after the interrupted one were never
run and their expected verdicts (the errata the suite exists to catch) were dropped; ``summary`` of
the same file exited 2.  Now both exit 130 (the shell's code of a command SIGINT stopped), the
footer says the run is INCOMPLETE, how many claims of the plan (each with its expected verdict)
went unchecked and how to resume it;
a finding among what was checked still exits 1.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dpaudit import catalog
from dpaudit.cli.expectations import MISSED, exit_status, planned_claims, unchecked_expectations
from dpaudit.engine import runner
from dpaudit.engine.verdicts import HOLDS, REFUTED_EMPIRICAL
from dpaudit.results.saved import load_results
from dpaudit.runtime import interrupts
from tests.clirun import in_process

ROOT = Path(__file__).resolve().parents[1]

# A rounded Laplace count (eps <= 1 on the pair) whose first draw under D' says so (the file READY)
# and waits for RELEASE: the test signals the run from outside while the run is inside the audit.
PLUGIN = '''
import os, time
import numpy as np

READY, RELEASE = {ready!r}, {release!r}


class Waits:
    name = "waits"

    def sample(self, data, size, rng):
        if len(np.atleast_1d(data)) == 3 and not os.path.exists(READY):
            open(READY, "w").close()
            end = time.monotonic() + 120
            while not os.path.exists(RELEASE) and time.monotonic() < end:
                time.sleep(0.02)
        return np.rint(float(np.sum(data)) + rng.laplace(0.0, 1.0, size)).astype(np.int64)


waits = Waits()
pair = (np.array([0.0, 1.0]), np.array([0.0, 1.0, 1.0]))
'''


def _interrupted_subprocess(tmp_path: Path) -> subprocess.CompletedProcess:
    """``python -m audit run`` of the plugin, sent SIGINT (as ``timeout -s INT`` sends it: to the run's
    own process) while its mechanism draws."""
    (tmp_path / "waits_plugin.py").write_text(PLUGIN.format(ready=str(tmp_path / "ready"),
                                                            release=str(tmp_path / "release")))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    cmd = [sys.executable, "-m", "audit", "run", "--mechanism", "waits_plugin:waits", "--pair", "waits_plugin:pair",
           "--samples", "20000", "--epsilon", "1", "--jobs", "1", "--quiet", "--out", str(tmp_path / "out")]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "ready").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.2)  # the handler runs once the blocked draw returns to the interpreter loop
        (tmp_path / "release").touch()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def test_a_run_interrupted_by_sigint_exits_130_and_summary_of_its_folder_too(tmp_path):
    done = _interrupted_subprocess(tmp_path)
    assert done.returncode == 130, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "every verdict as expected" not in done.stdout
    assert "INCOMPLETE run: interrupted after 1 of 1 scenarios" in done.stdout
    assert "1 claim of the plan, with its expected verdict, was not checked" in done.stdout  # --epsilon 1
    assert f"run --resume {tmp_path / 'out'}" in done.stdout
    payload = load_results(tmp_path / "out")
    assert payload["complete"] is False
    summary = in_process("summary", tmp_path / "out")
    assert summary.returncode == 130, summary.stderr
    assert "INCOMPLETE run" in summary.stdout and "every verdict as expected" not in summary.stdout
    assert in_process("summary", tmp_path / "out" / "results.json", "--json").returncode == 130


@pytest.fixture
def ctrl_c():
    """The application's SIGINT handler, as ``python -m audit`` installs it."""
    runner.USER_INTERRUPT.clear()
    previous = signal.signal(signal.SIGINT, interrupts.note_user_interrupt)
    yield
    signal.signal(signal.SIGINT, previous)
    runner.USER_INTERRUPT.clear()


def test_an_interrupted_suite_says_how_many_expected_verdicts_went_unchecked(tmp_path, monkeypatch):
    """The default suite, signalled as its second audit starts: the first scenario is the partial
    result; every claim of the others (each with its expected verdict) is counted as unchecked, in
    the footer and in the file that ``summary`` re-reads."""
    from dpaudit.cli import run as cli_run

    real, calls = cli_run.audit_mechanism, []

    def second_signals(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(cli_run, "audit_mechanism", second_signals)
    out = tmp_path / "out"
    done = in_process("run", "--samples", "2000", "--quiet", "--out", out)
    assert done.returncode == 130, done.stderr
    scenarios = catalog.suite("default")
    designs = catalog.onerun_suite("default")
    expected = (sum(len(planned_claims(sc.expected, sc.claims)) for sc in scenarios[1:])
                + sum(len(planned_claims(d.expected, d.claims)) for d in designs))
    assert expected >= sum(len(sc.expected) for sc in scenarios[1:]) > 0
    noun = f"{expected} claims of the plan, with their expected verdicts, were not checked"
    assert noun in done.stdout
    assert f"interrupted after 1 of {len(scenarios) + len(designs)} scenarios" in done.stdout
    assert "every verdict as expected" not in done.stdout
    assert load_results(out)["expectations_unchecked"] == expected
    summary = in_process("summary", out)
    assert summary.returncode == 130 and noun in summary.stdout


def _record(finding: str, expected: str | None = None, sequential: str | None = None) -> dict:
    return {"finding": finding, "expected_verdict": expected, "claim_id": "c", "sequential": sequential,
            "claim_status": "refuted"}


CUT = "interrupted by the user: a partial result of 10 of 100 estimation samples per side"


def test_exit_status_of_complete_and_incomplete_runs():
    held, caught = _record(HOLDS), _record(REFUTED_EMPIRICAL, "violation")
    missed, unexpected = _record(HOLDS, "violation"), _record(REFUTED_EMPIRICAL)
    assert exit_status([held, caught], complete=True) == 0
    assert exit_status([held, caught], complete=False) == 130  # before: 0 from run, 2 from summary
    assert exit_status([held, missed], complete=True) == 1
    assert exit_status([held, unexpected], complete=False) == 1  # a finding among what was checked stands
    assert exit_status([held, missed], complete=False) == 1  # a scenario that ran to its end missed it
    # the scenario the Ctrl-C cut short did not spend its budget: its missed refutation is unchecked
    assert exit_status([held, _record(HOLDS, "violation", CUT)], complete=False) == 130


def test_unchecked_expectations_counts_what_was_dropped():
    planned = [{"a", "b"}, {"c"}, None]
    done = [[{**_record(REFUTED_EMPIRICAL, "violation"), "claim_id": "a"}]]
    assert unchecked_expectations(planned, done) == (2, False)  # b dropped (no record), c not run
    cut = [[{**_record(HOLDS, "violation", CUT), "claim_id": "a"}, {**_record(HOLDS, "pass"), "claim_id": "b"}],
           [{**_record(REFUTED_EMPIRICAL, "violation"), "claim_id": "c"}], []]
    assert unchecked_expectations(planned, cut) == (1, True)
    assert MISSED == "MISSED expected violation"


def test_planned_claims_are_the_expected_ones_and_those_given():
    class Claim:
        claim_id = "user/claim"

    assert planned_claims({"a": "pass"}, None) == {"a"}
    assert planned_claims({}, [Claim()]) == {"user/claim"}
    assert planned_claims({}, None) is None  # the mechanism's own claims: known once it runs
