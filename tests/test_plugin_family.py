"""A third-party family plugs in through the ``dpaudit.families`` entry point, with no engine edit.

The toy family lives in tests/toyfamily (a mechanism module and a catalog module); these tests
declare it the way an installed distribution does — a ``*.dist-info`` folder with
``entry_points.txt`` on the path — and run it from the CLI (``list``, ``--family``,
``--mechanism NAME --param``) and from a TOML config.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # five CLI subprocesses (~10 s)


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    info = site / "toy_family-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-family\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[dpaudit.families]\ntoy = tests.toyfamily.catalog:FAMILY\n",
                                           encoding="utf-8")
    return site


def run_cli(plugin_path: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_path), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "audit", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


def test_the_plugin_family_is_listed(plugin_path):
    out = run_cli(plugin_path, "list")
    assert out.returncode == 0, out.stderr
    assert "[toy] a toy third-party family" in out.stdout
    assert "toy-noisy-sign" in out.stdout  # its mechanism, one line like every other
    listed = json.loads(run_cli(plugin_path, "list", "--json").stdout)  # its scenario, in the default suite
    assert "toy-sign" in [sc["name"] for sc in listed["suites"]["default"]]


def test_its_scenario_runs_from_the_cli(plugin_path, tmp_path):
    out = run_cli(plugin_path, "run", "--family", "toy", "--samples", "200000", "--quiet", "--out", str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    records = json.loads((tmp_path / "results.json").read_text())["records"]
    assert [(r["scenario"], r["claim_id"], r["verdict"]) for r in records] == [("toy-sign", "toy/sign", "pass")]
    assert 0.8 < records[0]["epsilon_lower"] <= records[0]["epsilon_exact"] == pytest.approx(1.0)


def test_its_mechanism_is_built_by_name(plugin_path, tmp_path):
    d, dp = tmp_path / "d.npz", tmp_path / "dp.npz"
    np.savez(d, bit=np.array([1, 0, 0]))
    np.savez(dp, bit=np.array([0, 0]))
    out = run_cli(plugin_path, "run", "--mechanism", "toy-noisy-sign", "--param", "epsilon=0.5", "--data", str(d),
                  "--data-prime", str(dp), "--samples", "100000", "--quiet")
    assert out.returncode == 0, out.stderr
    assert "toy/sign" in out.stdout and "every verdict as expected" in out.stdout


def test_its_mechanism_and_generator_run_from_a_config(plugin_path, tmp_path):
    (tmp_path / "toy.toml").write_text('''
[run]
samples = 100000

[[scenario]]
name = "toy-from-config"
mechanism = "toy-noisy-sign"
params = { epsilon = 2.0 }
expected = { "toy/sign" = "pass" }

[scenario.data]
generator = "toy_bits"
args = { ones = 1, zeros = 4 }

[scenario.neighbour]
remove = 0
''', encoding="utf-8")
    out = run_cli(plugin_path, "run", str(tmp_path / "toy.toml"), "--quiet")
    assert out.returncode == 0, out.stderr
    assert "toy-from-config" in out.stdout and "toy/sign" in out.stdout


def test_without_the_entry_point_the_family_is_unknown(tmp_path):
    out = run_cli(tmp_path, "run", "--family", "toy", "--quiet")
    assert out.returncode == 2 and "family = 'toy' is invalid" in out.stderr
