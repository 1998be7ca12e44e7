"""A pipeline audit's result in results.json, the run table and the PDF (issue 43, point 6).

Fast: one tiny Opacus pipeline (200 records, 4 features and 100 spare coordinates, σ = 1, q = 0.1,
T = 40, m = 100 gradient canaries) written by
:func:`~dpaudit.pipelines.opacus_record.save_results`, read back by the results loader and re-checker
(``summary``), and its twin: the same file with the right-guess count raised is refused.  Slow: the
built-in ``run --suite opacus`` exits 0 with every expectation met, a fault's curve refuted as
expected and the correct pipeline's claims holding with what they could have caught (each of its
expectations fails with probability well under 0.01 together: :mod:`dpaudit.pipelines.opacus_suite`).

CPU (one torch thread, measured): the fast tests about 7 s beside the imports (torch and opacus 1 s):
the audit 3.3 s (its PRV ε and PLD curve included), what its claims could have caught 0.8 s, writing
the folder with its PDF 0.9 s, each read of the file through the loader and re-checker 0.8 s (three
reads).  The slow test: 18 CPU s (the suite's five training runs and its PDF).
"""

from __future__ import annotations

import copy
import json
import warnings
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the opacus extra is not installed (CI installs it: .ci/run)")
pytest.importorskip("opacus", reason="the opacus extra is not installed (CI installs it: .ci/run)")
from pypdf import PdfReader

from dpaudit.core import InputError
from dpaudit.pipelines.opacus import attach
from dpaudit.pipelines.opacus_record import design_of, save_results
from dpaudit.pipelines.opacus_suite import SUITE, expectation_failures
from dpaudit.results.saved import load_results
from tests.clirun import in_process
from tests.opacus_pipelines import reward_pipeline, trainer
from tests.slow_shared import one_torch_thread  # noqa: F401  (a fixture, used by name below)

pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.usefixtures("one_torch_thread")]

TINY = {"n": 200, "features": 4, "spare": 100, "noise_multiplier": 1.0, "sample_rate": 0.1}


@pytest.fixture(scope="module")
def saved(one_torch_thread, tmp_path_factory):  # noqa: F811  (the fixture, by name)
    """(audit, result, folder, the table save_results returned) of one tiny pipeline audit."""
    engine, model, optimizer, loader = reward_pipeline(**TINY)
    audit = attach(engine=engine, model=model, optimizer=optimizer, data_loader=loader, delta=1e-5, canaries=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit.run(trainer(4), seed=0)
    folder = tmp_path_factory.mktemp("pipeline")
    table = save_results(audit, result, folder, name="tiny-pipeline", seconds=1.5)
    return audit, result, folder, table


def test_a_pipeline_record_passes_the_loader_and_names_the_pipeline(saved):
    _, result, folder, _ = saved
    payload = load_results(folder)  # the schema, then every one-run game recounted
    (sc,) = payload["scenarios"]
    assert sc["kind"] == "one-run" and sc["scenario"] == "tiny-pipeline" and sc["m"] == 100
    assert sc["mechanism"] == "opacus-1.6.0-dpsgd"
    for words in ("opacus 1.6.0 make_private", "sigma=1,", "q=0.1,", "T=40,", "C=1,", "prv accountant",
                  "100 gradient canaries", "no fault"):
        assert words in sc["description"], words
    assert sc["secret_source"] == "fresh entropy" and sc["secret_sha256"] == result.secret_sha256
    assert sc["isolated"] is not None  # the premise checked on every step, kept with its game
    ids = [rec["claim_id"] for rec in payload["records"]]
    assert ids == ["opacus/prv-accountant", "opacus/pld-curve"]
    assert [rec["verdict"] for rec in payload["records"]] == [c.verdict for c in result.claims]
    assert "torch" in payload["environment"] and payload["environment"]["opacus"] == "1.6.0"


def test_the_run_table_and_summary_show_the_pipeline_scenario(saved):
    _, result, folder, table = saved
    assert (folder / "summary.txt").read_text(encoding="utf-8") == table
    assert "tiny-pipeline" in table and "opacus/prv-accountant" in table and "opacus/pld-curve" in table
    assert f"{result.v}/{result.r} guesses right" in table
    done = in_process("summary", folder)
    assert done.returncode == 0, done.stderr
    assert "tiny-pipeline" in done.stdout and "opacus/pld-curve" in done.stdout


def test_the_pdf_has_the_pipelines_one_run_page(saved):
    _, result, folder, _ = saved
    text = "".join("".join(p.extract_text().split()) for p in PdfReader(folder / "report.pdf").pages)
    for words in ("One-run scenario tiny-pipeline", "opacus 1.6.0 make_private pipeline", "100 gradient canaries",
                  "opacus-1.6.0-dpsgd", "drawn by dpaudit from fresh entropy", result.secret_sha256,
                  "independent canaries (declared by the design)"):
        assert "".join(words.split()) in text, words


def test_a_forged_right_guess_count_is_refused(saved, tmp_path):
    """The twin: the same file with v raised by 3 wherever it is stated (scenario, tests, records) is
    refused by the re-checker (the bounds recomputed from the counts, the counts from the stored scores
    and secret contradict it)."""
    _, _, folder, _ = saved
    payload = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    forged = copy.deepcopy(payload)
    sc = forged["scenarios"][0]
    sc["v"] = sc["tests"][0]["v"] = sc["v"] + 3
    for rec in forged["records"]:
        rec["onerun"]["v"] = rec["onerun"]["tests"][0]["v"] = sc["v"]
    (tmp_path / "results.json").write_text(json.dumps(forged), encoding="utf-8")
    with pytest.raises(InputError, match=r"contradicts|\bv\b"):  # the honest file passes: the first test
        load_results(tmp_path / "results.json")


def test_a_folder_holding_results_is_refused_unless_overwrite(saved, tmp_path):
    audit, result, folder, _ = saved
    with pytest.raises(InputError, match=r"already holds a results\.json"):
        save_results(audit, result, folder, name="tiny-pipeline")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "results.json").write_text("{}", encoding="utf-8")
    save_results(audit, result, tmp_path / "old", name="again", overwrite=True)  # replaced when asked
    assert json.loads((tmp_path / "old" / "results.json").read_text(encoding="utf-8"))["scenarios"][0]["scenario"] \
        == "again"
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="must be a folder"):
        save_results(audit, result, tmp_path / "file")
    with pytest.raises(InputError, match="seconds"):
        save_results(audit, result, tmp_path / "new", seconds=float("nan"))


