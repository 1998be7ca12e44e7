"""``python -m audit``: run the built-in suite or a user's mechanism, list what is built in.

Exit status: 0 when every verdict is as expected and no unexpected violation appears,
1 otherwise, 2 for bad usage or input (a message, never a traceback).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import math
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import scipy

import audit
import reports
from audit import bench, catalog, config, runner
from audit.api import RunContext, audit_mechanism, mechanism_params
from audit.catalog import SUITES, Scenario
from audit.config import Plan, RunSettings
from audit.execution import Checkpoint, Execution, connect_dask
from audit.results import SCHEMA_VERSION, dumps, envelope, run_as_expected, write_atomic
from audit.saved import load_results, load_sweep
from audit.sweep import slopes, sweep
from dpcore import RELATIONS, Guarantee, InputError
from neighbors import Dataset, Pair
from reports.text import footer as text_footer
from reports.text import summary_table

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad usage or input: reported in one message with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would print usage and exit 2 itself
        raise UsageError(message)


def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is invalid: must be an integer >= {minimum}")
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
    parser = _Parser(prog="python -m audit", description="Empirical differential-privacy audits.")
    sub = parser.add_subparsers(dest="command", metavar="{run,list,sweep,report,summary,bench}",
                                parser_class=_Parser)
    run = sub.add_parser("run", help="audit the built-in suite, a config file, or one mechanism")
    run.add_argument("config", nargs="?", type=Path, help="a TOML config describing the scenarios (see configs/)")
    run.add_argument("--suite", default="default", choices=SUITES, help="built-in suite (default: default)")
    run.add_argument("--family", action="append", default=[], metavar="NAME",
                     help="only this family's scenarios of the suite (repeatable; see `list`)")
    run.add_argument("--samples", type=_int_at_least(100), default=None,
                     help="samples per side and scenario (default: 1000000, or the config's)")
    run.add_argument("--seed", type=_int_at_least(0), default=None, help="root seed (default: 0)")
    run.add_argument("--confidence", type=_confidence, default=None, help="confidence of each bound (default: 0.95)")
    run.add_argument("--jobs", type=_jobs, default=None, help="parallel workers, -1 for all cores (default: -1; results do not depend on it)")
    run.add_argument("--backend", choices=("local", "dask"), default=None,
                     help="where chunks run: local processes or a Dask cluster (default: local)")
    run.add_argument("--scheduler", default=None, help="Dask scheduler address, e.g. tcp://host:8786 "
                     "(default with --backend dask: a local cluster of --jobs workers)")
    run.add_argument("--resume", type=Path, metavar="DIR", help="continue the run whose --out was DIR")
    run.add_argument("--out", type=Path, help="write DIR/results.json and DIR/summary.txt")
    run.add_argument("--mechanism", help="a built-in mechanism name (see `list`) or pkg.module:attr")
    run.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                     help="a parameter of a built-in mechanism (repeatable); VALUE is JSON or text")
    run.add_argument("--pair", metavar="pkg.module:attr", help="a neighbors.Pair or (D, D') tuple to audit")
    run.add_argument("--data", type=Path, help="D as an .npz file of named columns")
    run.add_argument("--data-prime", type=Path, help="D' as an .npz file of named columns")
    run.add_argument("--relation", default="add-remove", choices=RELATIONS, help="neighbour relation of the pair")
    run.add_argument("--epsilon", type=float, help="a claim to check: epsilon (with --delta)")
    run.add_argument("--delta", type=float, default=0.0, help="delta of the --epsilon claim (default: 0)")
    run.add_argument("--events", default=None, choices=("auto", "rows", "threshold", "histogram"),
                     help="force one view of the outputs for event selection (default: auto, every view)")
    run.add_argument("--sequential", action="store_true", default=None,
                     help="stop each audit as soon as a violation is certified or none can be reached")
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    sub.add_parser("list", help="show the built-in mechanisms and suites")
    rp = sub.add_parser("report", help="rebuild the PDF report from saved results (no re-sampling)")
    rp.add_argument("results", type=Path, nargs="+", help="a results.json, optionally followed by sweep.json files")
    rp.add_argument("-o", "--output", type=Path, default=Path("report.pdf"), help="PDF to write (default report.pdf)")
    bn = sub.add_parser("bench", help="throughput per mechanism family vs a plain-numpy reference, and tightness")
    bn.add_argument("--samples", type=_int_at_least(10_000), default=2_000_000, help="samples per side (default 2e6)")
    bn.add_argument("--out", type=Path, default=Path("bench.json"), help="JSON file to write (default bench.json)")
    sm = sub.add_parser("summary", help="print the summary table of a saved results.json (checked, not re-run)")
    sm.add_argument("results", type=Path, help="a results.json written by run --out")
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
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
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
    except Exception as exc:
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
    try:
        with np.load(path, allow_pickle=False) as data:
            return Dataset({k: data[k] for k in data.files})
    except InputError as exc:
        raise InputError(f"{flag} {path}: {exc}") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{flag} {path}: cannot read an .npz dataset ({exc})") from None


def _user_scenario(args: argparse.Namespace) -> Scenario:
    if ":" not in args.mechanism:
        mechanism = catalog.build_mechanism(args.mechanism, _parse_params(args.param), "--mechanism")
    else:
        if args.param:
            raise UsageError("--param applies to built-in mechanisms only")
        mechanism = _load_attr(args.mechanism, "--mechanism")
        if not callable(getattr(mechanism, "sample", None)):
            raise UsageError(f"--mechanism {args.mechanism!r} has no sample(data, size, rng) method")
    if args.pair:
        pair = _load_attr(args.pair, "--pair")
        if isinstance(pair, tuple) and len(pair) == 2:
            pair = Pair(pair[0], pair[1], f"pair {args.pair}", args.relation)
        if not isinstance(pair, Pair):
            raise UsageError(f"--pair {args.pair!r} must be a neighbors.Pair or a (D, D') tuple")
    elif args.data and args.data_prime:
        pair = Pair(_load_npz(args.data, "--data"), _load_npz(args.data_prime, "--data-prime"),
                    f"{args.data.name} vs {args.data_prime.name}", args.relation)
    else:
        raise UsageError("--mechanism needs a neighbouring pair: --pair pkg.module:attr, or --data and --data-prime")
    return Scenario(getattr(mechanism, "name", args.mechanism), mechanism, pair)


def _claims(args: argparse.Namespace, scenario: Scenario) -> list[Guarantee] | None:
    if args.epsilon is None:
        return None
    if not (math.isfinite(args.epsilon) and args.epsilon >= 0):
        raise UsageError(f"--epsilon {args.epsilon} is invalid: must be a finite number >= 0")
    if not 0 <= args.delta < 1:
        raise UsageError(f"--delta {args.delta} is invalid: must be in [0, 1)")
    return [Guarantee(epsilon=args.epsilon, delta=args.delta, relation=scenario.pair.relation, source="command line", claim_id="user/claim")]


def _plan(args: argparse.Namespace) -> Plan:
    """The scenarios and settings of this run: a config file, one mechanism, or a built-in suite;
    flags given on the command line override the config's [run] values."""
    if args.config:
        if args.mechanism or args.pair or args.data or args.param or args.epsilon is not None or args.family:
            raise UsageError("a config file describes its scenarios: drop --mechanism, --pair, --data, --param, "
                             "--epsilon, --family")
        plan = config.load(args.config)
    elif args.mechanism:
        if args.family:
            raise UsageError("--family selects scenarios of a built-in suite: drop it with --mechanism")
        sc = _user_scenario(args)
        plan = Plan(RunSettings(), [sc], [_claims(args, sc)])
    else:
        if args.pair or args.data or args.param or args.epsilon is not None:
            raise UsageError("--pair, --data, --param and --epsilon need --mechanism")
        scenarios = catalog.suite(args.suite, args.family)
        plan = Plan(RunSettings(), scenarios, [sc.claims for sc in scenarios])
    overrides = {k: v for k, v in {"samples": args.samples, "seed": args.seed, "confidence": args.confidence,
                                   "jobs": args.jobs, "backend": args.backend, "scheduler": args.scheduler,
                                   "events": args.events, "sequential": args.sequential}.items() if v is not None}
    return dataclasses.replace(plan, settings=dataclasses.replace(plan.settings, **overrides))


