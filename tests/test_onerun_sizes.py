"""Budgets of a one-run game are bounded where they enter (issue 37, item 12): runs x canaries past
the documented limit (1e8), or past the memory available, is an ``InputError`` with the limit or the
estimate in its message (exit 2 from a config), before any canary is built — never a MemoryError."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpaudit.core import InputError
from dpaudit.onerun import audit_one_run
from dpaudit.testing import assert_private_one_run
from tests.clirun import in_process


def blind(dataset, rng):
    return None


def zeros(output, canaries):
    return np.zeros(len(canaries))


def test_the_api_refuses_runs_times_canaries_past_the_limit():
    with pytest.raises(InputError, match=r"runs x m = .*1e\+08"):
        audit_one_run(blind, zeros, m=10**6, runs=10**6)
    with pytest.raises(InputError, match=r"runs x m = .*1e\+08"):
        assert_private_one_run(blind, zeros, epsilon=1.0, m=10**12)


def test_the_api_refuses_a_game_that_needs_more_memory_than_available(monkeypatch):
    monkeypatch.setattr("dpaudit.runtime.execution.available_memory", lambda: 1 << 20)  # 1 MB left
    with pytest.raises(InputError, match=r"needs about 19.1 MB of memory .* about 1 MB is available"):
        audit_one_run(blind, zeros, m=50_000, runs=2)


def test_the_twin_within_the_limits_runs():
    res = audit_one_run(blind, zeros, m=1000, runs=2)
    assert res.m == 2000


CONFIG = """
[[scenario]]
name = "huge"
mechanism = "tests.plugins.exiting_runs:honest"
scorer = "tests.plugins.exiting_runs:score"
canaries = 1000000
runs = 100000
rule = { kind = "fixed", k_plus = 5, k_minus = 5 }

[[scenario.claim]]
epsilon = 2.0
delta = 1e-5
"""


def test_a_config_past_the_limit_exits_2_with_the_limit(tmp_path: Path):
    (tmp_path / "c.toml").write_text(CONFIG, encoding="utf-8")
    done = in_process("run", tmp_path / "c.toml", "--allow-plugin", "tests.plugins.exiting_runs", "--quiet")
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "scenario[0].canaries x scenario[0].runs = '1000000 x 100000 = 100000000000'" in done.stderr
    assert "1e+08" in done.stderr
