"""``plan``: samples per side a scenario needs to refute its claims, and how long; for a one-run
design (``run --suite onerun``), the canaries each claim needs; ``plan --onerun``, the canaries a
target ε_LB needs under a score model (:mod:`dpaudit.onerun.planner`).
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import sys
from typing import Any

from dpaudit import catalog
from dpaudit.cli.common import EXIT_OK
from dpaudit.cli.parser import UsageError, program_name
from dpaudit.engine import plan as budget_plan
from dpaudit.onerun.planner import (
    MAX_PILOT_CANARIES,
    MAX_PILOT_SECONDS,
    MAX_PLANNED_CANARIES,
    MU_MAX,
    RR_EPSILON_MAX,
    PilotProgress,
    ScoreModel,
    model_counts,
    model_epsilon,
    pilot_model,
    plan_canaries,
    plan_claim,
)
from dpaudit.onerun.steinke import epsilon_ceiling
from dpaudit.results.document import dumps
from dpaudit.runtime.execution import Execution
from dpaudit.runtime.progress import Heartbeat, progress_line, projected_end

# A one-run design's plan (and --onerun's) is at the audits' 0.95: the onerun suite's designs carry their
# own levels; a multi-run scenario of a built-in suite is planned at its suite's (catalog.SUITE_CONFIDENCE).
ONE_RUN_CONFIDENCE = 0.95


def plan_command(args: argparse.Namespace) -> int:
    """``plan``: the scenario is looked up in the errata suite, then the full one (so it is built, and
    keyed, as a run of that suite would), then among the one-run designs; one line
    ``samples_per_side=N`` (or ``canaries=N``), then the explanation."""
    if args.delta is not None and args.epsilon is None:
        raise UsageError("--delta goes with --epsilon")
    given_confidence = args.confidence
    if args.confidence is None:  # one-run plans read args.confidence; a suite's scenario takes its suite's below
        args.confidence = ONE_RUN_CONFIDENCE
    _model(args)  # the one-run flags' ranges, before the catalog's designs are built
    if args.onerun:
        if args.scenario is not None:
            raise UsageError(f"--onerun plans from a score model, not a scenario: drop {args.scenario!r} (a one-run "
                             "design is planned by its name alone) or --onerun")
        with Heartbeat("plan --onerun"):
            return _plan_generic(args)
    if args.scenario is None:
        raise UsageError("plan needs a scenario (see `list`), or --onerun --epsilon E")
    given = (("--mu", args.mu), ("--rr-epsilon", args.rr_epsilon), ("--canaries-per-run", args.canaries_per_run))
    onerun_only = [flag for flag, value in given if value is not None]
    known: list[str] = []
    for suite in ("errata", "full"):
        scenarios = catalog.suite(suite)
        names = [sc.name for sc in scenarios]
        if args.scenario in names:
            if onerun_only:
                raise UsageError(f"{onerun_only[0]} goes with a one-run design or --onerun, not with the multi-run "
                                 f"scenario {args.scenario!r}")
            index = names.index(args.scenario)
            _say(f"plan {args.scenario}: {budget_plan.announce()}; a progress line every 5 s with its projected end")
            with Heartbeat(f"plan {args.scenario}"):  # the simulations and timed chunks have no progress of their own
                # as its suite runs it: at the suite's confidence unless --confidence says otherwise
                confidence = (catalog.SUITE_CONFIDENCE.get(suite, ONE_RUN_CONFIDENCE) if given_confidence is None
                              else given_confidence)
                found = budget_plan.plan(scenarios[index], confidence=confidence, seed=args.seed, key=(index,),
                                         samples=args.samples, epsilon=args.epsilon, delta=args.delta,
                                         execution=Execution(n_jobs=args.jobs, progress="log",
                                                             label=f"plan {args.scenario}: pilot audit"),
                                         sequential=suite in catalog.SEQUENTIAL_SUITES and not args.single_look)
            sys.stdout.write(dumps(multi_run_document(found)) + "\n" if args.json
                             else _one_answer(budget_plan.render(found), found.sequential))
            return EXIT_OK
        known += names
    designs = onerun_names()
    if args.scenario in designs:  # names are known unbuilt: a typo never builds a design
        if _designs.cache_info().currsize == 0:  # building every one-run design takes seconds of CPU: say so first
            _say(f"plan {args.scenario}: not a multi-run scenario; building the one-run designs to look for it")
        design = onerun_design(args.scenario)
        if design is not None:
            if args.canaries_per_run is not None:
                raise UsageError("--canaries-per-run goes with --onerun: a design is planned in runs of its own m")
            with Heartbeat(f"plan {args.scenario}"):  # a pilot game may train for minutes
                return _plan_design(design, args)
    known += designs
    raise UsageError(f"plan: scenario {args.scenario!r} is not in a built-in suite"
                     f"{catalog.suggest(args.scenario, known)}; see `{program_name()} list`")


def multi_run_document(found: budget_plan.BudgetPlan) -> dict[str, Any]:
    """``plan SCENARIO --json`` for a multi-run scenario (schema :func:`dpaudit.results.schema.plan_schema`, kind
    ``multi-run-plan``): what the text says, as numbers.  ``samples_per_side`` is the budget of the
    first refutation (null: out of reach); per requirement, ``single`` is the one-look budget,
    ``sequential`` the budget whose last sequential look certifies, ``stop`` the expected stop of a
    sequential run with the scenario's own budget; ``wall_seconds`` the expected time of a run of
    ``samples_per_side`` on some numbers of workers."""
    n = found.samples_per_side
    workers = sorted({1, 2, 4, 8, os.cpu_count() or 1})
    return {"schema": 1, "kind": "multi-run-plan", "scenario": found.scenario, "samples_per_side": n,
            "reachable": n is not None, "sequential": found.sequential, "confidence": found.confidence,
            "budget": found.budget, "rate": found.rate, "counts": found.counts,
            "pilot_seconds": found.pilot_seconds, "selection_seconds": found.selection_seconds,
            "requirements": [{"claim_id": r.claim_id, "delta": r.delta, "target": r.target,
                              "confidence": r.confidence, "exact": r.exact, "single": r.single,
                              "sequential": r.sequential, "candidates": r.candidates,
                              "stop": None if r.stop is None else {"look": r.stop[0], "samples_per_side": r.stop[1]},
                              "event": None if r.event is None else {"p": r.event[0], "q": r.event[1]}}
                             for r in found.requirements],
            "wall_seconds": ([] if n is None else
                             [{"workers": w, "seconds": found.seconds(n, w)} for w in workers])}


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


# --- one run ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _designs() -> tuple[Any, ...]:
    """Every one-run scenario of the built-in suites (``onerun``, and the default suite's
    fixtures), as the catalog files them; built once per process, when first asked."""
    return tuple(catalog.onerun_suite("onerun")) + tuple(catalog.onerun_suite("default"))


def onerun_design(name: str) -> Any:
    """The one-run design called ``name``, or None (the one lookup of designs by name in this verb)."""
    return next((d for d in _designs() if d.name == name), None)


def onerun_names() -> list[str]:
    """The names of :func:`_designs`' designs, without building one."""
    return catalog.onerun_names("onerun") + catalog.onerun_names("default")


