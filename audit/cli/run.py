"""``run``: the built-in suite, a config file, or one mechanism; resume, checkpoints, results.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpaudit import catalog
from dpaudit.catalog import Scenario
from dpaudit.catalog.designs.suite import left_out
from dpaudit.catalog.onerun import OneRunScenario, mechanism_name
from dpaudit.claims import RDP, ZCDP
from dpaudit.cli.common import (
    EXIT_FAIL,
    Session,
    load_attr,
    parse_params,
    report_families,
    resume_command,
    write_report,
)
from dpaudit.cli.expectations import (
    exit_status,
    is_builtin,
    missed_notes,
    planned_claims,
    unchecked_expectations,
    with_registry_expectations,
)
from dpaudit.cli.parser import PIPELINE_SUITES, UsageError, build_parser, program_name
from dpaudit.cli.streams import StdoutToStderr
from dpaudit.cli.supervise import hand_over
from dpaudit.core import Guarantee, InputError, did_you_mean
from dpaudit.engine import memory, runner, search
from dpaudit.engine.api import RunContext, audit_mechanism, mechanism_params
from dpaudit.engine.floatsearch import float_space_from_spec
from dpaudit.engine.results import AuditResult
from dpaudit.neighbors import Pair
from dpaudit.pipelines import opacus_suite
from dpaudit.reports.text import errata_note, incomplete_note, printable, settings_words, summary_table
from dpaudit.reports.text import footer as text_footer
from dpaudit.results.document import dumps, envelope, environment
from dpaudit.results.saved import check_plan_sizes
from dpaudit.runs import config, rundir
from dpaudit.runs.config import Plan, RunSettings
from dpaudit.runs.datafiles import read_npz
from dpaudit.runs.invocation import typed_command
from dpaudit.runs.onerun import onerun_scenario, saved_games
from dpaudit.runs.plugins import resume_refusal
from dpaudit.runs.rundir import CHECKPOINT_FILE, RunFolder
from dpaudit.runtime import heartbeat, interrupts
from dpaudit.runtime.amortised import Amortised
from dpaudit.runtime.checkpoint import Checkpoint
from dpaudit.runtime.execution import Execution, check_scheduler_address, connect_dask
from dpaudit.runtime.files import write_atomic
from dpaudit.runtime.identity import fingerprint
from dpaudit.runtime.reach import from_import


def _user_scenario(args: argparse.Namespace) -> tuple[Scenario, search.Space | None]:
    """The scenario of ``--mechanism``, and the space of its ``--search`` (None without)."""
    if ":" not in args.mechanism:
        if args.mechanism not in catalog.mechanisms():
            raise UsageError(f"--mechanism {args.mechanism!r} is not a built-in mechanism"
                             f"{did_you_mean(args.mechanism, catalog.mechanisms())}; see `{program_name()} list`, "
                             "or give pkg.module:attr")
        params = parse_params(args.param)
        try:
            mechanism = catalog.build_mechanism(args.mechanism, params, "--mechanism")
        except InputError as exc:
            raise InputError(config.unknown_parameter(str(exc), args.mechanism, "--param", params)) from None
        if not callable(getattr(mechanism, "sample", None)):  # a training mechanism: run(dataset, rng) only
            raise UsageError(f"--mechanism {args.mechanism} trains once per run(dataset, rng): it is audited in "
                             "one run (run --suite onerun, or a config scenario with canaries), not from samples")
    else:
        if args.param:
            raise UsageError("--param applies to built-in mechanisms only")
        mechanism = load_attr(args.mechanism, "--mechanism")
        if not callable(getattr(mechanism, "sample", None)):
            raise UsageError(f"--mechanism {args.mechanism!r} has no sample(data, size, rng) method")
        try:
            name = getattr(mechanism, "name", None)
        except Exception as exc:  # a property of the user's class
            raise UsageError(f"--mechanism {args.mechanism!r}: reading its name raised {type(exc).__name__}: "
                             f"{exc}") from None
        if name is not None and (not isinstance(name, str) or not name):
            raise UsageError(f"--mechanism {args.mechanism!r}: its name is {name!r} ({type(name).__name__}): "
                             "a mechanism's name must be a non-empty string")
    relation = args.relation or "add-remove"
    name = getattr(mechanism, "name", None) or args.mechanism
    if args.search is not None:
        if args.pair or args.data_prime:
            raise UsageError("--search finds the pair itself: drop --pair and --data-prime")
        if args.search.strip().startswith("floats"):
            if args.data:
                raise UsageError("--search floats builds its own datasets: drop --data")
            relation = args.relation or "swap"
            floats = float_space_from_spec(args.search, mechanism, relation, "--search", progress=not args.quiet)
            return config.search_scenario(name, mechanism, floats, relation), floats
        base = read_npz(args.data, "--data") if args.data else None
        space = search.space_from_spec(args.search, relation, base, "--search")
        return config.search_scenario(name, mechanism, space, relation), space
    if args.pair:
        pair = load_attr(args.pair, "--pair")
        if isinstance(pair, tuple) and len(pair) == 2:
            pair = Pair(pair[0], pair[1], f"pair {args.pair}", relation)
        if not isinstance(pair, Pair):
            raise UsageError(f"--pair {args.pair!r} must be a neighbors.Pair or a (D, D') tuple")
        if not isinstance(pair.description, str):
            raise UsageError(f"--pair {args.pair!r}: its description is {pair.description!r}: it must be a string")
    elif args.data and args.data_prime:
        pair = Pair(read_npz(args.data, "--data"), read_npz(args.data_prime, "--data-prime"),
                    f"{args.data.name} vs {args.data_prime.name}", relation)
    else:
        raise UsageError("--mechanism needs a neighbouring pair: --pair pkg.module:attr, or --data and --data-prime, "
                         "or --search SPACE")
    return Scenario(name, mechanism, pair), None


def _renyi_claims(args: argparse.Namespace, relation: str) -> list[Guarantee]:
    """The points of the ``--rho`` and ``--rdp`` claims' (ε, δ) curves (:mod:`dpaudit.claims`)."""
    out: list[Guarantee] = []
    if args.rho is not None:
        if not (math.isfinite(args.rho) and args.rho > 0):
            raise UsageError(f"--rho {args.rho} is invalid: must be a finite number > 0")
        out += ZCDP(args.rho, relation=relation, source="command line", claim_id="user/zcdp").guarantees()
    if args.rdp:
        orders, taus = [], []
        for text in args.rdp:
            try:
                alpha, tau = (float(x) for x in text.split(":"))
            except ValueError:
                raise UsageError(f"--rdp {text!r} is invalid: give ALPHA:EPS, e.g. 2:0.5") from None
            orders.append(alpha)
            taus.append(tau)
        try:
            claim = RDP(tuple(orders), tuple(taus), relation=relation, source="command line", claim_id="user/rdp")
        except InputError as exc:
            raise UsageError(f"--rdp {' '.join(args.rdp)} is invalid: {exc}") from None
        out += claim.guarantees()
    return out


