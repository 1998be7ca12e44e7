"""The plain-text summary table of a run, from saved records (the outcome of each is
:func:`audit.results.outcome`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from audit.results import outcome


def fmt(value: Any) -> str:
    """How every report prints a number (tables, PDF and tests share it)."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        return f"{value:.4g}"
    return f"{value:.3g}"


def summary_table(records: Sequence[dict[str, Any]]) -> str:
    """One line per record: scenario, claim, its registry status, δ, ε_claim, ε_lower, ε_exact, the
    supremum of the pure loss over reference policies (pure claims of KL mechanisms), the verdict
    that combines both witnesses, and the outcome (as expected or not); a claim outside its
    premise gets a second line saying so and whether the samples would refute it."""
    head = ("scenario", "claim", "status", "delta", "eps_claim", "eps_lower", "eps_exact", "eps_sup", "verdict",
            "outcome")
    rows = [head]
    notes: dict[int, str] = {}
    for r in records:
        rows.append((r["scenario"] or r["mechanism"], r["claim_id"] or "-", r.get("claim_status") or "-",
                     fmt(r["delta"]), fmt(r["epsilon_claim"]), fmt(r["epsilon_lower"]), fmt(r["epsilon_exact"]),
                     fmt(r.get("epsilon_sup") if r["delta"] == 0 else None), r["finding"], outcome(r)))
        if r.get("premise"):
            notes[len(rows) - 1] = r["premise"]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = []
    for i, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if i in notes:
            lines.append(" " * (widths[0] + 2) + notes[i])
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def footer(records: Sequence[dict[str, Any]], scenarios: int, settings: str, seconds: float, ok: bool) -> str:
    """The run's last line: what was checked and whether every outcome is as expected — or, when no
    claim was checked at all, that only ε_lower was measured (never "as expected" about nothing)."""
    checked = [r for r in records if r["claim_id"] is not None]
    if not checked:
        verdict = "no claim checked: eps_lower measured only"
    else:
        verdict = "every verdict as expected" if ok else "SOME VERDICTS NOT AS EXPECTED"
    return f"\n{len(checked)} checks in {scenarios} scenarios, {settings}, {seconds:.1f} s: {verdict}\n"
