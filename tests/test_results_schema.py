"""results.json has one closed schema (issue 34, point 3; issue 37, items 5 and 11-12).

``dpaudit/results/run.schema.json`` is the schema of ``results.json`` and of ``run --json``: closed
at every level, every key the writers emit with its type and range.  ``summary`` and ``report`` check a
file against it (through ``jsonschema``) before re-checking its numbers, and refuse an unknown key, a
missing key or a wrong type (exit 2, naming the key path).  The writers' output validates against it: a
multi-run run, a one-run run and an interrupted (partial) run.  ``report`` of a partial file exits as
``summary`` does (130), and a report reads only the file: the same ``results.json`` gives the same PDF
bytes with or without a third-party catalog family installed.
"""

from __future__ import annotations

import gzip
import json
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest

from dpaudit.cli import common
from dpaudit.results.schema import NAMES, published, run_schema
from tests.clirun import in_process
from tests.configs import with_samples
from tests.plugins.training_runs import RR_GAME_CONFIG
from tests.test_exit_truth import _interrupted_subprocess

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "audit" / "cli" / "schemas"  # the command line's own (list, plan)
FIXTURES = sorted((ROOT / "tests" / "data" / "report").glob("*-results.json.gz"))

TINY = with_samples(20000)

def _validator(name: str = "run") -> jsonschema.Draft202012Validator:
    schema = published(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _run(tmp_path: Path, config: str, name: str, *extra: str) -> tuple[int, dict]:
    (tmp_path / f"{name}.toml").write_text(config)
    done = in_process("run", tmp_path / f"{name}.toml", "--quiet", "--out", tmp_path / name, *extra)
    return done.returncode, json.loads((tmp_path / name / "results.json").read_text())


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("tiny")
    code, _ = _run(tmp, TINY, "out")
    assert code == 0
    return tmp / "out" / "results.json"


@pytest.fixture(scope="module")
def onerun(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("onerun")
    code, _ = _run(tmp, RR_GAME_CONFIG, "out", "--allow-plugin", "tests.plugins.training_runs")
    assert code == 0
    return tmp / "out" / "results.json"


# --- the writers' output validates ------------------------------------------------------------

def test_a_multi_run_and_a_one_run_output_validate_against_the_closed_schema(tiny, onerun):
    validator = _validator()
    for path in (tiny, onerun):
        payload = json.loads(path.read_text())
        errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(payload)]
        assert not errors, errors


def test_saved_default_suite_outputs_still_validate_and_load():
    """Files we wrote before (schema 2, without the newer keys: kind, test, family) still load."""
    validator = _validator()
    assert FIXTURES
    for path in FIXTURES:
        with gzip.open(path) as f:
            payload = json.loads(f.read())
        assert not list(validator.iter_errors(payload)), path
        assert "family" not in payload["scenarios"][0]


def test_an_interrupted_output_validates_and_report_exits_130_like_summary(tmp_path):
    done = _interrupted_subprocess(tmp_path)  # SIGINT while the mechanism draws: the run saves a partial file
    assert done.returncode == 130, done.stderr[-2000:]
    payload = json.loads((tmp_path / "out" / "results.json").read_text())
    assert payload["complete"] is False
    assert not list(_validator().iter_errors(payload))
    assert in_process("summary", tmp_path / "out").returncode == 130
    report = in_process("report", tmp_path / "out", "-o", tmp_path / "partial.pdf")
    assert report.returncode == 130, report.stderr  # was 0: a partial file read as "all done"
    assert (tmp_path / "partial.pdf").read_bytes().startswith(b"%PDF")
    assert "PARTIAL" in report.stdout
    # deleting the one key that says the run stopped early must not turn it into a pass (red team)
    del payload["complete"]
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(payload))
    for verb in (("summary", forged), ("report", forged, "-o", tmp_path / "forged.pdf")):
        done = in_process(*verb)
        assert done.returncode == 2 and "complete" in done.stderr, (verb, done.stderr)


def test_report_of_a_complete_file_still_exits_0(tiny, tmp_path):
    assert in_process("report", tiny, "-o", tmp_path / "r.pdf").returncode == 0


# --- what summary refuses, naming the key --------------------------------------------------------