def _run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    started = time.time()
    clock = time.perf_counter()
    if args.resume:
        argv = _resume_argv(args.resume)
        args = build_parser().parse_args(argv)
        args.out = args.out or args.resume
    plan = _plan(args)
    st = plan.settings
    checkpoint = None
    if args.out:
        write_atomic(args.out / "run.json", dumps({"schema": SCHEMA_VERSION, "argv": list(argv)}))
        write_atomic(args.out / "config.resolved.json", dumps(_resolved(plan, argv)))
        checkpoint = Checkpoint(args.out / "checkpoint.jsonl")
    mode = "off" if args.quiet else ("bar" if sys.stderr.isatty() else "log")
    client = None
    if st.backend == "dask":
        modules = tuple({type(sc.mechanism).__module__ for sc in plan.scenarios})
        client = connect_dask(st.scheduler, st.jobs if st.jobs > 0 else 2, modules)
    execution = Execution(n_jobs=st.jobs, backend=st.backend, checkpoint=checkpoint, progress=mode)
    registry, documents = catalog.claims(), catalog.documents()

    def payload(results: list, complete: bool, wall: float) -> dict[str, Any]:
        return envelope(results, command=["python", "-m", "audit", *argv],
                        suite=None if (args.mechanism or args.config) else args.suite, settings=st, started=started,
                        seconds=wall, complete=complete, planned=len(plan.scenarios), environment=_environment(),
                        documents=documents)

    try:
        results = []
        for index, (sc, claims) in enumerate(zip(plan.scenarios, plan.claims)):
            results.append(audit_mechanism(
                sc.mechanism, sc.pair.d, sc.pair.d_prime, samples=max(20, round(st.samples * sc.samples_factor)), deltas=st.deltas,
                confidence=st.confidence, seed=st.seed, relation=sc.pair.relation, claims=claims,
                expected=sc.expected, events=st.events, sequential=st.sequential,
                context=RunContext(execution=execution, key=(index,), scenario=sc.name, pair=sc.pair.description,
                                   registry=registry)))
            if args.out and index + 1 < len(plan.scenarios):  # an interrupted run still leaves a (partial) report
                write_atomic(args.out / "results.json", dumps(payload(results, False, time.perf_counter() - clock)))
    finally:
        if client is not None:
            client.close()
    final = payload(results, True, time.perf_counter() - clock)
    table = summary_table(final["records"])
    ok = final["as_expected"]
    footer = text_footer(final["records"], len(results), f"budget {st.samples} samples per side, confidence "
                         f"{st.confidence}, seed {st.seed}", final["seconds"], ok)
    sys.stdout.write(table + footer)
    if args.out:
        write_atomic(args.out / "results.json", dumps(final))
        write_atomic(args.out / "summary.txt", table + footer)
        # The report is built from exactly what results.json holds, so `audit report` rebuilds it byte for byte.
        reports.write_pdf(json.loads(dumps(final)), args.out / "report.pdf")
    return EXIT_OK if ok else EXIT_FAIL


