"""Reading saved results (``results.json``, ``sweep.json``) back, checked, never trusted.

``summary`` exits with the status of the run that wrote a file and ``report`` draws it, so a
file edited by hand, truncated, or written by a buggy tool must be refused with the key path of
what is wrong — never half read, never turned into a verdict it does not support:

* strict JSON only (no ``NaN``/``Infinity`` tokens, no duplicate keys);
* every field the summary or the report reads has its type and range checked (counts are
  integers with ``0 <= k <= n``, probabilities in [0, 1], confidences in [0.5, 1), ε ≥ 0);
* verdicts must agree with their own numbers, findings with verdicts, ``as_expected`` with
  the outcomes (a violation edited into a pass is refused);
* sizes are bounded before anything is formatted (:data:`MAX_NAME_CHARS`, :data:`MAX_TEXT_CHARS`,
  :data:`MAX_ITEMS`, :data:`MAX_SCENARIOS`, :data:`MAX_RECORDS`): past what any run writes, so the
  cost of ``summary`` and ``report`` is bounded on any file (a 1 MB claim id once took ``report``
  more than 400 s).  ``run`` refuses a plan past them (:func:`check_plan_sizes`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

from dpaudit.core import CLAIM_STATUSES, EXPECTATIONS, RELATIONS, VERDICTS, InputError
from dpaudit.engine.files import read_regular
from dpaudit.engine.results import FINDINGS, NO_CLAIM, OK_OUTCOMES, SCHEMA_VERSION, finding, outcome, run_as_expected
from dpaudit.runs.recheck import check_onerun_links, check_onerun_scenario, check_record

__all__ = ["MAX_ITEMS", "MAX_NAME_CHARS", "MAX_RECORDS", "MAX_SCENARIOS", "MAX_TEXT_CHARS", "check_plan_sizes",
           "load_results", "load_sweep"]

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
_MAX_INT = 2**63 - 1  # a JSON integer beyond any count dpaudit writes (10**400 would overflow a float)
_FINDINGS = (*FINDINGS, NO_CLAIM)


class _Checker:
    """Type and range checks that name the file and the key path of a bad value."""

    def __init__(self, source: Path) -> None:
        self.source = source

    def fail(self, where: str, value: Any, allowed: str) -> NoReturn:
        if isinstance(value, (list, dict)) and len(value) > 8:  # never the repr of a huge value
            shown = f"<{type(value).__name__} of {len(value)} entries>"
        else:
            shown = "missing" if value is _MISSING else repr(value[:100] if isinstance(value, str) else value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        raise InputError(f"{self.source}: {where} = {shown} is invalid: {allowed}")

    def get(self, obj: dict[str, Any], key: str, where: str) -> Any:
        return obj.get(key, _MISSING)

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(where, value, "must be an object")
        return value

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
        :data:`MAX_ITEMS` entries, and the names (:data:`_NAMES`) at most :data:`MAX_NAME_CHARS`; walked
        without recursion (a file may nest as deep as the JSON parser allows)."""
        stack = [(value, where)]
        while stack:
            item, at = stack.pop()
            if isinstance(item, str):
                self.text(item, at)
            elif isinstance(item, (list, dict)):
                if len(item) > MAX_ITEMS:
                    self.fail(at, item, f"holds {len(item)} entries: at most {MAX_ITEMS} are read")
                if isinstance(item, dict):
                    for key in _NAMES:
                        if isinstance(item.get(key), str):
                            self.text(item[key], f"{at}.{key}", limit=MAX_NAME_CHARS)
                    for k in item:  # a key names a parameter, a document, a side: a name
                        self.text(k, f"{at} key", limit=MAX_NAME_CHARS)
                    stack += [(v, f"{at}.{k}") for k, v in item.items()]
                else:
                    stack += [(v, f"{at}[{i}]") for i, v in enumerate(item)]

    def flag(self, value: Any, where: str, optional: bool = False) -> bool | None:
        if (value is None or value is _MISSING) and optional:
            return None
        if not isinstance(value, bool):
            self.fail(where, value, "must be true or false")
        return value

    def integer(self, value: Any, where: str, low: int, optional: bool = False) -> int | None:
        if (value is None or value is _MISSING) and optional:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= _MAX_INT:
            self.fail(where, value, f"must be an integer in [{low}, 2**63 - 1]")
        return value

    def number(self, value: Any, where: str, low: float = -math.inf, high: float = math.inf, *,
            optional: bool = False, inf: bool = False, high_open: bool = False) -> float | None:
        """A finite number in [low, high] (``high_open``: [low, high)); ``inf``: also the string "inf"."""
        if (value is None or value is _MISSING) and optional:
            return None
        if inf and value == "inf":
            return math.inf
        ok = (isinstance(value, float) and math.isfinite(value)) or (
            isinstance(value, int) and not isinstance(value, bool) and abs(value) <= _MAX_INT)
        if not ok or value < low or value > high or (high_open and value >= high):
            close = ")" if high_open else "]"
            self.fail(where, value, f"must be a finite number in [{low:g}, {high:g}{close}"
                      + (' or "inf"' if inf else "") + (" or null" if optional else ""))
        return float(value)

    def choice(self, value: Any, where: str, allowed: tuple[Any, ...]) -> Any:
        if not isinstance(value, (str, type(None))) or value not in allowed:
            self.fail(where, value, f"must be one of {', '.join(map(str, allowed))}")
        return value

    def counts(self, value: Any, where: str) -> None:
        counts = self.obj(value, where)
        for side in ("D", "D'"):
            pair = self.seq(self.get(counts, side, where), f"{where}.{side}")
            if len(pair) != 2:
                self.fail(f"{where}.{side}", pair, "must be [k, n]")
            n = self.integer(pair[1], f"{where}.{side}[1]", 0)
            k = self.integer(pair[0], f"{where}.{side}[0]", 0)
            if k is not None and n is not None and k > n:
                self.fail(f"{where}.{side}", pair, "counts k must be <= the sample size n")


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


