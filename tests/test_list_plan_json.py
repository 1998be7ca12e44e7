"""``list --json`` lists every built-in suite's scenarios, the one-run suite's included (it was
empty); ``plan`` speaks before its pilots (issue 35: the first line of ``plan NAME`` came only
when the plan was done) and takes ``--json`` for every scenario kind."""

from __future__ import annotations

import io
import json

import pytest

from dpaudit import catalog
from dpaudit.cli import plan as plan_verb
from dpaudit.engine import plan as budget_plan
from tests.clirun import in_process


def test_list_json_lists_the_one_run_suite(listed_json):
    done = listed_json  # in_process("list", "--json"), shared
    assert done.returncode == 0, done.stderr
    suites = json.loads(done.stdout)["suites"]
    names = {d.name for d in catalog.onerun_suite("onerun")}
    assert names and {s["name"] for s in suites["onerun"]} == names
    assert all(s["kind"] == "one-run" and s["canaries"] > 0 for s in suites["onerun"])
    fixtures = {d.name for d in catalog.onerun_suite("default")}
    assert fixtures <= {s["name"] for s in suites["default"]}


def test_list_json_validates_against_its_schema(listed_json):
    jsonschema = pytest.importorskip("jsonschema")
    from importlib.resources import files

    schema = json.loads(files("dpaudit.cli").joinpath("schemas/list.schema.json").read_text())
    jsonschema.validate(json.loads(listed_json.stdout), schema)
    jsonschema.validate(json.loads(in_process("list", "laplace", "--json").stdout), schema)


class _Written(Exception):
    """Raised where the pilot work would start: what stderr held by then is checked."""


def _stderr_at_pilot(monkeypatch, target, attr, *args):
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    seen: list[str] = []

    def pilot(*a, **k):
        seen.append(err.getvalue())
        raise _Written

    monkeypatch.setattr(target, attr, pilot)
    with pytest.raises(_Written):
        plan_verb.plan_command(plan_verb_args(*args))
    return seen[0]


def plan_verb_args(*args):
    from dpaudit.cli.parser import build_parser

    return build_parser().parse_args(["plan", *args])


def test_plan_of_a_one_run_design_speaks_before_building_the_designs(monkeypatch):
    """Building every one-run design takes seconds of CPU: the first line comes before it."""
    plan_verb._designs.cache_clear()
    first = _stderr_at_pilot(monkeypatch, catalog, "onerun_suite", "dppg-whitebox")
    assert "plan dppg-whitebox:" in first


def test_plan_of_a_multi_run_scenario_speaks_before_its_pilot(monkeypatch):
    first = _stderr_at_pilot(monkeypatch, budget_plan, "plan", "align-alg2-zero-out")
    assert "plan align-alg2-zero-out: a pilot audit of" in first


def test_plan_json_for_every_kind():
    multi = in_process("plan", "rr", "--json")
    assert multi.returncode == 0, multi.stderr
    assert json.loads(multi.stdout)["kind"] == "multi-run-plan"
    design = in_process("plan", "po-dp-pg-advantage-one-run", "--mu", "1", "--json")
    assert design.returncode == 0, design.stderr
    assert json.loads(design.stdout)["kind"] == "one-run-plan"
    generic = in_process("plan", "--onerun", "--epsilon", "1", "--mu", "2", "--json")
    assert generic.returncode == 0, generic.stderr
    assert json.loads(generic.stdout)["schema"] == 1
