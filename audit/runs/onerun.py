"""One-run (canary) scenarios of a run: auditing one, and reading one from a config.

A config scenario is one-run when it has ``canaries``::

    [[scenario]]
    name = "my-training"
    mechanism = "pkg.module:attr"   # run(dataset, rng), sample(dataset, size, rng) or f(dataset, rng)
    params = { lr = 0.1 }           # optional: a class (or builder function) is called with them
    scorer = "pkg.module:attr"      # score(output, canaries) or f(output, canaries): one float per canary
    canaries = 1000                 # m canaries per training run: the integers 0..m-1 (user-level: users [j])
    # canaries = { file = "canaries.npy", key = "x", m = 500 }   or rows of a file: dpaudit.runs.onerun_data
    base = { file = "base.npy" }    # optional: the training data the canaries are added to (.npy, .npz, .csv)
    runs = 1                        # training runs; R runs of m canaries are one game of R·m
    relation = "add-remove"         # add-remove | user-level
    rule = { kind = "fixed", k_plus = 50, k_minus = 50 }
    #      { kind = "grid", pairs = [[10, 10], [50, 50]] }           Bonferroni over the pairs
    #      { kind = "split", select = 0.5, fractions = [0.05, 0.1], seed = 0 }
    deltas = [1e-5]                 # optional: the δs of the (ε, δ) bound (default: the claims' δs, else 1e-5)
    expected = { "user/claim" = "pass", "user/gdp" = "pass" }

    [[scenario.claim]]              # an (ε, δ) claim ...
    epsilon = 4.0
    delta = 1e-5
    id = "user/claim"
    [[scenario.claim]]              # ... or a μ-GDP curve claim
    gdp_mu = 1.0
    id = "user/gdp"

The dataset a training run gets is the base data with the included canaries appended, as
:func:`dpaudit.onerun.audit_one_run` builds it from the same arrays (the game keeps the secret from
the scorer); the seed is the run's ``[run] seed`` (the mechanism's randomness: the secret comes from
fresh entropy, never from it) and the confidence its ``[run] confidence``.  A one-run bound assumes
the scorer does not read the secret.  ``--resume`` takes a game an earlier attempt finished from its
``results.json`` (stored scores, secret and tie-break seed, re-checked), never replays it under a new
secret or a new tie-break.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.catalog.onerun import OneRunScenario, run_design, strongest_family_rejection
from dpaudit.core import EXPECTATIONS, Claim, Guarantee, InputError, Relation, check_integer, check_number, check_table
from dpaudit.engine.runner import MechanismError
from dpaudit.onerun.api import audit_one_run
from dpaudit.onerun.bound import WORST_CASE, bound_record, is_balanced
from dpaudit.onerun.curves import CurveClaim, gdp
from dpaudit.onerun.design import CanaryDesign
from dpaudit.onerun.game import FRESH, SUPPLIED, check_game_size, restored_game, secret_sha256, unpack_secret
from dpaudit.onerun.progress import TrainingProgress, reporting
from dpaudit.onerun.result import OneRunResult, read_tiebreak
from dpaudit.onerun.rules import Fixed, Grid, Split
from dpaudit.results.saved import load_results
from dpaudit.runs.datafiles import CONFIG, fail
from dpaudit.runs.onerun_data import check_joinable, read_base, read_canaries
from dpaudit.runs.plugins import build_plugin, load_plugin
from dpaudit.runtime.interrupts import USER_INTERRUPT

__all__ = ["ONERUN_KEYS", "load_onerun_scenario", "onerun_scenario", "saved_games"]

ONERUN_KEYS = {"name", "mechanism", "params", "scorer", "canaries", "base", "runs", "relation", "rule", "deltas",
               "expected", "about", "claim"}
RELATIONS = ("add-remove", "user-level")
RULE_KEYS = {"fixed": {"kind", "k_plus", "k_minus"}, "grid": {"kind", "pairs"},
             "split": {"kind", "select", "fractions", "seed"}}
MAX_CANARIES = 10_000_000


def _builtin(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] in ("dpaudit", "audit", "mechanisms")


def saved_games(folder: Path, fingerprint: str) -> dict[str, dict[str, Any]]:
    """The one-run scenarios an earlier attempt of this run (same fingerprint) saved in ``folder``'s
    ``results.json``, by name: a resume takes their games as they were played (the stored scores and
    secret), never replays them with a new secret.  The file is read and re-checked as ``summary``
    reads it (:func:`dpaudit.results.saved.load_results`): a tampered game is refused."""
    path = folder / "results.json"
    if not path.is_file():
        return {}
    payload = load_results(path)
    if payload.get("fingerprint") != fingerprint:
        return {}
    return {sc["scenario"]: sc for sc in payload["scenarios"] if sc.get("kind") == "one-run"}


def _resumed(design: CanaryDesign, entry: dict[str, Any], *, seed: int, confidence: float,
             registry: Mapping[str, Claim]) -> OneRunScenario:
    """The scenario of a game played before the resume: bounded again from its stored scores and
    secret (whose hash ``entry`` holds) under the design's rule and claims, tied scores ranked by its
    stored tie-break seed (never a new one: a resume must not redraw it; none stored: worst-case)."""
    m = int(entry["m"])
    secret = unpack_secret(entry["secret_bits"], m) if "secret_bits" in entry else np.asarray(entry["secret"])
    if secret_sha256(secret) != entry["secret_sha256"] or int(entry["seed"]) != seed:
        raise InputError(f"scenario {design.name!r}: the saved game's secret or seed is not this run's: refusing to "
                         "resume it; start a new run")
    tiebreak = read_tiebreak(entry.get("tiebreak"))
    runs = int(getattr(design, "runs", 1))
    # a restored game is bounded as a caller's (balanced rules only): a file cannot prove who drew its secret
    game = restored_game(scores=np.asarray(entry["scores"], dtype=float), secret=secret, canaries_per_run=m // runs,
                         runs=runs, seed=seed, relation=design.relation,
                         secret_source=FRESH if entry.get("secret_source") == FRESH else SUPPLIED)
    if design.rule is not None and not is_balanced(design.rule):
        raise InputError(f"scenario {design.name!r}: its rule {design.rule!r} has k_plus != k_minus, and a game "
                         "read back from results.json is bounded as a caller's secret (balanced rules only: a file "
                         "cannot prove dpaudit drew it); run it again without --resume")
    result = bound_record(game, rule=design.rule, deltas=design.deltas, confidence=confidence, claims=design.claims,
                          relation=design.neighbours or design.relation,
                          tiebreak=WORST_CASE if tiebreak is None else tiebreak)
    result = design.with_isolated(dataclasses.replace(result, secret_source=entry.get("secret_source")))
    return OneRunScenario(design, result, float(entry["seconds"]), str(entry["mechanism"]), registry,
                          strongest_family_rejection(design, result))


def onerun_scenario(design: CanaryDesign, *, seed: int, confidence: float, registry: Mapping[str, Claim],
                    saved: dict[str, Any] | None = None, progress: bool = False) -> OneRunScenario:
    """One training run of ``design`` (``saved``: its entry of the run's results.json when a resumed
    run played it before: bounded again from the stored game, not replayed; ``progress``: a line per
    training run, or every 5 s, on stderr: :class:`dpaudit.onerun.progress.TrainingProgress`).  A bad
    input names the scenario (exit 2); a user's mechanism or scorer that raises is the user's (exit
    2), one of dpaudit's own designs that raises is ours (exit 3)."""
    try:
        if saved is not None:
            return _resumed(design, saved, seed=seed, confidence=confidence, registry=registry)
        if not progress:
            return run_design(design, seed=seed, confidence=confidence, registry=registry)
        with TrainingProgress(f"one-run {design.name}") as reporter, reporting(reporter):
            return run_design(design, seed=seed, confidence=confidence, registry=registry)
    except InputError as exc:
        raise InputError(f"scenario {design.name!r}: {exc}") from None
    except KeyboardInterrupt:  # the user's Ctrl-C goes on (a partial result); the code's own is bad input
        if USER_INTERRUPT.is_set():
            raise
        raise InputError(f"scenario {design.name!r}: the mechanism or scorer raised KeyboardInterrupt") from None
    except SystemExit as exc:  # dpaudit.onerun.game names the function; this catches what runs around it
        raise InputError(f"scenario {design.name!r}: the mechanism or scorer raised SystemExit({exc.code!r}): "
                         "it must return, not end the process") from None
    except Exception as exc:
        if _builtin(design.mechanism):
            raise
        raise MechanismError(f"scenario {design.name!r}: the mechanism or scorer raised {type(exc).__name__}: "
                             f"{exc}") from None


