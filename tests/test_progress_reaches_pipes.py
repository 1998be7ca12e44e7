"""What a long command says while it works reaches a pipe or a CI log (issue 41, item 20): ``plan``'s
planning after its pilot (simulations, timed chunks) says it is alive; a passing ``assert_private``
says what it could have caught at the end of the pytest run; the README says a resume of a plugin
run needs ``--allow-plugin`` again."""

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from dpaudit.core import InputError
from dpaudit.engine import plan as budget_plan
from dpaudit.runtime import progress
from dpaudit.runtime.progress import Heartbeat, progress_line
from tests.clirun import in_process

ROOT = Path(__file__).resolve().parents[1]


def test_a_heartbeat_speaks_while_nothing_else_does(capfd):
    """Silent work under a heartbeat of 0.2 s: its line comes (waited for, up to 60 s on a loaded
    machine, rather than a fixed sleep)."""
    line = re.compile(r"\[dpaudit\] work: still working, \d+ s so far \(\d+ s of CPU\)")
    err = ""
    with Heartbeat("work", every=0.2):
        deadline = time.monotonic() + 60
        while not line.search(err) and time.monotonic() < deadline:
            time.sleep(0.05)
            err += capfd.readouterr().err
    assert line.search(err), err


def test_a_heartbeat_stays_quiet_while_progress_lines_flow(capfd):
    with Heartbeat("work", every=0.5):
        for _ in range(20):
            progress_line("[dpaudit] work: 10/20 samples")
            time.sleep(0.05)
    err = capfd.readouterr().err
    assert "still working" not in err and err.count("10/20 samples") == 20


def test_plan_says_it_is_alive_while_it_plans(monkeypatch):
    """The planner's own computations (stood in by a slow call) are covered by the heartbeat.  The
    stand-in works until a heartbeat line is on the captured stderr (up to 60 s on a loaded machine,
    rather than a fixed sleep); without one the assertion below fails."""
    def slow_plan(*args, **kwargs):
        deadline = time.monotonic() + 60
        while "still working" not in sys.stderr.getvalue() and time.monotonic() < deadline:  # in_process's
            time.sleep(0.05)
        raise InputError("the stand-in planner stops here")

    monkeypatch.setattr(budget_plan, "plan", slow_plan)
    monkeypatch.setattr(progress, "HEARTBEAT_SECONDS", 0.2)
    found = in_process("plan", "align-alg2-zero-out")
    assert found.returncode == 2, found.stderr
    assert "plan align-alg2-zero-out: still working" in found.stderr, found.stderr


def test_the_pytest_run_ends_with_what_each_pass_could_have_caught(tmp_path):
    (tmp_path / "test_mine.py").write_text(textwrap.dedent("""\
        from dpaudit.mechanisms.classic import RandomizedResponse
        from dpaudit.neighbors import Dataset
        from dpaudit.testing import assert_private


        def test_rr():
            d = Dataset({"bit": [0]})
            assert_private(RandomizedResponse(1.0), d, d.add({"bit": 1}), epsilon=1.0, samples=20_000)
        """))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_mine.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    tail = proc.stdout[proc.stdout.index("dpaudit: what each passing assert_private could have caught"):]
    assert re.search(r"test_mine.py::test_rr: assert_private\(randomized-response, epsilon=1, delta=0\): holds "
                     r"at this budget, epsilon_lower [\d.]+; could have caught: ", tail), tail


def test_the_readme_says_a_resume_of_a_plugin_run_needs_allow_plugin_again():
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    sentences = re.split(r"(?<=[.;])\s", text)
    assert any("resume" in s and "needs the same `--allow-plugin`" in s for s in sentences)