def _claims(args: argparse.Namespace, scenario: Scenario) -> list[Guarantee] | None:
    renyi = _renyi_claims(args, scenario.pair.relation)
    if args.epsilon is None:
        if args.delta is not None:
            raise UsageError(f"--delta {args.delta} goes with --epsilon: give the claim's epsilon too")
        return renyi or None
    if not (math.isfinite(args.epsilon) and args.epsilon >= 0):
        raise UsageError(f"--epsilon {args.epsilon} is invalid: must be a finite number >= 0")
    delta = 0.0 if args.delta is None else args.delta
    if not 0 <= delta < 1:
        raise UsageError(f"--delta {delta} is invalid: must be in [0, 1)")
    return [Guarantee(epsilon=args.epsilon, delta=delta, relation=scenario.pair.relation, source="command line",
                      claim_id="user/claim"), *renyi]


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
                or args.search is not None or args.delta is not None or args.rho is not None or args.rdp):
            raise UsageError("a config file describes its scenarios: drop --mechanism, --pair, --data, --param, "
                             "--epsilon, --delta, --rho, --rdp, --family, --search")
        plan = config.load(args.config, args.allow_plugin)
    elif args.mechanism:
        if args.family:
            raise UsageError("--family selects scenarios of a built-in suite: drop it with --mechanism")
        sc, space = _user_scenario(args)
        plan = Plan(RunSettings(), [sc], [_claims(args, sc)], searches=[] if space is None else [space])
    else:
        if (args.pair or args.data or args.param or args.epsilon is not None or args.delta is not None
                or args.search is not None or args.rho is not None or args.rdp):
            raise UsageError("--pair, --data, --param, --epsilon, --delta, --rho, --rdp and --search need --mechanism")
        name = args.suite or "default"
        if name in PIPELINE_SUITES:
            if args.family:
                raise UsageError(f"--suite {name} has no families: drop --family")
            return _overridden(args, Plan(RunSettings(), [], [], onerun=list(opacus_suite.suite_designs())))
        scenarios = catalog.suite(name, args.family)
        plan = Plan(RunSettings(sequential=name in catalog.SEQUENTIAL_SUITES,
                                confidence=catalog.SUITE_CONFIDENCE.get(name, RunSettings.confidence)), scenarios,
                    [sc.claims for sc in scenarios], onerun=catalog.onerun_suite(name, args.family))
        if name == "onerun":  # a design whose extra is missing is left out: say so, never silently
            for note in left_out():
                print(f"note: left out of --suite onerun on this install: {note}", file=sys.stderr)
    return _overridden(args, plan)


