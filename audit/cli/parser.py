"""The argument parser of ``python -m dpaudit`` and the types of its flags (argparse only, so
``--help`` costs no numpy).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import NoReturn

from dpaudit.runtime.paths import path_problem

# The closed sets the flags take, written out so that `--help` and `--version` import no numpy and
# no catalog (tests/test_cli_startup.py holds them equal to dpaudit.catalog.SUITES and
# dpaudit.core.RELATIONS).
SUITES = ("default", "full", "errata", "onerun", "libraries")
RELATIONS = ("add-remove", "swap", "label-flip", "zero-out", "user-level")
# Suites of the app layer (dpaudit.pipelines), not of the catalog: `opacus` trains real Opacus pipelines
# (the opacus extra), dpaudit.pipelines.opacus_suite.
PIPELINE_SUITES = ("opacus",)
# The subcommands in the one order the usage line, the help's list and the "no command" message give.
COMMANDS = ("run", "list", "report", "plan", "bench", "summary", "sweep")
# The parts `bench --only` keeps (dpaudit.runs.bench.PARTS; tests/test_bench.py holds them equal).
BENCH_PARTS = ("throughput", "views", "tightness", "benchmarks", "costs")


# The exit codes, as --help states them (README.md, "Exit status", says the same).
EXIT_CODES = ("exit status: 0 every expectation checked and met; 1 a privacy finding (an unexpected refutation or a "
              "missed expected one); 2 bad usage or input (the user's code failing or exiting included); 3 an "
              "internal or environment failure; 130 an interrupted, incomplete run (SIGINT: Ctrl-C, timeout -s INT), "
              "and `summary` of its file, unless what was checked holds a finding (1): never 0, and `run --resume "
              "DIR` continues it")


def program_name() -> str:
    """How the user called us: ``dpaudit`` (the console script), ``python -m dpaudit`` or
    ``python -m audit``, so that help and messages name the command that was typed."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name in ("dpaudit.__main__", "audit.__main__"):
        return f"python -m {spec.name.partition('.')[0]}"
    return "dpaudit"


class UsageError(Exception):
    """Bad usage of the command line: exit status 2 with a one-line message."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse would print usage and exit 2 itself
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


def _path(text: str) -> Path:
    """A path as given: refused when empty (``Path('')`` would be the current folder), holding a
    NUL byte, or too long to name a file (:func:`dpaudit.runtime.files.path_problem`)."""
    problem = path_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{text[:80]!r}{'...' if len(text) > 80 else ''} {problem}")
    return Path(text)


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
    """The ``dpaudit`` parser: the top-level options, then each subcommand in :data:`COMMANDS`' order."""
    prog = program_name()
    parser = _Parser(prog=prog, description="Empirical differential-privacy audits.",
                     epilog=f"`{prog} list` shows every built-in mechanism with its parameters; "
                            f"`{prog} COMMAND -h` the options of one command.  {EXIT_CODES}.")
    parser.add_argument("--version", action="store_true", help="print dpaudit's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(COMMANDS) + "}", parser_class=_Parser)
    _add_run(sub)
    _add_list(sub)
    _add_report(sub)
    _add_plan(sub)
    _add_bench(sub)
    _add_summary(sub)
    _add_sweep(sub)
    assert tuple(sub.choices) == COMMANDS, "COMMANDS must list the subcommands in the order they are added"
    return parser


