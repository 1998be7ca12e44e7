"""``python -m audit`` (or the ``dpaudit`` console script): run the built-in suite or a user's
mechanism, list what is built in.

Exit status: 0 when every verdict is as expected and no unexpected violation appears, 1 for a
privacy finding (an unexpected violation or a missed expected one), 2 for bad usage or input
(a mechanism that fails included), 3 for an internal or environment failure (disk full, a lost
cluster): a one-line message, the traceback in a log file — never a bare traceback, and a crash
is never reported as a finding.

Both entry points find a user's module (``--mechanism mymod:m``) in the current folder:
``python -m`` puts it first on ``sys.path`` itself, and :func:`console_main`, the console
script's entry point, does the same explicitly.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import math
import os
import platform
import signal
import sys
import tempfile
import textwrap
import threading
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import BrokenExecutor
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import scipy

import audit
import reports
from audit import bench, catalog, config, rundir, runner, search
from audit import plan as budget_plan
from audit.api import RunContext, audit_mechanism, mechanism_params
from audit.catalog import SUITES, Scenario
from audit.config import Plan, RunSettings
from audit.execution import Checkpoint, EnvironmentFailure, Execution, check_scheduler_address, connect_dask
from audit.files import write_atomic
from audit.results import SCHEMA_VERSION, dumps, envelope, run_as_expected
from audit.rundir import CHECKPOINT_FILE, ERROR_LOG, RunFolder
from audit.saved import load_results, load_sweep
from audit.sweep import slopes, sweep
from dpcore import RELATIONS, Guarantee, InputError
from neighbors import Dataset, Pair
from reports.text import errata_note, summary_table
from reports.text import footer as text_footer

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    """Bad usage or input: reported in one message with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would print usage and exit 2 itself
        raise UsageError(message)


def _integer(text: str) -> int:
    """An integer, also in float notation when it is a whole number: ``1000000``, ``1_000_000``, ``1e6``."""
    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not number.is_finite() or number != number.to_integral_value():
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer (write a whole number, e.g. 1000000 or 1e6)")
    if number.adjusted() > 18:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: too large (at most 1e18)")
    return int(number)


def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        value = _integer(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text} is invalid: must be an integer >= {minimum}")
        return value
    return parse


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.5 <= value < 1:
        raise argparse.ArgumentTypeError(f"{value} is invalid: must be in [0.5, 1)")
    return value


