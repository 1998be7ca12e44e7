"""Audit configs: TOML files that describe a run and its scenarios (data, never code).

    [run]                        # every key optional
    samples = 1000000            # per side and scenario
    seed = 0
    confidence = 0.95
    deltas = [0.0]
    jobs = -1                    # workers, -1 for all cores (the default)
    backend = "local"            # local | dask
    scheduler = "tcp://host:8786"  # dask only; without it a local cluster is started
    events = "auto"              # auto | rows | threshold | histogram | floating
    sequential = false

    [[scenario]]
    name = "rlhf-label"
    mechanism = "kl-rlhf"        # a built-in name (dpaudit list), or pkg.module:attr of a
                                 # plugin the command line allows (--allow-plugin pkg)
    params = { features = [[1.0], [-1.0]], ridge = 1.0, beta0 = 0.01, eta = 0.1 }
    relation = "label-flip"      # add-remove | swap | label-flip | zero-out | user-level
    expected = { "kl-rlhf/thm3-label" = "violation" }
    samples_factor = 1

    [scenario.data]              # exactly one of: generator (+ args), file, columns
    generator = "comparisons"
    args = { z = [[2.0], [2.0]], labels = [1, 0] }

    [scenario.neighbour]         # exactly one of: remove, add, replace, flip, search
    flip = 0

    # Instead of [scenario.neighbour]: search = "records" searches the neighbours of the data
    # (relation as above; candidates are the data's own records) and search = "queries:DIM"
    # the query-vector pairs of dimension DIM (no [scenario.data]); see dpaudit.engine.search.

    [[scenario.claim]]           # optional: claims to check instead of the mechanism's own
    epsilon = 1.0
    delta = 0.0
    id = "user/claim"
    relation = "label-flip"      # optional; must be the scenario's relation (an input error otherwise)

A scenario with ``canaries`` is a one-run (canary) audit of a training run: its keys
(``scorer``, ``canaries``, ``runs``, ``rule``, ``deltas``, claims with ``epsilon``/``delta`` or
``gdp_mu``) are described in :mod:`dpaudit.runs.onerun`.

Every unknown key, wrong type or out-of-range value stops with a message naming its key
path (``scenario[1].data.generator``), the value and what is allowed.  Data files are
``.npz`` (named arrays) or ``.csv`` (a header of unique column names; a UTF-8 byte-order mark
is allowed), relative to the config's folder and never outside it.

A config is data: loading it never runs code of the config's choosing.  It may name built-in
(catalog) mechanisms, or a plugin ``pkg.module:attr`` only when the command line allows its
module (``--allow-plugin pkg.module``; a prefix allows its submodules), and then only what the
allowed modules define themselves (:func:`dpaudit.runs.plugins.home_modules`) — otherwise a config
received from someone else could import, and so run, any module on the path, or any function a
plugin imported.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit import catalog
from dpaudit.catalog import Scenario
from dpaudit.claims import RDP, ZCDP
from dpaudit.core import (
    EXPECTATIONS,
    RELATIONS,
    Guarantee,
    InputError,
    Relation,
    check_integer,
    check_number,
    check_table,
    did_you_mean,
    whole_number,
)
from dpaudit.engine.exact import epsilon_for_delta
from dpaudit.engine.search import QueryVectors, RecordSpace, Space, space_from_spec
from dpaudit.neighbors import Dataset, Pair, neighbours
from dpaudit.neighbors.search import worst_pair
from dpaudit.onerun.design import CanaryDesign
from dpaudit.runs.datafiles import (
    CONFIG,
    column,
    fail,
    inside,
    load_columns,
    with_key_path,
)
from dpaudit.runs.onerun import load_onerun_scenario
from dpaudit.runs.plugins import build_plugin, load_plugin
from dpaudit.runtime.execution import check_scheduler_address
from dpaudit.runtime.files import read_regular

RUN_KEYS = {"samples", "seed", "confidence", "deltas", "jobs", "backend", "scheduler", "events", "sequential"}
SCENARIO_KEYS = {"name", "mechanism", "params", "relation", "expected", "samples_factor", "about", "data",
                 "neighbour", "claim", "search"}
MAX_DEPTH = 16          # nesting of TOML values: deeper is not a dataset or a parameter, only a crash


@dataclass(frozen=True)
class RunSettings:
    samples: int = 1_000_000
    seed: int = 0
    confidence: float = 0.95
    deltas: tuple[float, ...] = (0.0,)
    jobs: int = -1
    backend: str = "local"
    scheduler: str | None = None
    events: str = "auto"
    sequential: bool = False


@dataclass(frozen=True)
class Plan:
    """A run: its settings, its scenarios and, per scenario, explicit claims (or None)."""

    settings: RunSettings
    scenarios: list[Scenario]
    claims: list[list[Guarantee] | None] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)  # the resolved config, written beside the results
    # Per scenario, the space a pair search explores (dpaudit.engine.search.search_pair), or None for the
    # scenario's own pair; empty: no scenario searches.  A searching scenario's pair only describes it.
    searches: list[Space | None] = field(default_factory=list)
    # One-run (canary) scenarios, audited after the multi-run ones: one training run each at the run's seed.
    onerun: list[CanaryDesign] = field(default_factory=list)


def search_scenario(name: str, mechanism: Any, space: Any, relation: Relation | str,
                    **fields: Any) -> Scenario:
    """A scenario whose pair is searched for in ``space``: its ``pair`` is a placeholder (the
    space's base twice, the zero query vector twice, or a float search's one-record dataset at its
    lower bound twice) that names the space for records, identities and reports, never audited itself."""
    base: Any
    if isinstance(space, RecordSpace):
        base = space.base
    elif isinstance(space, QueryVectors):
        base = np.zeros(space.dim)
    else:
        base = np.array([space.lower])
    return Scenario(name, mechanism, Pair(base, base, f"searched: {space.describe()}", relation), **fields)


_fail = fail


def _settings(raw: Any) -> RunSettings:
    run = check_table("run", raw, allowed=RUN_KEYS, prefix=CONFIG)
    s = RunSettings()
    out: dict[str, Any] = {}  # RunSettings' fields, each of its own type
    if "samples" in run:
        out["samples"] = check_integer("run.samples", run["samples"], low=100, prefix=CONFIG)
    if "seed" in run:
        out["seed"] = check_integer("run.seed", run["seed"], low=0, prefix=CONFIG)
    if "confidence" in run:
        out["confidence"] = check_number("run.confidence", run["confidence"], low=0.5, high=1.0, high_open=True,
                                         prefix=CONFIG)
    if "deltas" in run:
        if not isinstance(run["deltas"], list) or not run["deltas"]:
            _fail("run.deltas", run["deltas"], "must be a non-empty array of numbers in [0, 1)")
        out["deltas"] = tuple(check_number(f"run.deltas[{i}]", d, low=0.0, high=1.0, high_open=True,
                                           prefix=CONFIG) for i, d in enumerate(run["deltas"]))
    if "jobs" in run:
        jobs = run["jobs"]
        out["jobs"] = -1 if whole_number(jobs) == -1 else check_integer("run.jobs", jobs, low=1, prefix=CONFIG)
    if "backend" in run:
        if run["backend"] not in ("local", "dask"):
            _fail("run.backend", run["backend"], "must be 'local' or 'dask'")
        out["backend"] = run["backend"]
    if "scheduler" in run:
        try:
            check_scheduler_address(run["scheduler"])
        except InputError:
            _fail("run.scheduler", run["scheduler"], "must be an address such as tcp://host:8786")
        out["scheduler"] = run["scheduler"]
    if "events" in run:
        if run["events"] not in ("auto", "rows", "threshold", "histogram", "floating"):
            _fail("run.events", run["events"], "must be auto, rows, threshold, histogram or floating")
        out["events"] = run["events"]
    if "sequential" in run:
        if not isinstance(run["sequential"], bool):
            _fail("run.sequential", run["sequential"], "must be true or false")
        out["sequential"] = run["sequential"]
    return RunSettings(**{**s.__dict__, **out})


def check_name(mechanism: Any, where: str, value: Any) -> None:
    """A mechanism's ``name`` (when it has one) must be a non-empty string: it keys records and reports."""
    name = getattr(mechanism, "name", None)
    if name is not None and (not isinstance(name, str) or not name):
        _fail(where, value, f"its name is {name!r} ({type(name).__name__}): a mechanism's name must be a "
              "non-empty string")


