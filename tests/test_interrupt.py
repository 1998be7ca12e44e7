"""A Ctrl-C (SIGINT) ends a run with a clean partial result and exit 130, whatever the phase.

Before: a Ctrl-C once estimation outputs were counted gave the bound of what was counted, but one
during a scenario's setup, the selection split, the event selection, the tail pilot or the pair
search's pilot ended in exit 130 with nothing written.  Now such a scenario is a partial result
with no bound (eps_lower 0 at every delta, from no counts) and no claim checked — with nothing
counted there is no evidence either way, so no claim reads as holding — and results.json says
``complete: false``; the run exits 130, never 0, since not every expectation was checked
(tests/test_exit_truth.py).  A second Ctrl-C still stops at once (exit 130).

The fast tests send a real SIGINT to this process from inside the run (the mechanism, or the
event selection, signals at a chosen call), handled by the application's own handler; the slow
ones start ``python -m audit run`` and signal it once its progress line shows the phase.
The twin (a Ctrl-C during estimation keeps the bound of what was counted) is
``test_sigint_during_estimation_keeps_the_bound_counted`` here, with
tests/test_memory_budgets.py::test_a_1e13_budget_holds_little_memory_and_ctrl_c_leaves_the_bound_of_what_was_counted
and ::test_cli_1e13_peak_rss_below_2_gib_and_sigint_exits_130 (local and Dask).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from dpaudit.cli import main
from dpaudit.engine import runner
from dpaudit.engine.api import audit_mechanism
from dpaudit.engine.search import QueryVectors, search_pair
from dpaudit.engine.verdicts import HOLDS, NO_CLAIM
from dpaudit.results.saved import load_results
from dpaudit.runtime import interrupts

ROOT = Path(__file__).resolve().parents[1]

# A rounded Laplace count (eps <= 1 on the pair below) that, on its CALL-th call under DATA (0: D, 1: D'),
# either sends SIGINT to its own process ("signal") or waits until the file RELEASE exists ("block",
# for a test that signals the run from outside once its progress shows the phase).
PLUGIN = '''
import os, signal, time
import numpy as np

ACTION, CALL, DATA, RELEASE = {action!r}, {call!r}, {data!r}, {release!r}


class Stops:
    name = "stops"

    def __init__(self):
        self.calls = 0

    def sample(self, data, size, rng):
        total = float(np.sum(data))
        if len(np.atleast_1d(data)) == 2 + DATA:
            self.calls += 1
            if self.calls == CALL and ACTION == "signal":
                os.kill(os.getpid(), signal.SIGINT)
            elif self.calls == CALL and ACTION == "block":
                end = time.monotonic() + 300
                while not os.path.exists(RELEASE) and time.monotonic() < end:
                    time.sleep(0.05)
        return np.rint(total + rng.laplace(0.0, 1.0, size)).astype(np.int64)

    def guarantees(self, data, relation):
        import dpaudit
        if ACTION == "signal-in-setup":
            os.kill(os.getpid(), signal.SIGINT)
        return [dpaudit.Guarantee(epsilon=1.0, delta=0.0, relation=relation, source="test", claim_id="test/eps1")]


stops = Stops()
pair = (np.array([0.0, 1.0]), np.array([0.0, 1.0, 1.0]))
'''


def _plugin(tmp_path: Path, name: str, action: str, call: int = 1, data: int = 1) -> str:
    (tmp_path / f"{name}.py").write_text(PLUGIN.format(action=action, call=call, data=data,
                                                       release=str(tmp_path / "release")))
    sys.modules.pop(name, None)
    return name


@pytest.fixture
def ctrl_c():
    """The application's SIGINT handler, as ``python -m audit`` installs it."""
    runner.USER_INTERRUPT.clear()
    previous = signal.signal(signal.SIGINT, interrupts.note_user_interrupt)
    yield
    signal.signal(signal.SIGINT, previous)
    runner.USER_INTERRUPT.clear()


def _no_bound(result, phase: str) -> None:
    """A scenario stopped before anything was counted: no bound, no claim checked, the phase named."""
    assert not result.estimate.measured
    assert [b.epsilon_lower for b in result.estimates] == [0.0] * len(result.estimates)
    assert all(b.counts == (0, 0, 0, 0) for b in result.estimates)
    assert result.claims == () and result.finding == NO_CLAIM
    [record] = result.records()
    assert record["finding"] == NO_CLAIM and record["claim_id"] is None and record["as_expected"]
    assert phase in result.sequential and "no claim checked" in result.sequential
    assert HOLDS not in str(result)


def _load(tmp_path, name):
    sys.path.insert(0, str(tmp_path))
    try:
        module = __import__(name)
    finally:
        sys.path.remove(str(tmp_path))
    return module