def _jobs(text: str) -> int:
    value = _int_at_least(-1)(text)
    if value == 0:
        raise argparse.ArgumentTypeError("0 is invalid: use a positive number of workers, or -1 for all cores")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m audit", description="Empirical differential-privacy audits.",
                     epilog="`python -m audit list` shows every built-in mechanism with its parameters; "
                            "`python -m audit COMMAND -h` the options of one command.")
    parser.add_argument("--version", action="store_true", help="print dpaudit's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="{run,list,sweep,report,summary,bench,plan}",
                                parser_class=_Parser)
    run = sub.add_parser("run", help="audit the built-in suite, a config file, or one mechanism")
    run.add_argument("config", nargs="?", type=Path, help="a TOML config describing the scenarios (see configs/)")
    run.add_argument("--suite", default=None, choices=SUITES, help="built-in suite (default: default)")
    run.add_argument("--family", action="append", default=[], metavar="NAME",
                     help="only this family's scenarios of the suite (repeatable; see `list`)")
    run.add_argument("--samples", type=_int_at_least(100), default=None,
                     help="samples per side and scenario (default: 1000000, or the config's)")
    run.add_argument("--seed", type=_int_at_least(0), default=None, help="root seed (default: 0)")
    run.add_argument("--confidence", type=_confidence, default=None, help="confidence of each bound (default: 0.95)")
    run.add_argument("--jobs", type=_jobs, default=None,
                     help="at most this many worker processes, -1 for all cores (default: -1); capped at the "
                          "chunks to run and the CPUs, small budgets run in process, and results do not depend on it")
    run.add_argument("--backend", choices=("local", "dask"), default=None,
                     help="where chunks run: local processes or a Dask cluster (default: local)")
    run.add_argument("--scheduler", default=None, help="Dask scheduler address, e.g. tcp://host:8786 "
                     "(default with --backend dask: a local cluster of --jobs workers)")
    run.add_argument("--resume", type=Path, metavar="DIR",
                     help="continue the run in DIR exactly as it started (DIR may have moved); only --jobs, "
                          "--backend, --scheduler and --quiet may change")
    run.add_argument("--out", type=Path, help="write DIR/results.json and DIR/summary.txt")
    run.add_argument("--overwrite", action="store_true",
                     help="with --out: replace the run DIR already holds (start clean; never mixed)")
    run.add_argument("--allow-plugin", action="append", default=[], metavar="pkg.module",
                     help="let a config name mechanisms of this module (and its submodules); repeatable")
    run.add_argument("--mechanism", help="a built-in mechanism name (see `list`) or pkg.module:attr")
    run.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                     help="a parameter of a built-in mechanism (repeatable); VALUE is JSON or text")
    run.add_argument("--pair", metavar="pkg.module:attr", help="a neighbors.Pair or (D, D') tuple to audit")
    run.add_argument("--data", type=Path, help="D as an .npz file of named columns")
    run.add_argument("--data-prime", type=Path, help="D' as an .npz file of named columns")
    run.add_argument("--relation", default=None, choices=RELATIONS,
                     help="neighbour relation of the pair (default: add-remove)")
    run.add_argument("--search", metavar="SPACE",
                     help="with --mechanism and no pair: search the pair (a pilot, then an audit on fresh samples): "
                          "queries:DIM (vectors of DIM query answers, |q_i - q'_i| <= 1) or records (neighbours of "
                          "the --data records under --relation)")
    run.add_argument("--epsilon", type=float, help="a claim to check: epsilon (with --delta)")
    run.add_argument("--delta", type=float, default=None, help="delta of the --epsilon claim (default: 0)")
    run.add_argument("--events", default=None, choices=("auto", "rows", "threshold", "histogram", "floating"),
                     help="force one view of the outputs for event selection (default: auto, every view)")
    run.add_argument("--sequential", action="store_true", default=None,
                     help="stop each audit as soon as a violation is certified or none can be reached")
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    run.add_argument("--witness", action="store_true", help="print each row's witness event and counts under it")
    ls = sub.add_parser("list", help="the built-in mechanisms (with their parameters), sweeps, suites and configs")
    ls.add_argument("mechanism", nargs="?", help="one mechanism in detail: parameters and the registry's claims")
    ls.add_argument("--configs", action="store_true", help="the sample configs shipped with dpaudit, with their paths")
    rp = sub.add_parser("report", help="rebuild the PDF report from saved results (no re-sampling)")
    rp.add_argument("results", type=Path, nargs="+",
                    help="a results.json (or the folder run --out wrote), optionally followed by sweep.json files")
    rp.add_argument("-o", "--output", type=Path, default=Path("report.pdf"), help="PDF to write (default report.pdf)")
    pl = sub.add_parser("plan", help="samples per side a built-in scenario needs to refute its claims (or reach "
                                     "--epsilon), from a pilot run, with the expected wall time")
    pl.add_argument("scenario", help="a scenario of a built-in suite (see `list`), e.g. align-alg2-zero-out")
    goal = pl.add_mutually_exclusive_group()
    goal.add_argument("--target", choices=("violation",), default="violation",
                      help="refute the scenario's claims (default)")
    goal.add_argument("--epsilon", type=float, help="instead, reach eps_lower >= EPSILON (at --delta)")
    pl.add_argument("--delta", type=float, default=None, help="delta of --epsilon (default: 0)")
    pl.add_argument("--samples", type=_int_at_least(100), default=1_000_000,
                    help="the run's base budget; the scenario's own is this times its samples_factor")
    pl.add_argument("--seed", type=_int_at_least(0), default=0, help="root seed (default: 0)")
    pl.add_argument("--confidence", type=_confidence, default=0.95, help="confidence of each bound")
    pl.add_argument("--jobs", type=_jobs, default=-1, help="workers for the pilot (default: all cores)")
    pl.add_argument("--single-look", action="store_true",
                    help="plan a run without the sequential rule (the errata suite's scenarios use it)")
    bn = sub.add_parser("bench", help="throughput per mechanism family vs a plain-numpy reference, and tightness")
    bn.add_argument("--samples", type=_int_at_least(10_000), default=2_000_000, help="samples per side (default 2e6)")
    bn.add_argument("--out", type=Path, default=None, metavar="FILE",
                    help="also write the measurements as JSON to FILE (default: print only)")
    bn.add_argument("--seeds", type=_int_at_least(1), default=1,
                    help="seeds per view for eps_lower / ceiling (median and minimum; default 1)")
    bn.add_argument("--json", action="store_true", help="print the measurements as JSON instead of the table")
    bn.add_argument("--quick", action="store_true",
                    help="tightness rows at --samples too and no extra benchmarks: a smoke run")
    sm = sub.add_parser("summary", help="print the summary table of a saved results.json (checked, not re-run)")
    sm.add_argument("results", type=Path, help="a results.json written by run --out, or that folder")
    sm.add_argument("--witness", action="store_true", help="print each row's witness event and counts under it")
    sw = sub.add_parser("sweep", help="rates: eps_claim(n), eps_exact(n), eps_lower(n) for a KL mechanism family")
    sw.add_argument("family", help="a sweep of the catalog (see `list`), e.g. kl-mab, kl-linear, kl-rlhf")
    sw.add_argument("--n", type=_sizes, default=[10, 20, 40, 80, 160], help="dataset sizes, comma separated")
    sw.add_argument("--samples", type=_int_at_least(100), default=200_000, help="samples per side and size")
    sw.add_argument("--seed", type=_int_at_least(0), default=0, help="root seed (default: 0)")
    sw.add_argument("--confidence", type=_confidence, default=0.95, help="confidence of each bound")
    sw.add_argument("--jobs", type=_jobs, default=1, help="parallel workers, -1 for all cores")
    sw.add_argument("--out", type=Path, help="write DIR/sweep.json")
    return parser


