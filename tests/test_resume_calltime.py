"""A resume is refused when what the mechanism reaches only when ``sample`` runs has changed.

The run's fingerprint holds the mechanism's state and the files of the modules that define it and
that they import by name; ``import helper`` inside ``sample``, ``importlib.import_module``, a
constant read from a data file or an environment variable at call time escaped it, so a leaky
run killed, fixed and resumed mixed the counts of two mechanisms.  Now what the first chunk
reached is hashed into ``checkpoint.reached.jsonl`` (:mod:`dpaudit.runtime.reach`) and a resume
after such an edit exits 2 naming the module, file or variable; the twin resumes unchanged code
to the uninterrupted run's numbers.

The mechanism is randomized response of epsilon 3 on one bit of the data against a claim of
epsilon 1, at 10^6 samples per side: a finding (exit 1, eps_lower 2.99 at seed 0); the "fix" is
epsilon 1 (a clean run: 0.998, holds).  The event {1} is chosen either way, so before this check a
resume after the fix reused six of the eight lines of epsilon 3 and reported eps_lower 2.91: a
false finding.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import textwrap

import pytest

from dpaudit.core import InputError
from dpaudit.runtime.checkpoint import Checkpoint
from dpaudit.runtime.reach import watch
from tests.clirun import in_process, killed_after

# run --out draws no report.pdf here: these tests never read it (tests/clirun.py skip_report_pdf)
pytestmark = pytest.mark.usefixtures("no_report_pdf")


ENV = "DPAUDIT_CALLTIME_EPSILON"

MECHANISM = '''
import importlib
import os
from pathlib import Path

import numpy as np


def epsilon():
{body}


class RandomizedResponse:
    name = "calltime-rr"

    def sample(self, data, size, rng):
        keep = np.exp(epsilon()) / (1 + np.exp(epsilon()))
        bit = float(np.sum(data)) > 1
        return (rng.random(size) < (keep if bit else 1 - keep)).astype(np.int64)


mech = RandomizedResponse()
pair = (np.array([0.0, 1.0]), np.array([0.0, 1.0, 1.0]))
'''

# form -> (the body of epsilon(), reached at call time only; what the fix edits; how the refusal names it)
FORMS = {
    "import-in-sample": ("    import calltime_helper\n    return calltime_helper.EPSILON", "helper",
                         "module calltime_helper ("),
    "importlib": ("    return importlib.import_module('calltime_helper').EPSILON", "helper",
                  "module calltime_helper ("),
    "data-file": ("    return float((Path(__file__).parent / 'epsilon.txt').read_text())", "data", "epsilon.txt"),
    "environment": (f"    return float(os.environ.get({ENV!r}, '3.0'))", "env", f"environment variable {ENV}"),
}


@pytest.fixture
def plugin(tmp_path, monkeypatch, request):
    """The mechanism (``calltime_mech``), its helper module and its data file in a folder on sys.path."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    body, edit, named = FORMS[request.param]
    (folder / "calltime_mech.py").write_text(textwrap.dedent(MECHANISM).format(body=body))
    (folder / "calltime_helper.py").write_text("EPSILON = 3.0  # leaky against a claim of epsilon 1\n")
    (folder / "epsilon.txt").write_text("3.0\n")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # an edit within one second must not hit a stale .pyc
    monkeypatch.delenv(ENV, raising=False)

    def fresh():  # what a new process would see: nothing of the plugin imported yet
        for name in ("calltime_mech", "calltime_helper"):
            sys.modules.pop(name, None)
        importlib.invalidate_caches()

    def fix():
        if edit == "helper":
            (folder / "calltime_helper.py").write_text("EPSILON = 1.0\n")
        elif edit == "data":
            (folder / "epsilon.txt").write_text("1.0\n")
        else:
            monkeypatch.setenv(ENV, "1.0")
        fresh()

    fresh()
    yield fresh, fix, named
    fresh()


def _epsilon_lower(folder):
    return [r["epsilon_lower"] for r in json.loads((folder / "results.json").read_text())["records"]]


def _resume(out):
    return in_process("run", "--resume", out, "--allow-plugin", "calltime_mech", "--quiet")


