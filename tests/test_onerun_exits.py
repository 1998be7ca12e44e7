"""A one-run mechanism, scorer or ``name`` that calls ``sys.exit`` or raises ``KeyboardInterrupt`` is the
user's bad input on every one-run path (issue 37, item 6): an ``InputError`` naming the function in
the API and the pytest helper, exit 2 from the command line — never exit 0, never a "finding"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dpaudit.core import InputError
from dpaudit.onerun import CanaryGame, audit_one_run
from dpaudit.testing import assert_private_one_run
from tests.clirun import in_process
from tests.plugins import exiting_runs as plug

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = "tests.plugins.exiting_runs"

CASES = [
    (plug.exits, plug.score, r"mechanism tests\.plugins\.exiting_runs\.exits raised SystemExit\(0\)"),
    (plug.interrupts, plug.score, r"mechanism tests\.plugins\.exiting_runs\.interrupts raised KeyboardInterrupt"),
    (plug.honest, plug.score_exits, r"scorer tests\.plugins\.exiting_runs\.score_exits raised SystemExit\(0\)"),
    (plug.honest, plug.score_exits_1, r"scorer tests\.plugins\.exiting_runs\.score_exits_1 raised SystemExit\(1\)"),
]


IDS = ["mechanism-exit-0", "mechanism-interrupt", "scorer-exit-0", "scorer-exit-1"]


@pytest.mark.parametrize(("mechanism", "scorer", "message"), CASES, ids=IDS)
def test_the_game_and_the_api_name_the_function(mechanism, scorer, message):
    with pytest.raises(InputError, match=message):
        CanaryGame(m=20).play(mechanism, scorer, canaries=range(20))
    with pytest.raises(InputError, match=message):
        audit_one_run(mechanism, scorer, m=20)


@pytest.mark.parametrize(("mechanism", "scorer", "message"), CASES, ids=IDS)
def test_assert_private_one_run_lets_no_exit_escape(mechanism, scorer, message):
    with pytest.raises(InputError, match=message):
        assert_private_one_run(mechanism, scorer, epsilon=1.0, m=20)


CONFIG = """
[[scenario]]
name = "exiting"
mechanism = "{plugin}:{mechanism}"
scorer = "{plugin}:{scorer}"
canaries = 20
rule = {{ kind = "fixed", k_plus = 5, k_minus = 5 }}

[[scenario.claim]]
epsilon = 2.0
delta = 1e-5
"""


def _config(tmp_path: Path, mechanism: str, scorer: str = "score") -> Path:
    path = tmp_path / "exiting.toml"
    path.write_text(CONFIG.format(plugin=PLUGIN, mechanism=mechanism, scorer=scorer), encoding="utf-8")
    return path


@pytest.mark.parametrize(("mechanism", "scorer", "needle"), [
    ("exits", "score", "exiting_runs.exits raised SystemExit(0)"),
    ("interrupts", "score", "exiting_runs.interrupts raised KeyboardInterrupt"),
    ("honest", "score_exits", "exiting_runs.score_exits raised SystemExit(0)"),
    ("honest", "score_exits_1", "exiting_runs.score_exits_1 raised SystemExit(1)"),
    ("NameExits", "score", "name property of tests.plugins.exiting_runs.NameExits raised SystemExit(0)"),
], ids=[*IDS, "name-exit-0"])
def test_the_command_line_exits_2_naming_the_function(tmp_path, mechanism, scorer, needle):
    done = in_process("run", _config(tmp_path, mechanism, scorer), "--allow-plugin", PLUGIN, "--quiet")
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert needle in done.stderr and "exiting" in done.stderr


def test_a_real_process_exits_2_not_0(tmp_path):
    done = subprocess.run([sys.executable, "-m", "audit", "run", str(_config(tmp_path, "exits")), "--allow-plugin",
                           PLUGIN, "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "SystemExit(0)" in done.stderr and "Traceback" not in done.stderr


def test_the_honest_twin_runs(tmp_path):
    """The twin: an honest run exits 0 (Steinke's bound of 10 guesses on 20 canaries is < 1.06 < 2)."""
    done = in_process("run", _config(tmp_path, "honest"), "--allow-plugin", PLUGIN, "--quiet")
    assert done.returncode == 0, done.stderr