def _add_run(sub: argparse._SubParsersAction[_Parser]) -> None:
    """`run`: audit the built-in suite, a config file, or one mechanism (or search its pair)."""
    run = sub.add_parser("run", help="audit the built-in suite, a config file, or one mechanism",
                         epilog=EXIT_CODES + ".")
    run.add_argument("config", nargs="?", type=_path, help="a TOML config describing the scenarios (see configs/)")
    run.add_argument("--suite", default=None, choices=SUITES + PIPELINE_SUITES,
                     help="built-in suite (default: default); opacus: a real Opacus pipeline and its faults")
    run.add_argument("--family", action="append", default=[], metavar="NAME",
                     help="only this family's scenarios of the suite (repeatable; see `list`)")
    run.add_argument("--samples", type=_int_at_least(100), default=None,
                     help="samples per side and scenario (default: 1000000, or the config's)")
    run.add_argument("--seed", type=_int_at_least(0), default=None, help="root seed (default: 0)")
    run.add_argument("--confidence", type=_confidence, default=None,
                     help="confidence of each bound (default: 0.95; assert_private's is 0.99; a built-in "
                          "suite's is its own: default and full 0.9999, errata 0.9995, libraries 0.9997)")
    run.add_argument("--jobs", type=_jobs, default=None,
                     help="at most this many worker processes, -1 for all cores (default: -1); capped at the "
                          "chunks to run and the CPUs, small budgets run in process, and results do not depend on it")
    run.add_argument("--backend", choices=("local", "dask"), default=None,
                     help="where chunks run: local processes or a Dask cluster (default: local)")
    run.add_argument("--scheduler", default=None, help="Dask scheduler address, e.g. tcp://host:8786 "
                     "(default with --backend dask: a local cluster of --jobs workers)")
    run.add_argument("--resume", type=_path, metavar="DIR",
                     help="continue the run in DIR exactly as it started (DIR may have moved); only --jobs, "
                          "--backend, --scheduler and --quiet may change; refused if the modules, files or "
                          "environment variables the mechanism reached from its import to its first chunk changed")
    run.add_argument("--out", type=_path, metavar="DIR",
                     help="write the run to DIR: results.json, summary.txt and, with the [report] extra installed, "
                          "report.pdf (also run.json and checkpoint.jsonl, which --resume DIR reads)")
    run.add_argument("--overwrite", action="store_true",
                     help="with --out: replace the run DIR already holds (start clean; never mixed)")
    run.add_argument("--allow-plugin", action="append", default=[], metavar="pkg.module",
                     help="let a config name mechanisms of this module (and its submodules); repeatable")
    run.add_argument("--mechanism", help="a built-in mechanism name (see `list`) or pkg.module:attr")
    run.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                     help="a parameter of a built-in mechanism (repeatable); VALUE is JSON or text")
    run.add_argument("--pair", metavar="pkg.module:attr", help="a neighbors.Pair or (D, D') tuple to audit")
    run.add_argument("--data", type=_path, help="D as an .npz file of named columns")
    run.add_argument("--data-prime", type=_path, help="D' as an .npz file of named columns")
    run.add_argument("--relation", default=None, choices=RELATIONS,
                     help="neighbour relation of the pair (default: add-remove)")
    run.add_argument("--search", metavar="SPACE",
                     help="with --mechanism and no pair: search the pair (a pilot, then an audit on fresh samples): "
                          "queries:DIM (vectors of DIM query answers, |q_i - q'_i| <= 1) or records (neighbours of "
                          "the --data records under --relation)")
    run.add_argument("--epsilon", type=float, help="a claim to check: epsilon (with --delta)")
    run.add_argument("--delta", type=float, default=None, help="delta of the --epsilon claim (default: 0)")
    run.add_argument("--rho", type=float, default=None,
                     help="a rho-zCDP claim to check, through the (eps, delta) curve it implies (CKS 2020, Prop. 12)")
    run.add_argument("--rdp", action="append", default=[], metavar="ALPHA:EPS",
                     help="an (alpha, eps)-RDP claim to check; repeat for a curve of orders (one claim)")
    run.add_argument("--events", default=None, choices=("auto", "rows", "threshold", "histogram", "floating"),
                     help="force one view of the outputs for event selection (default: auto, every view)")
    run.add_argument("--sequential", action="store_true", default=None,
                     help="stop each audit as soon as a violation is certified or none can be reached")
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    run.add_argument("--witness", action="store_true", help="print each row's witness event and counts under it")
    run.add_argument("--wide", action="store_true",
                     help="the wide table: every column (status, eps_exact, eps_sup) and the premise notes")
    run.add_argument("--json", action="store_true",
                     help="print the results as JSON (schema: python -m dpaudit.results run) instead of the "
                          "table; messages go to stderr")


def _add_list(sub: argparse._SubParsersAction[_Parser]) -> None:
    """`list`: the catalog, one mechanism in detail, or the sample configs."""
    ls = sub.add_parser("list", help="the built-in mechanisms (with their parameters), sweeps, suites and configs")
    ls.add_argument("mechanism", nargs="?", help="one mechanism in detail: parameters and the registry's claims")
    ls.add_argument("--configs", action="store_true", help="the sample configs shipped with dpaudit, with their paths")
    ls.add_argument("--json", action="store_true",
                    help="the catalog, or with NAME that mechanism, as JSON (schema "
                         "dpaudit/cli/schemas/list.schema.json)")