@pytest.mark.parametrize("plugin", list(FORMS), indirect=True)
def test_a_resume_after_a_change_reached_only_at_call_time_is_refused(plugin, tmp_path):
    fresh, fix, named = plugin
    out = tmp_path / "run"
    first = in_process("run", "--mechanism", "calltime_mech:mech", "--pair", "calltime_mech:pair", "--epsilon", "1",
                       "--samples", "1000000", "--quiet", "--out", out)
    assert first.returncode == 1, first.stderr  # epsilon 3: a real finding
    uninterrupted = _epsilon_lower(out)
    assert uninterrupted[0] > 2.5
    # the twin: the same code resumes, to the uninterrupted run's numbers
    killed_after(out, 6)
    fresh()
    again = _resume(out)
    assert again.returncode == 1, again.stderr
    assert _epsilon_lower(out) == uninterrupted
    # the fix, reached only when sample runs: the fingerprint is unchanged, the resume is refused
    killed_after(out, 6)
    before = (out / "checkpoint.jsonl").read_text()
    fix()
    resumed = _resume(out)
    assert resumed.returncode == 2, resumed.stdout + resumed.stderr
    assert named in resumed.stderr and "while the run's first chunk ran" in resumed.stderr, resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert not (out / "results.json").exists() and (out / "checkpoint.jsonl").read_text() == before


def test_the_window_records_inputs_not_scratch_files_nor_kernel_files(tmp_path, monkeypatch):
    """A file the mechanism writes is its own output (a temporary model file would otherwise refuse
    every resume); /proc is the system's state; a variable's value is never stored, only its hash."""
    data, scratch = tmp_path / "data.txt", tmp_path / "scratch.bin"
    data.write_text("3\n")
    monkeypatch.setenv("DPAUDIT_CALLTIME_SECRET", "hunter2")
    with watch() as window:
        data.read_text()
        scratch.write_bytes(b"model")
        scratch.read_bytes()
        open("/proc/self/status").close()
        assert __import__("os").getenv("DPAUDIT_CALLTIME_SECRET") == "hunter2"
    reach = window.reach
    assert str(data) in reach.files and str(scratch) not in reach.files
    assert not any(path.startswith("/proc/") for path in reach.files)
    assert set(reach.env) == {"DPAUDIT_CALLTIME_SECRET"} and "hunter2" not in json.dumps(reach.to_dict())
    assert __file__ in reach.modules  # the user's modules loaded in the process
    assert not reach.changed()
    data.write_text("1\n")
    assert reach.changed() == [f"file {data}"]


def test_a_checkpoint_refuses_a_changed_input_and_a_missing_or_edited_record(tmp_path):
    path, data = tmp_path / "checkpoint.jsonl", tmp_path / "eps.txt"
    data.write_text("3\n")
    written = Checkpoint(path, "fp", fresh=True)
    with written.recording():
        data.read_text()
    written.add((0,), "events", 0, 0, [1, 2], 10)
    assert Checkpoint(path, "fp").reached.files[str(data)].startswith("sha256:")  # unchanged: reopened
    reached = written.reached_path
    record = reached.read_text()
    reached.write_text(record.replace("sha256:", "sha256:0"))
    with pytest.raises(InputError, match="checksum mismatch"):
        Checkpoint(path, "fp")
    reached.unlink()
    with pytest.raises(InputError, match=re.escape("holds counts but checkpoint.reached.jsonl")):
        Checkpoint(path, "fp")
    reached.write_text(record + record[: len(record) // 2])  # a line torn by a kill is no record: dropped
    assert Checkpoint(path, "fp").done and reached.read_text() == record
    data.write_text("1\n")
    with pytest.raises(InputError, match=re.escape(f"file {data} while the run's first chunk ran")):
        Checkpoint(path, "fp")


def test_a_module_imported_before_the_first_chunk_and_fetched_at_call_time_is_recorded(tmp_path, monkeypatch):
    """Not only the modules the first chunk loads: one the plugin's import loaded without naming it
    in its globals is not in the fingerprint, yet ``importlib.import_module`` at call time returns it
    from ``sys.modules`` without loading anything."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "calltime_early.py").write_text("EPSILON = 3.0\n")
    sys.modules.pop("calltime_early", None)
    try:
        importlib.import_module("calltime_early")
        with watch() as window:
            assert importlib.import_module("calltime_early").EPSILON == 3.0
        assert window.reach.modules[str(tmp_path / "calltime_early.py")][0] == "calltime_early"
    finally:
        sys.modules.pop("calltime_early", None)
