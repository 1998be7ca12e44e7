"""A config is data: ``--allow-plugin mymod`` lets a config choose among what ``mymod`` itself
defines, never reach through it to what ``mymod`` imported (``mymod:os.remove``, ``mymod:np.load``,
``from os import remove``) — refused before anything is called (issue 37, item 8)."""

import pickle
import sys
import time
import uuid
from pathlib import Path

import pytest

from dpaudit import InputError
from dpaudit.runs.config import load
from tests.clirun import in_process

PLUGIN = '''
import functools
import os

import numpy as np
from os import remove


class Count:
    name = "plugin-count"

    def __init__(self, epsilon=1.0):
        self.scale = 1.0 / epsilon

    def sample(self, data, size, rng):
        return np.round(float(np.sum(data)) + rng.laplace(0.0, self.scale, size))

    def rebuilt(self, epsilon):
        return Count(epsilon)

    @classmethod
    def make(cls, epsilon):
        return cls(epsilon)


def build(epsilon):
    return Count(epsilon)


MECH = Count(1.0)
count_of_two = functools.partial(Count, epsilon=2.0)
partial_remove = functools.partial(os.remove)
store = []


class Trainer:
    name = "plugin-trainer"

    def __init__(self, m):
        self.m = m

    def run(self, dataset, rng):
        return rng.random(self.m)


def score(output, canaries):
    return np.asarray(output, dtype=float)[np.asarray(canaries, dtype=int)]
'''

CONFIG = '''
[[scenario]]
name = "plugin"
mechanism = "{spec}"
params = {params}
[scenario.data]
columns = {{ x = [1.0, 2.0] }}
[scenario.neighbour]
remove = 0
'''

ONERUN = '''
[[scenario]]
name = "plugin-training"
mechanism = "{spec}"
params = {params}
scorer = "{module}:score"
canaries = 100
rule = {{ kind = "fixed", k_plus = 10, k_minus = 10 }}
[[scenario.claim]]
epsilon = 1.0
delta = 1e-5
id = "user/claim"
'''


class Payload:
    """A pickle whose load makes the folder ``marker``: proof that unpickling ran code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        import os
        return (os.mkdir, (str(self.marker),))


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A fresh plugin module (its own name, so no test sees another's import) in the working folder
    ``tmp_path/work``, beside a victim file one folder up."""
    name = f"plugsafe_{uuid.uuid4().hex[:12]}"
    work = tmp_path / "work"
    work.mkdir()
    (work / f"{name}.py").write_text(PLUGIN, encoding="utf-8")
    (tmp_path / "victim.txt").write_text("keep me", encoding="utf-8")
    monkeypatch.chdir(work)
    yield name
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "work" / "audit.toml"
    path.write_text(text, encoding="utf-8")
    return path


def mechanism(tmp_path: Path, module: str, spec: str, params: str = "{}"):
    path = write(tmp_path, CONFIG.format(spec=f"{module}:{spec}", params=params))
    return load(path, allow_plugins=(module,)).scenarios[0].mechanism


def test_a_config_cannot_delete_a_file_through_an_imported_module(plugin, tmp_path):
    path = write(tmp_path, CONFIG.format(spec=f"{plugin}:os.remove", params='{ path = "../victim.txt" }'))
    done = in_process("run", path, "--allow-plugin", plugin, "--quiet")
    assert (tmp_path / "victim.txt").read_text(encoding="utf-8") == "keep me"
    assert done.returncode == 2, done.stderr
    assert (f"scenario[0].mechanism = '{plugin}:os.remove' is invalid: '{plugin}:os' is the module 'os', outside "
            f"the plugin modules the command line allows ({plugin})") in done.stderr


def test_a_config_cannot_unpickle_through_numpy(plugin, tmp_path):
    marker = tmp_path / "pickle-ran"
    payload = tmp_path / "work" / "payload.npy"
    payload.write_bytes(pickle.dumps(Payload(marker)))
    params = f'{{ file = "{payload}", allow_pickle = true }}'
    done = in_process("run", write(tmp_path, CONFIG.format(spec=f"{plugin}:np.load", params=params)),
                      "--allow-plugin", plugin, "--quiet")
    assert not marker.exists()
    assert done.returncode == 2 and f"'{plugin}:np' is the module 'numpy'" in done.stderr, done.stderr