def _add_report(sub: argparse._SubParsersAction[_Parser]) -> None:
    """`report`: rebuild the PDF from saved results."""
    rp = sub.add_parser("report", help="rebuild the PDF report from saved results (no re-sampling)")
    rp.add_argument("results", type=_path, nargs="+",
                    help="a results.json (or the folder run --out wrote), optionally followed by sweep.json files")
    rp.add_argument("-o", "--output", type=_path, default=Path("report.pdf"), help="PDF to write (default report.pdf)")


def _add_plan(sub: argparse._SubParsersAction[_Parser]) -> None:
    """`plan`: the samples a scenario needs, or the canaries a one-run audit needs."""
    pl = sub.add_parser("plan", help="samples per side a built-in scenario needs to refute its claims (or reach "
                                     "--epsilon), from a pilot run, with the expected wall time; for a one-run "
                                     "design (or --onerun), the canaries each claim needs")
    pl.add_argument("scenario", nargs="?",
                    help="a scenario of a built-in suite (see `list`), e.g. align-alg2-zero-out, or a one-run design "
                         "of `run --suite onerun`, e.g. dpsgd-whitebox-noise-halved")
    goal = pl.add_mutually_exclusive_group()
    goal.add_argument("--target", choices=("violation",), default="violation",
                      help="refute the scenario's claims (default)")
    goal.add_argument("--epsilon", type=float, help="instead, reach eps_lower >= EPSILON (at --delta)")
    pl.add_argument("--delta", type=float, default=None, help="delta of --epsilon (default: 0)")
    pl.add_argument("--samples", type=_int_at_least(100), default=1_000_000,
                    help="the run's base budget; the scenario's own is this times its samples_factor")
    pl.add_argument("--seed", type=_int_at_least(0), default=0, help="root seed (default: 0)")
    pl.add_argument("--confidence", type=_confidence, default=None,
                    help="confidence of each bound (default: a built-in suite's scenario is planned at its suite's, "
                         "as the suite runs it: errata 0.9995, full 0.9999; a one-run design or --onerun at 0.95)")
    pl.add_argument("--jobs", type=_jobs, default=-1, help="workers for the pilot (default: all cores)")
    pl.add_argument("--single-look", action="store_true",
                    help="plan a run without the sequential rule (the errata suite's scenarios use it)")
    pl.add_argument("--onerun", action="store_true",
                    help="no scenario: the canaries a one-run audit needs to reach eps_lower >= --epsilon at --delta "
                         "(default 1e-5) under a score model (--mu or --rr-epsilon; neither: a perfect scorer)")
    model = pl.add_mutually_exclusive_group()
    model.add_argument("--mu", type=float, default=None,
                       help="one-run score model: Gaussian canary scores N(mu*S, 1), i.e. mu-GDP per canary "
                            "(replaces a design's pilot estimate)")
    model.add_argument("--rr-epsilon", type=float, default=None,
                       help="one-run score model: randomized response per canary at this epsilon")
    pl.add_argument("--canaries-per-run", type=_int_at_least(2), default=None, metavar="M",
                    help="with --onerun: also answer in runs of M canaries each")
    pl.add_argument("--pilots", type=_int_at_least(1), default=4,
                    help="one-run design: pilot games pooled to estimate the score model (default 4)")
    pl.add_argument("--json", action="store_true",
                    help="print the plan as JSON (schema: python -m dpaudit.results plan; kind multi-run-plan "
                         "for a scenario of a suite, one-run-plan for a one-run design or --onerun)")