def test_an_expectation_naming_no_claim_is_refused(saved):
    audit, result, _, _ = saved
    with pytest.raises(InputError, match=r"expected\.opacus/rdp-accountant"):
        design_of(audit, result, name="x", expected={"opacus/rdp-accountant": "pass"})
    with pytest.raises(InputError, match="name"):
        design_of(audit, result, name="", expected=None)


@pytest.mark.slow
def test_the_builtin_opacus_suite_meets_every_expectation(tmp_path: Path):
    """``run --suite opacus``: exit 0; the correct pipeline's claims hold with a "could have caught"
    line; each fault's curve is refuted as expected (its row says refuted)."""
    done = in_process("run", "--suite", "opacus", "--quiet", "--out", tmp_path / "run")
    assert done.returncode == 0, done.stdout + done.stderr
    payload = load_results(tmp_path / "run")
    assert payload["as_expected"] and len(payload["scenarios"]) == 5
    by = {(r["scenario"], r["claim_id"]): r for r in payload["records"]}
    for cid in ("opacus/prv-accountant", "opacus/pld-curve"):
        assert by[("opacus-pipeline", cid)]["verdict"] == "pass"
        assert by[("opacus-pipeline", cid)]["detectable"] is not None
    for name in ("opacus-fault-a-clip-4C", "opacus-fault-b-noise-on-a-tenth", "opacus-fault-c-rate-3q",
                 "opacus-fault-e-norm-misses-bias"):
        assert by[(name, "opacus/pld-curve")]["finding"] == "refuted (empirical)", name
    table = done.stdout
    assert "could have caught" in table and "expected refutation — caught" in table
    fault_row = table.split("opacus-fault-a-clip-4C", 1)[1].split("opacus-fault-b", 1)[0]
    assert "refuted (empirical)" in fault_row


@pytest.mark.slow
def test_the_suites_budgets_meet_every_expectation_with_probability_099():
    """The budgets' derivation, checked: 1000 simulated games per scenario (the plan's pools, rule and
    claims, the suite's fixed stream) fail an expectation in at most 0.01 of the games summed over the
    five scenarios (measured: 0, 0, 2, 0, 0; about 22 CPU s).  A fault at a budget too small for it would
    fail it: (c) at the 60 steps of 10 epochs at 3q (measured 3914 of 4000 refuted, above 0.01 alone)."""
    failed = [expectation_failures(e, games=1000) for e in SUITE]
    assert sum(failed) / 1000 <= 0.01, failed
    short = replace(SUITE[3], epochs=10)  # the twin: (c) under the plain 10-epoch loop, T = 60
    assert expectation_failures(short, games=1000) / 1000 > 0.01