def _rule(raw: Any, path: str, m: int) -> Fixed | Grid | Split:
    if not isinstance(raw, Mapping) or raw.get("kind") not in RULE_KEYS:
        kind = raw.get("kind") if isinstance(raw, Mapping) else raw
        fail(f"{path}.kind" if isinstance(raw, Mapping) else path, kind,
             "must be fixed, grid or split (rule = {kind = \"fixed\", k_plus = K, k_minus = K})")
    spec = check_table(path, raw, allowed=RULE_KEYS[raw["kind"]], prefix=CONFIG)
    if spec["kind"] == "fixed":
        for key in ("k_plus", "k_minus"):
            if key not in spec:
                fail(f"{path}.{key}", None, "is required (guesses fixed in advance)")
        kp, km = (check_integer(f"{path}.{key}", spec[key], low=0, high=m, prefix=CONFIG)
                  for key in ("k_plus", "k_minus"))
        if not 1 <= kp + km <= m:
            fail(f"{path}.k_plus", kp, f"k_plus + k_minus must be in [1, canaries = {m}]")
        return Fixed(kp, km)
    if spec["kind"] == "grid":
        pairs = spec.get("pairs")
        if not isinstance(pairs, list) or not pairs:
            fail(f"{path}.pairs", pairs, "is required: a non-empty array of [k_plus, k_minus]")
        assert isinstance(pairs, list)
        out = []
        for i, pair in enumerate(pairs):
            if not isinstance(pair, list) or len(pair) != 2:
                fail(f"{path}.pairs[{i}]", pair, "must be [k_plus, k_minus]")
            kp, km = (check_integer(f"{path}.pairs[{i}]", k, low=0, high=m, prefix=CONFIG) for k in pair)
            if not 1 <= kp + km <= m:
                fail(f"{path}.pairs[{i}]", pair, f"k_plus + k_minus must be in [1, canaries = {m}]")
            out.append((kp, km))
        return Grid(tuple(out))
    select = check_number(f"{path}.select", spec.get("select", 0.5), low=1e-9, high=1 - 1e-9,
                          allowed="must be a number in (0, 1)", prefix=CONFIG)
    fractions = spec.get("fractions", list(Split.fractions))
    if not isinstance(fractions, list) or not fractions:
        fail(f"{path}.fractions", fractions, "must be a non-empty array of fractions in (0, 0.5]")
    fr = tuple(check_number(f"{path}.fractions[{i}]", f, low=1e-12, high=0.5, allowed="must be a number in (0, 0.5]",
                            prefix=CONFIG)
               for i, f in enumerate(fractions))
    seed = check_integer(f"{path}.seed", spec.get("seed", 0), low=0, high=2**62, prefix=CONFIG)
    rule = Split(select=select, fractions=fr, seed=seed)
    n_sel = round(select * m)
    if not 1 <= n_sel <= m - 2:
        fail(f"{path}.select", select, f"leaves an empty part with canaries = {m}")
    return rule