def load_mechanism(spec: str, params: dict, path: str, allow_plugins: Sequence[str] = ()) -> Any:
    """A built-in mechanism (any family of :mod:`dpaudit.catalog`) built from ``params``, or the
    object at ``pkg.module:attr`` when ``allow_plugins`` allows its module."""
    if not isinstance(spec, str) or not spec:
        _fail(f"{path}.mechanism", spec, "must be a built-in mechanism name or pkg.module:attr")
    if ":" not in spec:
        known = catalog.mechanisms()
        if spec not in known:
            _fail(f"{path}.mechanism", spec, f"not a built-in mechanism{did_you_mean(spec, known)}; see `python -m "
                  "dpaudit list`, or give pkg.module:attr of a plugin the command line allows")
        try:
            return catalog.build_mechanism(spec, params, f"{path}.mechanism", f"{path}.params")
        except InputError as exc:
            message = unknown_parameter(str(exc), spec, f"{path}.params", params)
            raise InputError(f"config: {with_key_path(message, f'{path}.params', params)}") from None
    obj = load_plugin(spec, f"{path}.mechanism", allow_plugins,
                      "a config is data and may name built-in mechanisms only; ")
    try:
        obj = build_plugin(obj, params, path, spec)  # a class or builder: called with the params
    except InputError as exc:  # the builder's own validator: "epsilon = 'one' is invalid", its key path added
        head = f"config: {path}.params: "
        text = str(exc)
        raise InputError(f"config: {with_key_path(text[len(head):], f'{path}.params', params)}"
                         if text.startswith(head) else text) from None
    if not callable(getattr(obj, "sample", None)):
        _fail(f"{path}.mechanism", spec, "has no sample(data, size, rng) method")
    check_name(obj, f"{path}.mechanism", spec)
    return obj