def _bound(c: _Checker, value: Any, where: str) -> None:
    b = c.obj(value, where)
    c.number(c.get(b, "delta", where), f"{where}.delta", 0, 1)
    c.number(c.get(b, "epsilon_lower", where), f"{where}.epsilon_lower", 0)
    c.text(c.get(b, "witness", where), f"{where}.witness")
    c.counts(c.get(b, "counts", where), f"{where}.counts")
    c.number(c.get(b, "p_lower", where), f"{where}.p_lower", 0, 1)
    c.number(c.get(b, "q_upper", where), f"{where}.q_upper", 0, 1)
    c.number(c.get(b, "confidence", where), f"{where}.confidence", 0.5, 1, high_open=True)
    c.obj(c.get(b, "event", where), f"{where}.event")


def _display(c: _Checker, value: Any, where: str) -> None:
    if value is None:
        return
    d = c.obj(value, where)
    kind = c.choice(c.get(d, "kind", where), f"{where}.kind", ("outputs", "histogram"))
    n = c.seq(c.get(d, "n", where), f"{where}.n")
    if len(n) != 2:
        c.fail(f"{where}.n", n, "must be [n under D, n under D']")
    for i, v in enumerate(n):
        c.integer(v, f"{where}.n[{i}]", 1)
    lengths = set()
    for side in ("D", "D'"):
        values = c.seq(c.get(d, side, where), f"{where}.{side}")
        for i, v in enumerate(values):
            c.integer(v, f"{where}.{side}[{i}]", 0)
        lengths.add(len(values))
    if kind == "outputs":
        labels = c.seq(c.get(d, "values", where), f"{where}.values")
        for i, v in enumerate(labels):
            c.text(v, f"{where}.values[{i}]")
        flags = c.seq(c.get(d, "in_event", where), f"{where}.in_event")
        for i, v in enumerate(flags):
            c.flag(v, f"{where}.in_event[{i}]")
        lengths |= {len(labels), len(flags)}
        if len(lengths) != 1:
            c.fail(where, "...", "values, in_event, D and D' must have one entry per output")
    else:
        edges = c.seq(c.get(d, "edges", where), f"{where}.edges", nonempty=True)
        for i, v in enumerate(edges):
            c.number(v, f"{where}.edges[{i}]")
        if lengths != {len(edges) - 1}:
            c.fail(f"{where}.edges", "...", "must have one more entry than D and D'")
        c.number(c.get(d, "threshold", where), f"{where}.threshold", optional=True)
        c.text(d.get("statistic", ""), f"{where}.statistic")


