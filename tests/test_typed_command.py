"""Records name the command as the user typed it (issue 34): ``dpaudit run ...`` for the console
script, ``python -m dpaudit ...`` or ``python -m audit ...`` as typed — in ``--json``'s and
``results.json``'s ``command``, ``sweep.json``'s, and the PDF's reproducibility block — through one
helper, :func:`dpaudit.runs.invocation.typed_command`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpaudit.runs import invocation
from dpaudit.runs.invocation import typed_command
from tests.clirun import in_process

SCRIPT = Path(sys.executable).parent / "dpaudit"
PYTHON = os.path.basename(sys.executable)
PLUGIN = '''
import numpy as np


class Honest:
    name = "honest"

    def sample(self, data, size, rng):
        return np.rint(float(np.sum(data)) + rng.laplace(0.0, 1.0, size)).astype(np.int64)


honest = Honest()
pair = (np.array([0.0, 1.0]), np.array([0.0, 1.0, 1.0]))
'''
RUN = ["run", "--mechanism", "plug:honest", "--pair", "plug:pair", "--samples", "2000", "--epsilon", "5", "--jobs",
       "1", "--quiet"]


@pytest.mark.parametrize(("orig", "expected"), [
    (["/opt/venv/bin/python3", "-m", "dpaudit", "run", "x"], ["python3", "-m", "dpaudit", "run", "x"]),
    (["python", "-X", "importtime", "-m", "audit", "run", "x"], ["python", "-m", "audit", "run", "x"]),
    (["python", "-mdpaudit", "run", "x"], ["python", "-m", "dpaudit", "run", "x"]),
    (["/opt/venv/bin/python", "/opt/venv/bin/dpaudit", "run", "x"], ["dpaudit", "run", "x"]),
    (["C:\\venv\\python.exe", "dpaudit.exe", "run", "x"], ["dpaudit", "run", "x"]),
    (["python", "-m", "pytest", "tests"], ["dpaudit", "run", "x"]),  # a host calling main(argv): the documented name
])
def test_typed_command_of_each_form(monkeypatch, orig, expected):
    monkeypatch.setattr(sys, "orig_argv", orig)
    monkeypatch.setattr(invocation, "_typed", None)
    assert typed_command(["run", "x"]) == expected


def test_the_child_records_what_its_parent_was_typed(monkeypatch):
    """The supervised child's interpreter is sys.executable; the parent's own command line wins."""
    monkeypatch.setattr(sys, "orig_argv", ["/usr/bin/python3.11", "-m", "dpaudit", "run", "x"])
    monkeypatch.setattr(invocation, "_typed", None)
    invocation.adopt(invocation.encode(["python3", "-m", "dpaudit", "run", "x"]))
    assert typed_command(["run", "x"]) == ["python3", "-m", "dpaudit", "run", "x"]


def _real(tmp_path: Path, prefix: list[str], *args: str) -> dict:
    (tmp_path / "plug.py").write_text(PLUGIN, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "DPAUDIT_SUPERVISED"}
    done = subprocess.run([*prefix, *RUN, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def python_m_dpaudit_run(tmp_path_factory) -> tuple[Path, dict]:
    """One ``python -m dpaudit run ... --json --out 'my out'`` in a subprocess, read by the
    python-m-dpaudit case below and by the PDF's test (one run, not two: each is ~3 CPU s)."""
    tmp_path = tmp_path_factory.mktemp("typed")
    return tmp_path, _real(tmp_path, [sys.executable, "-m", "dpaudit"], "--json", "--out", str(tmp_path / "my out"))


@pytest.mark.parametrize(("prefix", "program"), [
    ([sys.executable, "-m", "dpaudit"], [PYTHON, "-m", "dpaudit"]),
    ([sys.executable, "-m", "audit"], [PYTHON, "-m", "audit"]),
    ([str(SCRIPT)], ["dpaudit"]),
], ids=["python-m-dpaudit", "python-m-audit", "console-script"])
def test_json_and_results_record_the_command_as_typed(request, tmp_path, prefix, program):
    if not Path(prefix[0]).exists():
        pytest.skip("no dpaudit console script beside this interpreter")
    if prefix[1:] == ["-m", "dpaudit"]:
        tmp_path, doc = request.getfixturevalue("python_m_dpaudit_run")
    else:
        doc = _real(tmp_path, prefix, "--json", "--out", str(tmp_path / "my out"))
    typed = [*program, *RUN, "--json", "--out", str(tmp_path / "my out")]
    assert doc["command"] == typed
    assert json.loads((tmp_path / "my out" / "results.json").read_text())["command"] == typed


def test_sweep_json_records_the_command_through_the_helper(tmp_path):
    done = in_process("sweep", "kl-mab", "--n", "50,100", "--samples", "2000", "--out", tmp_path / "s")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "s" / "sweep.json").read_text())["command"][:2] == ["dpaudit", "sweep"]


def test_the_pdf_gives_the_recorded_command(python_m_dpaudit_run):
    pytest.importorskip("reportlab")
    pypdf = pytest.importorskip("pypdf")
    tmp_path, _ = python_m_dpaudit_run
    program = f"{PYTHON} -m dpaudit run"
    pages = pypdf.PdfReader(tmp_path / "my out" / "report.pdf").pages
    text = " ".join(" ".join(page.extract_text().split()) for page in pages)
    assert f"Command: {program} --mechanism plug:honest" in text
    assert f"--out '{tmp_path / 'my out'}'" in text.replace("- ", "-")  # shlex-quoted: pastes as one argument
