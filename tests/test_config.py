"""dpaudit.runs.config.load on small TOML files: a good config builds the plan it describes; every bad
key or value is an InputError that names its key path."""

import math

import numpy as np
import pytest

from dpaudit import Guarantee, InputError
from dpaudit.mechanisms.classic import Laplace, RandomizedResponse
from dpaudit.runs.config import Plan, RunSettings, load
from tests.configs import RR

GOOD = """
[run]
samples = 5000
seed = 7
confidence = 0.99
deltas = [0.0, 1e-5]
jobs = 2
backend = "local"
events = "threshold"
sequential = true

[[scenario]]
name = "rr"
mechanism = "randomized-response"
params = { epsilon = 1.0 }
expected = { "classic/rr" = "pass" }
about = "randomized response on one bit"
[scenario.data]
columns = { bit = [0] }
[scenario.neighbour]
add = { bit = 1 }

[[scenario]]
name = "laplace-swap"
mechanism = "laplace"
params = { epsilon = 0.5 }
relation = "swap"
samples_factor = 2.5
[scenario.data]
file = "values.csv"
[scenario.neighbour]
replace = { index = 1, record = { value = 0.0 } }
[[scenario.claim]]
epsilon = 0.5
id = "user/laplace"
[[scenario.claim]]
epsilon = 0.4
delta = 0.01
id = "user/laplace"
kind = "corrected"
source = "my notes"

[[scenario]]
name = "user-count"
mechanism = "tests.plugins.user_mechanisms:correct"
[scenario.data]
file = "counts.npz"
[scenario.neighbour]
remove = 0
"""