def unknown_parameter(message: str, spec: str, field: str, params: Mapping[str, Any]) -> str:
    """A built-in builder's refusal of a parameter it does not take (``got an unexpected keyword
    argument 'epsilonn'``) as ``field.epsilonn = ... is invalid`` with the parameters closest to it;
    any other ``message`` unchanged."""
    found = re.search(r"unexpected keyword argument '([^']+)'", message)
    if found is None or found[1] not in params:
        return message
    key, names = found[1], [name for name, _ in catalog.mechanisms()[spec].parameters()]
    shown = f"{field} {key}={params[key]!r}" if field.startswith("--") else f"{field}.{key} = {params[key]!r}"
    return (f"{shown} is invalid: {spec} takes no parameter {key!r}{did_you_mean(key, names)}; it takes: "
            f"{', '.join(names)}")


def _depth(value: Any, path: str, depth: int = 0) -> None:
    """Refuse values nested deeper than :data:`MAX_DEPTH` (before anything recurses into them)."""
    stack = [(value, path, depth)]
    while stack:
        item, where, level = stack.pop()
        if level > MAX_DEPTH:
            _fail(where, "...", f"is nested more than {MAX_DEPTH} levels deep")
        if isinstance(item, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k), level + 1) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]", level + 1) for i, v in enumerate(item))


