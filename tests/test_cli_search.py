"""``python -m audit run --search SPACE`` and a config scenario's ``search`` key: the pair is
searched (dpaudit.engine.search.search_pair), the exit status is the verdicts' (0 as expected, 1 a
finding, 2 bad input).  Confidence 0.95, seed 0 throughout."""

import json

import numpy as np
import pytest

SMALL = ("--samples", "10000", "--quiet", "--jobs", "1")


# run --out draws no report.pdf here: these tests never read it (tests/clirun.py skip_report_pdf)
pytestmark = pytest.mark.usefixtures("no_report_pdf")


def results(folder):
    return json.loads((folder / "results.json").read_text())


def test_a_query_vector_search_catches_the_svt_without_query_noise_and_passes_the_correct_one(cli, tmp_path):
    broken = cli("run", "--mechanism", "svt-without-query-noise", "--param", "epsilon=0.5", "--search", "queries:2",
                 *SMALL, "--out", tmp_path / "broken")
    # the registry marks the claim refuted: an expected refutation, caught (exit 0)
    assert broken.returncode == 0, broken.stdout + broken.stderr
    assert "known erratum — caught" in broken.stdout
    record = results(tmp_path / "broken")["records"][0]
    assert record["claim_id"] == "classic/svt-no-query-noise" and record["verdict"] == "violation"
    assert record["epsilon_lower"] > 1.0  # true ε is infinite
    search = results(tmp_path / "broken")["scenarios"][0]["search"]
    assert search["space"].startswith("query vectors of dimension 2") and len(search["tried"]) > 10
    fine = cli("run", "--mechanism", "sparse-vector", "--param", "epsilon=0.5", "--search", "queries:2", *SMALL,
               "--out", tmp_path / "fine")
    assert fine.returncode == 0, fine.stdout + fine.stderr
    assert results(tmp_path / "fine")["records"][0]["epsilon_lower"] <= 0.5


def test_a_record_search_over_the_data_finds_the_neighbour_that_breaks_a_claim(cli, tmp_path):
    data = tmp_path / "d.npz"
    np.savez(data, value=np.array([0.0, 1.0, 0.5]))
    # Laplace at ε = 1 on Σ clip(x, 0, 1): removing the record 1.0 moves q by 1, so a claim of 0.5 is refuted
    # and the true claim holds; the pair is found among the data's own neighbours.
    low = cli("run", "--mechanism", "laplace", "--param", "epsilon=1", "--data", data, "--search", "records",
              "--epsilon", "0.5", *SMALL, "--out", tmp_path / "low")
    assert low.returncode == 1, low.stderr
    payload = results(tmp_path / "low")
    assert payload["records"][0]["epsilon_lower"] > 0.5
    assert "1.0" in payload["scenarios"][0]["search"]["chosen"]
    right = cli("run", "--mechanism", "laplace", "--param", "epsilon=1", "--data", data, "--search", "records",
                "--epsilon", "1", *SMALL)
    assert right.returncode == 0, right.stdout + right.stderr


@pytest.mark.parametrize(("extra", "message"), [
    (("--mechanism", "sparse-vector", "--param", "epsilon=1", "--search", "queries:0"), "DIM >= 1"),
    (("--mechanism", "sparse-vector", "--param", "epsilon=1", "--search", "everything"), "queries:DIM"),
    (("--mechanism", "laplace", "--param", "epsilon=1", "--search", "records"), "base dataset"),
    (("--mechanism", "sparse-vector", "--param", "epsilon=1", "--search", "queries:3", "--pair", "x:y"), "drop --pair"),
    (("--search", "queries:3"), "need --mechanism"),
])
def test_bad_search_options_exit_2_with_a_message(cli, extra, message):
    run = cli("run", *extra, *SMALL)
    assert run.returncode == 2 and message in run.stderr, run.stderr


def test_a_config_scenario_searches_its_pair(cli, tmp_path):
    config = tmp_path / "search.toml"
    config.write_text("""
[run]
samples = 10000
jobs = 1

[[scenario]]
name = "svt-no-noise"
mechanism = "svt-without-query-noise"
params = { epsilon = 0.5 }
search = "queries:2"
expected = { "classic/svt-no-query-noise" = "violation" }

[[scenario]]
name = "svt"
mechanism = "sparse-vector"
params = { epsilon = 0.5 }
search = "queries:2"
""")
    run = cli("run", config, "--quiet", "--out", tmp_path / "out")
    assert run.returncode == 0, run.stdout + run.stderr
    records = results(tmp_path / "out")["records"]
    assert [r["verdict"] for r in records] == ["violation", "pass"]
    # without `expected`, the registry's status makes the same refutation expected
    config.write_text(config.read_text().replace('expected = { "classic/svt-no-query-noise" = "violation" }', ""))
    again = cli("run", config, "--quiet")
    assert again.returncode == 0 and "known erratum — caught" in again.stdout


def test_a_config_scenario_cannot_both_search_and_name_its_pair(cli, tmp_path):
    config = tmp_path / "both.toml"
    config.write_text("""
[[scenario]]
name = "both"
mechanism = "laplace"
params = { epsilon = 1.0 }
search = "records"
data = { columns = { value = [0.0, 1.0] } }
neighbour = { remove = 0 }
""")
    run = cli("run", config, "--quiet")
    assert run.returncode == 2 and "scenario[0].search" in run.stderr, run.stderr
