"""Two messages that sent the user the wrong way.

A resume of a run whose config used plugins, without ``--allow-plugin``, named one module at a
time inside a config error (``scenario[0].mechanism ... --allow-plugin a``; added, the next resume
named ``b``): now it stops before importing anything, exit 2, naming every flag to add at once,
and the run's folder never grants the permission itself.

A config data ``file`` that is a directory or a FIFO said "does not exist": now it says what it is,
with the key path, and the FIFO is never opened (opening it would block until a writer came).
"""

from __future__ import annotations

import os
import sys
import threading

import pytest

from dpaudit.core import InputError
from dpaudit.runs.config import load
from tests.clirun import in_process

PLUGIN = '''
import numpy as np


class Mech:
    name = "resume-plugin"

    def sample(self, data, size, rng):
        return rng.laplace(float(np.sum(data["x"])), 1.0, size)


mech = Mech()
'''

CONFIG = '''
[run]
samples = 2000

[[scenario]]
name = "a"
mechanism = "resume_plugin_a:mech"
[scenario.data]
columns = { x = [1.0, 2.0] }
[scenario.neighbour]
remove = 0

[[scenario]]
name = "b"
mechanism = "resume_plugin_b:mech"
[scenario.data]
columns = { x = [1.0, 2.0] }
[scenario.neighbour]
remove = 0
'''

MODULES = ("resume_plugin_a", "resume_plugin_b")


@pytest.fixture
def started(tmp_path, monkeypatch):
    """A finished run of a config whose two scenarios use two plugin modules, both allowed."""
    for name in MODULES:
        (tmp_path / f"{name}.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    config, out = tmp_path / "audit.toml", tmp_path / "run"
    config.write_text(CONFIG)
    first = in_process("run", config, "--allow-plugin", MODULES[0], "--allow-plugin", MODULES[1], "--quiet",
                       "--out", out)
    assert first.returncode == 0, first.stderr
    yield out
    for name in MODULES:
        sys.modules.pop(name, None)


def _unimported():
    for name in MODULES:
        sys.modules.pop(name, None)


def test_a_resume_without_the_runs_plugins_names_every_flag_to_add_and_imports_nothing(started):
    _unimported()
    refused = in_process("run", "--resume", started, "--quiet")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "--allow-plugin resume_plugin_a --allow-plugin resume_plugin_b" in refused.stderr, refused.stderr
    assert "never grants" in refused.stderr and "Traceback" not in refused.stderr
    assert not any(name in sys.modules for name in MODULES)  # refused before any import
    half = in_process("run", "--resume", started, "--allow-plugin", "resume_plugin_a", "--quiet")
    assert half.returncode == 2 and "add --allow-plugin resume_plugin_b" in half.stderr, half.stderr
    assert "--allow-plugin resume_plugin_a" not in half.stderr.partition("add ")[2]
    assert not any(name in sys.modules for name in MODULES)
    both = in_process("run", "--resume", started, "--allow-plugin", "resume_plugin_a", "--allow-plugin",
                      "resume_plugin_b", "--quiet")
    assert both.returncode == 0, both.stderr


def test_a_resume_of_a_mechanism_plugin_names_its_flag(tmp_path, monkeypatch):
    (tmp_path / "resume_plugin_a.py").write_text(PLUGIN.replace('data["x"]', "data")
                                                 + "pair = (np.array([0.0]), np.array([0.0, 1.0]))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "run"
    try:
        first = in_process("run", "--mechanism", "resume_plugin_a:mech", "--pair", "resume_plugin_a:pair",
                           "--samples", "2000", "--quiet", "--out", out)
        assert first.returncode == 0, first.stderr
        _unimported()
        refused = in_process("run", "--resume", out, "--quiet")
        assert refused.returncode == 2 and "add --allow-plugin resume_plugin_a" in refused.stderr, refused.stderr
        assert "resume_plugin_a" not in sys.modules
    finally:
        _unimported()


DATA_CONFIG = '''
[[scenario]]
name = "rr"
mechanism = "randomized-response"
params = {{ epsilon = 1.0 }}
[scenario.data]
file = "{name}"
[scenario.neighbour]
remove = 0
'''


def _config(tmp_path, name):
    path = tmp_path / "audit.toml"
    path.write_text(DATA_CONFIG.format(name=name))
    return path


def test_a_data_file_that_is_a_directory_says_so(tmp_path):
    (tmp_path / "values.csv").mkdir()
    with pytest.raises(InputError) as caught:
        load(_config(tmp_path, "values.csv"))
    message = str(caught.value)
    assert "scenario[0].data.file = 'values.csv'" in message and "is a directory" in message, message
    assert "does not exist" not in message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_data_file_that_is_a_fifo_says_so_and_never_blocks(tmp_path):
    os.mkfifo(tmp_path / "values.csv")
    outcome: dict[str, BaseException | None] = {}

    def attempt():  # in a thread: an open() of the FIFO would block it, and the test would see it alive
        try:
            load(_config(tmp_path, "values.csv"))
            outcome["error"] = None
        except BaseException as exc:  # what it raised is what the test checks
            outcome["error"] = exc

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=60)
    if worker.is_alive():  # unblock it: a writer opens the FIFO (so no thread is left behind)
        fd = os.open(tmp_path / "values.csv", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail("loading the config blocked on the FIFO")
    error = outcome["error"]
    assert isinstance(error, InputError), error
    message = str(error)
    assert "scenario[0].data.file = 'values.csv'" in message, message
    assert "is not a regular file (FIFO)" in message and "does not exist" not in message, message
    in_cli = in_process("run", _config(tmp_path, "values.csv"), "--samples", "1000", "--quiet")
    assert in_cli.returncode == 2 and "is not a regular file (FIFO)" in in_cli.stderr, in_cli.stderr