def _estimate(c: _Checker, value: Any, where: str) -> None:
    e = c.obj(value, where)
    c.number(c.get(e, "epsilon_lower", where), f"{where}.epsilon_lower", 0)
    c.number(c.get(e, "confidence", where), f"{where}.confidence", 0.5, 1, high_open=True)
    c.integer(c.get(e, "samples", where), f"{where}.samples", 0)  # 0: stopped before a sample
    bounds = c.seq(c.get(e, "bounds", where), f"{where}.bounds", nonempty=True)
    for i, b in enumerate(bounds):
        _bound(c, b, f"{where}.bounds[{i}]")
    c.integer(c.get(e, "selection_samples", where), f"{where}.selection_samples", 0)
    c.text(e.get("sequential"), f"{where}.sequential", optional=True)
    for i, point in enumerate(c.seq(e.get("convergence", []), f"{where}.convergence")):
        pair = c.seq(point, f"{where}.convergence[{i}]")
        if len(pair) != 2:
            c.fail(f"{where}.convergence[{i}]", pair, "must be [samples, epsilon_lower]")
        c.integer(pair[0], f"{where}.convergence[{i}][0]", 1)
        c.number(pair[1], f"{where}.convergence[{i}][1]", 0)
    for i, point in enumerate(c.seq(e.get("tradeoff", []), f"{where}.tradeoff")):
        p = c.obj(point, f"{where}.tradeoff[{i}]")
        for key in ("fpr", "fnr", "fpr_lower", "fpr_upper", "fnr_lower", "fnr_upper"):
            c.number(c.get(p, key, where), f"{where}.tradeoff[{i}].{key}", 0, 1)
    gdp = e.get("gdp")
    if gdp is not None:
        g = c.obj(gdp, f"{where}.gdp")
        if c.flag(c.get(g, "consistent", where), f"{where}.gdp.consistent"):
            for key in ("mu", "lower", "upper"):
                c.number(c.get(g, key, where), f"{where}.gdp.{key}", 0, inf=True)
        c.integer(c.get(g, "points", where), f"{where}.gdp.points", 0)
    _display(c, e.get("display"), f"{where}.display")