def _add_bench(sub: argparse._SubParsersAction[_Parser]) -> None:
    """`bench`: throughput per family against plain numpy, and tightness."""
    bn = sub.add_parser("bench", help="throughput per mechanism family vs a plain-numpy reference, and tightness")
    bn.add_argument("--samples", type=_int_at_least(10_000), default=2_000_000, help="samples per side (default 2e6)")
    bn.add_argument("--out", type=_path, default=None, metavar="FILE",
                    help="also write the measurements as JSON to FILE (default: print only)")
    bn.add_argument("--seeds", type=_int_at_least(1), default=1,
                    help="seeds per view for eps_lower / ceiling (median and minimum; default 1)")
    bn.add_argument("--json", action="store_true", help="print the measurements as JSON instead of the table")
    bn.add_argument("--quick", action="store_true",
                    help="tightness rows at --samples too and no extra benchmarks: a smoke run")
    bn.add_argument("--family", action="append", default=[], metavar="NAME",
                    help="only this family's cases, tightness rows and benchmarks, and the default suite's "
                         "scenarios of it (repeatable; see `list`)")
    bn.add_argument("--reps", type=_int_at_least(1), default=3,
                    help="interleaved runs of each timed command and of ours vs split-and-count per case; "
                         "the median is reported (default 3)")
    bn.add_argument("--only", action="append", default=[], choices=BENCH_PARTS, metavar="PART",
                    help=f"only these parts of the bench (repeatable; one of {', '.join(BENCH_PARTS)})")
    bn.add_argument("--errata", action="store_true",
                    help="the costs include the errata suite's run (minutes)")
    bn.add_argument("--tests", action="store_true",
                    help="the costs include the README's test command, run in this checkout (minutes)")


def _add_summary(sub: argparse._SubParsersAction[_Parser]) -> None:
    """`summary`: the table of a saved results.json, checked and not re-run."""
    sm = sub.add_parser("summary", help="print the summary table of a saved results.json (checked, not re-run)",
                        epilog=EXIT_CODES + ".")
    sm.add_argument("results", type=_path, help="a results.json written by run --out, or that folder")
    sm.add_argument("--witness", action="store_true", help="print each row's witness event and counts under it")
    sm.add_argument("--wide", action="store_true",
                    help="the wide table: every column (status, eps_exact, eps_sup) and the premise notes")
    sm.add_argument("--json", action="store_true",
                    help="print the checked results as JSON (schema: python -m dpaudit.results summary)")


def _add_sweep(sub: argparse._SubParsersAction[_Parser]) -> None:
    """`sweep`: eps_claim(n), eps_exact(n) and eps_lower(n) for a KL family."""
    sw = sub.add_parser("sweep", help="rates: eps_claim(n), eps_exact(n), eps_lower(n) for a KL mechanism family")
    sw.add_argument("family", help="a sweep of the catalog (see `list`), e.g. kl-mab, kl-linear, kl-rlhf")
    sw.add_argument("--n", type=_sizes, default=[10, 20, 40, 80, 160], help="dataset sizes, comma separated")
    sw.add_argument("--samples", type=_int_at_least(100), default=200_000, help="samples per side and size")
    sw.add_argument("--seed", type=_int_at_least(0), default=0, help="root seed (default: 0)")
    sw.add_argument("--confidence", type=_confidence, default=0.95, help="confidence of each bound (default: 0.95)")
    sw.add_argument("--jobs", type=_jobs, default=1, help="parallel workers, -1 for all cores")
    sw.add_argument("--out", type=_path, help="write DIR/sweep.json")


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommand parsers of ``parser`` (of :func:`build_parser`), by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def with_hint(message: str, argv: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """argparse's ``message`` with a "did you mean" for each mistyped flag (``--sampels`` ->
    ``--samples``) among the options of the subcommand ``argv`` names, or for a mistyped subcommand."""
    # dpaudit.core imports numpy: loaded on this error path only, as main() loads the verbs, never for --help
    did_you_mean = importlib.import_module("dpaudit.core").did_you_mean
    commands = subcommands(parser)
    prefix = "unrecognized arguments: "
    if message.startswith(prefix):
        command = next((a for a in argv if a in commands), None)
        target = commands[command] if command else parser
        options = [o for action in target._actions for o in action.option_strings if o.startswith("--")]
        shown = []
        for token in message[len(prefix):].split():
            name = token.partition("=")[0]
            hint = did_you_mean(name, options, quote=False) if name.startswith("-") else ""
            shown.append(token + hint)
        return prefix + " ".join(shown)
    if message.startswith("argument {") and "invalid choice: " in message:  # the subcommand
        typed = next((a for a in argv if not a.startswith("-")), "")
        return message + did_you_mean(typed, commands)
    return message


def _sizes(text: str) -> list[int]:
    try:
        sizes = [_integer(part) for part in text.split(",") if part.strip()]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not sizes or min(sizes) < 2:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: sizes must be integers >= 2")
    return sizes
