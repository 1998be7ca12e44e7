"""Reading saved results (``results.json``, ``sweep.json``) back, checked, never trusted.

``summary`` exits with the status of the run that wrote a file and ``report`` draws it, so a
file edited by hand, truncated, or written by a buggy tool must be refused with the key path of
what is wrong — never half read, never turned into a verdict it does not support:

* strict JSON only (no ``NaN``/``Infinity`` tokens, no duplicate keys);
* the structure against the closed results schema (``run.schema.json`` of :mod:`dpaudit.results.schema`,
  checked by ``jsonschema-rs``, a refusal worded by ``jsonschema``): an unknown key, a missing key, a
  wrong type or a value out of range (probabilities in [0, 1], confidences in [0.5, 1), ε ≥ 0, counts
  integers ≥ 0, never a boolean) is refused with its key path;
* beside it, what a schema cannot say: counts ``k <= n``, bounds recomputed from their counts and
  one-run games recounted, with their independent-canary reading (``isolated``) and each claim's
  ``detectable`` (:mod:`dpaudit.results.recheck`, :mod:`dpaudit.results.recheck_onerun`); a file written
  before those keys (or ``secret_source``) existed still loads;
* verdicts must agree with their own numbers, findings with verdicts, ``as_expected`` with
  the outcomes (a violation edited into a pass is refused);
* sizes are bounded before anything is formatted (:data:`MAX_NAME_CHARS`, :data:`MAX_TEXT_CHARS`,
  :data:`MAX_ITEMS`, :data:`MAX_SCENARIOS`, :data:`MAX_RECORDS`): past what any run writes, so the
  cost of ``summary`` and ``report`` is bounded on any file (a 1 MB claim id once took ``report``
  more than 400 s).  ``run`` refuses a plan past them (:func:`check_plan_sizes`).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn, Protocol

import jsonschema_rs
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from dpaudit.core import InputError
from dpaudit.engine import stattests
from dpaudit.engine.verdicts import NO_CLAIM, OK_OUTCOMES, finding, outcome, run_as_expected
from dpaudit.results.document import SCHEMA_VERSION
from dpaudit.results.recheck import check_onerun_links, check_onerun_scenario, check_record
from dpaudit.results.schema import published
from dpaudit.runtime.files import read_regular

__all__ = ["MAX_ITEMS", "MAX_NAME_CHARS", "MAX_RECORDS", "MAX_SCENARIOS", "MAX_TEXT_CHARS", "check_plan_sizes",
           "load_results", "load_sweep", "schema_accepts"]

# What a run writes stays far below these (its longest prose, a witness or a premise, is a few hundred
# characters; its longest multi-run list, an exact privacy profile or a distribution, a few hundred
# entries); the PDF's table cells lay out a name of MAX_NAME_CHARS in one page.
MAX_NAME_CHARS = 1_000     # a scenario, mechanism or claim name or id, a key, a sweep's family
MAX_TEXT_CHARS = 100_000   # any other string of a multi-run record or scenario (a witness, a note, a path)
MAX_ITEMS = 100_000        # entries of any list or object of a multi-run record or scenario
MAX_SCENARIOS = 1_000      # scenarios of one run (the report draws each: about 0.05 s apiece)
MAX_RECORDS = 20_000       # records (claims checked) of one run, or of one sweep
_NAMES = ("scenario", "mechanism", "claim_id", "claim_kind", "claim_document")  # not "pair": a searched
# pair of query vectors is described by its vectors (up to 4,096 answers each)

_MISSING = object()
RESULTS_SCHEMA = "run"  # dpaudit.results.schema: the one schema of results.json and of run --json
SWEEP_SCHEMA = "sweep"  # and of sweep.json


class _Checker:
    """The size checks the schema cannot make cheaply (every string and list of a file, before any is
    formatted), naming the file and the key path of a bad value."""

    def __init__(self, source: Path) -> None:
        self.source = source

    def fail(self, where: str, value: Any, allowed: str) -> NoReturn:
        shown = "missing" if value is _MISSING else _shown(value)  # never the repr of a huge value
        raise InputError(f"{self.source}: {where} = {shown} is invalid: {allowed}")

    def get(self, obj: dict[str, Any], key: str, where: str) -> Any:
        return obj.get(key, _MISSING)

    def seq(self, value: Any, where: str, nonempty: bool = False, limit: int = MAX_ITEMS) -> list[Any]:
        if not isinstance(value, list) or (nonempty and not value):
            self.fail(where, value, "must be a " + ("non-empty " if nonempty else "") + "list")
        if len(value) > limit:
            self.fail(where, value, f"holds {len(value)} entries: at most {limit} are read")
        return value

    def text(self, value: Any, where: str, optional: bool = False, limit: int = MAX_TEXT_CHARS) -> str | None:
        if (value is None or value is _MISSING) and optional:
            return None
        if not isinstance(value, str):
            self.fail(where, value, "must be a string" + (" or null" if optional else ""))
        if len(value) > limit:
            self.fail(where, value, f"is a string of {len(value)} characters: at most {limit} are read")
        return value

    def sizes(self, value: Any, where: str) -> None:
        """Every string of ``value`` at most :data:`MAX_TEXT_CHARS` long, every list or object at most
        :data:`MAX_ITEMS` entries, and the names (:data:`_NAMES`) at most :data:`MAX_NAME_CHARS`
        (:func:`_oversized` finds the first that is not; its key path is formatted only then)."""
        found = _oversized(value)
        if found is None:
            return
        item, place, what = found
        at = where + _path_to(value, place)
        if what == "items":
            self.fail(at, item, f"holds {len(item)} entries: at most {MAX_ITEMS} are read")
        elif what == "text":
            self.text(item, at)
        else:  # a name: an object's key, or the value of one of _NAMES
            self.text(item, f"{at} key" if what == "key" else f"{at}.{what}", limit=MAX_NAME_CHARS)


def _oversized(value: Any) -> tuple[Any, Any, str] | None:
    """The first entry of ``value`` over a size limit, walked depth first without recursion (a file may
    nest as deep as the JSON parser allows): (the entry, the string, list or object whose key path names
    it, and "text", "items", "key" or the :data:`_NAMES` field it is), or None.  No key path is formatted
    here: that cost most of a walk, and only a refusal needs one (:func:`_path_to`)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if len(item) > MAX_TEXT_CHARS:
                return item, item, "text"
        elif isinstance(item, (list, dict)):
            if len(item) > MAX_ITEMS:
                return item, item, "items"
            if isinstance(item, dict):
                for key in _NAMES:
                    name = item.get(key)
                    if isinstance(name, str) and len(name) > MAX_NAME_CHARS:
                        return name, item, key
                for k in item:  # a key names a parameter, a document, a side: a name
                    if not isinstance(k, str) or len(k) > MAX_NAME_CHARS:
                        return k, item, "key"
                stack.extend(item.values())
            else:
                stack.extend(item)
    return None