# --- each phase, on the library's entry point with the application's handler ---------------

def test_ctrl_c_during_the_selection_split_gives_no_bound(tmp_path, ctrl_c):
    plugin = _load(tmp_path, _plugin(tmp_path, "stops_selection", "signal", call=1))  # D' selection chunk 0
    result = audit_mechanism(plugin.stops, *plugin.pair, samples=100_000, epsilon=1.0, deltas=(0.0, 1e-6))
    _no_bound(result, "during the selection split")
    assert result.samples == 0  # D' had no selection output yet
    assert [b.delta for b in result.estimates] == [0.0, 1e-6]


def test_ctrl_c_during_the_event_selection_gives_no_bound(tmp_path, ctrl_c, monkeypatch):
    plugin = _load(tmp_path, _plugin(tmp_path, "stops_never", "none"))
    choose = runner.select_events

    def interrupted(*args, **kwargs):  # the Ctrl-C lands in our own code, not the mechanism's
        os.kill(os.getpid(), signal.SIGINT)
        return choose(*args, **kwargs)

    monkeypatch.setattr(runner, "select_events", interrupted)
    result = audit_mechanism(plugin.stops, *plugin.pair, samples=100_000, epsilon=1.0)
    _no_bound(result, "during the event selection")
    assert result.samples == result.estimate.selection_samples == 20_000  # both sides' selection split drawn


def test_ctrl_c_during_the_tail_pilot_gives_no_bound(tmp_path, ctrl_c, monkeypatch):
    """A selection cap of 5,000 (instead of 3e6) makes the tail pilot run on a small budget: 15,000
    pilot outputs per side; the Ctrl-C comes at the pilot's draw under D' (the 2nd call under D')."""
    plugin = _load(tmp_path, _plugin(tmp_path, "stops_pilot", "signal", call=2))
    monkeypatch.setattr(runner, "selection_size", lambda samples, fraction: min(int(samples * fraction), 5_000))
    result = audit_mechanism(plugin.stops, *plugin.pair, samples=100_000, epsilon=1.0, events="threshold")
    _no_bound(result, "during the tail pilot")
    assert result.estimate.selection_samples == 5_000


def test_the_tail_pilot_runs_in_that_setting(tmp_path, monkeypatch):
    """The twin of the pilot test: without the Ctrl-C the same budget runs its tail pilot (so the
    Ctrl-C above did land in it) and ends with a bound."""
    plugin = _load(tmp_path, _plugin(tmp_path, "stops_pilot_twin", "none"))
    monkeypatch.setattr(runner, "selection_size", lambda samples, fraction: min(int(samples * fraction), 5_000))
    result = audit_mechanism(plugin.stops, *plugin.pair, samples=100_000, epsilon=1.0, events="threshold")
    assert result.estimate.measured and result.estimate.selection_samples == 20_000  # 5,000 + a pilot of 15,000
    assert plugin.stops.calls == 2 + 1  # D' drew its selection, its pilot and one estimation chunk


def test_ctrl_c_during_the_scenario_setup_gives_no_bound(tmp_path, ctrl_c):
    plugin = _load(tmp_path, _plugin(tmp_path, "stops_setup", "signal-in-setup"))
    result = audit_mechanism(plugin.stops, *plugin.pair, samples=100_000)  # its own claims: guarantees() signals
    _no_bound(result, "during the scenario's setup")
    assert plugin.stops.calls == 0  # nothing drawn


def test_ctrl_c_before_each_side_has_an_estimation_output_gives_no_bound(tmp_path, ctrl_c):
    plugin = _load(tmp_path, _plugin(tmp_path, "stops_first_pair", "signal", call=2))  # D' estimation chunk 0
    result = audit_mechanism(plugin.stops, *plugin.pair, samples=100_000, epsilon=1.0, events="rows")
    _no_bound(result, "before an output of each side was counted")


def test_ctrl_c_during_the_pair_search_pilot_gives_no_bound(tmp_path, ctrl_c):
    plugin = _load(tmp_path, _plugin(tmp_path, "stops_search", "none"))
    calls = []

    class Vector:  # a Laplace count on query vectors that signals at its 5th pilot draw
        name = "vector-stops"

        def sample(self, data, size, rng):
            calls.append(size)
            if len(calls) == 5:
                os.kill(os.getpid(), signal.SIGINT)
            return plugin.stops.sample(np.asarray(data)[:2], size, rng)

    result = search_pair(Vector(), QueryVectors(2), samples=20_000, epsilon=1.0)
    _no_bound(result, "during the pair search's pilot")
    assert result.pair.startswith("no pair chosen") and result.search is None