def _claims(raw: Any, path: str, relation: str) -> list[Guarantee | CurveClaim]:
    if raw is None:
        fail(path, raw, "a one-run scenario needs at least one [[scenario.claim]]")
    if not isinstance(raw, list) or not raw:
        fail(path, raw, "must be an array of tables ([[scenario.claim]]) with at least one claim")
    out: list[Guarantee | CurveClaim] = []
    ids: set[str] = set()
    for i, c in enumerate(raw):
        p = f"{path}[{i}]"
        c = check_table(p, c, allowed={"epsilon", "delta", "gdp_mu", "id", "source", "relation"}, prefix=CONFIG)
        if ("epsilon" in c) == ("gdp_mu" in c):
            fail(p, c, "needs exactly one of epsilon (an (epsilon, delta) claim) or gdp_mu (a mu-GDP curve claim)")
        for key in ("id", "source"):
            if key in c and (not isinstance(c[key], str) or not c[key]):
                fail(f"{p}.{key}", c[key], "must be a non-empty string")
        cid = c.get("id", "user/claim" if "epsilon" in c else "user/gdp")
        if cid in ids:
            fail(f"{p}.id", cid, "must be unique within the scenario (give each claim its own id)")
        ids.add(cid)
        if c.get("relation", relation) != relation:
            fail(f"{p}.relation", c["relation"], f"the scenario's canaries are {relation}: a claim stated for "
                 f"{c['relation']} neighbours does not cover them")
        source = c.get("source", "config")
        if "gdp_mu" in c:
            if "delta" in c:
                fail(f"{p}.delta", c["delta"], "a gdp_mu curve claim has no delta (drop it)")
            mu = check_number(f"{p}.gdp_mu", c["gdp_mu"], low=0.0, high=1e3, allowed="must be a number in [0, 1000]",
                              prefix=CONFIG)
            out.append(gdp(mu, claim_id=cid, source=source))
        else:
            eps = check_number(f"{p}.epsilon", c["epsilon"], low=0.0, high=1e3,
                               allowed="must be a number in [0, 1000]", prefix=CONFIG)
            delta = check_number(f"{p}.delta", c.get("delta", 0.0), low=0.0, high=1.0 - 1e-12,
                                 allowed="must be a number in [0, 1)", prefix=CONFIG)
            out.append(Guarantee(epsilon=eps, delta=delta, relation=relation, source=source, claim_id=cid))
    return out


