"""An interrupted run is resumed only with the code it started with, a helper module included.

The code fingerprint covered the modules defining the mechanism's class and the functions it
holds, not a helper in another of the user's files that ``sample`` calls: editing the helper's
noise scale between a kill and ``--resume`` mixed the counts of two mechanisms.  Now the user's
modules that the mechanism's module imports (``from helpers import noise``, ``import helpers``)
enter the fingerprint too (:func:`dpaudit.runtime.identity.with_helpers`), and such a resume is
refused with exit 2, naming the helper.
"""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from dpaudit.runtime.identity import with_helpers
from tests.clirun import in_process, killed_after

# run --out draws no report.pdf here: these tests never read it (tests/clirun.py skip_report_pdf)
pytestmark = pytest.mark.usefixtures("no_report_pdf")


HELPER = '''
SCALE = 1.0 / 3  # leaky against a claim of epsilon 1


def noise(rng, size):
    return rng.laplace(0.0, SCALE, size)
'''

MECHANISM = '''
import numpy as np

{imports}


class Lap:
    name = "helped-laplace"

    def sample(self, data, size, rng):
        return np.round(float(np.sum(data)) + {call}(rng, size), 3)


mech = Lap()
pair = (np.array([0.0, 1.0]), np.array([0.0, 1.0, 1.0]))
'''

FORMS = {"from-import": ("from helpers import noise", "noise"),
         "module-import": ("import helpers", "helpers.noise")}


@pytest.fixture
def plugin(tmp_path, monkeypatch, request):
    """``helped`` (the mechanism) and ``helpers`` (its noise) in a folder on sys.path."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    imports, call = FORMS[request.param]
    (folder / "helped.py").write_text(textwrap.dedent(MECHANISM.format(imports=imports, call=call)))
    (folder / "helpers.py").write_text(textwrap.dedent(HELPER))
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # an edit within one second must not hit a stale .pyc

    def fresh():
        for name in ("helped", "helpers"):
            sys.modules.pop(name, None)
        importlib.invalidate_caches()

    fresh()
    yield folder, fresh
    fresh()


@pytest.mark.parametrize("plugin", list(FORMS), indirect=True)
def test_a_resume_whose_helper_module_changed_is_refused(plugin, tmp_path):
    folder, fresh = plugin
    out = tmp_path / "run"
    first = in_process("run", "--mechanism", "helped:mech", "--pair", "helped:pair", "--epsilon", "1",
                       "--samples", "1000000", "--quiet", "--out", out)
    assert first.returncode == 1, first.stderr  # scale 1/3: a real finding
    killed_after(out, 3)
    # the twin: the same code resumes (the refusal below is the helper's edit, nothing else)
    fresh()
    assert in_process("run", "--resume", out, "--allow-plugin", "helped", "--quiet").returncode == 1
    killed_after(out, 3)
    helper = folder / "helpers.py"
    helper.write_text(helper.read_text().replace("SCALE = 1.0 / 3", "SCALE = 1.0"))
    fresh()
    resumed = in_process("run", "--resume", out, "--allow-plugin", "helped", "--quiet")
    assert resumed.returncode == 2, resumed.stderr
    assert "mechanism's code changed" in resumed.stderr and "helpers" in resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert not (out / "results.json").exists() and len((out / "checkpoint.jsonl").read_text().splitlines()) == 3


def test_only_the_users_modules_that_the_code_refers_to_are_followed(tmp_path, monkeypatch):
    """numpy and dpaudit are named by their versions elsewhere, never walked; a user module that is
    loaded but not referred to stays out (the set does not depend on what else was imported)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "walk_helper.py").write_text("def f():\n    return 1\n")
    (tmp_path / "walk_unrelated.py").write_text("X = 1\n")
    (tmp_path / "walk_main.py").write_text("import numpy as np\nfrom dpaudit.core import require\n"
                                           "from walk_helper import f\n")
    for name in ("walk_helper", "walk_unrelated", "walk_main"):
        sys.modules.pop(name, None)
    importlib.import_module("walk_unrelated")
    importlib.import_module("walk_main")
    assert with_helpers({"walk_main"}) == {"walk_main", "walk_helper"}
    assert with_helpers({"numpy"}) == {"numpy"}
