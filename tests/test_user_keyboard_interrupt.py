"""A KeyboardInterrupt that the user's multi-run code raises itself (no Ctrl-C pressed) is bad input,
exit 2 naming where, as sys.exit is (red team: it ended the run "interrupted", exit 130); a real
Ctrl-C still exits 130 (tests/test_exit_truth.py, tests/test_supervise.py)."""

from __future__ import annotations

import pytest

from tests.clirun import in_process
from tests.test_user_exits import CONFIG  # the same one-scenario config, naming the plugin under test


@pytest.mark.parametrize(("plugin", "attr", "params"), [
    ("tests.plugins.interrupts_in_user_code", "NAME_INTERRUPTS", ""),
    ("tests.plugins.interrupts_in_user_code", "InitInterrupts", "params = { epsilon = 2.0 }"),
    ("tests.plugins.interrupts_on_import", "anything", ""),
], ids=["name-property", "init", "import"])
def test_user_code_raising_keyboard_interrupt_is_bad_input(plugin, attr, params, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(CONFIG.format(plugin=plugin, attr=attr, params=params), encoding="utf-8")
    run = in_process("run", config, "--allow-plugin", plugin, "--samples", "2e4", "--quiet", "--out", tmp_path / "o")
    assert run.returncode == 2, (run.returncode, run.stderr)
    assert "KeyboardInterrupt" in run.stderr and plugin.rpartition(".")[2] in run.stderr, run.stderr
