"""A config's plugin mechanism takes ``params``: a class or a builder function named as
``pkg.module:attr`` is called with them as keyword arguments, checked against its signature; a
mechanism object takes none."""

import pytest

from dpaudit import InputError
from dpaudit.runs.config import load
from tests.plugins.user_mechanisms import NoisyCount, correct

CONFIG = """
[[scenario]]
name = "user-count"
mechanism = "tests.plugins.user_mechanisms:{attr}"
{params}
[scenario.data]
columns = {{ x = [1.0, 2.0] }}
[scenario.neighbour]
remove = 0
"""


def load_plugin(tmp_path, attr, params=""):
    path = tmp_path / "audit.toml"
    path.write_text(CONFIG.format(attr=attr, params=params))
    return load(path, allow_plugins=("tests.plugins.user_mechanisms",)).scenarios[0].mechanism


def test_a_class_is_built_from_the_params(tmp_path):
    leaky = load_plugin(tmp_path, "NoisyCount", "params = { epsilon = 2.0, leaky = true }")
    assert isinstance(leaky, NoisyCount) and leaky.name == "user-noisy-count-leaky" and leaky.scale == 0.25
    plain = load_plugin(tmp_path, "NoisyCount", "params = { epsilon = 0.5 }")  # leaky keeps its default
    assert plain.name == "user-noisy-count" and plain.scale == 2.0


def test_a_builder_function_is_called_with_the_params(tmp_path):
    mech = load_plugin(tmp_path, "build_count", "params = { epsilon = 4.0 }")
    assert isinstance(mech, NoisyCount) and mech.scale == 0.25


def test_a_mechanism_object_is_used_as_it_is_without_params(tmp_path):
    assert load_plugin(tmp_path, "correct") is correct


@pytest.mark.parametrize("attr, params, message", [
    ("NoisyCount", "params = { epsilon = 1.0, gamma = 2 }",
     r"scenario\[0\]\.params\.gamma = 2 is invalid: .*NoisyCount takes no parameter 'gamma' \(its parameters: "
     r"epsilon, leaky\)"),
    ("NoisyCount", "", r"scenario\[0\]\.params = \{\} is invalid: .*NoisyCount needs 'epsilon'"),
    ("NoisyCount", "params = { leaky = true }", r"scenario\[0\]\.params = .*needs 'epsilon'"),
    ("NoisyCount", 'params = { epsilon = "one" }', r"scenario\[0\]\.params = .*raised TypeError"),
    ("correct", "params = { epsilon = 1.0 }", r"scenario\[0\]\.params = .*a mechanism object, not a class or "
     "function that builds one, so it takes no params"),
    ("build_count", "params = { epsilon = 1.0, scale = 3 }", r"scenario\[0\]\.params\.scale = 3"),
    # a plain object() is an instance of a builtin type, not something the plugin module defines
    ("not_a_mechanism", "params = { epsilon = 1.0 }", r"scenario\[0\]\.mechanism = .*:not_a_mechanism' is an "
     r"instance of object defined in 'builtins', outside the plugin modules"),
])
def test_params_that_do_not_fit_the_plugin_name_the_key(tmp_path, attr, params, message):
    with pytest.raises(InputError, match=message):
        load_plugin(tmp_path, attr, params)


def test_a_builder_returning_no_mechanism_is_refused(tmp_path):
    with pytest.raises(InputError, match=r"scenario\[0\]\.mechanism = .*has no sample\(data, size, rng\) method"):
        load_plugin(tmp_path, "pair_builder", "params = { n = 2 }")
