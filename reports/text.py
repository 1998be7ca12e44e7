"""The plain-text summary table of a run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def fmt(value: Any) -> str:
    """How every report prints a number (tables, PDF and tests share it)."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        return f"{value:.4g}"
    return f"{value:.3g}"


def outcome(record: dict[str, Any]) -> str:
    """What a record means for the run: ok, caught erratum, missed or unexpected violation."""
    verdict, expected = record["verdict"], record.get("expected_verdict")
    exact = record.get("exact_verdict")
    if expected in ("violation", "exact-violation") and verdict == "violation":
        return "known erratum — caught"
    if expected == "exact-violation":
        return "known erratum — caught by the white box" if exact == "violation" else "MISSED expected violation"
    if expected == "violation":
        return "MISSED expected violation"
    if verdict == "violation" or exact == "violation":
        return "UNEXPECTED violation"
    if expected is not None and expected != verdict:
        return f"MISMATCH (expected {expected})"
    if exact is not None and expected is not None and exact != expected:
        return f"MISMATCH white box (expected {expected})"
    return "ok"


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