def _data(raw: Any, path: str, folder: Path) -> Dataset:
    data = check_table(path, raw, allowed={"generator", "args", "file", "columns"}, prefix=CONFIG)
    given = [k for k in ("generator", "file", "columns") if k in data]
    if len(given) != 1:
        _fail(path, raw, "needs exactly one of generator, file, columns")
    try:
        if "file" in data:
            return load_columns(inside(folder, data["file"], f"{path}.file"), f"{path}.file")
        if "columns" in data:
            cols = check_table(f"{path}.columns", data["columns"], prefix=CONFIG)
            if not cols:
                _fail(f"{path}.columns", cols, "must name at least one column")
            return Dataset({k: column(v, f"{path}.columns.{k}") for k, v in cols.items()})
        name, known = data["generator"], catalog.generators()
        if not isinstance(name, str) or name not in known:
            hint = catalog.suggest(str(name), list(known))
            _fail(f"{path}.generator", name, f"must be one of {', '.join(known)}{hint}")
        args = check_table(f"{path}.args", data.get("args", {}), prefix=CONFIG)
        try:
            made = known[name](**args)
        except InputError:
            raise
        except TypeError as exc:
            _fail(f"{path}.args", args, f"{name} does not take these arguments ({exc})")
        except (ValueError, ArithmeticError, IndexError, KeyError, MemoryError) as exc:
            _fail(f"{path}.args", args, f"{name} cannot build a dataset from them ({type(exc).__name__}: {exc})")
        if not isinstance(made, Dataset):
            _fail(f"{path}.generator", name, f"built a {type(made).__name__}, not a dataset")
        return made
    except InputError as exc:
        if str(exc).startswith("config:"):
            raise
        raise InputError(f"config: {path}: {exc}") from None


def _pair(raw: Any, path: str, base: Dataset, mechanism: Any, relation: Relation | str) -> Pair:
    nb = check_table(path, raw, allowed={"remove", "add", "replace", "flip", "search"}, prefix=CONFIG)
    if len(nb) != 1:
        _fail(path, raw, "needs exactly one of remove, add, replace, flip, search")
    (kind, value), = nb.items()
    try:
        if kind == "remove":
            index = check_integer(f"{path}.remove", value, low=0, prefix=CONFIG)
            return Pair(base, base.remove(index), f"remove record {value}", relation)
        if kind == "add":
            record = check_table(f"{path}.add", value, allowed=set(base.columns), required=set(base.columns),
                                 prefix=CONFIG)
            return Pair(base, base.add(record), f"add record {record}", relation)
        if kind == "replace":
            spec = check_table(f"{path}.replace", value, allowed={"index", "record"}, required={"index", "record"},
                               prefix=CONFIG)
            record = check_table(f"{path}.replace.record", spec["record"], allowed=set(base.columns),
                                 required=set(base.columns), prefix=CONFIG)
            i = check_integer(f"{path}.replace.index", spec["index"], low=0, prefix=CONFIG)
            return Pair(base, base.replace(i, record), f"replace record {i} by {record}", relation)
        if kind == "flip":
            i = check_integer(f"{path}.flip", value, low=0, prefix=CONFIG)
            return Pair(base, base.flip(i), f"flip the label of record {i}", relation)
        spec = check_table(f"{path}.search", value, allowed={"candidates", "delta"}, prefix=CONFIG)
        cands = spec.get("candidates", [])
        if not isinstance(cands, list):
            _fail(f"{path}.search.candidates", cands, "must be an array of records")
        delta = check_number(f"{path}.search.delta", spec.get("delta", 0.0), low=0.0, high=1.0, high_open=True,
                             prefix=CONFIG)
        return worst_pair(mechanism, neighbours(relation, base, cands),
                          lambda p, q: epsilon_for_delta(p, q, delta)).pair
    except (ValueError, TypeError, ArithmeticError, IndexError, KeyError, RuntimeError) as exc:
        if isinstance(exc, InputError):
            if str(exc).startswith("config:"):
                raise
            raise InputError(f"config: {path}.{kind}: {exc}") from None
        _fail(f"{path}.{kind}", value, f"cannot build the neighbour ({type(exc).__name__}: {exc})")