def write(tmp_path, text, name="audit.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "values.csv").write_text("value\n0.25\n1.0\n-3\n")
    np.savez(tmp_path / "counts.npz", x=np.array([1.0, 2.0, 3.0]))
    return tmp_path


def test_a_good_config_builds_the_plan_it_describes(folder):
    path = write(folder, GOOD)
    plan = load(path, allow_plugins=("tests.plugins",))  # the config names a plugin: the command line allows it
    assert isinstance(plan, Plan)
    assert plan.settings == RunSettings(samples=5000, seed=7, confidence=0.99, deltas=(0.0, 1e-5), jobs=2,
                                        backend="local", scheduler=None, events="threshold", sequential=True)
    rr, lap, user = plan.scenarios
    assert [s.name for s in plan.scenarios] == ["rr", "laplace-swap", "user-count"]

    assert rr.mechanism == RandomizedResponse(1.0) and rr.expected == {"classic/rr": "pass"}
    assert rr.samples_factor == 1 and rr.about == "randomized response on one bit"
    assert rr.pair.relation == "add-remove" and rr.pair.d["bit"].tolist() == [0]
    assert rr.pair.d_prime["bit"].tolist() == [0, 1]

    assert lap.mechanism == Laplace(0.5) and lap.pair.relation == "swap" and lap.samples_factor == 2.5
    assert lap.pair.d["value"].tolist() == [0.25, 1.0, -3]
    assert lap.pair.d_prime["value"].tolist() == [0.25, 0.0, -3]

    from tests.plugins.user_mechanisms import correct
    assert user.mechanism is correct
    assert user.pair.d["x"].tolist() == [1.0, 2.0, 3.0] and user.pair.d_prime["x"].tolist() == [2.0, 3.0]

    assert plan.claims[0] is None and plan.claims[2] is None  # the mechanisms' own claims
    assert plan.claims[1] == [Guarantee(epsilon=0.5, delta=0.0, relation="swap", source="config",
                                        claim_id="user/laplace"),
                              Guarantee(epsilon=0.4, delta=0.01, relation="swap", source="my notes",
                                        claim_id="user/laplace", kind="corrected")]
    assert plan.source["config"] == str(path) and plan.source["run"]["samples"] == 5000


def test_a_config_names_a_plugin_only_when_the_command_line_allows_its_module(folder):
    path = write(folder, GOOD)
    for allowed in ((), ("tests.plugins.user",), ("tests.plugins.user_mechanisms_other",)):
        with pytest.raises(InputError,
                           match=r"scenario\[2\]\.mechanism .*--allow-plugin tests.plugins.user_mechanisms"):
            load(path, allow_plugins=allowed)
    assert load(path, allow_plugins=("tests.plugins.user_mechanisms",)).scenarios[2].name == "user-count"


def test_defaults_when_run_is_omitted(tmp_path):
    plan = load(write(tmp_path, RR))
    assert plan.settings == RunSettings()
    assert plan.settings.samples == 1_000_000 and plan.settings.jobs == -1
    assert plan.claims == [None]


def test_a_generator_and_a_flip_neighbour(tmp_path):
    text = RR.replace('mechanism = "randomized-response"\nparams = { epsilon = 1.0 }',
                      'mechanism = "randomized-response"\nparams = { epsilon = 1.0, column = "label" }\n'
                      'relation = "label-flip"')
    text = text.replace("columns = { bit = [0] }",
                        'generator = "comparisons"\nargs = { z = [[2.0], [2.0]], labels = [1, 0] }')
    text = text.replace("add = { bit = 1 }", "flip = 0")
    (sc,) = load(write(tmp_path, text)).scenarios
    assert sc.pair.relation == "label-flip"
    assert sc.pair.d["label"].tolist() == [1, 0] and sc.pair.d_prime["label"].tolist() == [0, 0]


BAD = [
    # (replace this, by that) in RR, or a whole text; the key path the message must name
    (("[[scenario]]", "[run]\nsamplez = 5\n[[scenario]]"), "run.samplez"),
    (("[[scenario]]", "[run]\nsamples = 99\n[[scenario]]"), "run.samples = 99"),
    (("[[scenario]]", "[run]\nsamples = 1.5e0\n[[scenario]]"), "run.samples = 1.5"),  # 1.5e6: an integer
    (("[[scenario]]", "[run]\nseed = -1\n[[scenario]]"), "run.seed = -1"),
    (("[[scenario]]", "[run]\nconfidence = 1.0\n[[scenario]]"), "run.confidence = 1.0"),
    (("[[scenario]]", "[run]\nconfidence = true\n[[scenario]]"), "run.confidence = True"),
    (("[[scenario]]", "[run]\ndeltas = []\n[[scenario]]"), "run.deltas = []"),
    (("[[scenario]]", "[run]\ndeltas = [0.0, 1.0]\n[[scenario]]"), "run.deltas[1] = 1.0"),
    (("[[scenario]]", "[run]\njobs = 0\n[[scenario]]"), "run.jobs = 0"),
    (("[[scenario]]", "[run]\nbackend = \"spark\"\n[[scenario]]"), "run.backend = 'spark'"),
    (("[[scenario]]", "[run]\nscheduler = \"host:8786\"\n[[scenario]]"), "run.scheduler = 'host:8786'"),
    (("[[scenario]]", "[run]\nevents = \"all\"\n[[scenario]]"), "run.events = 'all'"),
    (("[[scenario]]", "[run]\nsequential = 1\n[[scenario]]"), "run.sequential = 1"),
    (("[[scenario]]", "run = 5\n[[scenario]]"), "config: run = 5"),
    (("[[scenario]]", "extra = 1\n[[scenario]]"), "config: extra = 1"),
    (('name = "rr"', 'name = ""'), "scenario[0].name = ''"),
    (('name = "rr"', 'name = "rr"\nsamples = 3'), "scenario[0].samples = 3"),
    (('name = "rr"\n', ""), "scenario[0].name = None"),
    (('name = "rr"', 'name = "rr"\nrelation = "friends"'), "scenario[0].relation = 'friends'"),
    (('name = "rr"', 'name = "rr"\nsamples_factor = 0'), "scenario[0].samples_factor = 0"),
    (('name = "rr"', 'name = "rr"\nexpected = { "classic/rr" = "fine" }'), "scenario[0].expected.classic/rr"),
    (("randomized-response", "nope"), "scenario[0].mechanism = 'nope'"),
    (('"randomized-response"\nparams = { epsilon = 1.0 }', '"no_such_module_x:thing"'),
     "scenario[0].mechanism = 'no_such_module_x:thing'"),
    # a plugin is checked against --allow-plugin before its params (tests/test_config_plugins.py)
    (("randomized-response", "tests.plugins.user_mechanisms:correct"), "scenario[0].mechanism"),
    (("epsilon = 1.0", "epsilon = 1.0, gamma = 2"), "scenario[0].params"),
    (("columns = { bit = [0] }", 'columns = { bit = [0] }\ngenerator = "votes"'), "scenario[0].data"),
    (("columns = { bit = [0] }", 'generator = "magic"'), "scenario[0].data.generator = 'magic'"),
    (("columns = { bit = [0] }", 'generator = "votes"\nargs = { n = 3 }'), "scenario[0].data.args"),
    (("columns = { bit = [0] }", 'file = "data.txt"'), "scenario[0].data.file = 'data.txt'"),
    (("columns = { bit = [0] }", 'file = "../outside.csv"'), "scenario[0].data.file = '../outside.csv'"),
    (("columns = { bit = [0] }", 'file = "missing.npz"'), "scenario[0].data.file = 'missing.npz'"),
    (("add = { bit = 1 }", "add = { bit = 1 }\nremove = 0"), "scenario[0].neighbour"),
    (("add = { bit = 1 }", "teleport = 1"), "scenario[0].neighbour.teleport"),
    (("add = { bit = 1 }", "add = { byte = 1 }"), "scenario[0].neighbour.add.byte"),
    (("add = { bit = 1 }", "remove = -1"), "scenario[0].neighbour.remove = -1"),
    (("add = { bit = 1 }", "replace = { index = 0 }"), "scenario[0].neighbour.replace.record"),
    (("add = { bit = 1 }", "add = { bit = 1 }\n[[scenario.claim]]\ndelta = 0.1"), "scenario[0].claim[0].epsilon"),
    (("add = { bit = 1 }", "add = { bit = 1 }\n[[scenario.claim]]\nepsilon = -2.0"),
     "scenario[0].claim[0].epsilon = -2.0"),
    (("add = { bit = 1 }", "add = { bit = 1 }\n[[scenario.claim]]\nepsilon = 1.0\ndelta = 1.5"),
     "scenario[0].claim[0].delta = 1.5"),
    (("add = { bit = 1 }", "add = { bit = 1 }\n[[scenario.claim]]\nepsilon = 1.0\nepsilom = 1"),
     "scenario[0].claim[0].epsilom"),
    (('name = "rr"', 'name = "rr"\nclaim = 3'), "scenario[0].claim = 3"),
]


@pytest.mark.parametrize("edit,path", BAD, ids=[p for _, p in BAD])
def test_each_bad_key_or_value_names_its_key_path(tmp_path, edit, path):
    (tmp_path / "data.txt").write_text("bit\n0\n")
    sub = tmp_path / "configs"
    sub.mkdir()
    (tmp_path / "outside.csv").write_text("bit\n0\n")
    with pytest.raises(InputError) as err:
        load(write(sub, RR.replace(*edit, 1)))
    assert path in str(err.value) and str(err.value).startswith("config")


def test_a_second_scenario_is_named_by_its_index(tmp_path):
    with pytest.raises(InputError, match=r"scenario\[1\]\.name = 'rr'"):
        load(write(tmp_path, RR + RR))  # names must be unique
    with pytest.raises(InputError, match=r"scenario\[1\]\.relation"):
        load(write(tmp_path, RR + RR.replace('name = "rr"', 'name = "two"\nrelation = "x"')))


def test_whole_file_problems_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="not valid TOML"):
        load(write(tmp_path, "this is = not [toml"))
    with pytest.raises(InputError, match="config: scenario = None is invalid: is required"):
        load(write(tmp_path, "[run]\nsamples = 1000\n"))
    with pytest.raises(InputError, match="config: scenario = 1"):
        load(write(tmp_path, "scenario = 1\n"))
    with pytest.raises(InputError, match="cannot be read"):
        load(tmp_path / "absent.toml")


