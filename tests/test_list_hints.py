"""`list NAME` for a name that is a scenario or a one-run design says where that name belongs (#35)."""

import subprocess
import sys

from tests.conftest import ROOT


def test_list_of_a_one_run_design_points_to_plan():
    proc = subprocess.run([sys.executable, "-m", "dpaudit", "list", "dpsgd-whitebox", "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "is not a built-in mechanism" in proc.stderr and "plan dpsgd-whitebox" in proc.stderr
