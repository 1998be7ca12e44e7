"""What a run expects of a built-in claim, and what a missed refutation would need.

A claim the registry marks ``refuted`` is an expected refutation wherever it is checked: in the
built-in suites (their scenarios say so), and in runs of one built-in mechanism (``--mechanism
NAME``, ``--search``, or a config scenario that gives no ``expected``), where this module adds the
expectation from the registry.  The engine never reads the registry's statuses for that: the
command line (the app layer) does, here.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from dpaudit import catalog
from dpaudit.core import Claim
from dpaudit.engine import plan as budget_plan
from dpaudit.engine.execution import Execution
from dpaudit.engine.results import AuditResult, outcome

MISSED = "MISSED expected violation"


def is_builtin(mechanism: Any) -> bool:
    """A mechanism of dpaudit's own catalog (not a user's class that happens to share a name)."""
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
        how = f" ({program} plan {sc.name})" if sc.name in suite_names else ""
        if needed is None:
            notes.append(f"{MISSED} in {sc.name}: out of reach of any budget the planner tries{how}")
        else:
            flag = "" if sc.samples_factor == 1 else f", i.e. --samples {needed / sc.samples_factor:.3g}"
            notes.append(f"{MISSED} in {sc.name}: needs about {needed:.3g} samples per side{flag}{how}")
    return notes