def _refused(tmp_path: Path, payload: dict, *fragments: str) -> None:
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(payload))
    for args in (("summary", path), ("summary", path, "--json")):
        done = in_process(*args)
        assert done.returncode == 2, (args, done.stdout[-500:], done.stderr)
        assert "Traceback" not in done.stderr
        for fragment in fragments:
            assert fragment in done.stderr, (fragment, done.stderr)


@pytest.mark.parametrize("edit,fragments", [
    (lambda p: p.update(extra=1), ["(top level)", "'extra' was unexpected"]),
    (lambda p: p.update(seconds=-1.0), ["seconds: -1.0 is less than the minimum of 0"]),
    (lambda p: p.update(samples=True), ["samples: True is not of type 'integer'"]),
    (lambda p: p["records"][0].update(extra="x"), ["records[0]", "'extra' was unexpected"]),
    (lambda p: p["records"][0].pop("verdict"), ["records[0].verdict: is missing"]),
    (lambda p: p["records"][0].update(seconds="1"), ["records[0].seconds: '1' is not of type 'number'"]),
    (lambda p: p["records"][0].update(seed=True), ["records[0].seed: True is not of type 'integer'"]),
    (lambda p: p["scenarios"][0]["estimate"]["bounds"][0].update(epsilon_lower=-1),
     ["scenarios[0].estimate.bounds[0].epsilon_lower: -1 is less than the minimum of 0"]),
    (lambda p: p["scenarios"][0]["estimate"].update(extra=[]), ["scenarios[0].estimate", "'extra' was unexpected"]),
], ids=["top-unknown", "negative-seconds", "samples-true", "record-unknown", "record-missing", "record-type",
        "seed-true", "bound-negative", "estimate-unknown"])
def test_summary_refuses_what_the_schema_does_not_allow(tiny, tmp_path, edit, fragments):
    payload = json.loads(tiny.read_text())
    edit(payload)
    _refused(tmp_path, payload, *fragments)


def test_a_one_run_scenario_with_negative_seconds_is_refused(onerun, tmp_path):
    payload = json.loads(onerun.read_text())
    payload["scenarios"][0]["seconds"] = -1.0  # was accepted (exit 0): the one-run scenario's own keys went unchecked
    _refused(tmp_path, payload, "scenarios[0].seconds: -1.0 is less than the minimum of 0")


@pytest.mark.parametrize("where", ["record", "scenario"])
def test_a_one_run_runs_count_that_is_a_boolean_is_refused(onerun, tmp_path, where):
    payload = json.loads(onerun.read_text())
    if where == "record":
        payload["records"][0]["onerun"]["runs"] = True
        _refused(tmp_path, payload, "records[0].onerun.runs: True is not of type 'integer'")
    else:
        payload["scenarios"][0]["runs"] = True
        _refused(tmp_path, payload, "scenarios[0].runs: True is not of type 'integer'")


def test_a_correct_file_is_accepted(tiny, onerun):
    """The twin of the refusals: the files as written pass summary (exit 0)."""
    assert in_process("summary", tiny).returncode == 0
    assert in_process("summary", onerun).returncode == 0


def test_every_object_of_the_schema_is_closed():
    """additionalProperties false (or unevaluatedProperties false where a record is composed) on every
    object with named properties; a free map (params, environment, documents) says what its values are."""
    schema = run_schema()
    open_objects = []

    def walk(node, at):
        if isinstance(node, dict):
            named = "properties" in node and at != ".$defs.record" and node.get("additionalProperties") is not False
            if named and not any(k in at for k in (".then", ".if", ".allOf")):
                open_objects.append(at)
            for k, v in node.items():
                walk(v, f"{at}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{at}[{i}]")

    walk(schema, "")
    assert not open_objects, open_objects
    assert schema["properties"]["records"]["items"]["unevaluatedProperties"] is False


# --- reports read only the file ----------------------------------------------------------------