def _overridden(args: argparse.Namespace, plan: Plan) -> Plan:
    """``plan`` with the flags given on the command line overriding its settings."""
    overrides = {k: v for k, v in {"samples": args.samples, "seed": args.seed, "confidence": args.confidence,
                                   "jobs": args.jobs, "backend": args.backend, "scheduler": args.scheduler,
                                   "events": args.events, "sequential": args.sequential}.items() if v is not None}
    return dataclasses.replace(plan, settings=dataclasses.replace(plan.settings, **overrides))


# Options that decide a run's numbers (its fingerprint) and options that only say where it runs.
IDENTITY_OPTIONS = ("config", "suite", "family", "samples", "seed", "confidence", "mechanism", "param", "pair",
                    "data", "data_prime", "relation", "epsilon", "delta", "rho", "rdp", "events", "sequential",
                    "search")


RUNTIME_OPTIONS = ("jobs", "backend", "scheduler")


def run_command(args: argparse.Namespace, argv: Sequence[str], session: Session | None = None) -> int:
    """``run``: a new run (``--out DIR``: DIR must not hold another run unless ``--overwrite``),
    or ``--resume DIR``: exactly the run DIR holds, with its identity checked.  DIR is locked
    while this process writes it."""
    session = session or Session()
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
        if not getattr(args, "json", False):
            return _audit_from_import(args, argv, folder, saved, started, clock, sys.stdout.write)
        with StdoutToStderr() as stdout:  # --json owns stdout: the user's code prints to stderr
            return _audit_from_import(args, argv, folder, saved, started, clock, stdout.write)
    finally:
        heartbeat.configure(interval=None)
        if folder is not None:
            folder.release()


def _audit_from_import(*audit_args: Any) -> int:
    """:func:`_audit`, recording what the user's code reaches from before its modules are imported
    (``EPS = float(os.environ["EPS"])`` at a module's top), so a resume refuses its change too
    (:func:`dpaudit.runtime.reach.from_import`)."""
    with from_import():
        return _audit(*audit_args)


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
    # A folder may come from someone else: its run.json is data, so a plugin it names is imported
    # only when this command line allows it (as a config's plugins are), never before.
    _refuse_unallowed_plugins(resumed, args.allow_plugin, folder)
    resumed.allow_plugin = list(args.allow_plugin)
    resumed.quiet = args.quiet
    # how the result is shown is not the run's identity: this command line's choice
    resumed.json, resumed.witness, resumed.wide = (getattr(args, key, False) for key in ("json", "witness", "wide"))
    resumed.resume, resumed.out, resumed.overwrite = folder, folder, False
    resumed.started_in = saved.get("cwd")
    return resumed


def _refuse_unallowed_plugins(resumed: argparse.Namespace, given: Sequence[str], folder: Path) -> None:
    """Stop a resume whose run allowed (``--allow-plugin``) or ran (``--mechanism``, ``--pair``)
    plugin modules this command line does not allow, naming every flag to add (exit 2)."""
    recorded = list(resumed.allow_plugin) + [spec.partition(":")[0] for spec in (resumed.mechanism, resumed.pair)
                                             if spec and ":" in spec]
    refusal = resume_refusal(folder, recorded, given)
    if refusal is not None:
        raise UsageError(refusal)