def _claims(raw: Any, path: str, relation: Relation | str) -> list[Guarantee] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        _fail(path, raw, "must be an array of tables ([[scenario.claim]])")
    out = []
    for i, c in enumerate(raw):
        c = check_table(f"{path}[{i}]", c,
                        allowed={"epsilon", "delta", "id", "source", "kind", "relation", "rho", "rdp"},
                        prefix=CONFIG)
        forms = [key for key in ("epsilon", "rho", "rdp") if key in c]
        if not forms:
            _fail(f"{path}[{i}].epsilon", None, "is required (or rho = ... for a zCDP claim, rdp = [[alpha, eps], "
                  "...] for an RDP one)")
        if len(forms) != 1:
            _fail(f"{path}[{i}]", c, "give exactly one of epsilon (with delta), rho (zCDP) or rdp "
                  "([[alpha, eps], ...], an RDP curve)")
        stated = c.get("relation", relation)
        if stated != relation:
            _fail(f"{path}[{i}].relation", stated, f"the scenario's pair is {relation}: a claim stated for "
                  f"{stated} neighbours does not cover it (set relation = {relation!r} if the claim covers "
                  f"{relation} neighbours)")
        for key in ("id", "source", "kind"):
            if key in c and (not isinstance(c[key], str) or not c[key]):
                _fail(f"{path}[{i}].{key}", c[key], "must be a non-empty string")
        if forms != ["epsilon"]:
            out += _renyi_claim(c, f"{path}[{i}]", relation)
            continue
        try:
            out.append(Guarantee(epsilon=check_number(f"{path}[{i}].epsilon", c["epsilon"], low=0.0, high=math.inf,
                                                      high_open=True, prefix=CONFIG),
                                 delta=check_number(f"{path}[{i}].delta", c.get("delta", 0.0), low=0.0, high=1.0,
                                                    high_open=True, prefix=CONFIG),
                                 relation=relation, source=c.get("source", "config"),
                                 claim_id=c.get("id", "user/claim"), kind=c.get("kind", "printed")))
        except InputError as exc:
            if str(exc).startswith("config:"):
                raise
            raise InputError(f"config: {path}[{i}]: {exc}") from None
    return out


def _renyi_claim(c: dict[str, Any], path: str, relation: Relation | str) -> list[Guarantee]:
    """A ``rho = 0.125`` (zCDP) or ``rdp = [[2, 0.5], [4, 1.2]]`` (RDP) claim: its (ε, δ) curve's points."""
    for key in ("delta", "kind"):
        if key in c:
            _fail(f"{path}.{key}", c[key], "a zCDP or RDP claim is a curve: it takes no delta or kind")
    common = {"relation": str(relation), "source": c.get("source", "config")}
    try:
        if "rho" in c:
            rho = check_number(f"{path}.rho", c["rho"], low=0.0, high=math.inf, high_open=True, prefix=CONFIG)
            return list(ZCDP(rho, claim_id=c.get("id", "user/zcdp"), **common).guarantees())
        pairs = c["rdp"]
        if not isinstance(pairs, list) or not pairs or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            _fail(f"{path}.rdp", pairs, "must be an array of [alpha, eps] pairs, e.g. [[2, 0.5], [4, 1.2]]")
        return list(RDP(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), claim_id=c.get("id", "user/rdp"),
                        **common).guarantees())
    except InputError as exc:
        if str(exc).startswith("config:"):
            raise
        raise InputError(f"config: {path}: {exc}") from None


def _read(path: Path) -> dict[str, Any]:
    """The TOML document at ``path``: UTF-8 text (a byte-order mark allowed), parsed, nesting bounded."""
    raw = read_regular(path, "config")
    if b"\x00" in raw:
        utf16 = raw[:2] in (b"\xff\xfe", b"\xfe\xff")
        raise InputError(f"config {path}: " + ("is UTF-16 text: save it as UTF-8" if utf16 else
                                              "is a binary file, not a TOML text file"))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"config {path}: is not UTF-8 text ({exc.reason} at byte {exc.start}): save it as "
                         "UTF-8") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"config {path}: not valid TOML ({exc})") from None
    except RecursionError:
        raise InputError(f"config {path}: not valid TOML (values nested too deeply)") from None
    _depth(document, "")
    return document


