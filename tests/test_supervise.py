"""The supervised command line (dpaudit.cli.supervise): user code that calls ``os._exit(0)`` — in a
multi-run mechanism, in a one-run scorer, at the import of a config's plugin module — ends the
command with exit 2 and a one-line message, never exit 0 with no table; each SIGINT reaches the
command's process exactly once however it is sent (a terminal's Ctrl-C, ``timeout -s INT``,
``kill -INT`` of the process started); the command's process does not outlive a killed parent.

Every test runs the real command in a real process (``os._exit`` cannot be caught in-process).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the supervisor runs on POSIX (no pass_fds on Windows)")

SCRIPT = Path(sys.executable).parent / "dpaudit"
FORMS = {"module": [sys.executable, "-m", "dpaudit"], "audit": [sys.executable, "-m", "audit"],
         "script": [str(SCRIPT)]}
MESSAGE = "the process ended without dpaudit's own report (status 0): user code called os._exit"

MECHANISMS = '''
import os
import signal

import numpy as np


class Exits:
    name = "exits"

    def sample(self, data, size, rng):
        os._exit(0)


class Killed:
    name = "killed"

    def sample(self, data, size, rng):
        os.kill(os.getpid(), signal.SIGKILL)


class Forges:
    """Writes a pass into every pipe it can reach, then ends the process (red team)."""
    name = "forges"

    def sample(self, data, size, rng):
        import stat
        for fd in range(3, 256):
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    os.write(fd, b"0\\n")
            except OSError:
                pass
        os._exit(0)


class Honest:
    name = "honest"

    def sample(self, data, size, rng):
        return np.rint(float(np.sum(data)) + rng.laplace(0.0, 1.0, size)).astype(np.int64)


exits, killed, forges, honest = Exits(), Killed(), Forges(), Honest()
pair = (np.array([0.0, 1.0]), np.array([0.0, 1.0, 1.0]))


def train(dataset, rng):
    return rng.standard_normal(4)


def score_exits(output, canaries):
    os._exit(0)
'''

ONERUN_CONFIG = '''
[[scenario]]
name = "scorer-exits"
mechanism = "plug:train"
scorer = "plug:score_exits"
canaries = 20
rule = { kind = "fixed", k_plus = 5, k_minus = 5 }

[[scenario.claim]]
epsilon = 2.0
delta = 1e-5
'''

IMPORT_CONFIG = '''
[[scenario]]
name = "import-exits"
mechanism = "exits_on_import:x"
[scenario.data]
columns = { bit = [0] }
[scenario.neighbour]
add = { bit = 1 }
'''


def _cli(tmp_path: Path, *args: str, form: str = "module", env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess:
    if form == "script" and not SCRIPT.exists():
        pytest.skip("no dpaudit console script beside this interpreter")
    (tmp_path / "plug.py").write_text(MECHANISMS, encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if k != "DPAUDIT_SUPERVISED"}
    return subprocess.run([*FORMS[form], *args], cwd=tmp_path, env={**environment, **(env or {})},
                          capture_output=True, text=True, timeout=600)


def _multi_run(mechanism: str) -> list[str]:
    return ["run", "--mechanism", f"plug:{mechanism}", "--pair", "plug:pair", "--samples", "2000",
            "--epsilon", "5", "--jobs", "1", "--quiet"]


@pytest.mark.parametrize("form", ["module", "audit", "script"])
def test_os_exit_0_in_a_mechanism_is_exit_2_with_the_message(tmp_path, form):
    done = _cli(tmp_path, *_multi_run("exits"), form=form)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert MESSAGE in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1  # one line


def test_os_exit_0_in_a_one_run_scorer_is_exit_2(tmp_path):
    (tmp_path / "scorer.toml").write_text(ONERUN_CONFIG, encoding="utf-8")
    done = _cli(tmp_path, "run", "scorer.toml", "--allow-plugin", "plug", "--quiet")
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert MESSAGE in done.stderr


def test_os_exit_0_at_the_import_of_a_plugin_module_is_exit_2(tmp_path):
    (tmp_path / "exits_on_import.py").write_text("import os\n\nos._exit(0)\n", encoding="utf-8")
    (tmp_path / "imports.toml").write_text(IMPORT_CONFIG, encoding="utf-8")
    done = _cli(tmp_path, "run", "imports.toml", "--allow-plugin", "exits_on_import", "--quiet")
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert MESSAGE in done.stderr


def test_a_marker_set_by_hand_does_not_switch_the_supervisor_off(tmp_path):
    done = _cli(tmp_path, *_multi_run("exits"), env={"DPAUDIT_SUPERVISED": f"1:{os.getpid()}:0:0"})
    assert done.returncode == 2 and MESSAGE in done.stderr, (done.returncode, done.stderr)


def test_a_kill_by_a_signal_not_forwarded_is_exit_3(tmp_path):
    """SIGKILL from inside (as the out-of-memory killer sends it): nobody can be blamed, exit 3."""
    done = _cli(tmp_path, *_multi_run("killed"))
    assert done.returncode == 3, (done.returncode, done.stdout, done.stderr)
    assert "killed by SIGKILL before dpaudit finished" in done.stderr


def test_the_honest_twin_passes_through_the_supervisor_with_pure_json(tmp_path):
    done = _cli(tmp_path, *_multi_run("honest"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["complete"] is True
    assert "before dpaudit finished" not in done.stderr


# --- signals -------------------------------------------------------------------------------------

COUNTS = '''
import os
import signal
import time

import numpy as np

LOG, READY, RELEASE = {log!r}, {ready!r}, {release!r}


class Counts:
    """Counts the SIGINTs its process receives while it draws (its own handler, for that while)."""
    name = "counts"

    def sample(self, data, size, rng):
        if len(np.atleast_1d(data)) == 3 and not os.path.exists(READY):
            with open(LOG, "a") as fh:
                fh.write(f"pid {{os.getpid()}} {{os.getppid()}}\\n")
            previous = signal.signal(signal.SIGINT, lambda s, f: open(LOG, "a").write("INT\\n"))
            open(READY, "w").close()
            end = time.monotonic() + 120
            while not os.path.exists(RELEASE) and time.monotonic() < end:
                time.sleep(0.02)
            signal.signal(signal.SIGINT, previous)
        return np.rint(float(np.sum(data)) + rng.laplace(0.0, 1.0, size)).astype(np.int64)


counts = Counts()
pair = (np.array([0.0, 1.0]), np.array([0.0, 1.0, 1.0]))
'''


def _start(tmp_path: Path, prefix: list[str], **popen) -> subprocess.Popen:
    (tmp_path / "counts_plugin.py").write_text(COUNTS.format(
        log=str(tmp_path / "log"), ready=str(tmp_path / "ready"), release=str(tmp_path / "release")), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "DPAUDIT_SUPERVISED"}
    cmd = [*prefix, sys.executable, "-m", "dpaudit", "run", "--mechanism", "counts_plugin:counts", "--pair",
           "counts_plugin:pair", "--samples", "2000", "--epsilon", "5", "--jobs", "1", "--quiet"]
    return subprocess.Popen(cmd, cwd=tmp_path, env=env, **popen)


def _wait_ready(tmp_path: Path, proc: subprocess.Popen) -> tuple[int, int]:
    deadline = time.monotonic() + 300
    while not (tmp_path / "ready").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before its mechanism drew"
        time.sleep(0.05)
    pid, parent = (tmp_path / "log").read_text().split()[1:3]
    return int(pid), int(parent)


def _received(tmp_path: Path, proc: subprocess.Popen) -> int:
    """SIGINTs the mechanism's process received: waits for the first, then 2 s more for any repeat."""
    deadline = time.monotonic() + 60
    while "INT" not in (tmp_path / "log").read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(2.0)
    (tmp_path / "release").touch()
    proc.communicate(timeout=300)
    return (tmp_path / "log").read_text().count("INT")