def _canonical_argv(args: argparse.Namespace, folder: Path) -> list[str]:
    """The run's own command line for ``run.json``: its options as parsed (abbreviations and
    ``--opt=value`` spelled out), input paths made portable (:func:`dpaudit.runs.rundir.portable`),
    without ``--out`` (the folder is wherever run.json is) and without ``--quiet``."""
    argv = ["run"]
    if args.config is not None:
        argv.append(rundir.portable(args.config, folder))
    for flag, value in (("--suite", args.suite), ("--samples", args.samples), ("--seed", args.seed),
                        ("--confidence", args.confidence), ("--jobs", args.jobs), ("--backend", args.backend),
                        ("--scheduler", args.scheduler), ("--mechanism", args.mechanism), ("--pair", args.pair),
                        ("--relation", args.relation), ("--epsilon", args.epsilon), ("--delta", args.delta),
                        ("--rho", args.rho),
                        ("--events", args.events), ("--search", args.search)):
        if value is not None:
            argv += [flag, repr(value) if isinstance(value, float) else str(value)]
    for flag, values in (("--family", args.family), ("--param", args.param), ("--allow-plugin", args.allow_plugin),
                         ("--rdp", args.rdp)):
        for value in values:
            argv += [flag, value]
    for flag, path in (("--data", args.data), ("--data-prime", args.data_prime)):
        if path is not None:
            argv += [flag, rundir.portable(path, folder)]
    if args.sequential:
        argv.append("--sequential")
    return argv


@dataclasses.dataclass(frozen=True)
class _Audit:
    """What the steps of one audit share once its plan is checked: the plan and the command line it
    came from, its fingerprint, the suite (None for a config or one mechanism), the run folder's
    path (None without ``--out``), where chunks run, the catalog's claims and documents, each
    scenario's planned claims, the one-run games an earlier attempt finished, the progress mode,
    and when the run started (wall clock and ``perf_counter``)."""

    plan: Plan
    argv: Sequence[str]
    fp: str
    suite: str | None
    out: Path | None
    execution: Execution
    registry: dict[str, Any]
    documents: dict[str, Any]
    expectations: list[Any]
    games: dict[str, Any]
    mode: str
    started: float
    clock: float
    # partial results.json rewrites, each encoding every result so far: amortised, not one per scenario
    partial: Amortised = dataclasses.field(default_factory=Amortised)

    def write_partial(self, results: list[AuditResult | OneRunScenario]) -> None:
        """A partial results.json of ``results`` (a crash or kill leaves a readable file), when one is due."""
        if self.out is not None:
            out = self.out
            self.partial.maybe(lambda: write_atomic(
                out / "results.json", dumps(_payload(self, results, False, time.perf_counter() - self.clock))))


def _audit(args: argparse.Namespace, argv: Sequence[str], folder: RunFolder | None, saved: dict[str, Any] | None,
           started: float, clock: float, emit: Callable[[str], Any]) -> int:
    """The audit of the plan, its table and footer (or ``--json`` document) given to ``emit``, the
    run's files written; its exit status."""
    plan = _checked_plan(args, saved)
    st = plan.settings
    budgets = _budgets(plan)
    ident = rundir.identity(st, plan.scenarios, plan.claims, budgets, plan.onerun)
    fp = fingerprint(ident)
    checkpoint = None
    if folder is not None and saved is not None:
        checkpoint = _resumed_checkpoint(args, folder, saved, ident, fp)
    elif folder is not None:
        checkpoint = _new_run_checkpoint(args, argv, plan, folder, ident, fp)
    out = folder.path if folder is not None else None
    # one-run games an earlier attempt finished: taken as played (stored secret), read before anything is rewritten
    games = saved_games(out, fp) if out is not None and saved is not None else {}
    mode = "off" if args.quiet else ("bar" if sys.stderr.isatty() else "log")
    heartbeat.configure(interval=None if mode == "off" else heartbeat.INTERVAL)  # a long call says it runs
    client = None
    if st.backend == "dask":
        modules = tuple({type(sc.mechanism).__module__ for sc in plan.scenarios})
        client = connect_dask(st.scheduler, st.jobs if st.jobs > 0 else 2, modules)
    execution = Execution(n_jobs=st.jobs, backend=st.backend, checkpoint=checkpoint, progress=mode, client=client)
    registry, documents = catalog.claims(), catalog.documents()
    suite = None if (args.mechanism or args.config) else (args.suite or "default")
    # each scenario's claims to check (None: the mechanism's own, known once it runs)
    expectations = [planned_claims(sc.expected, claims) for sc, claims in zip(plan.scenarios, plan.claims, strict=True)]
    expectations += [planned_claims(design.expected, design.claims) for design in plan.onerun]
    run = _Audit(plan=plan, argv=argv, fp=fp, suite=suite, out=out, execution=execution, registry=registry,
                 documents=documents, expectations=expectations, games=games, mode=mode, started=started, clock=clock)
    results: list[AuditResult | OneRunScenario] = []
    try:
        _audit_scenarios(run, budgets, results)
        _play_onerun(run, results)
    except KeyboardInterrupt as exc:  # a Ctrl-C between two audits: the scenarios done are the partial result
        if not interrupts.stopped_by_user(exc):
            raise
    finally:
        if client is not None:
            client.close()
    return _show_and_save(args, run, results, emit)


