"""sys.exit from a user's multi-run code is bad input (exit 2) on every path, never a pass (exit 0) nor a
finding (exit 1): a ``name`` property that exits, a class whose ``__init__`` exits when a config builds
it, through the command line, a config, ``audit_mechanism`` and ``assert_private``.  (The one-run
paths: tests/test_onerun_exits.py; ``sample`` itself: tests/test_hostile.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit import audit_mechanism
from dpaudit.engine.runner import MechanismError
from dpaudit.testing import assert_private
from tests.clirun import in_process
from tests.plugins.exits_in_properties import NAME_EXITS_0

PLUGIN = "tests.plugins.exits_in_properties"
CONFIG = """
[[scenario]]
name = "s"
mechanism = "{plugin}:{attr}"
{params}
[scenario.data]
columns = {{ x = [1.0, 2.0] }}
[scenario.neighbour]
remove = 0
"""


@pytest.mark.parametrize("attr", ["NAME_EXITS_0", "NAME_EXITS_1"])
def test_a_name_property_that_exits_is_bad_input_on_the_command_line(attr, tmp_path):
    np.savez(tmp_path / "d.npz", x=np.array([0.0]))
    np.savez(tmp_path / "dp.npz", x=np.array([0.0, 1.0]))
    run = in_process("run", "--mechanism", f"{PLUGIN}:{attr}", "--data", tmp_path / "d.npz", "--data-prime",
                     tmp_path / "dp.npz", "--epsilon", "1", "--samples", "2e4", "--quiet")
    assert run.returncode == 2 and "sys.exit(" in run.stderr and "exits_in_properties.py" in run.stderr


@pytest.mark.parametrize(("attr", "params"), [("NAME_EXITS_0", ""), ("InitExits", "params = { epsilon = 2.0 }"),
                                              ("InitExits", "params = { epsilon = 2.0, code = 1 }")])
def test_user_code_that_exits_in_a_config_is_bad_input(attr, params, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(CONFIG.format(plugin=PLUGIN, attr=attr, params=params), encoding="utf-8")
    run = in_process("run", config, "--allow-plugin", PLUGIN, "--samples", "2e4", "--quiet", "--out", tmp_path / "o")
    assert run.returncode == 2 and "sys.exit(" in run.stderr


def test_the_api_and_the_pytest_helper_raise_a_mechanism_error_not_system_exit():
    d, d_prime = np.array([0.0]), np.array([0.0, 1.0])
    with pytest.raises(MechanismError, match=r"reading its name called sys.exit\(0\)"):
        audit_mechanism(NAME_EXITS_0, d, d_prime, samples=20_000)
    with pytest.raises(MechanismError, match=r"sys.exit\(0\)"):
        assert_private(NAME_EXITS_0, d, d_prime, epsilon=1.0, samples=20_000)
