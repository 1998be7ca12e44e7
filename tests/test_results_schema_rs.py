"""The loader's schema check by ``jsonschema-rs`` (issue 41, item 7): ``summary`` of a legal file of
18,400 records spent 15 CPU s in python ``jsonschema``; the loader now asks ``jsonschema-rs`` (compiled
Rust, Draft 2020-12) whether a document is valid, and python ``jsonschema`` only for the message and key
path of one it refuses.  So the two must agree on what is valid: checked here on the shipped schemas
against 1,500 mutations of a real run's records and scenarios (fixed seed), on a malformed record deep
in a large file, and with the statistical tests' registry changing."""

import copy
import dataclasses
import gzip
import json
import random
from pathlib import Path

import jsonschema_rs
import pytest
from jsonschema import Draft202012Validator

from dpaudit.core import InputError
from dpaudit.engine import stattests
from dpaudit.results import saved
from dpaudit.results.saved import load_results, schema_accepts
from dpaudit.results.schema import run_schema
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


def _disagreements(fast, slow, documents) -> tuple[int, list[str]]:
    """How many of ``documents`` ``slow`` (python ``jsonschema``) refuses, and each one ``fast``
    (``jsonschema-rs``) answers otherwise."""
    refused, disagreed = 0, []
    for document in documents:
        valid = slow.is_valid(document)
        refused += not valid
        if fast.is_valid(document) != valid:
            disagreed.append(f"jsonschema says {valid}: " + json.dumps(document)[:1500])
    return refused, disagreed


def _mutations(base: dict, count: int, seed: int):
    """``count`` documents of one record and one scenario of ``base``, one of the two mutated."""
    top = {k: v for k, v in base.items() if k not in ("records", "scenarios")}
    records, scenarios = base["records"], [_shallow(s) for s in base["scenarios"]]
    rng = random.Random(seed)
    for _ in range(count):
        record, scenario = rng.choice(records), rng.choice(scenarios)
        if rng.random() < 0.5:
            record = _mutated(rng, record, records + scenarios)
        else:
            scenario = _mutated(rng, scenario, records + scenarios)
        yield {**top, "records": [record], "scenarios": [scenario]}


def test_jsonschema_rs_and_jsonschema_agree_on_every_mutation():
    """A document ``jsonschema-rs`` accepts is never checked again: it must be one python ``jsonschema``
    accepts (and the reverse, or a valid file would pay python's full walk)."""
    base = _base()
    whole = {**base, "scenarios": [_shallow(s) for s in base["scenarios"]]}
    schema = run_schema()
    fast, slow = jsonschema_rs.validator_for(schema), Draft202012Validator(schema)
    assert fast.is_valid(whole)  # the real file
    refused, disagreed = _disagreements(fast, slow, _mutations(base, 1500, seed=41))
    assert not disagreed, disagreed[:3]
    assert 600 <= refused <= 1200, refused  # the mutations reach both answers often


def test_the_agreement_check_catches_a_validator_that_differs():
    """The check above can fail: jsonschema-rs given a schema where a record's ``seconds`` must also be
    at most 1e-9, python ``jsonschema`` the shipped one, are told apart on the mutations."""
    stricter = run_schema()
    stricter["$defs"]["record"]["properties"]["seconds"]["maximum"] = 1e-9
    fast, slow = jsonschema_rs.validator_for(stricter), Draft202012Validator(run_schema())
    _, disagreed = _disagreements(fast, slow, _mutations(_base(), 300, seed=7))
    assert disagreed


def _refused(tmp_path: Path, payload: dict, name: str, said: str) -> None:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(payload))
    with pytest.raises(InputError, match=said):
        load_results(path)


def test_a_malformed_record_deep_in_a_large_file_is_still_refused(tmp_path):
    """jsonschema-rs's yes to the 1,840 good records and 880 scenarios hides no bad one (each refusal then
    costs python jsonschema's full walk: two here)."""
    payload = repeated(20)  # 880 scenarios, 1,840 records
    good = tmp_path / "good.json"
    good.write_text(json.dumps(payload))
    assert len(load_results(good)["records"]) == 1840
    # each bad file the good one with one value changed (copied along its path only, not deep-copied)
    records = list(payload["records"])
    records[1801] = {**records[1801], "seconds": -1.0}
    _refused(tmp_path, {**payload, "records": records}, "record",
             r"records\[1801\]\.seconds: -1\.0 is less than the minimum of 0")
    scenarios = list(payload["scenarios"])
    scenario = copy.deepcopy(scenarios[870])
    scenario["estimate"]["bounds"][0]["counts"]["D"] = [3, 2.5]
    scenarios[870] = scenario
    bad = {**payload, "scenarios": scenarios}
    # jsonschema 4.0 (the oldest allowed) names the array, later releases its element
    _refused(tmp_path, bad, "scenario",
             r"scenarios\[870\]\.estimate\.bounds\[0\]\.counts\.D(\[1\])?: 2\.5 is not of type 'integer'")


