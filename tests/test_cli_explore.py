"""A CLI a person can explore: `list` with parameters, `list NAME`, `list --configs`, "did you
mean", `--version`, numbers in float notation, the console script finding the user's module
like `python -m audit`, and `bench` writing only where --out says."""

import argparse
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import dpaudit
from dpaudit import catalog
from dpaudit.cli import main
from dpaudit.cli.listing import SHIPPED_CONFIGS
from dpaudit.cli.parser import _int_at_least, _sizes, build_parser
from dpaudit.runs import bench

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "audit", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)


def test_list_shows_every_built_in_mechanism_with_its_parameters(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in catalog.mechanisms():  # one line each in `list`, the details with `list NAME`
        assert len(re.findall(rf"^  {re.escape(name)} ", out, flags=re.M)) == 1
    for name, entry in catalog.mechanisms().items():
        assert main(["list", name]) == 0
        block = capsys.readouterr().out
        assert " ".join(entry.about.split()) in " ".join(block.split())
        for p in entry.parameter_table():
            row = rf"^ {{2}}{re.escape(p.name)} +{re.escape(p.type)} +{re.escape(p.default)} +\S"
            assert re.search(row, block, flags=re.M), (name, p)
            assert " ".join(p.meaning.split()) in " ".join(block.split())
    assert main(["list", "laplace"]) == 0
    assert "epsilon      float  required  the ε the mechanism is calibrated for" in capsys.readouterr().out  # aligned


def test_every_parameter_of_every_built_in_mechanism_has_type_default_and_meaning():
    for name, entry in catalog.mechanisms().items():
        table = entry.parameter_table()
        assert table, name
        for p in table:
            assert p.type and p.default and p.meaning, (name, p)


def test_descriptions_are_whole_sentences_not_cut():
    about = catalog.mechanisms()["exponential-mechanism"].about
    assert about.startswith("The exponential mechanism of the KL paper, Definition 2, eq. (6): π(a; D) ∝")
    assert about.endswith("(a record that raises one score and lowers the others).")
    assert "\n" not in about and "  " not in about
    gaussian = catalog.mechanisms()["gaussian"].about
    assert gaussian.endswith("(Dwork & Roth 2014, Theorem A.1).") and "  " not in gaussian


def test_forwarded_parameters_are_listed_for_builder_functions():
    names = [p.name for p in catalog.mechanisms()["dp-pg"].parameter_table()]
    assert names[:3] == ["env", "m", "T"] and "schedule" in names
    mle = {p.name: p for p in catalog.mechanisms()["align-mle"].parameter_table()}
    assert mle["model"].default == "'pairwise'" and mle["C"].meaning.startswith("the paper's unspecified constant")


def test_list_one_mechanism_shows_its_parameters_and_registry_claims(capsys):
    assert main(["list", "kl-rlhf"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("kl-rlhf  [family kl]")
    assert "bound_b" in out and "Claims in the registry (9):" in out
    assert "kl-rlhf/thm3-label  [refuted]" in out and "kl-rlhf/thm3-label-corrected  [corrected]" in out
    assert main(["list", "gaussian"]) == 0
    assert "classic/gaussian  [proven]" in capsys.readouterr().out


def test_list_one_mechanism_shows_its_canary_design_when_it_has_one(capsys):
    """Every training mechanism the one-run suite audits states its canary design in `list NAME`
    (and `list --json`); a mechanism without one (laplace) shows none."""
    designed = {"dp-pg", "align-mle", "align-covariance", "dpsgd-reward-model"}
    for name in sorted(designed):
        assert main(["list", name]) == 0
        out = capsys.readouterr().out
        assert "Canary design (one-run audit" in out, name
    assert main(["list", "laplace"]) == 0
    assert "Canary design" not in capsys.readouterr().out
    entries = {e.name: e for e in catalog.mechanisms().values()}
    assert {n for n, e in entries.items() if e.canaries} == designed


def test_a_misspelled_name_gets_a_suggestion(capsys, cli):
    assert main(["list", "kl-bandt"]) == 2
    assert "did you mean 'kl-bandit'" in capsys.readouterr().err  # the closest first (then kl-linear-bandit)
    proc = cli("run", "--mechanism", "laplase", "--param", "epsilon=1", "--pair", "tests.plugins.user_mechanisms:pair")
    assert proc.returncode == 2 and "did you mean 'laplace'?" in proc.stderr and "Traceback" not in proc.stderr
    assert main(["sweep", "kl-mb", "--n", "10"]) == 2
    assert "did you mean 'kl-mab'?" in capsys.readouterr().err
    assert main(["run", "--family", "klx"]) == 2
    assert "did you mean 'kl'?" in capsys.readouterr().err


def test_list_configs_shows_the_shipped_configs_and_they_live_in_the_package(capsys):
    assert Path(dpaudit.__file__).resolve().parent / "configs" == SHIPPED_CONFIGS
    assert main(["list", "--configs"]) == 0
    out = capsys.readouterr().out
    for name in ("classic.toml", "kl-bandit.toml", "kl-linear.toml", "kl-rlhf.toml"):
        assert name in out and str(SHIPPED_CONFIGS / name) in out
    assert "data/bandit_log.csv" in out
    assert (ROOT / "audit" / "configs" / "classic.toml").read_bytes() == (SHIPPED_CONFIGS / "classic.toml").read_bytes()


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith(f"dpaudit {dpaudit.__version__} ")
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith(f"dpaudit {dpaudit.__version__}")


@pytest.mark.parametrize("text, value", [("1000000", 10**6), ("1e6", 10**6), ("1E6", 10**6), ("2.5e5", 250_000),
                                         ("1_000_000", 10**6), (" 300 ", 300), ("1.0e3", 1000)])
def test_integers_may_be_written_in_float_notation(text, value):
    assert _int_at_least(100)(text) == value


@pytest.mark.parametrize("text, message", [("1.5e0", "not an integer"), ("1.5", "not an integer"),
                                           ("lots", "not an integer"), ("inf", "not an integer"),
                                           ("nan", "not an integer"), ("1e99", "too large"), ("50", ">= 100")])
def test_non_integral_or_small_values_are_refused(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        _int_at_least(100)(text)


def test_samples_1e6_is_parsed_by_run_bench_and_sweep(cli):
    parser = build_parser()
    assert parser.parse_args(["run", "--samples", "1e6"]).samples == 1_000_000
    assert parser.parse_args(["bench", "--samples", "2e6"]).samples == 2_000_000
    assert parser.parse_args(["sweep", "kl-mab", "--samples", "2e5", "--n", "1e1,2e1"]).n == [10, 20]
    assert _sizes("10, 20") == [10, 20]
    proc = cli("run", "--samples", "1.5e0", "--mechanism", "laplace", "--param", "epsilon=1")
    assert proc.returncode == 2 and "not an integer" in proc.stderr


def test_run_with_samples_in_float_notation(tmp_path, cli):
    proc = cli("run", "--mechanism", "tests.plugins.user_mechanisms:correct", "--pair",
                   "tests.plugins.user_mechanisms:pair", "--epsilon", "1", "--samples", "2e4", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "budget 20000 samples per side" in proc.stdout


USER_MODULE = """
import numpy as np
from dpaudit.mechanisms.classic import on_grid

class Count:
    name = "my-count"

    def sample(self, data, size, rng):
        return on_grid(float(np.sum(data)) + rng.laplace(0.0, 1.0, size))

m = Count()
pair = (np.array([0.0]), np.array([0.0, 1.0]))
"""


def _console_script(bin_dir: Path) -> Path:
    """The ``dpaudit`` script as pip writes it, from pyproject.toml's [project.scripts]."""
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["dpaudit"]
    module, _, attr = spec.partition(":")
    script = bin_dir / "dpaudit"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {attr}\n"
                      f"if __name__ == '__main__':\n    sys.exit({attr}())\n")
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("how", ["console script", "python -m"])
def test_a_users_module_in_the_current_folder_is_found_by_both_commands(tmp_path, how):
    (tmp_path / "work").mkdir()
    (tmp_path / "bin").mkdir()
    (tmp_path / "work" / "mymod.py").write_text(USER_MODULE)
    command = ([str(_console_script(tmp_path / "bin"))] if how == "console script"
               else [sys.executable, "-m", "audit"])
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([*command, "run", "--mechanism", "mymod:m", "--pair", "mymod:pair", "--epsilon", "1",
                           "--samples", "20000", "--quiet"], cwd=tmp_path / "work", env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "my-count" in proc.stdout and "every verdict as expected" in proc.stdout


def test_bench_writes_json_only_where_out_says(tmp_path, monkeypatch, capsys):
    report = {"throughput": [], "tightness": [], "machine": {}}
    monkeypatch.setattr(bench, "run", lambda **kwargs: report)
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--samples", "1e4"]) == 0
    assert list(tmp_path.iterdir()) == []
    assert main(["bench", "--samples", "1e4", "--out", str(tmp_path / "b" / "bench.json")]) == 0
    assert (tmp_path / "b" / "bench.json").exists() and "wrote" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


@pytest.mark.slow  # a subprocess pipeline
def test_list_survives_a_closed_pipe():
    proc = subprocess.run(f"'{sys.executable}' -m audit list | head -1", shell=True, cwd=ROOT, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                          timeout=300)
    assert proc.stdout.startswith("Built-in mechanisms") and "Traceback" not in proc.stderr