def _real(value: float | None, flag: str, *, low: float = 0.0, high: float = math.inf, closed: bool = False,
          top: bool = False) -> None:
    """``value`` is None or a finite number in (low, high) (``closed``: [low, ...; ``top``: ..., high])."""
    if value is None:
        return
    inside = (low <= value if closed else low < value) and (value <= high if top else value < high)
    if not (math.isfinite(value) and inside):
        where = (f"> {low:g}" if high == math.inf else
                 f"in {'[' if closed else '('}{low:g}, {high:g}{']' if top else ')'}")
        raise UsageError(f"{flag} {value!r} is invalid: must be a finite number {where}")


def _model(args: argparse.Namespace) -> Any:
    _real(args.mu, "--mu", high=MU_MAX, top=True)
    _real(args.rr_epsilon, "--rr-epsilon", high=RR_EPSILON_MAX)
    if args.canaries_per_run is not None and args.canaries_per_run > MAX_PLANNED_CANARIES:
        raise UsageError(f"--canaries-per-run {args.canaries_per_run} is invalid: at most {MAX_PLANNED_CANARIES} "
                         "(the planner's largest game)")
    if args.mu is not None:
        return ScoreModel("gaussian", args.mu, "given by --mu")
    if args.rr_epsilon is not None:
        return ScoreModel("rr", args.rr_epsilon, "given by --rr-epsilon")
    return None


def _target(args: argparse.Namespace, default_delta: float) -> tuple[float | None, float]:
    _real(args.epsilon, "--epsilon", high=60.0)
    _real(args.delta, "--delta", high=1.0, closed=True)
    return args.epsilon, default_delta if args.delta is None else float(args.delta)