@pytest.mark.parametrize(("key", "value", "said"), [
    ("samples", True, r"records\[90\]\.samples: True is not of type 'integer'"),
    ("samples", 2 ** 70, r"records\[90\]\.samples: 1180591620717411303424 is greater than the maximum"),
    ("extra", "x", r"records\[90\]: .*'extra' (was|were) unexpected"),
    ("verdict", "violation", r"records\[90\]\.finding: .* is not one of \['refuted \(empirical\)'\]")])
def test_a_refused_record_gets_jsonschemas_key_path(tmp_path, key, value, said):
    bad = _base()
    bad["records"][90][key] = value
    _refused(tmp_path, bad, key, said)


def test_the_compiled_schema_follows_the_statistical_tests_registry():
    """A bound's ``test`` takes the names registered now: the schema is compiled per registry state,
    never one compiled while another test was registered."""
    base = _base()
    scenario = next(s for s in base["scenarios"] if s.get("kind") != "one-run")
    scenario = copy.deepcopy(_shallow(scenario))
    scenario["estimate"]["bounds"][0]["test"] = "toy"
    top = {k: v for k, v in base.items() if k not in ("records", "scenarios")}
    document = {**top, "records": base["records"][:1], "scenarios": [scenario]}
    with stattests.registering(dataclasses.replace(stattests.get("clopper-pearson"), name="toy")):
        assert schema_accepts("run", document)
    assert not schema_accepts("run", document)
    assert not Draft202012Validator(run_schema()).is_valid(document)


def _full_walk(monkeypatch, document: dict, path: Path) -> str:
    """The loader's message for ``document`` with python ``jsonschema`` walking all of it (no narrowing)."""
    with monkeypatch.context() as m:
        m.setattr(saved, "_narrowed", lambda schema, doc: (doc, {}))
        return _message(document, path)


def _message(document: dict, path: Path) -> str:
    with pytest.raises(InputError) as refused:
        saved._validate(document, saved.RESULTS_SCHEMA, path)
    return str(refused.value)


def test_a_refusal_worded_over_the_wrong_elements_alone_is_worded_as_over_the_whole_file(monkeypatch, tmp_path):
    """python ``jsonschema`` words a refusal over only the records and scenarios ``jsonschema-rs`` found
    wrong (each other array cut to its first element): the message and key path equal the full
    walk's, index included, on 120 documents of 12 records and 6 scenarios with one to three
    elements mutated at random places (fixed seed)."""
    base = _base()
    records, scenarios = base["records"][:12], [_shallow(s) for s in base["scenarios"][:6]]
    rng = random.Random(5)
    compared = 0
    for _ in range(120):
        doc = {**base, "records": list(records), "scenarios": list(scenarios)}
        for _ in range(rng.randint(1, 3)):
            key = rng.choice(("records", "scenarios"))
            i = rng.randrange(len(doc[key]))
            doc[key][i] = _mutated(rng, doc[key][i], records + scenarios)
        if schema_accepts(saved.RESULTS_SCHEMA, doc):
            continue
        assert _message(doc, tmp_path) == _full_walk(monkeypatch, doc, tmp_path)
        compared += 1
    assert compared >= 60, compared  # the mutations are refused often enough to compare


def test_the_narrowed_wording_would_be_caught_naming_the_wrong_index(monkeypatch, tmp_path):
    """The twin: a narrowing that forgot to map indices back names ``records[0]`` for a bad
    ``records[31]``, and the comparison above tells it from the full walk."""
    base = _base()
    doc = {**base, "records": list(base["records"][:40]), "scenarios": [_shallow(s) for s in base["scenarios"][:3]]}
    doc["records"][31] = {**doc["records"][31], "seconds": -1.0}
    real = saved._narrowed
    monkeypatch.setattr(saved, "_narrowed", lambda schema, d: (real(schema, d)[0], {"records": [0]}))
    wrong = _message(doc, tmp_path)
    assert "records[0].seconds" in wrong and wrong != _full_walk(monkeypatch, doc, tmp_path)