def _checked_plan(args: argparse.Namespace, saved: dict[str, Any] | None) -> Plan:
    """The run's plan (:func:`_plan`), refused when it selects nothing, when a results file of it
    would be refused (:func:`_check_sizes`) or when ``--scheduler`` comes without ``--backend dask``."""
    try:
        plan = _plan(args)
    except UsageError as exc:
        where = getattr(args, "started_in", None)
        if saved is not None and where and "cannot import" in str(exc):
            raise UsageError(f"{exc} (the run was started in {where}: resume from there, or put the module on "
                             "PYTHONPATH)") from None
        raise
    if not plan.scenarios and not plan.onerun:
        raise UsageError("nothing to audit: no scenario selected")
    _check_sizes(plan)
    if args.scheduler is not None and plan.settings.backend != "dask":
        raise UsageError("--scheduler needs --backend dask")
    return plan


def _budgets(plan: Plan) -> list[int]:
    """Each scenario's samples per side (the run's budget times its ``samples_factor``), each checked
    against the memory it needs before anything is written or drawn."""
    st = plan.settings
    # exact arithmetic: a float product rounds 2^62 + 1 down to 2^62 and would slip past the counters' limit
    budgets = [max(20, round(Fraction(st.samples) * Fraction(sc.samples_factor))) for sc in plan.scenarios]
    workers = Execution(n_jobs=st.jobs).workers(1 << 30)
    for budget in budgets:  # before anything is written or drawn: refused within a second, with the estimate
        memory.check_memory(budget, 1, 8, workers)
    return budgets


def _resumed_checkpoint(args: argparse.Namespace, folder: RunFolder, saved: dict[str, Any], ident: Any,
                        fp: str) -> Checkpoint:
    """``--resume``: the folder's checkpoint, once the run is checked to be the one its
    ``run.json`` recorded (no identity option, code, file or dpaudit changed) and the checkpoint's
    lines to be this run's (unusable lines dropped, with a warning, and their chunks redrawn)."""
    changed = rundir.differences(saved["identity"], ident)
    if changed and args.changing:
        given = ", ".join("CONFIG" if n == "config" else "--" + n.replace("_", "-") for n in args.changing)
        raise UsageError(f"--resume {folder.path}: {given} would change the run ({'; '.join(changed)}): a "
                         "folder holds one run; resume it unchanged (only --jobs, --backend, --scheduler and "
                         "--quiet may differ), or start a new run with another --out")
    code = sorted({c.split(".mechanism.code.", 1)[1].split(":", 1)[0] for c in changed if ".mechanism.code." in c})
    if code:  # named first: a run whose code changed mid-way would mix two mechanisms' counts
        raise UsageError(f"--resume {folder.path}: the mechanism's code changed since the run started (module "
                         f"{', '.join(code)}: its file's SHA-256 is not the one {rundir.RUN_FILE} recorded); "
                         "refusing to mix counts of two versions of the code; start a new run (--overwrite)")
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
    return checkpoint


def _new_run_checkpoint(args: argparse.Namespace, argv: Sequence[str], plan: Plan, folder: RunFolder, ident: Any,
                        fp: str) -> Checkpoint:
    """``--out DIR``: the folder cleared (``--overwrite``), its ``run.json`` and
    ``config.resolved.json`` written, and a fresh checkpoint."""
    if args.overwrite:
        folder.clear()
    folder.write_run(_canonical_argv(args, folder.path), ident, fp, os.getcwd())
    write_atomic(folder.path / "config.resolved.json", dumps({**_resolved(plan, argv), "fingerprint": fp}))
    return Checkpoint(folder.path / CHECKPOINT_FILE, fp, fresh=True)