def _resume_argv(folder: Path) -> list[str]:
    try:
        saved = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        argv = saved["argv"]
        if saved.get("schema") != SCHEMA_VERSION or not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise ValueError("unexpected content")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--resume {folder}: no resumable run there (run.json: {exc})") from None
    if "--resume" in argv:
        raise UsageError(f"--resume {folder}: run.json names another resume")
    return argv


def _resolved(plan: Plan, argv: Sequence[str]) -> dict[str, Any]:
    return {"argv": list(argv), "settings": dataclasses.asdict(plan.settings),
            "scenarios": [{"name": sc.name, "mechanism": getattr(sc.mechanism, "name", type(sc.mechanism).__name__),
                           "params": mechanism_params(sc.mechanism), "relation": sc.pair.relation, "pair": sc.pair.description,
                           "expected": dict(sc.expected), "samples_factor": sc.samples_factor}
                          for sc in plan.scenarios],
            "config": plan.source or None}


def _environment() -> dict[str, str]:
    return {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
            "joblib": joblib.__version__, "machine": platform.machine(), "system": platform.system()}


def _list() -> int:
    print("Built-in mechanisms (--mechanism NAME --param KEY=VALUE ...):")
    for family in catalog.families():
        print(f"  [{family.name}] {family.about}")
        for entry in family.mechanisms:
            print(f"    {entry.name:40s} {entry.about}")
    print(f"\nSweeps (python -m audit sweep NAME): {', '.join(catalog.sweeps())}")
    for suite in SUITES:
        print(f"\nSuite {suite!r} (python -m audit run --suite {suite}):")
        for sc in catalog.suite(suite):
            print(f"  {sc.name:18s} {sc.about}")
            print(f"  {'':18s} pair: {sc.pair.description} [{sc.pair.relation}]")
            for cid, verdict in sc.expected.items():
                print(f"  {'':18s} expects {cid}: {verdict}")
    return EXIT_OK


