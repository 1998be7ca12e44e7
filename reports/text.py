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
    """One line per record: scenario, claim, δ, ε_claim, ε_lower, ε_exact, the supremum of the
    pure loss over reference policies (pure claims of KL mechanisms), verdicts, outcome."""
    head = ("scenario", "claim", "delta", "eps_claim", "eps_lower", "eps_exact", "eps_sup", "verdict", "exact",
            "outcome")
    rows = [head]
    for r in records:
        rows.append((r["scenario"] or r["mechanism"], r["claim_id"] or "-", fmt(r["delta"]),
                     fmt(r["epsilon_claim"]), fmt(r["epsilon_lower"]), fmt(r["epsilon_exact"]),
                     fmt(r.get("epsilon_sup") if r["delta"] == 0 else None), r["verdict"], r.get("exact_verdict") or "-", outcome(r)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"