def _sizes(text: str) -> list[int]:
    try:
        sizes = [_integer(part) for part in text.split(",") if part.strip()]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not sizes or min(sizes) < 2:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: sizes must be integers >= 2")
    return sizes


def _load_attr(spec: str, flag: str) -> Any:
    if ":" not in spec:
        raise UsageError(f"{flag} {spec!r} is invalid: use pkg.module:attr or a built-in name")
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except InputError:
        raise
    except (Exception, SystemExit) as exc:  # a module's import may do anything, sys.exit included
        raise UsageError(f"{flag} {spec!r}: cannot import {module_name!r} ({type(exc).__name__}: {exc})") from None
    try:
        for part in attr.split("."):
            module = getattr(module, part)
    except AttributeError:
        raise UsageError(f"{flag} {spec!r}: module {module_name!r} has no attribute {attr!r}") from None
    return module


def _parse_params(items: Sequence[str]) -> dict[str, Any]:
    params = {}
    for item in items:
        name, eq, text = item.partition("=")
        if not eq or not name:
            raise UsageError(f"--param {item!r} is invalid: use NAME=VALUE")
        try:
            params[name] = json.loads(text)
        except json.JSONDecodeError:
            params[name] = text
        if isinstance(params[name], list):
            params[name] = tuple(params[name])
    return params


def _load_npz(path: Path, flag: str) -> Dataset:
    return config.read_npz(path, f"{flag} {path}")


def _user_scenario(args: argparse.Namespace) -> tuple[Scenario, search.QueryVectors | search.RecordSpace | None]:
    """The scenario of ``--mechanism``, and the space of its ``--search`` (None without)."""
    if ":" not in args.mechanism:
        mechanism = catalog.build_mechanism(args.mechanism, _parse_params(args.param), "--mechanism")
    else:
        if args.param:
            raise UsageError("--param applies to built-in mechanisms only")
        mechanism = _load_attr(args.mechanism, "--mechanism")
        if not callable(getattr(mechanism, "sample", None)):
            raise UsageError(f"--mechanism {args.mechanism!r} has no sample(data, size, rng) method")
        name = getattr(mechanism, "name", None)
        if name is not None and (not isinstance(name, str) or not name):
            raise UsageError(f"--mechanism {args.mechanism!r}: its name is {name!r} ({type(name).__name__}): "
                             "a mechanism's name must be a non-empty string")
    relation = args.relation or "add-remove"
    name = getattr(mechanism, "name", args.mechanism)
    if args.search is not None:
        if args.pair or args.data_prime:
            raise UsageError("--search finds the pair itself: drop --pair and --data-prime")
        base = _load_npz(args.data, "--data") if args.data else None
        space = search.space_from_spec(args.search, relation, base, "--search")
        return config.search_scenario(name, mechanism, space, relation), space
    if args.pair:
        pair = _load_attr(args.pair, "--pair")
        if isinstance(pair, tuple) and len(pair) == 2:
            pair = Pair(pair[0], pair[1], f"pair {args.pair}", relation)
        if not isinstance(pair, Pair):
            raise UsageError(f"--pair {args.pair!r} must be a neighbors.Pair or a (D, D') tuple")
        if not isinstance(pair.description, str):
            raise UsageError(f"--pair {args.pair!r}: its description is {pair.description!r}: it must be a string")
    elif args.data and args.data_prime:
        pair = Pair(_load_npz(args.data, "--data"), _load_npz(args.data_prime, "--data-prime"),
                    f"{args.data.name} vs {args.data_prime.name}", relation)
    else:
        raise UsageError("--mechanism needs a neighbouring pair: --pair pkg.module:attr, or --data and --data-prime, "
                         "or --search SPACE")
    return Scenario(name, mechanism, pair), None


def _claims(args: argparse.Namespace, scenario: Scenario) -> list[Guarantee] | None:
    if args.epsilon is None:
        return None
    if not (math.isfinite(args.epsilon) and args.epsilon >= 0):
        raise UsageError(f"--epsilon {args.epsilon} is invalid: must be a finite number >= 0")
    delta = 0.0 if args.delta is None else args.delta
    if not 0 <= delta < 1:
        raise UsageError(f"--delta {delta} is invalid: must be in [0, 1)")
    return [Guarantee(epsilon=args.epsilon, delta=delta, relation=scenario.pair.relation, source="command line",
                      claim_id="user/claim")]


