"""A resume is refused when what the user's module reached when it was imported has changed, or
an environment variable read through ``os.environb`` or a whole-environment read.

The record of what a mechanism reached (``checkpoint.reached.jsonl``) was taken while the first
chunk ran, after the user's module had been imported: a constant read at import time from a
helper run from its file, from a data file or from an environment variable, and a variable read
through ``os.environb`` or by iterating ``os.environ``, escaped it, so a leaky run killed, fixed
and resumed mixed the counts of two mechanisms.  Now the window opens before the command line
imports the user's modules (:func:`dpaudit.runtime.reach.from_import`), the bytes environment and
whole-environment reads are recorded, and a resume after such an edit exits 2 naming what changed;
the twin resumes unchanged code (twice: a resume's own reads of its folder are not inputs) to the
uninterrupted run's numbers.

The mechanism is randomized response of epsilon 3 on one bit of the data against a claim of
epsilon 1, at 10^6 samples per side: a finding (exit 1, eps_lower > 2.5 at seed 0); the "fix" is
epsilon 1 (a clean run holds).  Without the check the resume reuses six of the eight lines of
epsilon 3: a false finding.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import textwrap

import pytest

from dpaudit.runtime.reach import watch
from tests.clirun import in_process, killed_after

# run --out draws no report.pdf here: these tests never read it (tests/clirun.py skip_report_pdf)
pytestmark = pytest.mark.usefixtures("no_report_pdf")


ENV = "DPAUDIT_IMPORTTIME_EPSILON"

MECHANISM = '''
import os
import runpy
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
{top}


def epsilon():
{body}


class RandomizedResponse:
    name = "importtime-rr"

    def sample(self, data, size, rng):
        keep = np.exp(epsilon()) / (1 + np.exp(epsilon()))
        bit = float(np.sum(data)) > 1
        return (rng.random(size) < (keep if bit else 1 - keep)).astype(np.int64)


mech = RandomizedResponse()
pair = (np.array([0.0, 1.0]), np.array([0.0, 1.0, 1.0]))
'''

# form -> (module top, epsilon()'s body, what the fix edits, how the refusal names it)
FORMS = {
    # a helper's constant read at import time by a module the mechanism's module imports (its own
    # module is then dropped from sys.modules, as a loader that runs a file does)
    "import-time-helper": ("EPSILON = runpy.run_path(str(HERE / 'importtime_helper.py'))['EPSILON']",
                           "    return EPSILON", "helper", "importtime_helper.py"),
    # the helper imported at the module's top and its constant copied there (the helper stays in
    # sys.modules; the fingerprint does not follow a float to its module)
    "import-time-helper-import": ("from importtime_helper import EPSILON", "    return EPSILON", "helper",
                                  "importtime_helper"),
    "import-time-data-file": ("EPSILON = float((HERE / 'epsilon.txt').read_text())", "    return EPSILON", "data",
                              "epsilon.txt"),
    "import-time-environment": (f"EPSILON = float(os.environ.get({ENV!r}, '3.0'))", "    return EPSILON", "env",
                                f"environment variable {ENV}"),
    "environb": ("", f"    return float(os.getenvb({ENV.encode()!r}, b'3.0'))", "env", f"environment variable {ENV}"),
    "environb-item": ("", f"    return float(os.environb[{ENV.encode()!r}]) if {ENV.encode()!r} in os.environb "
                      "else 3.0", "env", f"environment variable {ENV}"),
    # only the names are read (no lookup of the variable): the whole environment is recorded
    "environment-names": ("", f"    return 1.0 if {ENV!r} in list(os.environ) else 3.0", "env",
                          "the whole environment"),
}


@pytest.fixture
def plugin(tmp_path, monkeypatch, request):
    """The mechanism (``importtime_mech``), its helper and its data file in a folder on sys.path."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    top, body, edit, named = FORMS[request.param]
    (folder / "importtime_mech.py").write_text(textwrap.dedent(MECHANISM).format(top=top, body=body))
    (folder / "importtime_helper.py").write_text("EPSILON = 3.0  # leaky against a claim of epsilon 1\n")
    (folder / "epsilon.txt").write_text("3.0\n")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # an edit within one second must not hit a stale .pyc
    monkeypatch.delenv(ENV, raising=False)

    def fresh():  # what a new process would see: nothing of the plugin imported yet
        for name in ("importtime_mech", "importtime_helper"):
            sys.modules.pop(name, None)
        importlib.invalidate_caches()

    def fix():
        if edit == "helper":
            (folder / "importtime_helper.py").write_text("EPSILON = 1.0\n")
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
    return in_process("run", "--resume", out, "--allow-plugin", "importtime_mech", "--quiet")