def _plugin(spec: Any, path: str, allow_plugins: Sequence[str], what: str) -> Any:
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.partition(":")[::2]):
        fail(path, spec, f"must be pkg.module:attr, the {what} of a plugin module the command line allows")
    return load_plugin(spec, path, allow_plugins, "a config is data: ")


def _mechanism(spec: Any, params: dict[str, Any], p: str, allow_plugins: Sequence[str]) -> Any:
    if isinstance(spec, str) and ":" not in spec:
        fail(f"{p}.mechanism", spec, "a one-run scenario trains a plugin mechanism: give pkg.module:attr with "
             "run(dataset, rng) or sample(dataset, size, rng) (the catalog's designs run with --suite onerun)")
    obj = _plugin(spec, f"{p}.mechanism", allow_plugins, "mechanism")
    if isinstance(obj, types.FunctionType) and not params:
        return obj  # f(dataset, rng): the mechanism itself
    mech = build_plugin(obj, params, p, str(spec)) if isinstance(obj, type) or params else obj
    if not (callable(getattr(mech, "run", None)) or callable(getattr(mech, "sample", None)) or callable(mech)):
        fail(f"{p}.mechanism", spec, "has no run(dataset, rng) or sample(dataset, size, rng) and is not callable")
    return mech


def _user_code_failed(exc: BaseException) -> None:
    """Re-raise the user's own Ctrl-C (the application's handler set it); anything else a user's code
    raised, ``SystemExit`` and ``KeyboardInterrupt`` included, is reported by the caller."""
    if isinstance(exc, KeyboardInterrupt) and USER_INTERRUPT.is_set():
        raise exc


def _check_name(mech: Any, spec: Any, p: str) -> None:
    """Read the mechanism's ``name`` once, here: a property that raises (``sys.exit`` included) is the
    config's bad input, named, before the run reads it for its identity and records."""
    try:
        name = getattr(mech, "name", None)
    except BaseException as exc:  # a property may do anything
        _user_code_failed(exc)
        what = f"SystemExit({exc.code!r})" if isinstance(exc, SystemExit) else f"{type(exc).__name__}: {exc}"
        fail(f"{p}.mechanism", spec, f"the name property of {type(mech).__module__}.{type(mech).__qualname__} "
             f"raised {what}")
    if name is not None and (not isinstance(name, str) or not name):
        fail(f"{p}.mechanism", spec, f"its name is {name!r}: a mechanism's name must be a non-empty string")


def _scorer(spec: Any, p: str, allow_plugins: Sequence[str]) -> Any:
    obj = _plugin(spec, f"{p}.scorer", allow_plugins, "scorer")
    if isinstance(obj, type):
        try:
            obj = obj()
        except BaseException as exc:  # SystemExit and KeyboardInterrupt of the user's code too
            _user_code_failed(exc)
            fail(f"{p}.scorer", spec, f"a scorer class is built without arguments: it raised "
                 f"{type(exc).__name__}: {exc}")
    if not (callable(getattr(obj, "score", None)) or callable(obj)):
        fail(f"{p}.scorer", spec, "has no score(output, canaries) and is not callable")
    return obj