def _scenario(c: _Checker, value: Any, where: str) -> None:
    s = c.obj(value, where)
    for key in ("scenario", "mechanism", "pair"):
        c.text(c.get(s, key, where), f"{where}.{key}")
    c.choice(c.get(s, "relation", where), f"{where}.relation", RELATIONS)
    c.obj(s.get("params", {}), f"{where}.params")
    c.integer(c.get(s, "samples", where), f"{where}.samples", 0)
    c.integer(c.get(s, "seed", where), f"{where}.seed", 0)
    c.number(c.get(s, "confidence", where), f"{where}.confidence", 0.5, 1, high_open=True)
    c.number(c.get(s, "seconds", where), f"{where}.seconds", 0)
    c.number(c.get(s, "epsilon_lower", where), f"{where}.epsilon_lower", 0)
    c.number(s.get("epsilon_exact"), f"{where}.epsilon_exact", 0, optional=True, inf=True)
    c.number(s.get("epsilon_sup"), f"{where}.epsilon_sup", 0, optional=True, inf=True)
    c.choice(c.get(s, "verdict", where), f"{where}.verdict", VERDICTS)
    dist = s.get("distributions")
    if dist is not None:
        dd = c.obj(dist, f"{where}.distributions")
        for side in ("D", "D'"):
            probs = c.seq(c.get(dd, side, where), f"{where}.distributions.{side}", nonempty=True)
            for i, p in enumerate(probs):
                c.number(p, f"{where}.distributions.{side}[{i}]", 0, 1)
    for i, point in enumerate(c.seq(s.get("exact") or [], f"{where}.exact")):
        p = c.obj(point, f"{where}.exact[{i}]")
        c.number(c.get(p, "delta", where), f"{where}.exact[{i}].delta", 0, 1)
        c.number(c.get(p, "epsilon", where), f"{where}.exact[{i}].epsilon", 0, inf=True)
    for i, point in enumerate(c.seq(s.get("exact_profile") or [], f"{where}.exact_profile")):
        p = c.obj(point, f"{where}.exact_profile[{i}]")
        c.number(c.get(p, "delta", where), f"{where}.exact_profile[{i}].delta", 0, 1)
        c.number(c.get(p, "epsilon", where), f"{where}.exact_profile[{i}].epsilon", 0, inf=True)
    for i, claim in enumerate(c.seq(s.get("claims", []), f"{where}.claims")):
        check = c.obj(claim, f"{where}.claims[{i}]")
        c.choice(c.get(check, "verdict", where), f"{where}.claims[{i}].verdict", VERDICTS)
        c.choice(c.get(check, "finding", where), f"{where}.claims[{i}].finding", _FINDINGS)
        if check.get("event") is not None:
            event = c.obj(check["event"], f"{where}.claims[{i}].event")
            c.counts(c.get(event, "counts", where), f"{where}.claims[{i}].event.counts")
        _detectable(c, check.get("detectable"), f"{where}.claims[{i}].detectable")
    _estimate(c, c.get(s, "estimate", where), f"{where}.estimate")


def _detectable(c: _Checker, value: Any, where: str) -> None:
    """A holding claim's ``detectable`` (dpaudit.engine.results.detectable_dict): null, or exactly an
    ``epsilon`` (>= 0 or "inf"), a ``samples_for_twice`` (an integer >= 1 or null) and a ``model`` text."""
    if value is None:
        return
    d = c.obj(value, where)
    for key in d:
        if key not in ("epsilon", "samples_for_twice", "model"):
            c.fail(f"{where}.{key}", d[key], "is not a key of detectable (epsilon, samples_for_twice, model)")
    if "samples_for_twice" not in d:
        c.fail(f"{where}.samples_for_twice", _MISSING, "is required (null when there is none)")
    c.number(c.get(d, "epsilon", where), f"{where}.epsilon", 0, inf=True)
    c.integer(c.get(d, "samples_for_twice", where), f"{where}.samples_for_twice", 1, optional=True)
    c.text(c.get(d, "model", where), f"{where}.model")