@pytest.mark.parametrize("plugin", list(FORMS), indirect=True)
def test_a_resume_after_a_change_reached_at_import_or_through_environb_is_refused(plugin, tmp_path):
    fresh, fix, named = plugin
    out = tmp_path / "run"
    first = in_process("run", "--mechanism", "importtime_mech:mech", "--pair", "importtime_mech:pair", "--epsilon",
                       "1", "--samples", "1000000", "--quiet", "--out", out)
    assert first.returncode == 1, first.stderr  # epsilon 3: a real finding
    uninterrupted = _epsilon_lower(out)
    assert uninterrupted[0] > 2.5
    # the twin: the same code resumes to the uninterrupted run's numbers, twice (what the first
    # resume read of its own folder, the checkpoint, is not recorded as an input of the mechanism)
    for _ in range(2):
        killed_after(out, 6)
        fresh()
        again = _resume(out)
        assert again.returncode == 1, again.stderr
        assert _epsilon_lower(out) == uninterrupted
    # the fix, reached before the first chunk or through a path the record missed: refused
    killed_after(out, 6)
    before = (out / "checkpoint.jsonl").read_text()
    fix()
    resumed = _resume(out)
    assert resumed.returncode == 2, resumed.stdout + resumed.stderr
    assert named in resumed.stderr and "refusing to mix counts" in resumed.stderr, resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert not (out / "results.json").exists() and (out / "checkpoint.jsonl").read_text() == before


def test_the_bytes_environment_and_whole_environment_reads_are_recorded(monkeypatch):
    """``os.getenvb``, ``os.environb[...]`` and ``in os.environb`` record the variable by its
    name; iterating, ``len``, ``copy()``, ``dict()`` and ``repr`` of either mapping record the whole
    environment (and ``copy``/``dict`` each variable they look up); no value is stored."""
    from dpaudit.runtime.reach import WHOLE_ENVIRONMENT  # new: imported here so the other tests run on older code

    monkeypatch.setenv("DPAUDIT_IMPORTTIME_B", "secret-b")
    reads = {
        "getenvb": lambda: os.getenvb(b"DPAUDIT_IMPORTTIME_B"),
        "environb-item": lambda: os.environb[b"DPAUDIT_IMPORTTIME_B"],
        "environb-in": lambda: b"DPAUDIT_IMPORTTIME_B" in os.environb,
    }
    for what, read in reads.items():
        with watch() as window:
            read()
        assert set(window.reach.env) == {"DPAUDIT_IMPORTTIME_B"}, what
        assert "secret-b" not in json.dumps(window.reach.to_dict())
    for what, read in {"iter": lambda: list(os.environ), "len": lambda: len(os.environb),
                       "copy": os.environ.copy, "dict": lambda: dict(os.environ),
                       "repr": lambda: repr(os.environ)}.items():
        with watch() as window:
            read()
        assert WHOLE_ENVIRONMENT in window.reach.env, what
        assert not window.reach.changed(), what
        if what in ("copy", "dict"):
            assert "DPAUDIT_IMPORTTIME_B" in window.reach.env
    monkeypatch.setenv("DPAUDIT_IMPORTTIME_NEW", "1")
    changed = window.reach.changed()
    assert len(changed) == 1 and changed[0].startswith("the whole environment"), changed



def test_a_module_loaded_from_its_cache_and_dropped_from_sys_modules_is_recorded_by_its_source(
        tmp_path, monkeypatch):
    """The import system opens a module's cached ``.pyc``, not its ``.py``; a module the user's code
    loads and then drops from ``sys.modules`` is recorded by its source all the same."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    source = tmp_path / "importtime_cached.py"
    source.write_text("EPSILON = 3.0\n")
    try:
        importlib.import_module("importtime_cached")  # writes the cache
        sys.modules.pop("importtime_cached")
        importlib.invalidate_caches()
        with watch() as window:
            assert importlib.import_module("importtime_cached").EPSILON == 3.0
            sys.modules.pop("importtime_cached")
        assert str(source) in window.reach.files, window.reach.to_dict()
        source.write_text("EPSILON = 1.0\n")
        assert window.reach.changed() == [f"file {source}"]
    finally:
        sys.modules.pop("importtime_cached", None)


def test_only_reads_above_where_the_window_opened_are_the_mechanisms(tmp_path):
    """A read by dpaudit's own code inside the window is not recorded even when the caller of
    dpaudit is the user's (a test running the command line in its own process); the user's code
    called inside the window is.  ``Checkpoint.recording`` wraps ``watch`` in a generator that is
    suspended while the block runs, so the window's base is the frame that entered it."""
    from dpaudit.runtime import reach
    from dpaudit.runtime.checkpoint import Checkpoint

    data = tmp_path / "read.txt"
    data.write_text("x")
    # code that runs under dpaudit's file name: frames the window must treat as dpaudit's
    ours: dict = {}
    exec(compile("def opener(checkpoint, read):\n    with checkpoint.recording():\n        read()\n\n"
                 f"def dpaudit_reads():\n    open({str(data)!r}).close()\n", reach.__file__, "exec"), ours)
    checkpoint = Checkpoint(tmp_path / "checkpoint.jsonl", "fp", fresh=True)
    ours["opener"](checkpoint, ours["dpaudit_reads"])
    assert str(data) not in checkpoint.reached.files
    ours["opener"](checkpoint, lambda: data.read_text())  # the user's code (this lambda) called inside it
    assert str(data) in checkpoint.reached.files