def load(path: str | Path, allow_plugins: Sequence[str] = ()) -> Plan:
    """Read and validate a config file; ``allow_plugins`` are the plugin modules (and their
    submodules) the command line allows it to name."""
    path = Path(path)
    raw = _read(path)
    top = check_table("", raw, allowed={"run", "scenario"}, required={"scenario"}, prefix=CONFIG)
    settings = _settings(top.get("run", {}))
    if not isinstance(top["scenario"], list) or not top["scenario"]:
        _fail("scenario", top["scenario"], "must be one or more [[scenario]] tables")
    scenarios, claims, names, designs = [], [], set(), []
    searches: list[Space | None] = []
    for i, sc in enumerate(top["scenario"]):
        p = f"scenario[{i}]"
        if isinstance(sc, Mapping) and "canaries" in sc:  # a one-run (canary) scenario: dpaudit.runs.onerun
            design = load_onerun_scenario(sc, p, allow_plugins, path.parent)
            if design.name in names:
                _fail(f"{p}.name", design.name, "must be a unique non-empty string")
            names.add(design.name)
            designs.append(design)
            continue
        searching = isinstance(sc, Mapping) and "search" in sc
        required = {"name", "mechanism"} | (set() if searching else {"data", "neighbour"})
        sc = check_table(p, sc, allowed=SCENARIO_KEYS, required=required, prefix=CONFIG)
        name = sc["name"]
        if not isinstance(name, str) or not name or name in names:
            _fail(f"{p}.name", name, "must be a unique non-empty string")
        if "about" in sc and not isinstance(sc["about"], str):
            _fail(f"{p}.about", sc["about"], "must be a string")
        names.add(name)
        relation = sc.get("relation", "add-remove")
        if relation not in RELATIONS:
            _fail(f"{p}.relation", relation, f"must be one of {', '.join(RELATIONS)}")
        if searching and "neighbour" in sc:
            _fail(f"{p}.search", sc["search"], "a scenario searches for its pair or names it: drop search or "
                  "[scenario.neighbour]")
        mechanism = load_mechanism(sc["mechanism"], check_table(f"{p}.params", sc.get("params", {}),
                                                                prefix=CONFIG), p, allow_plugins)
        base = _data(sc["data"], f"{p}.data", path.parent) if "data" in sc else None
        expected = check_table(f"{p}.expected", sc.get("expected", {}), prefix=CONFIG)
        for cid, verdict in expected.items():
            if verdict not in EXPECTATIONS:
                _fail(f"{p}.expected.{cid}", verdict, f"must be one of {', '.join(EXPECTATIONS)}")
        factor = check_number(f"{p}.samples_factor", sc.get("samples_factor", 1), low=1e-3, high=1e4, high_open=True,
                              prefix=CONFIG)
        about = str(sc.get("about", ""))
        if "search" in sc:
            try:
                space = space_from_spec(sc["search"], relation, base, f"{p}.search")
            except InputError as exc:
                raise InputError(f"config: {exc}") from None
            scenarios.append(search_scenario(name, mechanism, space, relation, expected=expected,
                                             samples_factor=factor, about=about))
            searches.append(space)
        else:
            assert base is not None  # a [scenario.neighbour] needs [scenario.data], checked above
            pair = _pair(sc["neighbour"], f"{p}.neighbour", base, mechanism, relation)
            scenarios.append(Scenario(name, mechanism, pair, expected=expected, samples_factor=factor, about=about))
            searches.append(None)
        claims.append(_claims(sc.get("claim"), f"{p}.claim", relation))
    return Plan(settings, scenarios, claims, source={"config": str(path), **raw},
                searches=searches if any(s is not None for s in searches) else [], onerun=designs)