def _emit(args: argparse.Namespace, first: int | str, lines: list[str], payload: dict[str, Any]) -> int:
    if args.json:
        sys.stdout.write(dumps({"schema": 1, "canaries": first if isinstance(first, int) else None,
                                "reachable": first != "unreachable", **payload}) + "\n")
    else:
        sys.stdout.write(f"canaries={first}\n" + "\n".join(lines) + "\n")
    return EXIT_OK


def _plan_generic(args: argparse.Namespace) -> int:
    """``plan --onerun --epsilon E``: the canaries (and runs of M) whose median ε_LB reaches E."""
    if args.epsilon is None:
        raise UsageError("--onerun needs --epsilon E: the eps_lower to reach")
    model = _model(args)
    target, delta = _target(args, 1e-5)
    assert target is not None
    alpha = 1.0 - args.confidence
    head = f"one-run plan: eps_lower >= {target:g} at delta {delta:g}, confidence {args.confidence:g}"
    if model is None:  # a perfect scorer: every canary guessed, every guess right
        m = _smallest_ceiling(target, delta, alpha)
        lines = [head, "  model: none given, so a perfect scorer (every canary guessed, every guess right): the fewest "
                       "canaries any one-run audit needs; a real scorer needs more (give --mu or --rr-epsilon)"]
        if m is None:
            lines.append("  out of reach: above the ceiling of 10^7 canaries")
        else:
            lines.append(f"  {m} canaries: the ceiling there is {epsilon_ceiling(m, delta=delta, alpha=alpha):.4g}")
            if args.canaries_per_run:
                lines.append(f"  in runs of {args.canaries_per_run}: {-(-m // args.canaries_per_run)} runs")
        return _emit(args, m if m is not None else "unreachable", lines,
                     {"kind": "one-run-plan", "target": {"epsilon": target, "delta": delta},
                      "confidence": args.confidence, "model": None, "canaries_per_run": args.canaries_per_run})
    found = plan_canaries(target, delta=delta, confidence=args.confidence, model=model)
    runs = (plan_canaries(target, delta=delta, confidence=args.confidence, model=model,
                          canaries_per_run=args.canaries_per_run) if args.canaries_per_run else None)
    lines = [head, f"  model: {model.describe()}"]
    if found is None:
        own = model_epsilon(model, delta)
        lines.append("  out of reach: " + (f"the model mechanism is itself ({own:.4g}, {delta:g})-DP, and no valid "
                                           "bound's median exceeds that" if target >= own else
                                           "not within 10^6 canaries"))
    else:
        lines.append(f"  {found.describe()}")
        if args.canaries_per_run:
            lines.append(f"  in runs of {args.canaries_per_run}: " + (runs.describe() if runs else "out of reach"))
    lines.append("  expected counts stand for the median run; a run's bound scatters around them")
    return _emit(args, found.m if found else "unreachable", lines,
                 {"kind": "one-run-plan", "target": {"epsilon": target, "delta": delta}, "confidence": args.confidence,
                  "model": model.to_dict(), "canaries_per_run": args.canaries_per_run,
                  "rule": found.rule.to_dict() if found else None,
                  "expected_epsilon_lower": found.expected_epsilon_lower if found else None,
                  "runs": runs.runs if runs else None})


def _smallest_ceiling(target: float, delta: float, alpha: float) -> int | None:
    lo, hi = 1, 2
    while epsilon_ceiling(hi, delta=delta, alpha=alpha) < target:
        if hi >= 10**7:
            return None
        lo, hi = hi, min(2 * hi, 10**7)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if epsilon_ceiling(mid, delta=delta, alpha=alpha) >= target else (mid, hi)
    return hi