def _payload(run: _Audit, results: list, complete: bool, wall: float) -> dict[str, Any]:
    """The results document of ``results`` (``--json``'s, results.json's); a partial one says which
    expectations went unchecked."""
    st = run.plan.settings
    doc = envelope(results, command=typed_command(run.argv), suite=run.suite, settings=st,
                   started=run.started, seconds=wall, complete=complete,
                   planned=len(run.plan.scenarios) + len(run.plan.onerun), environment=environment(),
                   documents=run.documents, fingerprint=run.fp, families=report_families())
    if not complete:  # what `summary` of a partial file says went unchecked
        unchecked, exact = unchecked_expectations(run.expectations, [r.records() for r in results])
        doc.update(expectations_unchecked=unchecked, expectations_unchecked_exact=exact)
    return doc


def _audit_scenarios(run: _Audit, budgets: list[int], results: list[AuditResult | OneRunScenario]) -> None:
    """Each multi-run scenario audited (or its pair searched) in turn, appended to ``results``; a
    partial results.json when one is due (:class:`~dpaudit.runtime.amortised.Amortised`); a user's Ctrl-C ends
    the loop."""
    plan, st = run.plan, run.plan.settings
    for index, (sc, claims, budget) in enumerate(zip(plan.scenarios, plan.claims, budgets, strict=True)):
        # progress is labelled by scenario, with an overall line of scenarios done
        here = dataclasses.replace(run.execution, label=printable(sc.name), position=(index, len(plan.scenarios)))
        context = RunContext(execution=here, key=(index,), scenario=sc.name, pair=sc.pair.description,
                             registry=run.registry)
        space = plan.searches[index] if plan.searches else None
        try:
            if space is not None:  # the pilot chooses the pair, the audit runs on fresh samples
                result = search.search_pair(
                    sc.mechanism, space, samples=budget, deltas=st.deltas, confidence=st.confidence,
                    seed=st.seed, claims=claims, expected=sc.expected, events=st.events,
                    sequential=st.sequential, context=context)
            else:
                result = audit_mechanism(
                    sc.mechanism, sc.pair.d, sc.pair.d_prime, samples=budget, deltas=st.deltas,
                    confidence=st.confidence, seed=st.seed, relation=sc.pair.relation, claims=claims,
                    expected=sc.expected, events=st.events, sequential=st.sequential, context=context)
        except InputError as exc:  # which scenario it was: a config may hold many
            raise InputError(f"scenario {sc.name!r}: {exc}") from None
        except runner.MechanismError as exc:
            raise runner.MechanismError(f"scenario {sc.name!r}: {exc}") from None
        # one mechanism or a config scenario without `expected`: the registry's errata are expected
        # refutations (a suite's scenarios state their own expectations)
        if run.suite is None and not sc.expected and is_builtin(sc.mechanism):
            result = with_registry_expectations(result, run.registry)
        results.append(result)
        if interrupts.USER_INTERRUPT.is_set():  # Ctrl-C: the scenario's partial result ends the run
            break
        if index + 1 < len(plan.scenarios) + len(plan.onerun):  # a killed run leaves a report
            run.write_partial(results)


def _play_onerun(run: _Audit, results: list[AuditResult | OneRunScenario]) -> None:
    """Each one-run design played in turn (a game an earlier attempt finished is taken as played),
    appended to ``results``; a partial results.json when one is due."""
    plan, st = run.plan, run.plan.settings
    for index, design in enumerate(plan.onerun):
        if interrupts.USER_INTERRUPT.is_set():
            break
        if run.mode != "off":
            print(f"one-run scenario {index + 1}/{len(plan.onerun)}: {printable(design.name)}", file=sys.stderr)
        results.append(onerun_scenario(design, seed=st.seed, confidence=st.confidence, registry=run.registry,
                                       saved=run.games.get(design.name), progress=run.mode != "off"))
        if index + 1 < len(plan.onerun):
            run.write_partial(results)