def _sweep(args: argparse.Namespace, argv: Sequence[str]) -> int:
    records = sweep(args.family, args.n, samples=args.samples, seed=args.seed, confidence=args.confidence,
                    n_jobs=args.jobs)
    rows = [("n", "claim", "kind", "eps_claim", "eps_exact", "eps_lower", "verdict")]
    rows += [(str(r["n"]), r["claim_id"], r["claim_kind"], f"{r['epsilon_claim']:.4g}", f"{r['epsilon_exact']:.4g}",
              f"{r['epsilon_lower']:.4g}", r["verdict"]) for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    text = "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)
    fitted = slopes(records)
    text += "\n\nlog-log slopes against n (the paper's rate is -1):\n" + "\n".join(
        f"  {cid}: eps_claim {s['epsilon_claim']:+.3f}, eps_exact {s['epsilon_exact']:+.3f}" for cid, s in fitted.items())
    print(text)
    if args.out:
        write_atomic(args.out / "sweep.json", dumps({
            "schema": SCHEMA_VERSION, "dpaudit_version": audit.__version__, "command": ["python", "-m", "audit", *argv],
            "family": args.family, "n": args.n, "samples": args.samples, "seed": args.seed,
            "confidence": args.confidence, "records": records, "slopes": fitted}))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
        if args.command == "run":
            return _run(args, argv)
        if args.command == "list":
            return _list()
        if args.command == "sweep":
            return _sweep(args, argv)
        if args.command == "report":
            payload = load_results(args.results[0])
            sweeps = [load_sweep(p) for p in args.results[1:]]
            reports.write_pdf(payload, args.output, sweeps)
            complete = payload.get("complete", True)
            print(f"wrote {args.output}" + ("" if complete else " (PARTIAL results: the run was interrupted)"))
            return EXIT_OK
        if args.command == "bench":
            report = bench.run(samples=args.samples)
            sys.stdout.write(bench.table(report))
            write_atomic(args.out, dumps(report))
            return EXIT_OK
        if args.command == "summary":
            payload = load_results(args.results)
            sys.stdout.write(summary_table(payload["records"]))
            return EXIT_OK if run_as_expected(payload["records"]) else EXIT_FAIL
        build_parser().print_help()
        return EXIT_USAGE
    except (UsageError, InputError, runner.MechanismError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
