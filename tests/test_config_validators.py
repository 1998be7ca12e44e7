"""One validator set in ``dpaudit.core`` for both config loaders (multi-run and one-run).

The one-run loader had its own ``_table``/``_int``/``_number`` (no "did you mean", no integral
floats: ``canaries = 1e3`` was refused while ``samples = 1e5`` ran); both now call
:func:`dpaudit.core.check_table`, :func:`~dpaudit.core.check_integer` and
:func:`~dpaudit.core.check_number`.  No statistics here: the configs are only loaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dpaudit import core
from dpaudit.core import InputError
from dpaudit.runs import config as multi_run
from dpaudit.runs import onerun
from dpaudit.runs.config import load

PLUGIN = "tests.plugins.training_runs"

ONERUN = """
[[scenario]]
name = "rr-training"
mechanism = "{plugin}:RandomizedResponse"
params = {{ m = 1000, epsilon = 1.0 }}
scorer = "{plugin}:score"
canaries = {canaries}
runs = {runs}
rule = {rule}

[[scenario.claim]]
epsilon = 4.0
delta = 1e-5
id = "user/claim"
"""


def write(tmp_path: Path, canaries: str = "1000", runs: str = "1",
          rule: str = '{ kind = "fixed", k_plus = 50, k_minus = 50 }') -> Path:
    path = tmp_path / "onerun.toml"
    path.write_text(ONERUN.format(plugin=PLUGIN, canaries=canaries, runs=runs, rule=rule), encoding="utf-8")
    return path


def test_a_one_run_config_takes_integral_floats_as_the_multi_run_one_does(tmp_path):
    plan = load(write(tmp_path, canaries="1e3", runs="2.0", rule='{ kind = "fixed", k_plus = 5e1, k_minus = 50.0 }'),
                [PLUGIN])
    design, = plan.onerun
    assert design.m == 1000 and design.runs == 2
    assert (design.rule.k_plus, design.rule.k_minus) == (50, 50)
    assert isinstance(design.rule.k_plus, int)


def test_a_fractional_canary_count_is_refused_as_a_fractional_sample_count_is(tmp_path):
    with pytest.raises(InputError) as caught:
        load(write(tmp_path, canaries="1000.5"), [PLUGIN])
    assert str(caught.value) == ("config: scenario[0].canaries = 1000.5 is invalid: must be an integer in "
                                 "[2, 10000000] (a whole number)")


def test_the_loaders_keep_no_validators_of_their_own():
    for module in (onerun, multi_run):
        for name in ("_table", "_int", "_number", "_any_keys"):
            assert not hasattr(module, name), f"{module.__name__}.{name} is a copy of a dpaudit.core validator"


def test_check_integer_takes_whole_floats_and_refuses_the_rest():
    assert core.check_integer("n", 1e3, low=2) == 1000
    assert core.check_integer("n", 7, low=0, high=7) == 7
    for bad, said in ((1.5, "n = 1.5 is invalid: must be an integer >= 0 (a whole number)"),
                      (True, "n = True is invalid: must be an integer >= 0"),
                      ("3", "n = '3' is invalid: must be an integer >= 0"),
                      (8, "n = 8 is invalid: must be an integer in [0, 7]")):
        with pytest.raises(InputError) as caught:
            core.check_integer("n", bad, low=0, high=7 if bad == 8 else None)
        assert str(caught.value) == said


def test_check_table_names_the_key_path_and_the_key_meant():
    assert core.check_table("t", {"a": 1}, allowed={"a", "b"}, required={"a"}) == {"a": 1}
    assert core.check_table("t", {"anything": 1}) == {"anything": 1}  # allowed None: free keys
    with pytest.raises(InputError, match=r"^config: t\.neighbor = 1 is invalid: unknown key \(did you mean "
                                         r"'neighbour'\?\); allowed: data, neighbour$"):
        core.check_table("t", {"neighbor": 1}, allowed={"data", "neighbour"}, prefix="config: ")
    with pytest.raises(InputError, match=r"^t\.data = None is invalid: is required$"):
        core.check_table("t", {}, allowed={"data"}, required={"data"})
    with pytest.raises(InputError, match=r"^t = \[1\] is invalid: must be a table$"):
        core.check_table("t", [1])


def test_check_number_is_finite_and_in_its_interval():
    assert core.check_number("x", 1, low=0.0, high=1.0) == 1.0
    for bad in (float("nan"), float("inf"), True, 1.0):
        with pytest.raises(InputError, match=r"^x = .* is invalid: must be a number in \[0.0, 1.0\)$"):
            core.check_number("x", bad, low=0.0, high=1.0, high_open=True)