def test_bad_data_files_name_the_file_key_and_the_line(tmp_path):
    (tmp_path / "log.csv").write_text("bit\n0\nzero\n")
    with pytest.raises(InputError, match=r"scenario\[0\]\.data\.file = 'log.csv'.*line 3"):
        load(write(tmp_path, RR.replace("columns = { bit = [0] }", 'file = "log.csv"')))
    (tmp_path / "ragged.csv").write_text("bit,extra\n0,1\n1\n")
    with pytest.raises(InputError, match=r"scenario\[0\]\.data\.file = 'ragged.csv'.*line 3 has 1 fields"):
        load(write(tmp_path, RR.replace("columns = { bit = [0] }", 'file = "ragged.csv"')))
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(InputError, match=r"scenario\[0\]\.data\.file = 'empty.csv'.*header"):
        load(write(tmp_path, RR.replace("columns = { bit = [0] }", 'file = "empty.csv"')))


def test_claims_keep_infinite_epsilon_out(tmp_path):
    text = RR.replace("add = { bit = 1 }", "add = { bit = 1 }\n[[scenario.claim]]\nepsilon = inf")
    with pytest.raises(InputError, match=r"scenario\[0\]\.claim\[0\]\.epsilon = inf"):
        load(write(tmp_path, text))
    ok = load(write(tmp_path, RR.replace("add = { bit = 1 }", "add = { bit = 1 }\n[[scenario.claim]]\nepsilon = 2")))
    assert ok.claims == [[Guarantee(epsilon=2.0, delta=0.0, relation="add-remove", source="config",
                                    claim_id="user/claim")]]
    assert math.isfinite(ok.claims[0][0].epsilon)
