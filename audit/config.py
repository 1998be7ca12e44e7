"""Audit configs: TOML files that describe a run and its scenarios (data, never code).

    [run]                        # every key optional
    samples = 1000000            # per side and scenario
    seed = 0
    confidence = 0.95
    deltas = [0.0]
    jobs = -1                    # workers, -1 for all cores (the default)
    backend = "local"            # local | dask
    scheduler = "tcp://host:8786"  # dask only; without it a local cluster is started
    events = "auto"              # auto | rows | threshold | histogram
    sequential = false

    [[scenario]]
    name = "rlhf-label"
    mechanism = "kl-rlhf"        # a built-in name (python -m audit list) or pkg.module:attr
    params = { features = [[1.0], [-1.0]], ridge = 1.0, beta0 = 0.01, eta = 0.1 }
    relation = "label-flip"      # add-remove | swap | label-flip | zero-out | user-level
    expected = { "kl-rlhf/thm3-label" = "violation" }
    samples_factor = 1

    [scenario.data]              # exactly one of: generator (+ args), file, columns
    generator = "comparisons"
    args = { z = [[2.0], [2.0]], labels = [1, 0] }

    [scenario.neighbour]         # exactly one of: remove, add, replace, flip, search
    flip = 0

    [[scenario.claim]]           # optional: claims to check instead of the mechanism's own
    epsilon = 1.0
    delta = 0.0
    id = "user/claim"
    relation = "label-flip"      # optional; must be the scenario's relation (an input error otherwise)

Every unknown key, wrong type or out-of-range value stops with a message naming its key
path (``scenario[1].data.generator``), the value and what is allowed.  Data files are
``.npz`` (named arrays) or ``.csv`` (a header of column names), relative to the config's
folder and never outside it.
"""

from __future__ import annotations

import csv
import importlib
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from audit import catalog
from audit.catalog import Scenario
from audit.exact import epsilon_for_delta
from dpcore import EXPECTATIONS, RELATIONS, Guarantee, InputError
from neighbors import Dataset, Pair, neighbours
from neighbors.search import worst_pair

RUN_KEYS = {"samples", "seed", "confidence", "deltas", "jobs", "backend", "scheduler", "events", "sequential"}
SCENARIO_KEYS = {"name", "mechanism", "params", "relation", "expected", "samples_factor", "about", "data",
                 "neighbour", "claim"}


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


def _fail(path: str, value: Any, allowed: str) -> None:
    raise InputError(f"config: {path} = {value!r} is invalid: {allowed}")


def _table(value: Any, path: str, allowed: set[str], required: set[str] = frozenset()) -> dict:
    if not isinstance(value, Mapping):
        _fail(path, value, "must be a table")
    for key in value:
        if key not in allowed:
            _fail(f"{path}.{key}" if path else key, value[key], f"unknown key; allowed: {', '.join(sorted(allowed))}")
    for key in required:
        if key not in value:
            _fail(f"{path}.{key}" if path else key, None, "is required")
    return dict(value)