def _plan(args: argparse.Namespace) -> Plan:
    """The scenarios and settings of this run: a config file, one mechanism, or a built-in suite;
    flags given on the command line override the config's [run] values."""
    for module in args.allow_plugin:
        if not all(part.isidentifier() for part in module.split(".")):
            raise UsageError(f"--allow-plugin {module!r} is invalid: give a module name such as pkg.module")
    if args.scheduler is not None:
        check_scheduler_address(args.scheduler)
    if args.config:
        if (args.mechanism or args.pair or args.data or args.param or args.epsilon is not None or args.family
                or args.search is not None):
            raise UsageError("a config file describes its scenarios: drop --mechanism, --pair, --data, --param, "
                             "--epsilon, --family, --search")
        plan = config.load(args.config, args.allow_plugin)
    elif args.mechanism:
        if args.family:
            raise UsageError("--family selects scenarios of a built-in suite: drop it with --mechanism")
        sc, space = _user_scenario(args)
        plan = Plan(RunSettings(), [sc], [_claims(args, sc)], searches=[] if space is None else [space])
    else:
        if args.pair or args.data or args.param or args.epsilon is not None or args.search is not None:
            raise UsageError("--pair, --data, --param, --epsilon and --search need --mechanism")
        scenarios = catalog.suite(args.suite or "default", args.family)
        plan = Plan(RunSettings(sequential=(args.suite or "default") in catalog.SEQUENTIAL_SUITES), scenarios,
                    [sc.claims for sc in scenarios])
    overrides = {k: v for k, v in {"samples": args.samples, "seed": args.seed, "confidence": args.confidence,
                                   "jobs": args.jobs, "backend": args.backend, "scheduler": args.scheduler,
                                   "events": args.events, "sequential": args.sequential}.items() if v is not None}
    return dataclasses.replace(plan, settings=dataclasses.replace(plan.settings, **overrides))


class _Session:
    """What :func:`main` needs to report a failure: the run's folder, once there is one (the
    traceback log goes there, else to a temporary file)."""

    folder: Path | None = None


# Options that decide a run's numbers (its fingerprint) and options that only say where it runs.
IDENTITY_OPTIONS = ("config", "suite", "family", "samples", "seed", "confidence", "mechanism", "param", "pair",
                    "data", "data_prime", "relation", "epsilon", "delta", "events", "sequential", "search")
RUNTIME_OPTIONS = ("jobs", "backend", "scheduler")


def _run(args: argparse.Namespace, argv: Sequence[str], session: _Session | None = None) -> int:
    """``run``: a new run (``--out DIR``: DIR must not hold another run unless ``--overwrite``),
    or ``--resume DIR``: exactly the run DIR holds, with its identity checked.  DIR is locked
    while this process writes it."""
    session = session or _Session()
    started, clock = time.time(), time.perf_counter()
    folder: RunFolder | None = None
    saved: dict[str, Any] | None = None
    try:
        if args.resume is not None:
            if args.overwrite:
                raise UsageError("--overwrite starts a new run: it cannot be combined with --resume")
            if args.out is not None and Path(args.out).resolve() != Path(args.resume).resolve():
                raise UsageError(f"--resume {args.resume} writes into {args.resume}: drop --out {args.out}")
            folder = RunFolder.for_resume(args.resume)
            session.folder = folder.path
            saved = folder.read_run()
            args = _resumed_args(args, saved, folder.path)
            argv = saved["argv"]
        elif args.out is not None:
            folder = RunFolder.for_new_run(args.out, args.overwrite)
            session.folder = folder.path
        elif args.overwrite:
            raise UsageError("--overwrite replaces the run in --out DIR: give --out")
        return _audit(args, argv, folder, saved, started, clock)
    finally:
        if folder is not None:
            folder.release()


def _resumed_args(args: argparse.Namespace, saved: dict[str, Any], folder: Path) -> argparse.Namespace:
    """The saved run's options (paths relative to ``folder`` restored); identity options given
    with ``--resume`` are applied so the identity check can refuse them if they change the run;
    runtime options given override the saved ones."""
    try:
        resumed = build_parser().parse_args(saved["argv"])
    except UsageError as exc:
        raise UsageError(f"--resume {folder}: {rundir.RUN_FILE} holds a command line this dpaudit cannot read "
                         f"({exc})") from None
    if resumed.command != "run":
        raise UsageError(f"--resume {folder}: {rundir.RUN_FILE} does not describe a run")
    for name in ("config", "data", "data_prime"):
        value = getattr(resumed, name)
        if value is not None:
            setattr(resumed, name, rundir.restore(str(value), folder))
    resumed.changing = []
    for name in IDENTITY_OPTIONS:
        value = getattr(args, name)
        if value is not None and value != []:
            setattr(resumed, name, value)
            resumed.changing.append(name)
    for name in RUNTIME_OPTIONS:
        if getattr(args, name) is not None:
            setattr(resumed, name, getattr(args, name))
    resumed.allow_plugin = list(dict.fromkeys([*resumed.allow_plugin, *args.allow_plugin]))
    resumed.quiet = args.quiet
    resumed.resume, resumed.out, resumed.overwrite = folder, folder, False
    resumed.started_in = saved.get("cwd")
    return resumed