def test_a_second_ctrl_c_stops_at_once(tmp_path, ctrl_c):
    """After a first Ctrl-C (the flag is set), the next SIGINT is an Abort: no partial result."""
    plugin = _load(tmp_path, _plugin(tmp_path, "stops_twice", "signal", call=1))
    runner.USER_INTERRUPT.set()
    with pytest.raises(interrupts.Abort):
        audit_mechanism(plugin.stops, *plugin.pair, samples=100_000, epsilon=1.0)


def test_a_keyboard_interrupt_without_the_handler_still_propagates(tmp_path, monkeypatch):
    """A library caller who installed no handler gets Python's KeyboardInterrupt as before (from our
    code), not a result it did not ask for."""
    plugin = _load(tmp_path, _plugin(tmp_path, "stops_library", "none"))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "select_events", interrupted)
    runner.USER_INTERRUPT.clear()
    with pytest.raises(KeyboardInterrupt):
        audit_mechanism(plugin.stops, *plugin.pair, samples=100_000, epsilon=1.0)


# --- the command line, in process: exit 130, files written, complete false ---------------------

def _cli(tmp_path, name, *extra):
    out = tmp_path / "out"
    sys.path.insert(0, str(tmp_path))
    try:
        code = main(["run", "--mechanism", f"{name}:stops", "--pair", f"{name}:pair", "--samples", "100000",
                     "--quiet", "--out", str(out), *extra])
    finally:
        sys.path.remove(str(tmp_path))
    return code, out


def _partial_file(out: Path) -> dict:
    payload = load_results(out / "results.json")  # checked like any saved run: it must pass
    assert payload["complete"] is False and payload["as_expected"] is True
    [record] = payload["records"]
    assert record["epsilon_lower"] == 0.0 and record["finding"] == NO_CLAIM and record["claim_id"] is None
    assert "interrupted by the user" in record["sequential"]
    assert "no claim checked" in (out / "summary.txt").read_text()
    return record


def test_cli_ctrl_c_during_selection_exits_130_with_a_partial_file(tmp_path, capsys):
    code, out = _cli(tmp_path, _plugin(tmp_path, "cli_stops_selection", "signal", call=1), "--epsilon", "1")
    captured = capsys.readouterr()
    assert code == 130, captured.err
    record = _partial_file(out)
    assert "during the selection split" in record["sequential"]
    assert re.search(r"wrote .*results\.json, .*summary\.txt", captured.out)
    assert "holds at this budget" not in captured.out
    # `summary` of the partial file: nothing found, not everything checked: exit 130, as the run
    assert main(["summary", str(out / "results.json")]) == 130
    assert "INCOMPLETE run" in capsys.readouterr().out


def test_cli_ctrl_c_during_the_pair_search_exits_130_with_a_partial_file(tmp_path, capsys):
    name = "cli_stops_search"
    (tmp_path / f"{name}.py").write_text('''
import os, signal
import numpy as np

class Stops:
    name = "search-stops"
    calls = 0

    def sample(self, data, size, rng):
        Stops.calls += 1
        if Stops.calls == 5:
            os.kill(os.getpid(), signal.SIGINT)
        return np.round(float(np.sum(data)) + rng.laplace(0.0, 1.0, size), 6)

stops = Stops()
''')
    sys.modules.pop(name, None)
    out = tmp_path / "out"
    sys.path.insert(0, str(tmp_path))
    try:
        code = main(["run", "--mechanism", f"{name}:stops", "--search", "queries:2", "--samples", "20000",
                     "--epsilon", "1", "--quiet", "--out", str(out)])
    finally:
        sys.path.remove(str(tmp_path))
    captured = capsys.readouterr()
    assert code == 130, captured.err
    record = _partial_file(out)
    assert "during the pair search's pilot" in record["sequential"]
    assert record["pair"].startswith("no pair chosen")


# --- the command line in a subprocess, signalled from outside ---------------------------------

PROGRESS = re.compile(r"^\[dpaudit\] stops: (\d+)/(\d+) samples")