def _int(value: Any, path: str, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        _fail(path, value, f"must be an integer >= {minimum}")
    return value


def _number(value: Any, path: str, low: float, high: float, high_open: bool = True) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < low or (value >= high if high_open else value > high):
        _fail(path, value, f"must be a number in [{low}, {high}{')' if high_open else ']'}")
    return float(value)


def _settings(raw: Any) -> RunSettings:
    run = _table(raw, "run", RUN_KEYS)
    s = RunSettings()
    out = {}
    if "samples" in run:
        out["samples"] = _int(run["samples"], "run.samples", 100)
    if "seed" in run:
        out["seed"] = _int(run["seed"], "run.seed", 0)
    if "confidence" in run:
        out["confidence"] = _number(run["confidence"], "run.confidence", 0.5, 1.0)
    if "deltas" in run:
        if not isinstance(run["deltas"], list) or not run["deltas"]:
            _fail("run.deltas", run["deltas"], "must be a non-empty array of numbers in [0, 1)")
        out["deltas"] = tuple(_number(d, f"run.deltas[{i}]", 0.0, 1.0) for i, d in enumerate(run["deltas"]))
    if "jobs" in run:
        jobs = run["jobs"]
        if jobs != -1:
            _int(jobs, "run.jobs", 1)
        out["jobs"] = jobs
    if "backend" in run:
        if run["backend"] not in ("local", "dask"):
            _fail("run.backend", run["backend"], "must be 'local' or 'dask'")
        out["backend"] = run["backend"]
    if "scheduler" in run:
        if not isinstance(run["scheduler"], str) or not run["scheduler"].startswith(("tcp://", "tls://", "inproc://")):
            _fail("run.scheduler", run["scheduler"], "must be an address such as tcp://host:8786")
        out["scheduler"] = run["scheduler"]
    if "events" in run:
        if run["events"] not in ("auto", "rows", "threshold", "histogram"):
            _fail("run.events", run["events"], "must be auto, rows, threshold or histogram")
        out["events"] = run["events"]
    if "sequential" in run:
        if not isinstance(run["sequential"], bool):
            _fail("run.sequential", run["sequential"], "must be true or false")
        out["sequential"] = run["sequential"]
    return RunSettings(**{**s.__dict__, **out})


def load_mechanism(spec: str, params: dict, path: str) -> Any:
    """A built-in mechanism (any family of :mod:`audit.catalog`) built from ``params``, or the
    object at ``pkg.module:attr``."""
    if ":" not in spec:
        try:
            return catalog.build_mechanism(spec, params, f"{path}.mechanism", f"{path}.params")
        except InputError as exc:
            raise InputError(f"config: {exc}") from None
    if params:
        _fail(f"{path}.params", params, "params apply to built-in mechanisms only")
    module_name, _, attr = spec.partition(":")
    try:
        obj = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except InputError:
        raise
    except Exception as exc:
        _fail(f"{path}.mechanism", spec, f"cannot be loaded ({type(exc).__name__}: {exc})")
    if not callable(getattr(obj, "sample", None)):
        _fail(f"{path}.mechanism", spec, "has no sample(data, size, rng) method")
    return obj


def _inside(folder: Path, name: Any, path: str) -> Path:
    if not isinstance(name, str) or not name:
        _fail(path, name, "must be a file name relative to the config's folder")
    target = (folder / name).resolve()
    if Path(name).is_absolute() or not target.is_relative_to(folder.resolve()):
        _fail(path, name, f"reaches outside the config's folder {folder}; data files must live inside it")
    if target.suffix not in (".npz", ".csv"):
        _fail(path, name, "must be an .npz or .csv file")
    if not target.is_file():
        _fail(path, name, "does not exist")
    return target


def load_columns(target: Path, path: str) -> Dataset:
    """A dataset from an .npz (named arrays) or .csv (header of column names) file."""
    try:
        if target.suffix == ".npz":
            with np.load(target, allow_pickle=False) as npz:
                return Dataset({k: npz[k] for k in npz.files})
        with open(target, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except InputError as exc:
        raise InputError(f"config: {path}: {exc}") from None
    except (OSError, ValueError) as exc:
        _fail(path, str(target.name), f"cannot be read ({exc})")
    if not rows:
        _fail(path, target.name, "is empty: a header row of column names is required")
    header, body = rows[0], rows[1:]
    columns: dict[str, list] = {h: [] for h in header}
    for line, row in enumerate(body, start=2):
        if len(row) != len(header):
            _fail(path, target.name, f"line {line} has {len(row)} fields, the header has {len(header)}")
        for h, cell in zip(header, row, strict=True):
            try:
                columns[h].append(int(cell) if cell.strip().lstrip("-").isdigit() else float(cell))
            except ValueError:
                _fail(path, target.name, f"line {line}, column {h!r}: {cell!r} is not a number")
    try:
        return Dataset(columns)
    except InputError as exc:
        raise InputError(f"config: {path}: {exc}") from None


def _data(raw: Any, path: str, folder: Path) -> Dataset:
    data = _table(raw, path, {"generator", "args", "file", "columns"})
    given = [k for k in ("generator", "file", "columns") if k in data]
    if len(given) != 1:
        _fail(path, raw, "needs exactly one of generator, file, columns")
    try:
        if "file" in data:
            return load_columns(_inside(folder, data["file"], f"{path}.file"), f"{path}.file")
        if "columns" in data:
            _table(data["columns"], f"{path}.columns", set(data["columns"]))
            return Dataset({k: np.asarray(v) for k, v in data["columns"].items()})
        name, known = data["generator"], catalog.generators()
        if name not in known:
            _fail(f"{path}.generator", name,
                  f"must be one of {', '.join(known)}{catalog.suggest(str(name), list(known))}")
        args = _table(data.get("args", {}), f"{path}.args", set(data.get("args", {})))
        try:
            return known[name](**args)
        except TypeError as exc:
            _fail(f"{path}.args", args, f"{name} does not take these arguments ({exc})")
    except InputError as exc:
        if str(exc).startswith("config:"):
            raise
        raise InputError(f"config: {path}: {exc}") from None


def _pair(raw: Any, path: str, base: Dataset, mechanism: Any, relation: str) -> Pair:
    nb = _table(raw, path, {"remove", "add", "replace", "flip", "search"})
    if len(nb) != 1:
        _fail(path, raw, "needs exactly one of remove, add, replace, flip, search")
    (kind, value), = nb.items()
    try:
        if kind == "remove":
            return Pair(base, base.remove(_int(value, f"{path}.remove", 0)), f"remove record {value}", relation)
        if kind == "add":
            record = _table(value, f"{path}.add", set(base.columns), set(base.columns))
            return Pair(base, base.add(record), f"add record {record}", relation)
        if kind == "replace":
            spec = _table(value, f"{path}.replace", {"index", "record"}, {"index", "record"})
            record = _table(spec["record"], f"{path}.replace.record", set(base.columns), set(base.columns))
            i = _int(spec["index"], f"{path}.replace.index", 0)
            return Pair(base, base.replace(i, record), f"replace record {i} by {record}", relation)
        if kind == "flip":
            i = _int(value, f"{path}.flip", 0)
            return Pair(base, base.flip(i), f"flip the label of record {i}", relation)
        spec = _table(value, f"{path}.search", {"candidates", "delta"})
        cands = spec.get("candidates", [])
        if not isinstance(cands, list):
            _fail(f"{path}.search.candidates", cands, "must be an array of records")
        delta = _number(spec.get("delta", 0.0), f"{path}.search.delta", 0.0, 1.0)
        return worst_pair(mechanism, neighbours(relation, base, cands),
                          lambda p, q: epsilon_for_delta(p, q, delta)).pair
    except InputError as exc:
        if str(exc).startswith("config:"):
            raise
        raise InputError(f"config: {path}.{kind}: {exc}") from None


def _claims(raw: Any, path: str, relation: str) -> list[Guarantee] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        _fail(path, raw, "must be an array of tables ([[scenario.claim]])")
    out = []
    for i, c in enumerate(raw):
        c = _table(c, f"{path}[{i}]", {"epsilon", "delta", "id", "source", "kind", "relation"}, {"epsilon"})
        stated = c.get("relation", relation)
        if stated != relation:
            _fail(f"{path}[{i}].relation", stated, f"the scenario's pair is {relation}: a claim stated for "
                  f"{stated} neighbours does not cover it (set relation = {relation!r} if the claim covers "
                  f"{relation} neighbours)")
        out.append(Guarantee(epsilon=_number(c["epsilon"], f"{path}[{i}].epsilon", 0.0, math.inf),
                             delta=_number(c.get("delta", 0.0), f"{path}[{i}].delta", 0.0, 1.0), relation=relation,
                             source=str(c.get("source", "config")), claim_id=str(c.get("id", "user/claim")),
                             kind=str(c.get("kind", "printed"))))
    return out


def load(path: str | Path) -> Plan:
    """Read and validate a config file."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"config {path}: cannot be read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"config {path}: not valid TOML ({exc})") from None
    top = _table(raw, "", {"run", "scenario"}, {"scenario"})
    settings = _settings(top.get("run", {}))
    if not isinstance(top["scenario"], list) or not top["scenario"]:
        _fail("scenario", top["scenario"], "must be one or more [[scenario]] tables")
    scenarios, claims, names = [], [], set()
    for i, sc in enumerate(top["scenario"]):
        p = f"scenario[{i}]"
        sc = _table(sc, p, SCENARIO_KEYS, {"name", "mechanism", "data", "neighbour"})
        name = sc["name"]
        if not isinstance(name, str) or not name or name in names:
            _fail(f"{p}.name", name, "must be a unique non-empty string")
        names.add(name)
        relation = sc.get("relation", "add-remove")
        if relation not in RELATIONS:
            _fail(f"{p}.relation", relation, f"must be one of {', '.join(RELATIONS)}")
        mechanism = load_mechanism(sc["mechanism"], _table(sc.get("params", {}), f"{p}.params",
                                                           set(sc.get("params", {}))), p)
        base = _data(sc["data"], f"{p}.data", path.parent)
        pair = _pair(sc["neighbour"], f"{p}.neighbour", base, mechanism, relation)
        expected = _table(sc.get("expected", {}), f"{p}.expected", set(sc.get("expected", {})))
        for cid, verdict in expected.items():
            if verdict not in EXPECTATIONS:
                _fail(f"{p}.expected.{cid}", verdict, f"must be one of {', '.join(EXPECTATIONS)}")
        factor = _number(sc.get("samples_factor", 1), f"{p}.samples_factor", 1e-3, 1e4)
        scenarios.append(Scenario(name, mechanism, pair, expected, factor, str(sc.get("about", ""))))
        claims.append(_claims(sc.get("claim"), f"{p}.claim", relation))
    return Plan(settings, scenarios, claims, source={"config": str(path), **raw})