def _path_to(value: Any, place: Any) -> str:
    """The key path (``.key``, ``[i]``) of the first occurrence of the object ``place`` in ``value``, in
    :func:`_oversized`'s order (the occurrence it found first)."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, at = stack.pop()
        if item is place:
            return at
        if isinstance(item, dict):
            stack += [(v, f"{at}.{k}") for k, v in item.items()]
        elif isinstance(item, list):
            stack += [(v, f"{at}[{i}]") for i, v in enumerate(item)]
    raise AssertionError("_path_to: the place is not in the value")  # _oversized found it there


def _strict_json(path: Path) -> Any:
    """Strict JSON: no NaN/Infinity tokens (they are not JSON), no duplicate keys (which one is meant?)."""

    def reject_constant(token: str) -> NoReturn:
        raise ValueError(f"{token} is not a JSON number")

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise ValueError(f"duplicate key {key!r}")
            out[key] = value
        return out

    raw = read_regular(path, "results file")
    try:
        text = raw.decode("utf-8-sig")
        return json.loads(text, parse_constant=reject_constant, object_pairs_hook=unique)
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None


def _schema_errors(payload: dict[str, Any], path: Path) -> None:
    """The file's structure against the results schema (:func:`dpaudit.results.schema.run_schema`: closed,
    every key with its type and range); the first error is refused with its key path.  A one-run
    scenario's ``scores`` and ``secret`` (one entry per canary, up to :data:`dpaudit.onerun.game.MAX_GAME`)
    are left to :func:`dpaudit.results.recheck.check_onerun_scenario`, which bounds, types and recounts them."""
    shallow = {**payload, "scenarios": [
        {k: v for k, v in sc.items() if k not in ("scores", "secret")} if isinstance(sc, dict) else sc
        for sc in payload["scenarios"]]}
    _validate(shallow, RESULTS_SCHEMA, path)


def _validate(document: Any, schema: str, path: Path) -> None:
    """Refuse ``document`` at its first error against ``schema`` (a name of :data:`dpaudit.results.schema.NAMES`),
    naming the key path: ``records[0].seconds: -1 is less than the minimum of 0``."""
    if schema_accepts(schema, document):  # the common case, in milliseconds
        return
    # refused: python jsonschema for the message and key path the loader has always given, over the
    # elements jsonschema-rs found wrong (its walk of a large file's good records costs seconds)
    narrowed, kept = _narrowed(schema, document)
    error, parts = _worded(schema, narrowed, kept) if kept else (None, [])
    if error is None:  # no narrowing, or the narrowed document does not show the error by itself
        error, parts = _worded(schema, document, {})
    if error is None:
        return
    if error.validator == "required":  # name the missing key itself, not the object that lacks it
        parts += [next(k for k in error.validator_value if k not in error.instance)]
        message = "is missing (a required key)"
    else:  # jsonschema's words, with the value shown short (never the repr of a huge value)
        message, said = error.message, repr(error.instance)
        message = _shown(error.instance) + message[len(said):] if message.startswith(said) else message
    message = message if len(message) <= 300 else message[:297] + "..."
    raise InputError(f"{path}: {_key_path(parts) or '(top level)'}: {message}")


def _worded(schema: str, document: Any, kept: dict[str, list[int]]) -> tuple[Any, list[str | int]]:
    """Python jsonschema's best error of ``document`` and its key path, with each index into a
    narrowed array (``kept``: the indices its elements had) mapped back; no error when the best
    one is not inside a kept element (a narrowed array's own length or order, say)."""
    errors = list(itertools.islice(_validator(schema).iter_errors(document), 1000))
    # older jsonschema (4.0) also calls a key whose value failed "unevaluated": name the failure instead
    error = best_match([e for e in errors if e.validator != "unevaluatedProperties"] or errors)
    if error is None:
        return None, []
    parts = list(error.absolute_path)
    if kept:
        if len(parts) < 2 or parts[0] not in kept or not isinstance(parts[1], int):
            return None, []
        parts[1] = kept[str(parts[0])][parts[1]]
    return error, parts


def _narrowed(schema: str, document: Any) -> tuple[Any, dict[str, list[int]]]:
    """``document`` with each top-level array cut to the elements jsonschema-rs finds an error in
    (an array without one, to its first element), and the indices kept per array; ``{}`` when an
    error lies outside every such element (or jsonschema-rs cannot take the document in): then
    nothing is cut."""
    if not isinstance(document, dict):
        return document, {}
    try:
        paths = [list(e.instance_path) for e in
                 itertools.islice(_compiled(schema, stattests.names()).iter_errors(document), 1000)]
    except (ValueError, OverflowError, TypeError):
        return document, {}
    kept: dict[str, set[int]] = {}
    for path in paths:
        if len(path) < 2 or not isinstance(document.get(path[0]), list) or not isinstance(path[1], int):
            return document, {}
        kept.setdefault(path[0], set()).add(path[1])
    order = {key: sorted(indices) for key, indices in kept.items()}
    # an array with no error keeps its first element, which jsonschema-rs found valid: its length stays >= 1
    good = {key: value[:1] for key, value in document.items() if isinstance(value, list) and key not in order}
    return {**document, **good, **{key: [document[key][i] for i in idx] for key, idx in order.items()}}, order


def _validator(schema: str) -> Draft202012Validator:
    """The validator of ``schema`` as the registries stand now (a statistical test registered since
    the last call is a name the schema takes)."""
    return _built_validator(schema, stattests.names())


@functools.cache
def _built_validator(schema: str, tests: tuple[str, ...]) -> Draft202012Validator:
    return Draft202012Validator(published(schema))


def schema_accepts(schema: str, document: Any) -> bool:
    """Whether ``document`` is valid against ``schema`` (a name of :data:`dpaudit.results.schema.NAMES`) as
    the registries stand now, checked by ``jsonschema-rs`` (compiled Rust, Draft 2020-12): python
    ``jsonschema`` walks a results file of 18,400 records in about 16 CPU s, this in 0.1 s.  A
    value it cannot take in (an integer past 64 bits) is a no: python ``jsonschema`` then decides."""
    try:
        return _compiled(schema, stattests.names()).is_valid(document)
    except (ValueError, OverflowError, TypeError):
        return False


class _Compiled(Protocol):  # what the loader asks of a jsonschema-rs validator (its class differs per draft)
    def is_valid(self, instance: Any) -> bool: ...

    def iter_errors(self, instance: Any) -> Iterator[Any]: ...


@functools.cache
def _compiled(schema: str, tests: tuple[str, ...]) -> _Compiled:
    """``schema`` compiled by ``jsonschema-rs`` as the registries stood (``tests``: the statistical tests'
    names, the enum of a bound's ``test``), once per schema and registry state."""
    return jsonschema_rs.validator_for(published(schema))


def _key_path(parts: Iterable[str | int]) -> str:
    """``scenarios[3].records[0].epsilon_lower`` from the parts of a JSON path."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _shown(value: Any) -> str:
    if isinstance(value, (list, dict)) and len(value) > 8:
        return f"<{type(value).__name__} of {len(value)} entries>"
    shown = repr(value[:100] if isinstance(value, str) else value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _semantics(c: _Checker, payload: dict[str, Any], path: Path) -> None:
    """What the schema cannot say: counts k <= n, a display's lengths, verdicts against their own
    numbers, findings against verdicts, ``as_expected`` against the outcomes, the scenarios saved
    against the plan; then each bound recomputed from its counts (:mod:`dpaudit.results.recheck`)."""
    records, scenarios = payload["records"], payload["scenarios"]
    complete = payload["complete"]  # required by the schema: a file without it is refused, never taken as complete
    planned = payload.get("scenarios_planned", len(scenarios))
    if planned < len(scenarios) or (complete and planned != len(scenarios)):
        c.fail("scenarios_planned", planned, f"does not match the {len(scenarios)} scenarios saved"
               + ("" if complete else " (a partial run saves fewer than planned, never more)"))
    check_onerun_links(payload, path)  # first: a one-run record's size is its game's, bounded by the scores held
    for i, rec in enumerate(records):
        _record(c, rec, f"records[{i}]")
        check_record(rec, f"records[{i}]", path)
    for i, sc in enumerate(scenarios):
        if sc.get("kind") == "one-run":
            check_onerun_scenario(sc, f"scenarios[{i}]", path)
            continue
        _scenario(c, sc, f"scenarios[{i}]")
        for j, claim in enumerate(sc.get("claims", [])):
            check_record(claim, f"scenarios[{i}].claims[{j}]", path)
    if payload["as_expected"] != run_as_expected(records):
        c.fail("as_expected", payload["as_expected"], "contradicts the records' outcomes")


def _counts(c: _Checker, counts: dict[str, Any], where: str) -> None:
    for side in ("D", "D'"):
        k, n = counts[side]
        if k > n:
            c.fail(f"{where}.{side}", counts[side], "counts k must be <= the sample size n")


def _display(c: _Checker, d: dict[str, Any] | None, where: str) -> None:
    if d is None:
        return
    lengths = {len(d["D"]), len(d["D'"])}
    if d["kind"] == "outputs":
        if len(lengths | {len(d.get("values", [])), len(d.get("in_event", []))}) != 1:
            c.fail(where, "...", "values, in_event, D and D' must have one entry per output")
    elif lengths != {len(d.get("edges", [])) - 1}:
        c.fail(f"{where}.edges", "...", "must have one more entry than D and D'")


def _scenario(c: _Checker, s: dict[str, Any], where: str) -> None:
    e = s["estimate"]
    for i, b in enumerate(e["bounds"]):
        _counts(c, b["counts"], f"{where}.estimate.bounds[{i}].counts")
    _display(c, e.get("display"), f"{where}.estimate.display")
    for i, check in enumerate(s.get("claims", [])):
        if check.get("event") is not None:
            _counts(c, check["event"]["counts"], f"{where}.claims[{i}].event.counts")


def _record(c: _Checker, rec: dict[str, Any], where: str) -> None:
    onerun = rec.get("kind", "multi-run") == "one-run"
    if not onerun and rec.get("delta") is None:  # only a one-run curve claim has no delta
        c.fail(f"{where}.delta", None, "a multi-run record needs its delta")
    claim, lower = _num(rec["epsilon_claim"]), rec["epsilon_lower"]
    verdict, exact_verdict = rec["verdict"], rec.get("exact_verdict")
    if verdict != "not-applicable" and not onerun:  # one-run: recheck_onerun.check_onerun_record
        if claim is None or lower is None:
            c.fail(f"{where}.verdict", verdict, "a pass or violation needs epsilon_claim and epsilon_lower")
        if verdict == "violation" and not lower > claim:
            c.fail(f"{where}.verdict", verdict, f"contradicts epsilon_lower {lower} <= epsilon_claim {claim}")
        if verdict == "pass" and lower > claim:
            c.fail(f"{where}.verdict", verdict, f"contradicts epsilon_lower {lower} > epsilon_claim {claim}")
    expected = (NO_CLAIM if rec["claim_id"] is None and verdict == "not-applicable" else
                finding(verdict, exact_verdict, rec.get("claim_status")))
    if rec["finding"] != expected:
        c.fail(f"{where}.finding", rec["finding"], f"contradicts its verdicts: must be {expected!r}")
    if rec.get("event") is not None:
        _counts(c, rec["event"]["counts"], f"{where}.event.counts")
    vv = rec.get("value_views")
    # the value views' verdict beside the floating view's (a real-valued output)
    if vv is not None and (claim is None or (vv["verdict"] == "violation") != (vv["epsilon_lower"] > claim)):
        c.fail(f"{where}.value_views.verdict", vv["verdict"],
               f"contradicts epsilon_lower {vv['epsilon_lower']} and the claim")
    if rec["as_expected"] != (outcome(rec) in OK_OUTCOMES):
        c.fail(f"{where}.as_expected", rec["as_expected"], f"contradicts the record's outcome ({outcome(rec)})")


def _num(value: Any) -> float | None:
    return None if value is None else math.inf if value == "inf" else float(value)


def _bounded(c: _Checker, payload: dict[str, Any]) -> None:
    """The sizes of everything but the one-run scenarios' entries (their scores and secret hold one
    value per canary: :func:`dpaudit.results.recheck.check_onerun_scenario` bounds them), before any
    record is checked or formatted."""
    c.sizes({k: v for k, v in payload.items() if k not in ("records", "scenarios")}, "")
    for i, rec in enumerate(payload["records"]):
        c.sizes(rec, f"records[{i}]")
    for i, sc in enumerate(payload["scenarios"]):
        if not (isinstance(sc, dict) and sc.get("kind") == "one-run"):
            c.sizes(sc, f"scenarios[{i}]")


def check_plan_sizes(names: Iterable[tuple[str, Any]], scenarios: int) -> None:
    """Refuse a run whose results file ``summary`` and ``report`` would refuse: more than
    :data:`MAX_SCENARIOS` scenarios, or a name (``(field, value)`` pairs) longer than
    :data:`MAX_NAME_CHARS` characters."""
    if scenarios > MAX_SCENARIOS:
        raise InputError(f"the run has {scenarios} scenarios: at most {MAX_SCENARIOS} are allowed (split the config)")
    for field, value in names:
        if isinstance(value, str) and len(value) > MAX_NAME_CHARS:
            raise InputError(f"{field} = {value[:60]!r}... is {len(value)} characters long: at most "
                             f"{MAX_NAME_CHARS} are allowed")


def load_results(path: str | os.PathLike) -> dict[str, Any]:
    """Read a ``results.json`` and check it can be trusted (see the module docstring); a problem is
    an :class:`~dpaudit.core.InputError` naming the file and the key path.  A folder written by ``run --out``
    stands for the ``results.json`` in it."""
    path = Path(path)
    if path.is_dir() and (path / "results.json").is_file():
        path = path / "results.json"
    payload = _strict_json(path)
    c = _Checker(path)
    if not isinstance(payload, dict) or payload.get("schema") != SCHEMA_VERSION:
        found = payload.get("schema") if isinstance(payload, dict) else type(payload).__name__
        raise InputError(f"{path}: schema = {found!r} is not supported: this dpaudit reads schema {SCHEMA_VERSION}")
    c.seq(c.get(payload, "records", ""), "records", limit=MAX_RECORDS)
    c.seq(c.get(payload, "scenarios", ""), "scenarios", limit=MAX_SCENARIOS)
    _bounded(c, payload)  # first: what the schema's messages quote is bounded
    _schema_errors(payload, path)
    _semantics(c, payload, path)
    return payload


def load_sweep(path: str | os.PathLike) -> dict[str, Any]:
    """Read a ``sweep.json`` written by ``python -m audit sweep --out``, checked like results: sizes, then
    its closed schema (``dpaudit/results/sweep.schema.json``)."""
    path = Path(path)
    payload = _strict_json(path)
    c = _Checker(path)
    if not isinstance(payload, dict) or payload.get("schema") != SCHEMA_VERSION or "family" not in payload:
        raise InputError(f"{path}: not a sweep.json of schema {SCHEMA_VERSION}")
    c.text(payload["family"], "family", limit=MAX_NAME_CHARS)
    c.seq(c.get(payload, "records", ""), "records", nonempty=True, limit=MAX_RECORDS)
    c.sizes(payload, "")
    _validate(payload, SWEEP_SCHEMA, path)
    return payload