def _record(c: _Checker, value: Any, where: str) -> None:
    rec = c.obj(value, where)
    for key in ("scenario", "mechanism", "pair"):
        c.text(c.get(rec, key, where), f"{where}.{key}")
    c.choice(c.get(rec, "relation", where), f"{where}.relation", RELATIONS)
    c.integer(c.get(rec, "samples", where), f"{where}.samples", 0)
    c.integer(c.get(rec, "seed", where), f"{where}.seed", 0)
    c.number(c.get(rec, "confidence", where), f"{where}.confidence", 0.5, 1, high_open=True)
    c.number(c.get(rec, "seconds", where), f"{where}.seconds", 0)
    for key in ("claim_id", "claim_kind", "claim_source", "epsilon_claim", "epsilon_lower", "epsilon_exact"):
        if key not in rec:  # the summary and the report read these: present, even when null
            c.fail(f"{where}.{key}", _MISSING, "is required (null when there is none)")
    for key in ("claim_id", "claim_kind", "claim_source", "claim_document", "claim_where", "claim_statement",
                "claim_note", "premise", "sequential"):
        c.text(rec.get(key), f"{where}.{key}", optional=True)
    c.flag(rec.get("claim_vacuous"), f"{where}.claim_vacuous", optional=True)
    c.choice(rec.get("claim_status"), f"{where}.claim_status", (None, *CLAIM_STATUSES))
    onerun = c.choice(rec.get("kind", "multi-run"), f"{where}.kind", ("multi-run", "one-run")) == "one-run"
    c.number(c.get(rec, "delta", where), f"{where}.delta", 0, 1, optional=onerun)  # a curve claim has no delta
    claim = c.number(rec.get("epsilon_claim"), f"{where}.epsilon_claim", 0, optional=True, inf=True)
    lower = c.number(rec.get("epsilon_lower"), f"{where}.epsilon_lower", 0, optional=True)
    c.number(rec.get("epsilon_exact"), f"{where}.epsilon_exact", 0, optional=True, inf=True)
    c.number(rec.get("epsilon_sup"), f"{where}.epsilon_sup", 0, optional=True, inf=True)
    c.number(rec.get("slack"), f"{where}.slack", optional=True, inf=True)
    c.number(rec.get("tightness"), f"{where}.tightness", optional=True, inf=True)
    verdict = c.choice(c.get(rec, "verdict", where), f"{where}.verdict", VERDICTS)
    exact_verdict = c.choice(rec.get("exact_verdict"), f"{where}.exact_verdict", (None, *VERDICTS))
    c.choice(rec.get("expected_verdict"), f"{where}.expected_verdict", (None, *EXPECTATIONS))
    if verdict != "not-applicable" and not onerun:  # a one-run verdict: dpaudit.runs.recheck.check_onerun_record
        if claim is None or lower is None:
            c.fail(f"{where}.verdict", verdict, "a pass or violation needs epsilon_claim and epsilon_lower")
        if verdict == "violation" and not lower > claim:
            c.fail(f"{where}.verdict", verdict, f"contradicts epsilon_lower {lower} <= epsilon_claim {claim}")
        if verdict == "pass" and lower > claim:
            c.fail(f"{where}.verdict", verdict, f"contradicts epsilon_lower {lower} > epsilon_claim {claim}")
    found = c.choice(c.get(rec, "finding", where), f"{where}.finding", _FINDINGS)
    expected = (NO_CLAIM if rec.get("claim_id") is None and verdict == "not-applicable" else
                finding(verdict, exact_verdict, rec.get("claim_status")))
    if found != expected:
        c.fail(f"{where}.finding", found, f"contradicts its verdicts: must be {expected!r}")
    event = rec.get("event")
    if event is not None:
        ev = c.obj(event, f"{where}.event")
        c.counts(c.get(ev, "counts", where), f"{where}.event.counts")
        c.text(ev.get("witness", ""), f"{where}.event.witness")
    vv = rec.get("value_views")
    if vv is not None:  # the value views' verdict beside the floating view's (a real-valued output)
        vv = c.obj(vv, f"{where}.value_views")
        vv_lower = c.number(c.get(vv, "epsilon_lower", where), f"{where}.value_views.epsilon_lower", 0)
        vv_verdict = c.choice(c.get(vv, "verdict", where), f"{where}.value_views.verdict", ("pass", "violation"))
        if claim is None or vv_lower is None or (vv_verdict == "violation") != (vv_lower > claim):
            c.fail(f"{where}.value_views.verdict", vv_verdict, f"contradicts epsilon_lower {vv_lower} and the claim")
        c.choice(c.get(vv, "finding", where), f"{where}.value_views.finding", _FINDINGS)
    _detectable(c, rec.get("detectable"), f"{where}.detectable")
    ok = c.flag(c.get(rec, "as_expected", where), f"{where}.as_expected")
    if ok != (outcome(rec) in OK_OUTCOMES):
        c.fail(f"{where}.as_expected", ok, f"contradicts the record's outcome ({outcome(rec)})")