def _canonical_argv(args: argparse.Namespace, folder: Path) -> list[str]:
    """The run's own command line for ``run.json``: its options as parsed (abbreviations and
    ``--opt=value`` spelled out), input paths made portable (:func:`audit.rundir.portable`),
    without ``--out`` (the folder is wherever run.json is) and without ``--quiet``."""
    argv = ["run"]
    if args.config is not None:
        argv.append(rundir.portable(args.config, folder))
    for flag, value in (("--suite", args.suite), ("--samples", args.samples), ("--seed", args.seed),
                        ("--confidence", args.confidence), ("--jobs", args.jobs), ("--backend", args.backend),
                        ("--scheduler", args.scheduler), ("--mechanism", args.mechanism), ("--pair", args.pair),
                        ("--relation", args.relation), ("--epsilon", args.epsilon), ("--delta", args.delta),
                        ("--events", args.events), ("--search", args.search)):
        if value is not None:
            argv += [flag, repr(value) if isinstance(value, float) else str(value)]
    for flag, values in (("--family", args.family), ("--param", args.param), ("--allow-plugin", args.allow_plugin)):
        for value in values:
            argv += [flag, value]
    for flag, path in (("--data", args.data), ("--data-prime", args.data_prime)):
        if path is not None:
            argv += [flag, rundir.portable(path, folder)]
    if args.sequential:
        argv.append("--sequential")
    return argv


def _audit(args: argparse.Namespace, argv: Sequence[str], folder: RunFolder | None, saved: dict[str, Any] | None,
           started: float, clock: float) -> int:
    try:
        plan = _plan(args)
    except UsageError as exc:
        where = getattr(args, "started_in", None)
        if saved is not None and where and "cannot import" in str(exc):
            raise UsageError(f"{exc} (the run was started in {where}: resume from there, or put the module on "
                             "PYTHONPATH)") from None
        raise
    if not plan.scenarios:
        raise UsageError("nothing to audit: no scenario selected")
    st = plan.settings
    if args.scheduler is not None and st.backend != "dask":
        raise UsageError("--scheduler needs --backend dask")
    budgets = [max(20, round(st.samples * sc.samples_factor)) for sc in plan.scenarios]
    workers = Execution(n_jobs=st.jobs).workers(1 << 30)
    for budget in budgets:  # before anything is written or drawn: refused within a second, with the estimate
        runner.check_memory(budget, 1, 8, workers)
    ident = rundir.identity(st, plan.scenarios, plan.claims, budgets)
    fp = rundir.fingerprint(ident)
    checkpoint = None
    if folder is not None and saved is not None:
        changed = rundir.differences(saved["identity"], ident)
        if changed and args.changing:
            given = ", ".join("CONFIG" if n == "config" else "--" + n.replace("_", "-") for n in args.changing)
            raise UsageError(f"--resume {folder.path}: {given} would change the run ({'; '.join(changed)}): a "
                             "folder holds one run; resume it unchanged (only --jobs, --backend, --scheduler and "
                             "--quiet may differ), or start a new run with another --out")
        if changed:
            raise UsageError(f"--resume {folder.path}: the run is no longer the one {rundir.RUN_FILE} recorded "
                             f"({'; '.join(changed)}): its config or data files, the mechanism's code, dpaudit, or "
                             f"{rundir.RUN_FILE} itself changed since it started; refusing to mix two runs' counts; "
                             "start a new run")
        checkpoint = Checkpoint(folder.path / CHECKPOINT_FILE, fp)
        if checkpoint.foreign:
            lines = ", ".join(map(str, checkpoint.foreign[:5])) + (" ..." if len(checkpoint.foreign) > 5 else "")
            raise UsageError(f"--resume {folder.path}: {CHECKPOINT_FILE} line(s) {lines} belong to another run (a "
                             "different fingerprint): refusing to mix two runs' counts; start a new run")
        if checkpoint.rejected:
            print(f"warning: {CHECKPOINT_FILE}: {len(checkpoint.rejected)} unusable line(s) dropped and their chunks "
                  f"redrawn ({'; '.join(checkpoint.rejected[:3])})", file=sys.stderr)
            checkpoint.compact()
    elif folder is not None:
        if args.overwrite:
            folder.clear()
        folder.write_run(_canonical_argv(args, folder.path), ident, fp, os.getcwd())
        write_atomic(folder.path / "config.resolved.json", dumps({**_resolved(plan, argv), "fingerprint": fp}))
        checkpoint = Checkpoint(folder.path / CHECKPOINT_FILE, fp, fresh=True)
    out = folder.path if folder is not None else None
    mode = "off" if args.quiet else ("bar" if sys.stderr.isatty() else "log")
    client = None
    if st.backend == "dask":
        modules = tuple({type(sc.mechanism).__module__ for sc in plan.scenarios})
        client = connect_dask(st.scheduler, st.jobs if st.jobs > 0 else 2, modules)
    execution = Execution(n_jobs=st.jobs, backend=st.backend, checkpoint=checkpoint, progress=mode, client=client)
    registry, documents = catalog.claims(), catalog.documents()
    suite = None if (args.mechanism or args.config) else (args.suite or "default")

    def payload(results: list, complete: bool, wall: float) -> dict[str, Any]:
        return envelope(results, command=["python", "-m", "audit", *argv], suite=suite, settings=st, started=started,
                        seconds=wall, complete=complete, planned=len(plan.scenarios), environment=_environment(),
                        documents=documents, fingerprint=fp)

    try:
        results = []
        for index, (sc, claims, budget) in enumerate(zip(plan.scenarios, plan.claims, budgets, strict=True)):
            context = RunContext(execution=execution, key=(index,), scenario=sc.name, pair=sc.pair.description,
                                 registry=registry)
            space = plan.searches[index] if plan.searches else None
            try:
                if space is not None:  # the pilot chooses the pair, the audit runs on fresh samples
                    results.append(search.search_pair(
                        sc.mechanism, space, samples=budget, deltas=st.deltas, confidence=st.confidence,
                        seed=st.seed, claims=claims, expected=sc.expected, events=st.events,
                        sequential=st.sequential, context=context))
                else:
                    results.append(audit_mechanism(
                        sc.mechanism, sc.pair.d, sc.pair.d_prime, samples=budget, deltas=st.deltas,
                        confidence=st.confidence, seed=st.seed, relation=sc.pair.relation, claims=claims,
                        expected=sc.expected, events=st.events, sequential=st.sequential, context=context))
            except InputError as exc:  # which scenario it was: a config may hold many
                raise InputError(f"scenario {sc.name!r}: {exc}") from None
            except runner.MechanismError as exc:
                raise runner.MechanismError(f"scenario {sc.name!r}: {exc}") from None
            if runner.USER_INTERRUPT.is_set():  # Ctrl-C: the scenario's partial result ends the run
                break
            if out and index + 1 < len(plan.scenarios):  # an interrupted run still leaves a (partial) report
                write_atomic(out / "results.json", dumps(payload(results, False, time.perf_counter() - clock)))
    finally:
        if client is not None:
            client.close()
    final = payload(results, not runner.USER_INTERRUPT.is_set(), time.perf_counter() - clock)
    table = summary_table(final["records"], witness=getattr(args, "witness", False))
    ok = final["as_expected"]
    footer = text_footer(final["records"], len(results), f"budget {st.samples} samples per side, confidence "
                         f"{st.confidence}, seed {st.seed}", final["seconds"], ok)
    if suite in catalog.SEQUENTIAL_SUITES:
        footer += errata_note(final["records"])
    sys.stdout.write(table + footer)
    if out:
        write_atomic(out / "results.json", dumps(final))
        write_atomic(out / "summary.txt", table + footer)
        # The report is built from exactly what results.json holds, so `audit report` rebuilds it byte for byte.
        _write_report(final, out / "report.pdf")
    return EXIT_OK if ok else EXIT_FAIL