def _ignoring(*signals: signal.Signals):
    def ignore() -> None:
        for sig in signals:
            signal.signal(sig, signal.SIG_IGN)
    return ignore


@pytest.mark.parametrize("ignored", [False, True], ids=["sigint-default", "sigint-ignored-as-in-a-background-job"])
def test_kill_int_of_the_started_process_reaches_the_command_once(tmp_path, ignored):
    """Also when the command starts with SIGINT ignored (a script's background job): the command
    handles SIGINT whatever it inherits, as it did in one process."""
    proc = _start(tmp_path, [], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  preexec_fn=_ignoring(signal.SIGINT) if ignored else None)
    pid, parent = _wait_ready(tmp_path, proc)
    assert parent == proc.pid and pid != proc.pid  # the command runs in a supervised child
    os.kill(proc.pid, signal.SIGINT)
    assert _received(tmp_path, proc) == 1
    assert proc.returncode == 0


def test_timeout_s_int_reaches_the_command_once(tmp_path):
    """timeout(1) sends its signal to the process it started and to that process's group."""
    proc = _start(tmp_path, ["timeout", "-s", "INT", "600"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid, parent = _wait_ready(tmp_path, proc)
    assert pid != proc.pid and parent != proc.pid  # timeout -> supervisor -> command
    os.kill(proc.pid, signal.SIGALRM)  # timeout's own timer signal: it acts as when its time is up
    assert _received(tmp_path, proc) == 1


def test_ctrl_c_at_a_terminal_reaches_the_command_once(tmp_path):
    """A real terminal: the supervisor leads a session whose controlling tty is a pty; ^C typed on
    the pty's master side is the kernel's SIGINT to the terminal's foreground process group."""
    import fcntl
    import termios

    master, slave = os.openpty()

    def controlling_tty() -> None:  # runs after start_new_session's setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    try:
        proc = _start(tmp_path, [], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                      start_new_session=True, preexec_fn=controlling_tty)
        pid, parent = _wait_ready(tmp_path, proc)
        assert parent == proc.pid and pid != proc.pid
        os.write(master, b"\x03")
        assert _received(tmp_path, proc) == 1
    finally:
        os.close(master)
        os.close(slave)


def test_the_command_does_not_outlive_a_killed_parent(tmp_path):
    proc = _start(tmp_path, [], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        pid, parent = _wait_ready(tmp_path, proc)
        assert parent == proc.pid and pid != proc.pid  # the command runs in a child of the process killed
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid)
    finally:
        (tmp_path / "release").touch()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state != "Z"


def test_a_hangup_ignored_as_under_nohup_stays_ignored(tmp_path):
    proc = _start(tmp_path, [], stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_ignoring(signal.SIGHUP))
    _wait_ready(tmp_path, proc)
    os.kill(proc.pid, signal.SIGHUP)
    time.sleep(1.0)
    (tmp_path / "release").touch()
    proc.communicate(timeout=300)
    assert proc.returncode == 0


def test_the_supervising_parent_imports_nothing_heavy():
    """What ``python -m dpaudit`` and the console script import before they start the child."""
    probe = ("import sys, dpaudit.runs.syspath, dpaudit.cli, dpaudit.cli.supervise\n"
             "print(sorted(m for m in ('numpy', 'scipy', 'joblib', 'dpaudit.catalog', 'dpaudit.engine.runner')"
             " if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout, done.stderr)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_ctrl_z_stops_the_command_and_its_parent_and_sigcont_resumes_both(tmp_path):
    proc = _start(tmp_path, [], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        pid, _ = _wait_ready(tmp_path, proc)
        os.kill(proc.pid, signal.SIGTSTP)
        deadline = time.monotonic() + 60
        while (_state(pid), _state(proc.pid)) != ("T", "T") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (_state(pid), _state(proc.pid)) == ("T", "T")
        os.kill(proc.pid, signal.SIGCONT)
        while "T" in (_state(pid), _state(proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "T" not in (_state(pid), _state(proc.pid))
        (tmp_path / "release").touch()
        proc.communicate(timeout=300)
        assert proc.returncode == 0
    finally:
        (tmp_path / "release").touch()
        if proc.poll() is None:
            proc.kill()


def test_help_through_an_abbreviation_runs_in_the_child_and_exits_0(tmp_path):
    """``run --hel`` is argparse's --help (an abbreviation the parent does not recognise): the child
    exits through argparse's SystemExit(0), which it reports; a guard for the supervisor."""
    done = _cli(tmp_path, "run", "--hel")
    assert done.returncode == 0 and done.stdout.startswith("usage: "), (done.returncode, done.stderr)
    assert done.stderr == ""


def test_a_status_written_into_the_report_pipe_by_user_code_does_not_count(tmp_path):
    """The report counts only with the parent's one-time token, which user code never sees written."""
    done = _cli(tmp_path, *_multi_run("forges"))
    assert done.returncode == 2 and MESSAGE in done.stderr, (done.returncode, done.stderr)