def _show_and_save(args: argparse.Namespace, run: _Audit, results: list[AuditResult | OneRunScenario],
                   emit: Callable[[str], Any]) -> int:
    """The final document: its table and footer (with the planner's notes on a missed expectation)
    or its JSON given to ``emit``, results.json, summary.txt and report.pdf written to ``--out``;
    the run's exit status."""
    plan, st, out = run.plan, run.plan.settings, run.out
    final = _payload(run, results, not interrupts.USER_INTERRUPT.is_set(), time.perf_counter() - run.clock)
    status = exit_status(final["records"], final["complete"])
    ok = status != EXIT_FAIL
    table = summary_table(final["records"], witness=getattr(args, "witness", False), wide=getattr(args, "wide", False))
    footer = _footer(final, plan, status, run.suite, out)
    if not ok and final["complete"]:  # no planner pilots after a Ctrl-C
        notes = missed_notes(final["records"], plan.scenarios, samples=st.samples, confidence=st.confidence,
                             seed=st.seed, program=program_name())
        footer += "".join(f"{note}\n" for note in notes)
    as_json = getattr(args, "json", False)
    document = dumps(final)
    written = []
    if out:  # results first: a reader that goes away while the table is printed loses the table, never the run
        write_atomic(out / "results.json", document)
        write_atomic(out / "summary.txt", table + footer)
        # The report is built from exactly what results.json holds, so `audit report` rebuilds it byte for byte.
        written = [out / "results.json", out / "summary.txt"]
        if write_report(final, out / "report.pdf"):
            written.append(out / "report.pdf")
    hand_over(document)  # the supervising parent re-checks it and derives the exit status itself
    # --json: stdout holds the JSON document only; the table goes nowhere, messages to stderr
    emit(document if as_json else table + footer)
    if written:
        print(f"wrote {', '.join(map(str, written))}", file=sys.stderr if as_json else sys.stdout)
    return status


def _check_sizes(plan: Plan) -> None:
    """Never a results file that ``summary`` and ``report`` would refuse (:mod:`dpaudit.results.saved`'s
    limits): the names and the number of scenarios are refused before anything runs."""
    check_plan_sizes([*((f"scenario {i} name", sc.name) for i, sc in enumerate(plan.scenarios)),
                      *((f"scenario {i} mechanism name", runner.mechanism_name(sc.mechanism))
                        for i, sc in enumerate(plan.scenarios)),
                      *((f"scenario {i} claim id", g.claim_id) for i, claims in enumerate(plan.claims)
                        for g in claims or ()),
                      *((f"one-run scenario {i} name", d.name) for i, d in enumerate(plan.onerun))],
                     len(plan.scenarios) + len(plan.onerun))


def _footer(final: dict[str, Any], plan: Plan, status: int, suite: str | None, out: Path | None) -> str:
    """The lines under the table: what was checked and whether as expected, the errata of a
    sequential suite, and for an interrupted run what is missing and how to resume it."""
    st = plan.settings
    words = settings_words(st.samples, st.confidence, st.seed, len(plan.scenarios), len(plan.onerun))
    footer = text_footer(final["records"], len(final["scenarios"]), words, final["seconds"], status != EXIT_FAIL,
                         final["complete"])
    if suite in catalog.SEQUENTIAL_SUITES:
        footer += errata_note(final["records"])
    if not final["complete"]:  # a Ctrl-C: the partial says so where it is read, as `summary` does
        footer += incomplete_note(done=len(final["scenarios"]), planned=final["scenarios_planned"],
                                  unchecked=final["expectations_unchecked"], status=status,
                                  exact=final["expectations_unchecked_exact"],
                                  resume=None if out is None else resume_command(out))
    return footer


def _resolved(plan: Plan, argv: Sequence[str]) -> dict[str, Any]:
    return {"argv": list(argv), "settings": dataclasses.asdict(plan.settings),
            "scenarios": [{"name": sc.name, "mechanism": runner.mechanism_name(sc.mechanism),
                           "params": mechanism_params(sc.mechanism), "relation": sc.pair.relation,
                           "pair": sc.pair.description, "expected": dict(sc.expected),
                           "samples_factor": sc.samples_factor}
                          for sc in plan.scenarios],
            "onerun": [{"name": d.name, "mechanism": mechanism_name(d), "relation": d.relation, "canaries": d.m,
                        "rule": d.rule.to_dict(), "deltas": list(d.deltas), "expected": dict(d.expected),
                        "description": d.description} for d in plan.onerun],
            "config": plan.source or None}