def _write_report(final: dict[str, Any], path: Path) -> None:
    """``run --out``'s PDF; without the [report] extra the results and summary are written anyway
    and the run says the PDF was skipped (its exit status stays the verdicts')."""
    try:
        reports.write_pdf(json.loads(dumps(final)), path)
    except reports.ReportExtraMissing as exc:
        print(f"note: {path} skipped: {exc}", file=sys.stderr)


def _resolved(plan: Plan, argv: Sequence[str]) -> dict[str, Any]:
    return {"argv": list(argv), "settings": dataclasses.asdict(plan.settings),
            "scenarios": [{"name": sc.name, "mechanism": runner.mechanism_name(sc.mechanism),
                           "params": mechanism_params(sc.mechanism), "relation": sc.pair.relation,
                           "pair": sc.pair.description, "expected": dict(sc.expected),
                           "samples_factor": sc.samples_factor}
                          for sc in plan.scenarios],
            "config": plan.source or None}


def _environment() -> dict[str, str]:
    return {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
            "joblib": joblib.__version__, "machine": platform.machine(), "system": platform.system()}


SHIPPED_CONFIGS = Path(__file__).resolve().parent / "configs"  # package data (configs/ in a checkout links here)


def _list(args: argparse.Namespace) -> int:
    """``list`` (everything, with each mechanism's parameters), ``list NAME`` or ``list --configs``."""
    if args.configs:
        text = _list_configs()
    elif args.mechanism:
        known = catalog.mechanisms()
        if args.mechanism not in known:
            raise UsageError(f"list: {args.mechanism!r} is not a built-in mechanism"
                             f"{catalog.suggest(args.mechanism, list(known))}; `python -m audit list` shows them all")
        text = _mechanism_details(known[args.mechanism])
    else:
        text = _list_all()
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `list | head`: the reader has what it wanted
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silences the interpreter's final flush
    return EXIT_OK


def _wrap(text: str, indent: int, width: int = 100) -> str:
    return textwrap.fill(text, width=width, initial_indent=" " * indent, subsequent_indent=" " * indent)


