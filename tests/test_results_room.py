"""The results file has one room and one schema source (issue 42, item 2).

``dpaudit/results/run.schema.json`` is the only schema file of ``results.json``; the schema of
``summary --json`` is assembled from it (:func:`dpaudit.results.schema.summary_schema`), never copied.
A field added to a record in the source is a field of both schemas; ``summary --json`` output
validates against the assembled schema and a broken document is refused; the assembled schemas can
still be had as files (``python -m dpaudit.results NAME``).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from dpaudit.engine import stattests
from dpaudit.engine.verdicts import OUTCOMES
from dpaudit.results import schema
from dpaudit.results.__main__ import main as results_main
from dpaudit.results.schema import published, run_schema, summary_schema
from tests.clirun import in_process, skip_report_pdf
from tests.configs import with_samples

TINY = with_samples(20_000)  # the shared one-scenario config (tests/configs.py) at 20,000 per side


@pytest.fixture(scope="module")
def shown(tmp_path_factory) -> dict:
    """``summary --json`` of a tiny run, as printed."""
    tmp = tmp_path_factory.mktemp("room")
    (tmp / "tiny.toml").write_text(TINY)
    with pytest.MonkeyPatch.context() as m:  # its PDF is never read: skipped as without the [report] extra
        skip_report_pdf(m)
        assert in_process("run", tmp / "tiny.toml", "--quiet", "--out", tmp / "out").returncode == 0
    done = in_process("summary", tmp / "out", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _errors(document: dict, against: dict) -> list[str]:
    _valid_schema(json.dumps(against, sort_keys=True))
    return [e.message for e in jsonschema.Draft202012Validator(against).iter_errors(document)]


@functools.cache  # on the schema's text: the tests ask about a few schemas many times (0.1 CPU s a check)
def _valid_schema(text: str) -> None:
    """Raise unless ``text`` is a valid Draft 2020-12 schema (checked against the metaschema)."""
    jsonschema.Draft202012Validator.check_schema(json.loads(text))


def test_the_room_ships_one_schema_file_of_results():
    shipped = {p.name for p in resources.files("dpaudit.results").iterdir() if p.name.endswith(".json")}
    assert shipped == {"run.schema.json", "sweep.schema.json", "plan.schema.json"}  # plan's: the rule from run's
    cli = {p.name for p in resources.files("dpaudit.cli").joinpath("schemas").iterdir()}
    assert not cli & {"summary.schema.json", "run.schema.json", "plan.schema.json"}


def test_summary_json_validates_against_the_assembled_schema_and_a_broken_one_is_refused(shown):
    assert shown["records"] and _errors(shown, summary_schema()) == []
    for break_it in (lambda d: d["records"][0].update(extra=1),          # an unknown record key
                     lambda d: d.update(exit_status=7),                  # out of the closed set
                     lambda d: d["records"][0].update(outcome="fine"),  # not an outcome word
                     lambda d: d.pop("exit_status")):                    # a required key
        broken = copy.deepcopy(shown)
        break_it(broken)
        assert _errors(broken, summary_schema()), break_it


def test_summary_shares_the_run_schemas_records_and_settings():
    run, summary = run_schema(), summary_schema()
    assert summary["$defs"] == run["$defs"]
    assert all(summary["properties"][k] == run["properties"][k] for k in ("schema", "samples", "confidence", "seed"))
    assert summary["additionalProperties"] is False and run["additionalProperties"] is False
    assert summary["properties"]["records"]["items"]["properties"]["outcome"]["enum"] == list(OUTCOMES)


def test_a_field_added_to_the_source_is_a_field_of_both_schemas(tmp_path: Path, shown):
    """A new results field touches the source only: edit a copy of ``run.schema.json``, and both the
    run schema and the summary schema assembled from it accept a record carrying it."""
    source = tmp_path / "run.schema.json"
    source.write_text(resources.files("dpaudit.results").joinpath("run.schema.json").read_text(encoding="utf-8"))
    edited = json.loads(source.read_text())
    edited["$defs"]["record"]["properties"]["new_field"] = {"type": "integer", "minimum": 0}
    source.write_text(json.dumps(edited))
    from_copy = json.loads(source.read_text())

    with_field = copy.deepcopy(shown)
    with_field["records"][0]["new_field"] = 3
    assert _errors(with_field, summary_schema()), "the shipped schema must refuse the field it does not know"
    assert _errors(with_field, summary_schema(from_copy)) == []
    wrong_type = copy.deepcopy(with_field)
    wrong_type["records"][0]["new_field"] = "three"
    assert _errors(wrong_type, summary_schema(from_copy))

    record = {k: v for k, v in shown["records"][0].items() if k != "outcome"}
    results_like = {"$ref": "#/$defs/record", "$defs": from_copy["$defs"], "unevaluatedProperties": False}
    assert _errors({**record, "new_field": 3}, results_like) == []
    assert _errors({**record, "new_field": 3}, {**results_like, "$defs": run_schema()["$defs"]})


def test_a_caller_cannot_change_the_shipped_schemas():
    first = published("run")
    first["$defs"].clear()
    assert published("run")["$defs"] and published("summary")["$defs"]
    with pytest.raises(KeyError, match="no result schema 'list'"):
        published("list")


@pytest.mark.parametrize("name", sorted(schema.NAMES))
def test_every_result_schema_can_still_be_had_as_a_file(name, capsys):
    # `python -m dpaudit.results NAME`'s main, in this process; the real `python -m` is run below, once
    assert results_main([name]) == 0
    assert json.loads(capsys.readouterr().out) == published(name)


def test_an_unknown_schema_name_exits_2():
    """Through a new interpreter, as a user types it (`python -m dpaudit.results list`): exit 2, the names."""
    done = subprocess.run([sys.executable, "-m", "dpaudit.results", "list"], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2 and "run,summary,sweep" in done.stderr and not done.stdout



def _test_name_errors(name: str, assembled: dict) -> list[str]:
    return _errors(name, {"$defs": assembled["$defs"], "$ref": "#/$defs/bound/properties/test"})


def test_the_statistical_tests_names_come_from_their_registry():
    """A bound's ``test`` is one of the registered tests' names: the file lists none, both schemas
    take them from :mod:`dpaudit.engine.stattests`, so a test registered there is a known name."""
    shipped = json.loads(resources.files("dpaudit.results").joinpath("run.schema.json").read_text(encoding="utf-8"))
    assert "enum" not in shipped["$defs"]["bound"]["properties"]["test"]
    assert run_schema()["$defs"]["bound"]["properties"]["test"]["enum"] == list(stattests.names()) == [
        "joint", "clopper-pearson"]
    assert _test_name_errors("toy", run_schema()) and not _test_name_errors("joint", summary_schema())
    with stattests.registering(dataclasses.replace(stattests.get("clopper-pearson"), name="toy")):
        for assembled in (run_schema(), summary_schema()):
            assert _test_name_errors("toy", assembled) == []
            assert _test_name_errors("nope", assembled)
