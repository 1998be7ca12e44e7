"""Progress of the one-run phase (issue 37, item 14): a line per training run, or every 5 s,
whichever is rarer, with runs done and the projected end, on stderr — never in ``--json``'s stdout;
the API is quiet unless asked."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from dpaudit.onerun import audit_one_run
from tests.clirun import in_process


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _lines(step: float, runs: int) -> list[str]:
    from dpaudit.onerun.progress import TrainingProgress
    clock, out = Clock(), io.StringIO()
    reporter = TrainingProgress("one-run demo", stream=out, clock=clock, wall=lambda: 0.0, heartbeat=0)
    with reporter:
        reporter(0, runs)
        for done in range(1, runs + 1):
            clock.now += step
            reporter(done, runs)
    return out.getvalue().splitlines()


def test_a_line_per_run_when_runs_are_slower_than_5_s():
    lines = _lines(10.0, 4)
    assert len(lines) == 4 and lines[0].startswith("[dpaudit] one-run demo: 1 of 4 training run(s) done, 10 s per run")
    assert "projected end in 30 s" in lines[0] and "projected end" not in lines[-1]


def test_every_5_s_when_runs_are_faster():
    lines = _lines(1.0, 20)
    assert len(lines) == 4 and lines[-1].startswith("[dpaudit] one-run demo: 20 of 20 training run(s) done")


CONFIG = """
[[scenario]]
name = "three-runs"
mechanism = "tests.plugins.exiting_runs:honest"
scorer = "tests.plugins.exiting_runs:score"
canaries = 20
runs = 3
rule = { kind = "fixed", k_plus = 5, k_minus = 5 }

[[scenario.claim]]
epsilon = 3.0
delta = 1e-5
"""


def test_the_command_line_reports_training_runs_on_stderr_and_keeps_json_clean(tmp_path: Path):
    (tmp_path / "c.toml").write_text(CONFIG, encoding="utf-8")
    done = in_process("run", tmp_path / "c.toml", "--allow-plugin", "tests.plugins.exiting_runs", "--json")
    assert done.returncode == 0, done.stderr
    assert "[dpaudit] one-run three-runs: 3 of 3 training run(s) done" in done.stderr
    json.loads(done.stdout)  # stdout is the document alone
    quiet = in_process("run", tmp_path / "c.toml", "--allow-plugin", "tests.plugins.exiting_runs", "--quiet")
    assert quiet.returncode == 0 and "training run" not in quiet.stderr


def test_the_api_is_quiet_unless_asked(capsys):
    def blind(dataset, rng):
        return None

    def zeros(output, canaries):
        return np.zeros(len(canaries))

    audit_one_run(blind, zeros, m=20, runs=2)
    assert capsys.readouterr().err == ""
    seen = []
    audit_one_run(blind, zeros, m=20, runs=2, progress=lambda done, runs: seen.append((done, runs)))
    assert seen == [(0, 2), (1, 2), (2, 2)]
