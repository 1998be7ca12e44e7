"""Bad input to the one-run planner and to a config's data file is the user's (exit 2, a message
naming the value and what is allowed), never an internal error (exit 3) — issue 37, item 13."""

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpaudit.core import InputError, check_real_array
from dpaudit.onerun.planner import (
    MU_MAX,
    RR_EPSILON_MAX,
    ScoreModel,
    estimate_model,
    expected_counts,
    model_epsilon,
    plan_canaries,
)
from dpaudit.runs.config import load
from tests.clirun import in_process


@pytest.mark.parametrize("args, named", [
    (["plan", "--onerun", "--epsilon", "2", "--mu", "40"], "--mu 40.0 is invalid: must be a finite number in (0, 20]"),
    (["plan", "dpsgd-whitebox", "--mu", "1e308"], "--mu 1e+308 is invalid: must be a finite number in (0, 20]"),
    (["plan", "--onerun", "--epsilon", "2", "--mu", "nan"], "--mu nan is invalid"),
    (["plan", "--onerun", "--epsilon", "2", "--rr-epsilon", "60"], "--rr-epsilon 60.0 is invalid: must be a finite "
     "number in (0, 60)"),
    (["plan", "--onerun", "--epsilon", "2", "--mu", "1", "--canaries-per-run", "1e7"],
     "--canaries-per-run 10000000 is invalid: at most 1000000"),
])
def test_a_model_flag_out_of_range_is_bad_input(args, named):
    done = in_process(*args)
    assert done.returncode == 2 and named in done.stderr, done.stderr
    assert "internal error" not in done.stderr


@pytest.mark.parametrize("args", [
    ["plan", "--onerun", "--epsilon", "1", "--rr-epsilon", "59.99"],  # 1 - p rounds to 0: a division by zero
    ["plan", "--onerun", "--epsilon", "59", "--mu", "20", "--delta", "1e-300"],  # e^eps overflowed
])
def test_the_edges_of_the_model_ranges_plan(args):
    done = in_process(*args)
    assert done.returncode == 0 and done.stdout.startswith("canaries="), done.stderr


def test_the_api_refuses_what_the_command_line_refuses():
    with pytest.raises(InputError, match=r"mu = 40\.0 is invalid: must be a finite number in \[0, 20\]"):
        plan_canaries(2.0, mu=40.0)
    with pytest.raises(InputError, match=r"mu = 1e\+308 is invalid"):
        expected_counts(100, 10, mu=1e308)
    with pytest.raises(InputError, match=r"rr_epsilon = 1000\.0 is invalid: must be a finite number in \[0, 60\]"):
        ScoreModel("rr", 1000.0)
    with pytest.raises(InputError, match=r"canaries_per_run = 10000000 is invalid"):
        plan_canaries(1.0, mu=1.0, canaries_per_run=10**7)
    found = plan_canaries(1.0, epsilon=59.99)
    assert found is not None and found.expected_epsilon_lower >= 1.0


def test_randomized_response_s_own_epsilon_is_exact_at_large_epsilon():
    """eps'(delta) = log((p - delta)/(1 - p)) for RR at eps, p = e^eps/(1 + e^eps); at eps = 59.99 the
    float 1 - p is 0, the closed form log(p - delta) + eps + log1p(e^-eps) is not."""
    assert model_epsilon(ScoreModel("rr", 59.99), 1e-5) == pytest.approx(59.99 + math.log(1 - 1e-5), abs=1e-9)
    p = math.exp(2.0) / (1 + math.exp(2.0))
    assert model_epsilon(ScoreModel("rr", 2.0), 0.01) == pytest.approx(math.log((p - 0.01) / (1 - p)), rel=1e-12)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["gaussian", "rr"]),
       value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**400, 10**400)),
       delta=st.floats(min_value=0.0, max_value=1.0, exclude_max=True))
def test_a_model_is_refused_or_planned_never_crashed(kind, value, delta):
    """Any number given as a model parameter is refused with an InputError naming it, or the model's
    own eps(delta) and median counts come out (no OverflowError, ZeroDivisionError or brentq failure)."""
    try:
        model = ScoreModel(kind, value)
    except InputError as exc:
        assert not (isinstance(value, (int, float)) and 0 <= value <= (MU_MAX if kind == "gaussian"
                                                                       else RR_EPSILON_MAX)), exc
        return
    own = model_epsilon(model, delta)
    assert own >= 0 and not math.isnan(own)
    r, v = expected_counts(1000, 50, **({"mu": value} if kind == "gaussian" else {"epsilon": value}))
    assert r == 100 and 0 <= v <= r


def test_complex_scores_are_refused_not_truncated():
    rng = np.random.default_rng(0)
    secret = rng.integers(0, 2, 200)
    with pytest.raises(InputError, match=r"scores = '<200 values of dtype complex128>' is invalid: must be real "
                                         "numbers"):
        estimate_model(secret + 1j * rng.standard_normal(200), secret)
    for bad in (np.array([1 + 2j, 3]), ["1.5", "2"], [object(), 1.0]):
        with pytest.raises(InputError, match="must be real numbers"):
            check_real_array("scores", bad)
    assert check_real_array("scores", [True, 2, 3.5]).tolist() == [1.0, 2.0, 3.5]


CONFIG = """
[[scenario]]
name = "x"
mechanism = "randomized-response"
params = {{ epsilon = 1.0 }}
[scenario.data]
file = "{name}"
[scenario.neighbour]
remove = 0
"""


def _loop(folder):
    os.symlink("b.npz", folder / "a.npz")
    os.symlink("a.npz", folder / "b.npz")
    return "a.npz"


@pytest.mark.parametrize("make, message", [
    (_loop, "scenario[0].data.file = 'a.npz' is invalid: is a loop of symbolic links"),
    (lambda folder: "x\\u0000y.npz", "scenario[0].data.file = 'x\\x00y.npz' is invalid: contains a NUL byte"),
    (lambda folder: "a" * 4000 + ".npz", "...(4004 characters)' is invalid: holds a name longer than 255 bytes"),
    (lambda folder: "a/" * 2100 + "x.npz", "...(4205 characters)' is invalid: is 4205 bytes long"),
])
def test_a_data_file_no_file_can_be_is_bad_input(tmp_path, make, message):
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.format(name=make(tmp_path)), encoding="utf-8")
    done = in_process("run", path, "--samples", "1000", "--quiet")
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_a_name_with_a_lone_surrogate_is_bad_input(tmp_path):
    """JSON (a run folder's run.json) can spell "\\ud800", which no file name holds."""
    with pytest.raises(InputError, match="holds a lone surrogate character, which no file name can hold"):
        load(tmp_path / "c\ud800.toml")
