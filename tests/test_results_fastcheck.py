"""The loader's fast schema check (issue 41, item 7): ``summary`` of a legal file of 18,000 records
spent 16 CPU s in ``jsonschema``; the schema is now compiled once into plain checks
(:mod:`dpaudit.results.fastcheck`) and ``jsonschema`` runs only on a document the fast check refuses,
for its message.  So the fast check must never accept what ``jsonschema`` refuses: checked here on
the shipped schemas against 1,500 mutations of a real run's records and scenarios (fixed seed), on a
malformed record deep in a large file, and with the statistical tests' registry changing."""

import copy
import dataclasses
import gzip
import json
import random
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from dpaudit.core import InputError
from dpaudit.engine import stattests
from dpaudit.results.fastcheck import Unsupported, compile_schema
from dpaudit.results.saved import load_results, quick_check
from dpaudit.results.schema import run_schema, sweep_schema
from tests.test_report_bounded import repeated

DATA = Path(__file__).resolve().parent / "data" / "report"
POOL = (None, True, False, 0, -1, 1, 1.0, 0.5, 1.5, -0.0, 2 ** 63, 1e300, "", "x", "inf", "-inf", "one-run",
        "violation", "pass", "joint", [], [0], [[0, 1], [0, 1]], {}, {"D": [0, 1]})


def _base() -> dict:
    return json.loads(gzip.decompress((DATA / "default-results.json.gz").read_bytes()))


def _shallow(scenario: dict) -> dict:  # as the loader validates a scenario: scores and secret apart
    return {k: v for k, v in scenario.items() if k not in ("scores", "secret")}


def _paths(value, at=()):
    yield at
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*at, i))


def _mutated(rng: random.Random, item: dict, donors: list) -> dict:
    """``item`` with one change at a random place: a value replaced (by one of :data:`POOL` or by a value
    found elsewhere in the file), a key removed, or an unknown key added."""
    item = copy.deepcopy(item)
    path = rng.choice(list(_paths(item))[1:])
    parent = item
    for part in path[:-1]:
        parent = parent[part]
    op = rng.random()
    if op < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
    elif op < 0.25 and isinstance(parent, dict):
        parent["unknown_key"] = rng.choice(POOL)
    elif op < 0.6:
        parent[path[-1]] = copy.deepcopy(rng.choice(POOL))
    else:
        donor = rng.choice(donors)
        parent[path[-1]] = copy.deepcopy(rng.choice([v for v in _walk(donor)]))
    return item


def _walk(value):
    yield value
    if isinstance(value, dict):
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value[:20]:
            yield from _walk(v)


def test_the_shipped_schemas_compile():
    """Else every document falls back to jsonschema (correct, but the speed is gone)."""
    for schema in (run_schema(), sweep_schema()):
        assert compile_schema(schema)(None) is False
    with pytest.raises(Unsupported, match="keyword 'pattern'"):
        compile_schema({"type": "string", "pattern": "a+"})
    with pytest.raises(Unsupported, match="\\$ref"):
        compile_schema({"$ref": "https://elsewhere/schema.json"})


def test_the_fast_check_never_accepts_what_jsonschema_refuses():
    base = _base()
    top = {k: v for k, v in base.items() if k not in ("records", "scenarios")}
    records, scenarios = base["records"], [_shallow(s) for s in base["scenarios"]]
    schema = run_schema()
    fast, slow = compile_schema(schema), Draft202012Validator(schema)
    assert fast({**top, "records": records, "scenarios": scenarios})  # the real file: the fast yes
    rng = random.Random(41)
    refused = agreed = 0
    for _ in range(1500):
        record, scenario = rng.choice(records), rng.choice(scenarios)
        if rng.random() < 0.5:
            record = _mutated(rng, record, records + scenarios)
        else:
            scenario = _mutated(rng, scenario, records + scenarios)
        document = {**top, "records": [record], "scenarios": [scenario]}
        valid = slow.is_valid(document)
        said = fast(document)
        assert valid or not said, json.dumps(document)[:2000]
        refused += not valid
        agreed += valid and said
    # the mutations reach refusals often, and the fast check says yes to (nearly) every valid one
    assert refused >= 600, refused
    assert agreed >= 0.95 * (1500 - refused), (agreed, refused)


def _refused(tmp_path: Path, payload: dict, name: str, said: str) -> None:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(payload))
    with pytest.raises(InputError, match=said):
        load_results(path)


def test_a_malformed_record_deep_in_a_large_file_is_still_refused(tmp_path):
    """The fast yes of the 1,840 good records and 880 scenarios hides no bad one (each refusal then costs
    jsonschema's full walk: two here)."""
    payload = repeated(20)  # 880 scenarios, 1,840 records
    good = tmp_path / "good.json"
    good.write_text(json.dumps(payload))
    assert len(load_results(good)["records"]) == 1840
    bad = copy.deepcopy(payload)
    bad["records"][1801]["seconds"] = -1.0
    _refused(tmp_path, bad, "record", r"records\[1801\]\.seconds: -1\.0 is less than the minimum of 0")
    bad = copy.deepcopy(payload)
    bad["scenarios"][870]["estimate"]["bounds"][0]["counts"]["D"] = [3, 2.5]
    _refused(tmp_path, bad, "scenario", r"scenarios\[870\]\.estimate\.bounds\[0\]\.counts\.D\[1\]")


@pytest.mark.parametrize(("key", "value", "said"), [
    ("samples", True, r"records\[90\]\.samples: True is not of type 'integer'"),
    ("extra", "x", r"records\[90\]: .*'extra' (was|were) unexpected"),
    ("verdict", "violation", r"records\[90\]\.finding: .* is not one of \['refuted \(empirical\)'\]")])
def test_a_record_the_fast_check_refuses_gets_jsonschemas_key_path(tmp_path, key, value, said):
    bad = _base()
    bad["records"][90][key] = value
    _refused(tmp_path, bad, key, said)


def test_the_fast_check_follows_the_statistical_tests_registry():
    """A bound's ``test`` takes the names registered now: the check is compiled per registry state,
    never one compiled while another test was registered."""
    base = _base()
    scenario = next(s for s in base["scenarios"] if s.get("kind") != "one-run")
    scenario = copy.deepcopy(_shallow(scenario))
    scenario["estimate"]["bounds"][0]["test"] = "toy"
    top = {k: v for k, v in base.items() if k not in ("records", "scenarios")}
    document = {**top, "records": base["records"][:1], "scenarios": [scenario]}
    with stattests.registering(dataclasses.replace(stattests.get("clopper-pearson"), name="toy")):
        assert quick_check("run")(document)
    assert not quick_check("run")(document)
    assert not Draft202012Validator(run_schema()).is_valid(document)
