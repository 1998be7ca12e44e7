"""`list NAME` for a name that is a scenario or a one-run design says where that name belongs (#35)."""

from tests.clirun import in_process


def test_list_of_a_one_run_design_points_to_plan():
    # In this process (the command's words and exit status are under test, not its interpreter's start).
    proc = in_process("list", "dpsgd-whitebox", "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "is not a built-in mechanism" in proc.stderr and "plan dpsgd-whitebox" in proc.stderr