def _plan_design(design: Any, args: argparse.Namespace) -> int:
    """``plan DESIGN``: per claim, the canaries (and runs of the design's m) its expected verdict
    needs, under a score model estimated from pilot games (or given, or declared by the design)."""
    model = _model(args)
    target, delta = _target(args, float(design.deltas[0]))
    pilot = None
    declared = getattr(design, "score_model", None)
    if model is None and isinstance(declared, ScoreModel):
        model = declared
    elif model is None:
        model, v, r = _pilots(design, args)
        k = design.rule.k_plus if getattr(design.rule, "k_plus", None) == getattr(design.rule, "k_minus", -1) else None
        pilot = (v, r, k)
    plans = [plan_claim(c, design, model, confidence=args.confidence) for c in design.claims]
    lines = [f"one-run design {design.name}: m = {design.m} canaries, rule {_rule_text(design.rule)}, confidence "
             f"{args.confidence:g}", f"  model: {model.describe()}"]
    if pilot is not None and pilot[2] is not None:
        r1, v1 = model_counts(design.m, pilot[2], model)
        lines.append(f"  model check: the pilots' own guesses under the design's rule were {pilot[0]} right of "
                     f"{pilot[1]} ({pilot[0] / max(pilot[1], 1):.3f}); the model expects {v1} of {r1} per game "
                     f"({v1 / r1:.3f})")
    needs: list[int | None] = []
    for p in plans:
        lines.append(f"  {p.claim_id} ({p.kind}), expected {p.expected}: {p.goal}")
        lines.append(f"    at the design's m: {p.at_design}")
        if p.note and p.expected != "violation":
            lines.append(f"    note: {p.note}")
        if p.expected == "violation":
            needs.append(p.canaries)
            if p.canaries is None:
                lines.append(f"    out of reach: {p.note}")
            else:
                runs = f"{p.runs} run(s)" if p.runs else "out of reach in runs of that size"
                lines.append(f"    needs {p.canaries} canaries (guess k+ = k- = {p.rule.k_plus if p.rule else '?'}); "
                             f"at m = {design.m}: {runs}" + (f"; {p.note}" if p.note else ""))
    payload: dict[str, Any] = {"kind": "one-run-plan", "design": design.name, "m": design.m,
                               "rule": design.rule.to_dict(), "confidence": args.confidence,
                               "model": model.to_dict(), "claims": [p.to_dict() for p in plans], "target": None}
    if target is not None:
        found = plan_canaries(target, delta=delta, confidence=args.confidence, model=model)
        at_m = plan_canaries(target, delta=delta, confidence=args.confidence, model=model,
                             canaries_per_run=design.m)
        lines.append(f"  target eps_lower >= {target:g} at delta {delta:g}: "
                     + (f"{found.describe()}; at m = {design.m}: {at_m.runs if at_m else '?'} run(s)" if found
                        else "out of reach under the model"))
        needs.append(found.m if found else None)
        payload["target"] = {"epsilon": target, "delta": delta, "canaries": found.m if found else None,
                             "runs_of_design_m": at_m.runs if at_m else None,
                             "rule": found.rule.to_dict() if found else None}
    if not needs:
        lines.append("  no claim is expected refuted: give --epsilon E for the canaries a target eps_lower needs")
    lines.append("  expected counts stand for the median run; a run's bound scatters around them")
    first: int | str = ("none" if not needs else "unreachable" if any(n is None for n in needs)
                        else max(n for n in needs if n is not None))
    return _emit(args, first, lines, payload)


def _say(text: str) -> None:
    """A progress line on stderr (stdout is the plan, for programs to read)."""
    progress_line(f"[dpaudit] {text}")


def _pilots(design: Any, args: argparse.Namespace) -> tuple[ScoreModel, int, int]:
    """The design's pilot games, announced before the first starts and reported after each: the
    first one's time projects the rest, and a budget past the planner's bounds
    (:func:`dpaudit.onerun.planner.check_pilot_budget`) stops there with its projection."""
    name, games = design.name, args.pilots
    _say(f"plan {name}: {games} pilot game(s), each one training run of {design.m} canaries, to estimate the "
         f"score model; the first is timed and projects the rest (at most {MAX_PILOT_SECONDS / 3600:g} h of "
         f"pilots and {MAX_PILOT_CANARIES} canaries are run)")

    def report(p: PilotProgress) -> None:
        end = projected_end(p.games - p.done, p.done / max(p.elapsed, 1e-9))
        took = f"took {p.elapsed:.3g} s" if p.done == 1 else f"done after {p.elapsed:.3g} s"
        _say(f"plan {name}: pilot {p.done} of {p.games} {took}{end}")

    return pilot_model(design, games=games, confidence=args.confidence, report=report, field="--pilots ")


def _rule_text(rule: Any) -> str:
    d = rule.to_dict()
    if d.get("rule") == "fixed":
        return f"fixed k+ = {d['k_plus']}, k- = {d['k_minus']}"
    return f"{d.get('rule')} ({d.get('correction')})"
