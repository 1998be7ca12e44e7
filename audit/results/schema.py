"""The schemas of the result files, from one source.

``run.schema.json`` (beside this module) is the one source: the schema of ``results.json`` and of
``run --json``, closed at every level, with every record and scenario shape under ``$defs``.  The
schema of ``summary --json`` is assembled from it here (:func:`summary_schema`): its own top level
(the file it read, the exit status, each record with its outcome), and the run schema's ``$defs``
and shared settings, never a copy kept equal by hand.  ``sweep.schema.json`` is the schema of
``sweep.json``; ``plan.schema.json`` the source of ``plan --json``'s, whose one-run rule is results.json's
``$defs/rule``, filled in from the run schema (:func:`plan_schema`).  ``python -m dpaudit.results NAME``
prints any of them (``run``, ``summary``, ``sweep``, ``plan``).

A field added to a record in ``run.schema.json`` is a field of both assembled schemas.  A closed set
that a registry owns is filled in here, from its owner, never listed in the file: the statistical
tests' names (a bound's ``test``, :mod:`dpaudit.engine.stattests`) and the outcome words of
``summary`` (:data:`dpaudit.engine.verdicts.OUTCOMES`).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any

from dpaudit.engine import stattests
from dpaudit.engine.verdicts import OUTCOMES

__all__ = ["NAMES", "plan_schema", "published", "run_schema", "summary_schema", "sweep_schema", "with_registries"]

Schema = dict[str, Any]
_INT64 = 9223372036854775807  # the largest count a record holds (int64)
_COUNT = {"type": "integer", "minimum": 0, "maximum": _INT64}
# the run settings summary --json repeats as results.json states them
_SHARED = ("schema", "complete", "samples", "confidence", "seed", "seconds")


@functools.cache
def _shipped(name: str) -> str:
    return resources.files(__package__ or "dpaudit.results").joinpath(name).read_text(encoding="utf-8")


def with_registries(source: Mapping[str, Any]) -> Schema:
    """``source`` (a run schema) with the closed sets registries own filled in: a bound's ``test`` is
    one of the statistical tests registered in this process (:func:`dpaudit.engine.stattests.names`)."""
    run = copy.deepcopy(dict(source))
    test = run["$defs"]["bound"]["properties"]["test"]
    test.pop("$comment", None)  # the file's note that the names come from here
    test["enum"] = list(stattests.names())
    return run


def run_schema() -> Schema:
    """The schema of ``results.json`` and ``run --json``: the one source, ``run.schema.json``, with its
    registries' names filled in (:func:`with_registries`)."""
    return with_registries(json.loads(_shipped("run.schema.json")))


def sweep_schema() -> Schema:
    """The schema of ``sweep.json`` (``sweep.schema.json``)."""
    return json.loads(_shipped("sweep.schema.json"))


def summary_schema(source: Mapping[str, Any] | None = None) -> Schema:
    """The schema of ``summary --json``, assembled from ``source`` (default :func:`run_schema`): the
    run schema's ``$defs`` and settings, a checked file's verdict (``exit_status``, ``expectations_unchecked``,
    ``partial_note``) and each record with its ``outcome`` (the words of :data:`~dpaudit.engine.verdicts.OUTCOMES`)."""
    run = with_registries(source) if source is not None else run_schema()
    shared = {key: run["properties"][key] for key in _SHARED}
    own = {
        "results": {"type": "string"},
        "as_expected": {"type": "boolean"},
        "exit_status": {"description": "0 every expectation checked and met, 1 a finding, 130 an interrupted, "
                                       "incomplete run", "enum": [0, 1, 130]},
        "expectations_unchecked": {"anyOf": [_COUNT, {"type": "null"}]},
        "partial_note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "scenarios": _COUNT,
        "scenarios_planned": {"anyOf": [_COUNT, {"type": "null"}]},
        "records": {"type": "array", "items": {
            "$ref": "#/$defs/record", "required": ["outcome"],
            "properties": {"outcome": {"description": "what the record means for the run (the word the table prints)",
                                       "enum": list(OUTCOMES)}},
            "unevaluatedProperties": False}},
    }
    return {"$schema": run["$schema"], "$id": "https://dpaudit/schemas/summary.schema.json",
            "title": "dpaudit summary --json",
            "description": "A saved run, checked: its settings, its records each with its outcome, "
                           "and the exit status.",
            "type": "object",
            "required": ["schema", "results", "complete", "as_expected", "exit_status", "scenarios", "records"],
            "properties": {**shared, **copy.deepcopy(own)}, "$defs": run["$defs"], "additionalProperties": False}


def plan_schema() -> Schema:
    """The schema of ``plan --json`` (kinds ``multi-run-plan`` and ``one-run-plan``): ``plan.schema.json``
    with the one-run rule's shape taken from the run schema's ``$defs/rule``, so a design's rule in
    ``plan --json`` is the rule results.json records."""
    plan = json.loads(_shipped("plan.schema.json"))
    plan.pop("$comment", None)  # the file's note that the rule comes from here
    plan["$defs"]["rule"] = run_schema()["$defs"]["rule"]
    return plan


NAMES: dict[str, Callable[[], Schema]] = {"run": run_schema, "summary": summary_schema, "sweep": sweep_schema,
                                          "plan": plan_schema}


def published(name: str) -> Schema:
    """The schema ``name`` (one of :data:`NAMES`), as a fresh dict the caller may change."""
    if name not in NAMES:
        raise KeyError(f"no result schema {name!r}: one of {', '.join(NAMES)}")
    return NAMES[name]()