def _signal_when(proc: subprocess.Popen, lines: list[str], in_phase, release: Path) -> int:
    """SIGINT, as a Ctrl-C at a terminal sends it (to the run's whole process group: its Dask or
    loky workers too), once a progress line shows ``in_phase(done)``; the samples done then."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        shown = [int(m.group(1)) for m in map(PROGRESS.match, list(lines)) if m]
        if shown and in_phase(shown[-1]):
            os.killpg(proc.pid, signal.SIGINT)
            release.touch()  # the blocked draw may end now: the run is interrupted
            return shown[-1]
        time.sleep(0.2)
    raise AssertionError(f"no progress line of the phase: {''.join(lines)[-2000:]}")


def _start(tmp_path: Path, name: str, samples: int, *extra: str) -> tuple[subprocess.Popen, list[str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    cmd = [sys.executable, "-m", "audit", "run", "--mechanism", f"{name}:stops", "--pair", f"{name}:pair",
           "--samples", str(samples), "--epsilon", "1", "--out", str(tmp_path / "out"), *extra]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # its own process group, as a terminal's job
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()  # type: ignore[arg-type]
    return proc, lines


def _finish(proc: subprocess.Popen, lines: list[str]) -> str:
    try:
        out, _ = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, "".join(lines)[-3000:]
    assert "Traceback" not in "".join(lines), "".join(lines)[-3000:]  # the workers print none either
    return out


@pytest.mark.slow  # a subprocess, and a progress line every 5 s
@pytest.mark.parametrize("backend", ["local", "dask"])
def test_sigint_during_selection_exits_130_with_no_bound(tmp_path, backend):
    """The mechanism blocks on its first draw under D' (the selection split: 20,000 outputs per side
    of a 100,000 budget); the progress line then shows 20,000 of 200,000 samples, fewer than both
    sides' selection split (40,000), and the run is signalled there."""
    extra = ["--backend", "dask", "--jobs", "2"] if backend == "dask" else []
    if backend == "dask":
        pytest.importorskip("distributed")
    name = _plugin(tmp_path, f"sub_stops_selection_{backend}", "block", call=1)
    proc, lines = _start(tmp_path, name, 100_000, *extra)
    done = _signal_when(proc, lines, lambda n: 0 < n < 2 * 20_000, tmp_path / "release")
    assert done == 20_000
    out = _finish(proc, lines)
    record = _partial_file(tmp_path / "out")
    assert "during the selection split" in record["sequential"]
    assert "wrote" in out and "results.json" in out


@pytest.mark.slow  # a subprocess, and a progress line every 5 s
def test_sigint_during_estimation_keeps_the_bound_counted(tmp_path):
    """The twin: blocked on its 3rd draw under D' (the 2nd estimation chunk: the selection split is
    200,000 per side of 10^6), signalled once progress is past both selection splits; the partial
    result keeps the bound of the outputs counted, with its claim checked."""
    name = _plugin(tmp_path, "sub_stops_estimation", "block", call=3)
    proc, lines = _start(tmp_path, name, 1_000_000, "--events", "rows")
    _signal_when(proc, lines, lambda n: n > 2 * 200_000, tmp_path / "release")
    _finish(proc, lines)
    payload = json.loads((tmp_path / "out" / "results.json").read_text())
    assert payload["complete"] is False
    [record] = payload["records"]
    assert record["claim_id"] == "user/claim" and record["finding"] == HOLDS
    counts = record["event"]["counts"]
    assert counts["D"][1] > 0 and counts["D'"][1] > 0 and 0 < record["epsilon_lower"] <= 1.0
    assert "interrupted by the user: a partial result of" in record["sequential"]


def test_cli_ctrl_c_between_two_scenarios_keeps_the_first(tmp_path, monkeypatch, capsys):
    """A suite of several scenarios, signalled as the second audit is called (in the application's
    own code, between two audits): the first scenario's result is the partial file, exit 130."""
    from dpaudit.cli import run as cli_run

    real, calls = cli_run.audit_mechanism, []

    def second_signals(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(cli_run, "audit_mechanism", second_signals)
    out = tmp_path / "out"
    assert main(["run", "--samples", "2000", "--quiet", "--out", str(out)]) == 130, capsys.readouterr().err
    payload = load_results(out / "results.json")
    assert payload["complete"] is False and len(payload["scenarios"]) == 1 < payload["scenarios_planned"]
    assert len(calls) == 2
    assert "INCOMPLETE run: interrupted after 1 of" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["sweep", "kl-mab", "--n", "4,8", "--samples", "2000"],
                                     ["plan", "align-alg2-zero-out", "--samples", "2000", "--jobs", "1"]],
                         ids=["sweep", "plan"])
def test_other_commands_stop_at_once_on_ctrl_c(command, monkeypatch, capsys):
    """``sweep`` and ``plan`` have no partial result to give: a Ctrl-C in an audit's event selection
    (where ``run`` would end that audit with no bound) stops them with exit 130, never a sweep
    point or a plan computed from an audit that counted nothing."""
    choose, calls = runner.select_events, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        os.kill(os.getpid(), signal.SIGINT)
        return choose(*args, **kwargs)

    monkeypatch.setattr(runner, "select_events", interrupted)
    assert main(command) == 130
    assert calls == [1] and "interrupted" in capsys.readouterr().err