def _bounded(c: _Checker, payload: dict[str, Any]) -> None:
    """The sizes of everything but the one-run scenarios' entries (their scores and secret hold one
    value per canary: :func:`dpaudit.runs.recheck.check_onerun_scenario` bounds them), before any
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
    where = ""
    records = c.seq(c.get(payload, "records", where), "records", limit=MAX_RECORDS)
    scenarios = c.seq(c.get(payload, "scenarios", where), "scenarios", limit=MAX_SCENARIOS)
    _bounded(c, payload)
    c.integer(c.get(payload, "seed", where), "seed", 0)
    c.integer(c.get(payload, "samples", where), "samples", 1)
    c.number(c.get(payload, "confidence", where), "confidence", 0.5, 1, high_open=True)
    c.number(payload.get("seconds"), "seconds", 0, optional=True)
    c.integer(payload.get("jobs"), "jobs", -1, optional=True)
    c.text(payload.get("backend"), "backend", optional=True)
    c.text(payload.get("suite"), "suite", optional=True)
    c.text(payload.get("started"), "started", optional=True)
    c.text(payload.get("dpaudit_version"), "dpaudit_version", optional=True)
    c.text(payload.get("fingerprint"), "fingerprint", optional=True)
    for i, word in enumerate(c.seq(payload.get("command", []), "command")):
        c.text(word, f"command[{i}]")
    for key, table in (("environment", payload.get("environment", {})), ("documents", payload.get("documents", {}))):
        for name, text in c.obj(table if table is not None else {}, key).items():
            c.text(text, f"{key}.{name}")
    complete = c.flag(payload.get("complete", True), "complete")
    c.integer(payload.get("expectations_unchecked"), "expectations_unchecked", 0, optional=True)
    c.flag(payload.get("expectations_unchecked_exact"), "expectations_unchecked_exact", optional=True)
    planned = c.integer(payload.get("scenarios_planned", len(scenarios)), "scenarios_planned", 0)
    if planned is not None and (planned < len(scenarios) or (complete and planned != len(scenarios))):
        c.fail("scenarios_planned", planned, f"does not match the {len(scenarios)} scenarios saved"
               + ("" if complete else " (a partial run saves fewer than planned, never more)"))
    check_onerun_links(payload, path)  # first: a one-run record's size is its game's, bounded by the scores held
    for i, rec in enumerate(records):
        _record(c, rec, f"records[{i}]")
        check_record(rec, f"records[{i}]", path)
    for i, sc in enumerate(scenarios):
        if isinstance(sc, dict) and sc.get("kind") == "one-run":
            check_onerun_scenario(sc, f"scenarios[{i}]", path)
            continue
        _scenario(c, sc, f"scenarios[{i}]")
        for j, claim in enumerate(sc.get("claims", [])):
            check_record(claim, f"scenarios[{i}].claims[{j}]", path)
    as_expected = c.flag(c.get(payload, "as_expected", where), "as_expected")
    if as_expected != run_as_expected(records):
        c.fail("as_expected", as_expected, "contradicts the records' outcomes")
    return payload


def load_sweep(path: str | os.PathLike) -> dict[str, Any]:
    """Read a ``sweep.json`` written by ``python -m audit sweep --out``, checked like results."""
    path = Path(path)
    payload = _strict_json(path)
    c = _Checker(path)
    if not isinstance(payload, dict) or payload.get("schema") != SCHEMA_VERSION or "family" not in payload:
        raise InputError(f"{path}: not a sweep.json of schema {SCHEMA_VERSION}")
    c.text(payload["family"], "family", limit=MAX_NAME_CHARS)
    c.integer(c.get(payload, "samples", ""), "samples", 1)
    c.integer(c.get(payload, "seed", ""), "seed", 0)
    records = c.seq(c.get(payload, "records", ""), "records", nonempty=True, limit=MAX_RECORDS)
    c.sizes(payload, "")
    for i, rec in enumerate(records):
        r = c.obj(rec, f"records[{i}]")
        c.integer(c.get(r, "n", ""), f"records[{i}].n", 1)
        c.text(c.get(r, "claim_id", ""), f"records[{i}].claim_id")
        for key in ("epsilon_claim", "epsilon_exact", "epsilon_lower"):
            c.number(c.get(r, key, ""), f"records[{i}].{key}", 0)
    for cid, s in c.obj(payload.get("slopes", {}), "slopes").items():
        slope = c.obj(s, f"slopes.{cid}")
        for key in ("epsilon_claim", "epsilon_exact"):
            c.number(c.get(slope, key, ""), f"slopes.{cid}.{key}")
    return payload
