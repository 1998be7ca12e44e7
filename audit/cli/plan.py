"""``plan``: samples per side a scenario needs to refute its claims, and how long.
"""

from __future__ import annotations

import argparse
import sys

from dpaudit import catalog
from dpaudit.cli.common import EXIT_OK, UsageError
from dpaudit.engine import plan as budget_plan
from dpaudit.engine.execution import Execution


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
            sys.stdout.write(_one_answer(budget_plan.render(found), found.sequential))
            return EXIT_OK
        known += names
    raise UsageError(f"plan: scenario {args.scenario!r} is not in a built-in suite"
                     f"{catalog.suggest(args.scenario, known)}; see `python -m audit list`")


def _one_answer(text: str, sequential: bool) -> str:
    """The planner's explanation with one sample count per claim, for the question asked: a one-look
    run's budget, or (as the errata suite runs) the sequential run's; the other mode's count is
    what ``--single-look`` (or its absence) answers."""
    drop = (("    one look:",) if sequential else
            ("    sequential rule:", "    with the scenario's budget, the sequential run"))
    lines = text.splitlines()
    if sequential:  # the expected stop, when the scenario's budget reaches; else the budget that certifies
        stops = {i for i, line in enumerate(lines) if line.startswith("    with the scenario's budget")}
        lines = [line for i, line in enumerate(lines)
                 if not (line.startswith("    sequential rule:") and i + 1 in stops)]
    return "\n".join(line for line in lines if not line.startswith(drop)) + "\n"
