"""The command line starts light: ``--help`` and ``--version`` import no numpy, no engine and no
catalog (their speed is the bench's business; what they import is this test's), and the help
names the command the user typed."""

import subprocess
import sys

import pytest

from dpaudit import catalog
from dpaudit.cli import parser
from dpaudit.core import RELATIONS

PROBE = """
import sys
from dpaudit.cli import main
try:
    code = main({argv!r})
except SystemExit as exc:  # argparse's --help
    code = exc.code
heavy = sorted(m for m in ("numpy", "scipy", "joblib", "dpaudit.catalog", "dpaudit.engine.runner") if m in sys.modules)
print("HEAVY", heavy)
sys.exit(code)
"""


def _heavy(argv):
    proc = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True,
                          timeout=600)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("HEAVY"))
    return proc.returncode, line, proc.stdout


def test_the_parser_s_closed_sets_are_the_catalog_s_and_the_core_s():
    assert parser.SUITES == catalog.SUITES
    assert tuple(RELATIONS) == parser.RELATIONS


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["run", "--help"]])
def test_help_and_version_import_nothing_heavy(argv):
    code, heavy, out = _heavy(argv)
    assert code == 0 and heavy == "HEAVY []", out


def test_a_real_command_does_import_the_engine():  # the twin: the probe sees heavy imports when there are some
    code, heavy, out = _heavy(["list"])
    assert code == 0 and "numpy" in heavy and "dpaudit.catalog" in heavy, out


@pytest.mark.parametrize("command, prog", [(["-m", "dpaudit"], "python -m dpaudit"),
                                           (["-m", "audit"], "python -m audit")])
def test_the_help_names_the_command_that_was_typed(command, prog):
    proc = subprocess.run([sys.executable, *command, "--help"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: {prog} "), proc.stdout[:200]