@pytest.mark.parametrize("spec, params, where", [
    ("remove", '{ path = "../victim.txt" }', "a function defined in 'posix'"),   # from os import remove
    ("partial_remove", '{ path = "../victim.txt" }', "an instance of partial"),  # its function is os.remove's
    ("store.append", '{}', "an instance of list defined in 'builtins'"),
    ("Count.__subclasses__", '{}', "a function whose defining module cannot be told"),
    ("build.__globals__", '{}', "an instance of dict defined in 'builtins'"),
    ("Count.__init__.__globals__", '{}', "an instance of dict defined in 'builtins'"),
    ("MECH.sample.__self__.__class__.__base__", '{}', "a class defined in 'builtins'"),
])
def test_what_the_plugin_did_not_define_is_refused_before_it_is_called(plugin, tmp_path, spec, params, where):
    with pytest.raises(InputError, match="outside the plugin modules the command line allows") as refused:
        mechanism(tmp_path, plugin, spec, params)
    assert where in str(refused.value) and f"scenario[0].mechanism = '{plugin}:{spec}'" in str(refused.value)
    assert (tmp_path / "victim.txt").exists()


def test_a_one_run_config_cannot_call_what_the_plugin_imported(plugin, tmp_path):
    path = write(tmp_path, ONERUN.format(spec=f"{plugin}:remove", params='{ path = "../victim.txt" }',
                                         module=plugin))
    done = in_process("run", path, "--allow-plugin", plugin, "--quiet")
    assert (tmp_path / "victim.txt").exists()
    assert done.returncode == 2 and f"'{plugin}:remove' is a function defined in 'posix'" in done.stderr


@pytest.mark.parametrize("spec, params, scale", [
    ("Count", "{ epsilon = 4.0 }", 0.25),       # a class, built from the params
    ("build", "{ epsilon = 2.0 }", 0.5),        # a builder function
    ("MECH", "{}", 1.0),                        # an instance of the plugin's own class
    ("count_of_two", "{}", 0.5),                # a partial of the plugin's own class
    ("MECH.rebuilt", "{ epsilon = 4.0 }", 0.25),  # a method of the plugin's own instance
    ("Count.make", "{ epsilon = 2.0 }", 0.5),   # a classmethod
])
def test_what_the_plugin_defines_still_loads(plugin, tmp_path, spec, params, scale):
    mech = mechanism(tmp_path, plugin, spec, params)
    assert type(mech).__module__ == plugin and mech.scale == scale


def test_a_package_s_submodules_are_inside_it(tmp_path, monkeypatch):
    name = f"plugpkg_{uuid.uuid4().hex[:12]}"
    package = tmp_path / "work" / name
    package.mkdir(parents=True)
    (package / "impl.py").write_text(PLUGIN, encoding="utf-8")
    (package / "__init__.py").write_text(f"from {name}.impl import Count\nimport os\n", encoding="utf-8")
    (package / "api.py").write_text(f"from {name}.impl import Count\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path / "work")
    try:
        for spec in ("Count", "impl.Count", "impl.build"):
            assert mechanism(tmp_path, name, spec, "{ epsilon = 2.0 }").scale == 0.5
        with pytest.raises(InputError, match=f"'{name}:impl.os' is the module 'os'"):
            mechanism(tmp_path, name, "impl.os.remove", '{ path = "../victim.txt" }')
        # allowing only the package's front module does not allow what it imports from a sibling
        path = write(tmp_path, CONFIG.format(spec=f"{name}.api:Count", params="{ epsilon = 2.0 }"))
        with pytest.raises(InputError, match=f"'{name}.api:Count' is a class defined in '{name}.impl', outside the "
                           rf"plugin modules the command line allows \({name}.api\)"):
            load(path, allow_plugins=(f"{name}.api",))
    finally:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]


COMMAND_RUNNERS = '''
import subprocess


class Shell(subprocess.Popen):
    """A command runner the plugin defines: no sample, no run."""
    name = "shell"


class ShellWithSample(subprocess.Popen):
    """Looks like a mechanism, but its constructor is subprocess's."""
    name = "shell-with-sample"

    def sample(self, data, size, rng):
        return rng.random(size)
'''


@pytest.mark.parametrize("spec, why", [
    ("Shell", "a class without a sample(data, size, rng), run(dataset, rng) or __call__ method"),
    ("ShellWithSample", "a class whose __init__ is subprocess.Popen's"),
])
def test_a_class_that_cannot_be_a_mechanism_is_refused_before_it_is_called(plugin, tmp_path, spec, why):
    """Issue 41, item 8: a ``subprocess.Popen`` subclass in the allowed module was instantiated with
    the config's params (and ran the command) before it was checked to be a mechanism."""
    (tmp_path / "work" / f"{plugin}.py").write_text(PLUGIN + COMMAND_RUNNERS, encoding="utf-8")
    marker = tmp_path / "command-ran"
    params = f'{{ args = ["touch", "{marker}"] }}'
    with pytest.raises(InputError, match="it was not called") as refused:
        mechanism(tmp_path, plugin, spec, params)
    time.sleep(0.5)  # a command that did start would have touched the marker by now
    assert not marker.exists()
    assert why in str(refused.value)