def _parameter_lines(entry: catalog.MechanismEntry, indent: int) -> list[str]:
    table = entry.parameter_table()
    if not table:
        return [" " * indent + "(no parameters)"]
    rows = [(p.name, p.type or "-", p.default, p.meaning or "-") for p in table]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = []
    for name, kind, default, meaning in rows:
        head = " " * indent + f"{name:{widths[0]}}  {kind:{widths[1]}}  {default:{widths[2]}}  "
        width = max(100, len(head) + 40)
        lines.append(textwrap.fill(meaning, width=width, initial_indent=head, subsequent_indent=" " * len(head)))
    return lines


def _list_all() -> str:
    out = ["Built-in mechanisms (--mechanism NAME --param KEY=VALUE ...; `list NAME` for one in detail).",
           "Parameters: name, type, default, meaning."]
    for family in catalog.families():
        out.append(f"\n[{family.name}] {family.about}")
        for entry in family.mechanisms:
            out.append(f"  {entry.name}")
            out.append(_wrap(entry.about, 6))
            out += _parameter_lines(entry, 6)
    out.append(f"\nSweeps (python -m audit sweep NAME): {', '.join(catalog.sweeps())}")
    for suite in SUITES:
        out.append(f"\nSuite {suite!r} (python -m audit run --suite {suite}):")
        for sc in catalog.suite(suite):
            out.append(f"  {sc.name:18s} {sc.about}")
            out.append(f"  {'':18s} pair: {sc.pair.description} [{sc.pair.relation}]")
            out += [f"  {'':18s} expects {cid}: {verdict}" for cid, verdict in sc.expected.items()]
    out.append("\nSample configs: python -m audit list --configs")
    return "\n".join(out) + "\n"


def _mechanism_details(entry: catalog.MechanismEntry) -> str:
    family = next(f.name for f in catalog.families() if entry in f.mechanisms)
    out = [f"{entry.name}  [family {family}]", _wrap(entry.about, 2), "", "Parameters (name, type, default, meaning):"]
    out += _parameter_lines(entry, 2)
    example = " ".join(f"--param {p.name}=..." for p in entry.parameter_table() if p.default == "required")
    run = f"python -m audit run --mechanism {entry.name} {example} --pair pkg.module:pair".replace("  ", " ")
    out += ["", f"Run: {run}"]
    claims = catalog.mechanism_claims(entry.name)
    out += ["", f"Claims in the registry ({len(claims)}):" if claims else "Claims in the registry: none"]
    for c in claims:
        out.append(f"  {c.id}  [{c.status}]  {c.document}, {c.where}; relations: {', '.join(c.relations)}")
        out.append(_wrap(c.statement, 6))
        if c.premises:
            out.append(_wrap(f"premises: {'; '.join(c.premises)}", 6))
        if c.reason:
            out.append(_wrap(f"why {c.status}: {c.reason}", 6))
    return "\n".join(out) + "\n"


def _list_configs() -> str:
    out = [f"Sample configs shipped with dpaudit ({SHIPPED_CONFIGS}); run one with `python -m audit run PATH`:"]
    for path in sorted(SHIPPED_CONFIGS.glob("*.toml")):
        first = path.read_text(encoding="utf-8").splitlines()[:1]
        about = first[0].lstrip("# ").split(": python -m audit")[0] if first and first[0].startswith("#") else ""
        out.append(f"  {path.name:16s} {about}")
        out.append(f"  {'':16s} {path}")
    data = sorted(p.name for p in (SHIPPED_CONFIGS / "data").glob("*") if p.is_file())
    if data:
        out.append(f"  data files (relative to the configs' folder): {', '.join('data/' + d for d in data)}")
    return "\n".join(out) + "\n"


