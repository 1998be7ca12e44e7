"""Config files: the shipped samples run as expected; bad configs stop with exit 2 and the key path."""

import json
from pathlib import Path

import pytest

from dpaudit.cli import main
from tests.clirun import CliRun, in_process
from tests.configs import RR

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "audit" / "configs").glob("*.toml"))


def test_every_built_in_family_has_a_sample_config():
    names = {p.stem for p in CONFIGS}
    assert {"classic", "kl-bandit", "kl-linear", "kl-rlhf"} <= names


@pytest.mark.slow  # one CLI run per sample config
@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_sample_configs_run_with_their_expected_verdicts(path, tmp_path):
    assert main(["run", str(path), "--out", str(tmp_path), "--quiet"]) == 0
    resolved = json.loads((tmp_path / "config.resolved.json").read_text())
    assert resolved["scenarios"] and resolved["config"]["config"] == str(path)
    assert json.loads((tmp_path / "results.json").read_text())["as_expected"]


def write(tmp_path, text, name="audit.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


GOOD = RR


@pytest.mark.parametrize("text,message", [
    ("[run]\nsamplez = 5\n" + GOOD, "run.samplez"),
    ("[run]\nsamples = -5\n" + GOOD, "run.samples = -5"),
    ("[run]\nconfidence = 1.5\n" + GOOD, "run.confidence = 1.5"),
    ("[run]\nbackend = 'spark'\n" + GOOD, "run.backend"),
    ("[run]\ndeltas = [0.0, 2.0]\n" + GOOD, "run.deltas[1]"),
    (GOOD.replace('mechanism = "randomized-response"', 'mechanism = "nope"'), "scenario[0].mechanism"),
    (GOOD.replace("epsilon = 1.0", "epsilon = -1.0"), "epsilon = -1.0"),
    (GOOD.replace("epsilon = 1.0", 'epsilon = "one"'), "epsilon"),
    (GOOD.replace("columns = { bit = [0] }", 'file = "../../etc/passwd.csv"'), "outside the config's folder"),
    (GOOD.replace("columns = { bit = [0] }", 'file = "/etc/hosts.csv"'), "outside the config's folder"),
    (GOOD.replace("columns = { bit = [0] }", 'file = "missing.npz"'), "does not exist"),
    (GOOD.replace("columns = { bit = [0] }", 'generator = "magic"'), "scenario[0].data.generator"),
    (GOOD.replace("add = { bit = 1 }", "remove = 7"), "scenario[0].neighbour.remove"),
    (GOOD.replace("add = { bit = 1 }", "teleport = 1"), "scenario[0].neighbour.teleport"),
    (GOOD.replace('name = "rr"', 'name = "rr"\nexpected = { "classic/rr" = "maybe" }'), "expected.classic/rr"),
    (GOOD.replace("columns = { bit = [0] }", "columns = { bit = [0.5] }"), "0 and 1"),
    ("this is = not [toml", "not valid TOML"),
    ("[run]\nsamples = 10\n", "scenario"),
])
def test_bad_configs_exit_2_naming_the_key(tmp_path, text, message, capsys):
    assert main(["run", str(write(tmp_path, text)), "--quiet"]) == 2
    assert message in capsys.readouterr().err


def test_csv_data_with_a_bad_line_names_the_line(tmp_path, capsys):
    (tmp_path / "log.csv").write_text("action,reward\n0,1.0\n1,zero\n")
    text = GOOD.replace('mechanism = "randomized-response"\nparams = { epsilon = 1.0 }',
                        'mechanism = "kl-bandit"\nparams = { n_actions = 2, eta = 1.0, beta0 = 0.1 }')
    text = text.replace("columns = { bit = [0] }", 'file = "log.csv"').replace("add = { bit = 1 }", "remove = 0")
    assert main(["run", str(write(tmp_path, text)), "--quiet"]) == 2
    assert "line 3" in capsys.readouterr().err


def test_flags_override_the_config(tmp_path):
    path = write(tmp_path, "[run]\nsamples = 500000\n" + GOOD)
    assert main(["run", str(path), "--samples", "3000", "--out", str(tmp_path / "o"), "--quiet"]) == 0
    assert json.loads((tmp_path / "o" / "results.json").read_text())["samples"] == 3000


def run_cli(*args: str) -> CliRun:
    """The command line in this process: these tests read what it says and returns."""
    return in_process(*args)


@pytest.mark.parametrize("plugin,message", [
    ("tests.plugins.hostile:wrong_shape", "output length"),
    ("tests.plugins.hostile:wrong_dtype", "dtype"),
    ("tests.plugins.hostile:nan_outputs", "non-finite"),
    ("tests.plugins.hostile:raises_mid_run", "raised RuntimeError while sampling"),
    ("tests.plugins.hostile:mixed_shapes", "shape"),
])
def test_hostile_mechanisms_exit_2_without_a_verdict(plugin, message):
    proc = run_cli("run", "--mechanism", plugin, "--pair", "tests.plugins.user_mechanisms:pair", "--epsilon", "1",
                   "--samples", "600000", "--quiet")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr and "verdict" not in proc.stdout


@pytest.mark.parametrize("columns,message", [
    ({"z": [[2.0]], "label": [1.0]}, "does not exist"),          # one comparison: the MLE is undefined
    ({"z": [[2.0], [2.0]], "label": [1, 2]}, "label"),
    ({"z": [[float("inf")], [2.0]], "label": [1, 0]}, "non-finite"),
    ({"z": [], "label": []}, "empty"),
])
def test_hostile_rlhf_data_exits_2(tmp_path, columns, message):
    import numpy as np
    np.savez(tmp_path / "d.npz", **{k: np.asarray(v) for k, v in columns.items()})
    np.savez(tmp_path / "dp.npz", z=np.array([[2.0], [2.0], [-2.0]]), label=np.array([1, 0, 1]))
    proc = run_cli("run", "--mechanism", "kl-rlhf", "--param", "features=[[1.0],[-1.0]]", "--param", "ridge=1",
                   "--param", "beta0=0.1", "--param", "eta=1", "--relation", "add-remove",
                   "--data", str(tmp_path / "d.npz"), "--data-prime", str(tmp_path / "dp.npz"), "--samples", "1000")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("param,message", [("eta=NaN", "eta"), ("eta=Infinity", "eta"), ("beta0=-1", "beta0")])
def test_non_finite_or_out_of_range_parameters_exit_2(param, message):
    proc = run_cli("run", "--mechanism", "kl-bandit", "--param", "n_actions=2", "--param", "eta=1", "--param",
                   "beta0=0.1", "--param", param, "--pair", "tests.plugins.user_mechanisms:pair")
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_a_results_file_edited_by_hand_is_refused(tmp_path):
    assert main(["run", str(ROOT / "audit" / "configs" / "kl-rlhf.toml"), "--out", str(tmp_path), "--quiet"]) == 0
    payload = json.loads((tmp_path / "results.json").read_text())
    assert run_cli("summary", str(tmp_path / "results.json")).returncode == 0
    assert main(["summary", str(tmp_path)]) == 0  # the run's folder stands for its results.json
    (tmp_path / "empty").mkdir()
    assert main(["summary", str(tmp_path / "empty")]) == 2  # a folder without one is refused
    for rec in payload["records"]:
        if rec["verdict"] == "violation":
            rec["verdict"] = "pass"
    (tmp_path / "edited.json").write_text(json.dumps(payload))
    proc = run_cli("summary", str(tmp_path / "edited.json"))
    # the closed schema ties each verdict to its findings: the edited record is named, with the finding
    # its new verdict cannot have
    assert proc.returncode == 2 and "records[" in proc.stderr and "refuted (empirical)" in proc.stderr
    payload["schema"] = 99
    (tmp_path / "future.json").write_text(json.dumps(payload))
    proc = run_cli("summary", str(tmp_path / "future.json"))
    assert proc.returncode == 2 and "schema" in proc.stderr