def test_the_same_results_give_the_same_pdf_with_and_without_a_plugin_family(tmp_path, monkeypatch):
    """A third-party family that lists the file's mechanism (joined through the dpaudit.families entry
    point) used to regroup the same results.json at render time; the file now says its family."""
    code, payload = _run(tmp_path, TINY, "run")
    assert code == 0 and payload["scenarios"][0]["family"]["name"] == "classic"
    first = in_process("report", tmp_path / "run", "-o", tmp_path / "a.pdf")
    assert first.returncode == 0, first.stderr
    # as the catalog hands a plugin family to reports: (name, about, claim ids, mechanism names), first
    toy = ("toy", "a plugin family that lists randomized-response", frozenset(), frozenset({"randomized-response"}))
    installed = common.report_families()
    monkeypatch.setattr("dpaudit.cli.report.report_families", lambda: (toy, *installed))
    second = in_process("report", tmp_path / "run", "-o", tmp_path / "b.pdf")
    assert second.returncode == 0, second.stderr
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()


def test_a_file_written_before_the_family_key_falls_back_to_the_catalog_and_says_so(tmp_path):
    with gzip.open(ROOT / "tests" / "data" / "report" / "config-user-results.json.gz") as f:
        (tmp_path / "old.json").write_bytes(f.read())
    done = in_process("report", tmp_path / "old.json", "-o", tmp_path / "old.pdf")
    assert done.returncode == 0, done.stderr
    assert "written before results carried their family" in done.stderr
    assert (tmp_path / "old.pdf").read_bytes().startswith(b"%PDF")


# --- the other file formats --------------------------------------------------------------------

def _open_objects(schema: dict) -> list[str]:
    found = []

    def walk(node, at):
        if isinstance(node, dict):
            closed = node.get("additionalProperties") is False or node.get("unevaluatedProperties") is False
            if "properties" in node and not closed and at != ".$defs.record" \
                    and not any(k in at for k in (".then", ".if", ".allOf")):
                found.append(at)
            for k, v in node.items():
                walk(v, f"{at}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{at}[{i}]")

    walk(schema, "")
    return found


@pytest.mark.parametrize("name", ["list", "plan", "sweep", "summary"])
def test_the_other_schemas_are_closed_too(name):
    schema = published(name) if name in NAMES else json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert not _open_objects(schema)


def test_a_sweep_file_is_checked_against_its_closed_schema(tiny, tmp_path):
    done = in_process("sweep", "kl-rlhf", "--n", "10,20", "--samples", "2000", "--out", tmp_path)
    assert done.returncode == 0, done.stderr
    sweep = json.loads((tmp_path / "sweep.json").read_text())
    assert not list(_validator("sweep").iter_errors(sweep))
    sweep["records"][0]["extra"] = 1
    (tmp_path / "bad.json").write_text(json.dumps(sweep))
    refused = in_process("report", tiny, tmp_path / "bad.json", "-o", tmp_path / "r.pdf")
    assert refused.returncode == 2 and "records[0]" in refused.stderr and "'extra' was unexpected" in refused.stderr
    sweep["records"][0].pop("extra")
    sweep["records"][0]["n"] = True
    (tmp_path / "bad.json").write_text(json.dumps(sweep))
    refused = in_process("report", tiny, tmp_path / "bad.json", "-o", tmp_path / "r.pdf")
    assert refused.returncode == 2 and "records[0].n: True is not of type 'integer'" in refused.stderr


def test_the_plan_schema_takes_a_one_run_rule_as_results_json_does():
    """One rule schema: a one-run design's rule (fixed, grid or split) in plan --json is results.json's,
    filled in from run.schema.json; the plan schema's source file holds no copy of it."""
    run, plan = run_schema(), published("plan")
    assert plan["$defs"]["rule"] == run["$defs"]["rule"]
    source = json.loads(files("dpaudit.results").joinpath("plan.schema.json").read_text())
    assert "rule" not in source["$defs"] and '"#/$defs/rule"' in json.dumps(source)


@pytest.mark.slow  # the session's default-suite run (tests/conftest.py)
def test_the_default_suite_output_validates_against_the_closed_schema(default_suite_run):
    payload = default_suite_run.results
    errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in _validator().iter_errors(payload)]
    assert not errors, errors[:5]
    assert all("family" in sc for sc in payload["scenarios"])
    assert in_process("summary", default_suite_run.out).returncode == default_suite_run.code