def _sweep(args: argparse.Namespace, argv: Sequence[str]) -> int:
    records = sweep(args.family, args.n, samples=args.samples, seed=args.seed, confidence=args.confidence,
                    n_jobs=args.jobs)
    rows = [("n", "claim", "kind", "eps_claim", "eps_exact", "eps_lower", "verdict")]
    rows += [(str(r["n"]), r["claim_id"], r["claim_kind"], f"{r['epsilon_claim']:.4g}", f"{r['epsilon_exact']:.4g}",
              f"{r['epsilon_lower']:.4g}", r["verdict"]) for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    text = "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)
    fitted = slopes(records)
    text += "\n\nlog-log slopes against n (the paper's rate is -1):\n" + "\n".join(
        f"  {cid}: eps_claim {s['epsilon_claim']:+.3f}, eps_exact {s['epsilon_exact']:+.3f}"
        for cid, s in fitted.items())
    print(text)
    if args.out:
        write_atomic(args.out / "sweep.json", dumps({
            "schema": SCHEMA_VERSION, "dpaudit_version": audit.__version__, "command": ["python", "-m", "audit", *argv],
            "family": args.family, "n": args.n, "samples": args.samples, "seed": args.seed,
            "confidence": args.confidence, "records": records, "slopes": fitted}))
    return EXIT_OK


def console_main() -> int:
    """The ``dpaudit`` console script: ``python -m audit`` with the same ``sys.path``.

    ``python -m audit`` puts the current folder first on ``sys.path``, so ``--mechanism
    mymod:m`` (and ``--pair``) import ``mymod.py`` from where the command runs; a console
    script's ``sys.path`` starts with its own bin folder instead.  The current folder is put
    first here too, so both commands find the same modules."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    return main()


def _report(args: argparse.Namespace) -> int:
    payload = load_results(args.results[0])
    sweeps = [load_sweep(p) for p in args.results[1:]]
    target = Path(args.output)
    if not target.parent.is_dir():
        raise UsageError(f"report -o {target}: the folder {target.parent} does not exist")
    try:
        reports.write_pdf(payload, target, sweeps)
    except reports.ReportExtraMissing as exc:  # an environment failure: exit 3
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    complete = payload.get("complete", True)
    print(f"wrote {target}" + ("" if complete else " (PARTIAL results: the run was interrupted)"))
    return EXIT_OK


def _summary(args: argparse.Namespace) -> int:
    """The saved run's table; exits as the run did.  A partial file (an interrupted run) says so and
    never exits 0: 1 if what was checked already holds a finding, else 2 (not everything was checked)."""
    payload = load_results(args.results)
    sys.stdout.write(summary_table(payload["records"], witness=args.witness))
    ok = run_as_expected(payload["records"])
    if not payload.get("complete", True):
        note = (f"PARTIAL results: the run was interrupted after {len(payload['scenarios'])} of "
                f"{payload.get('scenarios_planned', '?')} scenarios; the others were not checked")
        print(note)
        print(f"error: {args.results}: {note}", file=sys.stderr)
        return EXIT_USAGE if ok else EXIT_FAIL
    return EXIT_OK if ok else EXIT_FAIL


def _plan_budget(args: argparse.Namespace) -> int:
    """``plan``: the scenario is looked up in the errata suite, then the full one (so it is built, and
    keyed, as a run of that suite would); one line ``samples_per_side=N``, then the explanation."""
    if args.delta is not None and args.epsilon is None:
        raise UsageError("--delta goes with --epsilon")
    known: list[str] = []
    for suite in ("errata", "full"):
        scenarios = catalog.suite(suite)
        names = [sc.name for sc in scenarios]
        if args.scenario in names:
            index = names.index(args.scenario)
            found = budget_plan.plan(scenarios[index], confidence=args.confidence, seed=args.seed, key=(index,),
                                     samples=args.samples, epsilon=args.epsilon, delta=args.delta,
                                     execution=Execution(n_jobs=args.jobs),
                                     sequential=suite in catalog.SEQUENTIAL_SUITES and not args.single_look)
            sys.stdout.write(budget_plan.render(found))
            return EXIT_OK
        known += names
    raise UsageError(f"plan: scenario {args.scenario!r} is not in a built-in suite"
                     f"{catalog.suggest(args.scenario, known)}; see `python -m audit list`")


def _dispatch(argv: list[str], session: _Session) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "run":
        return _run(args, argv, session)
    if args.version:
        print(f"dpaudit {audit.__version__} (Python {platform.python_version()})")
        return EXIT_OK
    if args.command == "list":
        return _list(args)
    if args.command == "sweep":
        return _sweep(args, argv)
    if args.command == "report":
        return _report(args)
    if args.command == "plan":
        return _plan_budget(args)
    if args.command == "bench":
        report = bench.run(samples=args.samples, seeds=args.seeds, quick=args.quick)
        sys.stdout.write(dumps(report) + "\n" if args.json else bench.table(report))
        if args.out:
            write_atomic(args.out, dumps(report))
            print(f"wrote {args.out}")
        return EXIT_OK
    if args.command == "summary":
        return _summary(args)
    build_parser().print_help()
    return EXIT_USAGE


def _log_failure(session: _Session) -> str:
    """Write the current traceback to ``DIR/error.log`` (or a temporary file); its path."""
    text = traceback.format_exc()
    if session.folder is not None:
        try:
            write_atomic(session.folder / ERROR_LOG, text)
            return str(session.folder / ERROR_LOG)
        except (OSError, InputError):
            pass
    try:
        fd, name = tempfile.mkstemp(prefix="dpaudit-error-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return name
    except OSError:
        return "nowhere: the disk cannot be written"


def _explain(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return f"{type(exc).__name__}: {exc}"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    session = _Session()
    handler = None
    if threading.current_thread() is threading.main_thread():  # a real Ctrl-C is told apart from a mechanism's
        handler = signal.signal(signal.SIGINT, runner.note_user_interrupt)
    try:
        return _dispatch(argv, session)
    except (UsageError, InputError, runner.MechanismError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except SystemExit:
        raise  # argparse's --help, or sys.exit of our own
    except (OSError, MemoryError, EnvironmentFailure, BrokenExecutor) as exc:
        log = _log_failure(session)
        print(f"error: environment failure: {_explain(exc)} (traceback in {log})", file=sys.stderr)
        return EXIT_INTERNAL
    except BaseException as exc:  # a bug of ours: one line and a log, never a traceback on the terminal
        log = _log_failure(session)
        print(f"error: internal error: {_explain(exc)} (traceback in {log}; please report it)", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
        runner.USER_INTERRUPT.clear()