def load_onerun_scenario(sc: Mapping[str, Any], p: str, allow_plugins: Sequence[str],
                         folder: Path = Path()) -> CanaryDesign:
    """A config's one-run scenario (its table ``sc`` at key path ``p``; ``folder``: the config's, where
    its data files are), every key validated."""
    sc = check_table(p, sc, allowed=ONERUN_KEYS, prefix=CONFIG)
    for key in ("name", "mechanism", "scorer", "canaries"):
        if key not in sc:
            fail(f"{p}.{key}", None, "is required in a one-run scenario")
    if not isinstance(sc["name"], str) or not sc["name"]:
        fail(f"{p}.name", sc["name"], "must be a unique non-empty string")
    if "about" in sc and not isinstance(sc["about"], str):
        fail(f"{p}.about", sc["about"], "must be a string")
    runs = check_integer(f"{p}.runs", sc.get("runs", 1), low=1, high=100_000, prefix=CONFIG)
    relation = sc.get("relation", "add-remove")
    if relation not in RELATIONS:
        fail(f"{p}.relation", relation, f"a one-run scenario's canaries are added or removed: must be one of "
             f"{', '.join(RELATIONS)}")
    user_level = relation == Relation.USER_LEVEL
    canaries = read_canaries(sc["canaries"], f"{p}.canaries", folder, runs=runs, max_m=MAX_CANARIES,
                             user_level=user_level)
    m = canaries.m
    check_game_size(m, runs, f"config: {p}.canaries x {p}.runs")  # before the plugins are built or trained
    base = read_base(sc["base"], f"{p}.base", folder, user_level) if "base" in sc else None
    if base is not None:
        check_joinable(canaries, base, f"{p}.canaries")
    if "rule" not in sc:
        fail(f"{p}.rule", None, "is required: the guessing rule fixed in advance, e.g. {kind = \"fixed\", "
             "k_plus = 50, k_minus = 50}")
    rule = _rule(sc["rule"], f"{p}.rule", m * runs)
    claims = _claims(sc.get("claim"), f"{p}.claim", relation)
    params = sc.get("params", {})
    if not isinstance(params, Mapping):
        fail(f"{p}.params", params, "must be a table")
    try:
        mechanism = _mechanism(sc["mechanism"], dict(params), p, allow_plugins)
    except (SystemExit, KeyboardInterrupt) as exc:  # a builder (a class's __init__) that exits: bad input
        _user_code_failed(exc)
        fail(f"{p}.mechanism", sc["mechanism"], f"building it raised {type(exc).__name__}"
             + (f"({exc.code!r})" if isinstance(exc, SystemExit) else ""))
    _check_name(mechanism, sc["mechanism"], p)
    scorer = _scorer(sc["scorer"], p, allow_plugins)
    raw_deltas = sc.get("deltas")
    if raw_deltas is None:
        deltas = tuple(sorted({c.delta for c in claims if isinstance(c, Guarantee)})) or (1e-5,)
    else:
        if not isinstance(raw_deltas, list) or not raw_deltas:
            fail(f"{p}.deltas", raw_deltas, "must be a non-empty array of numbers in [0, 1)")
        deltas = tuple(check_number(f"{p}.deltas[{i}]", d, low=0.0, high=1.0 - 1e-12,
                                    allowed="must be a number in [0, 1)", prefix=CONFIG)
                       for i, d in enumerate(raw_deltas))
    expected = sc.get("expected", {})
    if not isinstance(expected, Mapping):
        fail(f"{p}.expected", expected, "must be a table of claim id = verdict")
    ids = [getattr(c, "claim_id", "") for c in claims]
    for cid, verdict in expected.items():
        if cid not in ids:
            fail(f"{p}.expected.{cid}", verdict, f"names no claim of the scenario (its claims: {', '.join(ids)})")
        if verdict not in EXPECTATIONS or verdict == "exact-violation":
            fail(f"{p}.expected.{cid}", verdict, "must be one of pass, violation, not-applicable")
    return RunsDesign(name=sc["name"], mechanism=mechanism, canaries=canaries.rows, scorer=scorer,
                      claims=tuple(claims), rule=rule, base=() if base is None else base, relation=relation,
                      deltas=deltas, expected=dict(expected), description=str(sc.get("about", "")), runs=runs,
                      per_run=m)


@dataclass(frozen=True)
class RunsDesign(CanaryDesign):
    """A design of ``runs`` training runs of ``len(canaries)`` canaries each (the same canaries in
    every run): one game of runs·m canaries (Steinke et al. 2023, §3: the same bound with R·m)."""

    runs: int = 1
    per_run: int = 0  # m, the canaries of one run (0: all of them, reused by every run)

    @property
    def m(self) -> int:
        return self.per_run or len(self.canaries)

    def audit(self, seed: int = 0, *, confidence: float = 0.95, secret: Any = None,
              tiebreak: int | str | None = None) -> OneRunResult:
        return audit_one_run(self.mechanism, self.scorer, canaries=list(self.canaries), m=self.m,
                             runs=self.runs, base=self.base, rule=self.rule, deltas=self.deltas,
                             confidence=confidence, claims=self.claims, seed=seed, relation=self.relation,
                             secret=secret, tiebreak=tiebreak)
