"""What a run expects of a built-in claim, and what a missed refutation would need.

A claim the registry marks ``refuted`` is an expected refutation wherever it is checked: in the
built-in suites (their scenarios say so), and in runs of one built-in mechanism (``--mechanism
NAME``, ``--search``, or a config scenario that gives no ``expected``), where this module adds the
expectation from the registry.  The engine never reads the registry's statuses for that: the
command line (the app layer) does, here.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from dpaudit.cli.common import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK
from dpaudit.core import Claim
from dpaudit.engine.results import AuditResult
from dpaudit.engine.verdicts import OK_OUTCOMES, outcome
from dpaudit.runtime.execution import Execution

MISSED = "MISSED expected violation"
INTERRUPTED = "interrupted by the user"  # how the engine marks the record of a scenario a Ctrl-C cut short


def is_builtin(mechanism: Any) -> bool:
    """A mechanism of dpaudit's own catalog (not a user's class that happens to share a name)."""
    catalog = importlib.import_module("dpaudit.catalog")  # on first use: the supervising parent needs no catalog
    name = getattr(mechanism, "name", None)
    module = type(mechanism).__module__.split(".")[0]
    return module in ("dpaudit", "audit", "mechanisms") and name in catalog.mechanisms()


def with_registry_expectations(result: AuditResult, registry: Mapping[str, Claim]) -> AuditResult:
    """``result`` with every applicable claim the registry marks refuted and no expectation yet
    expected to be refuted from the samples (``violation``)."""
    checks = tuple(
        dataclasses.replace(c, expected_verdict="violation")
        if (c.expected_verdict is None and c.claim.applicable and c.claim.claim_id in registry
            and registry[c.claim.claim_id].status == "refuted") else c
        for c in result.claims)
    return dataclasses.replace(result, claims=checks)


def missed_notes(records: Sequence[dict[str, Any]], scenarios: Sequence[Any], *, samples: int, confidence: float,
                 seed: int, program: str) -> list[str]:
    """For each scenario with a missed expected refutation: the samples per side the planner
    (:func:`dpaudit.engine.plan.plan`, a pilot run) says the first refutation needs, and the
    command that explains it (``plan SCENARIO`` for a suite's scenario)."""
    missed = {r["scenario"] for r in records if outcome(r) == MISSED}
    if not missed:
        return []
    # the catalog, the planner and the report's words on first use: the supervising parent needs none of them
    catalog, budget_plan, words = (importlib.import_module(f"dpaudit.{name}")
                                   for name in ("catalog", "engine.plan", "reports.text"))
    suite_names = {sc.name for name in ("errata", "full") for sc in catalog.suite(name)}
    notes = []
    for index, sc in enumerate(scenarios):
        if sc.name not in missed:
            continue
        try:
            found = budget_plan.plan(sc, confidence=confidence, seed=seed, key=(index,), samples=samples,
                                     execution=Execution(n_jobs=1))
            needed = found.samples_per_side
        except Exception as exc:  # the hint must never hide the run's own result
            print(f"note: planning {sc.name!r} failed ({type(exc).__name__}: {exc})", file=sys.stderr)
            continue
        how = f" ({program} plan {sc.name})" if sc.name in suite_names else ""  # a built-in name
        notes.append(_missed_note(words.printable(sc.name), needed, budget=round(samples * sc.samples_factor),
                                  factor=sc.samples_factor, how=how))
    return notes


def _missed_note(name: str, needed: int | None, *, budget: int, factor: float, how: str) -> str:
    """One scenario's note: the budget per side its first refutation needs and the ``--samples``
    that gives it (whatever the scenario's samples_factor, so every note names the flag to pass).
    A planner's median run that refutes within the budget this run had says the run was unlucky
    (the refutation is a matter of chance at that budget): it never asks for a budget already spent."""
    if needed is None:
        return f"{MISSED} in {name}: out of reach of any budget the planner tries{how}"
    if needed <= budget:
        return (f"{MISSED} in {name}: the planner's median run refutes it at about {needed:.3g} samples per side, "
                f"within this run's {budget:.3g}: a run at this budget refutes it only by chance; for a surer "
                f"refutation double --samples (another --seed is another draw){how}")
    return f"{MISSED} in {name}: needs about {needed:.3g} samples per side, i.e. --samples {needed / factor:.3g}{how}"


def cut_short(record: Mapping[str, Any]) -> bool:
    """A record of the scenario a Ctrl-C stopped (its ``sequential`` note says so)."""
    return INTERRUPTED in (record.get("sequential") or "")


def _checked(record: Mapping[str, Any]) -> bool:
    """Whether the record checked its claim: a missed expected refutation in a scenario cut short
    did not (its budget was not spent, so not reaching the refutation is no evidence)."""
    return record.get("claim_id") is not None and not (cut_short(record) and outcome(record) == MISSED)


def exit_status(records: Sequence[Mapping[str, Any]], complete: bool) -> int:
    """The exit status of a run's records, for ``run`` and ``summary`` alike: 1 for a finding among
    what was checked (an unexpected or missed refutation, a mismatch), else 0 when the run is
    complete, else :data:`~dpaudit.cli.common.EXIT_INTERRUPTED` (an incomplete run never exits 0)."""
    def finding(r: Mapping[str, Any]) -> bool:
        said = outcome(r)
        return said not in OK_OUTCOMES and not (said == MISSED and cut_short(r))

    if any(finding(r) for r in records):
        return EXIT_FAIL
    return EXIT_OK if complete else EXIT_INTERRUPTED


def planned_claims(expected: Mapping[str, str], claims: Sequence[Any] | None) -> set[str] | None:
    """The claim ids a scenario will check, each with its expectation (its expected verdict, or not
    refuted): those ``expected`` names and those of the claims given (``claims``); None when its
    claims come from the mechanism and the registry (known once it runs)."""
    if claims is None and not expected:
        return None
    return set(expected) | {cid for c in claims or () if (cid := getattr(c, "claim_id", None))}


def unchecked_expectations(planned: Sequence[Collection[str] | None],
                           done: Sequence[Sequence[Mapping[str, Any]]]) -> tuple[int, bool]:
    """How many claims of the plan went unchecked (each with its expectation), and whether that
    count is exact: ``planned[i]`` is scenario i's claim ids (None: known once it runs,
    :func:`planned_claims`), ``done[i]`` the records of scenario i (shorter when the run stopped).
    A scenario not run, or cut short before its claims were checked, drops them; one whose claims
    were not known and that did not finish makes the count a lower bound."""
    unchecked, exact = 0, True
    for index, ids in enumerate(planned):
        records = done[index] if index < len(done) else ()
        finished = index < len(done) and not any(cut_short(r) for r in records)
        if ids is None:
            exact = exact and finished
            continue
        unchecked += len(set(ids) - {r["claim_id"] for r in records if _checked(r)})
    return unchecked, exact
