"""Rates: ε_claim(n), ε_exact(n), ε_lower(n) over dataset sizes.

The KL paper states O(1/n) privacy for growing coverage (Theorem 1 and Corollaries 2–3).
Each sweep of the catalog (:func:`dpaudit.catalog.sweeps`) builds a fixture of size n whose
coverage grows linearly in n; this module audits its worst (or canonical) pair and records
the printed and corrected claims beside the exact and empirical losses; :func:`loglog_slope`
fits the exponent the report compares with −1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dpaudit import catalog
from dpaudit.core import require
from dpaudit.engine.api import RunContext, audit_mechanism

MAX_N = 1_000_000   # records in a sweep's fixture at most (10^6 builds in about 2 s)
RECORD_BYTES = 64   # a fixture record's columns, about (an action or features, a reward or a label)


def sweep(family: str, ns: Sequence[int], *, samples: int = 200_000, seed: int = 0, confidence: float = 0.95,
          n_jobs: int = 1) -> list[dict[str, Any]]:
    """One record per (n, claim): n, claim id and kind, ε_claim, ε_exact, ε_lower, ε_sup."""
    cases = catalog.sweeps()
    require(family in cases, "family", family,
            f"must be one of {', '.join(cases)}{catalog.suggest(str(family), list(cases))}")
    require(len(ns) >= 1 and all(isinstance(n, int) and n >= 2 for n in ns), "n", list(ns),
            "must be integers >= 2")
    big = max(ns)
    require(big <= MAX_N, "n", list(ns), f"must be at most {MAX_N}: n = {big} builds a fixture of {big} records (about "
            f"{big * RECORD_BYTES / 2**30:.3g} GiB, held with the mechanism's statistics of it) per size")
    records = []
    for i, n in enumerate(ns):
        mech, pair = cases[family](n)
        result = audit_mechanism(mech, pair.d, pair.d_prime, samples=samples, seed=seed, confidence=confidence,
                                 n_jobs=n_jobs, relation=pair.relation,
                                 context=RunContext(key=(i,), scenario=f"{family}-n{n}", pair=pair.description,
                                                    registry=catalog.claims()))
        for rec in result.records():
            if rec["delta"] == 0 and rec["verdict"] != "not-applicable":
                records.append({"family": family, "n": len(pair.d), **{k: rec[k] for k in (
                    "claim_id", "claim_kind", "epsilon_claim", "epsilon_exact", "epsilon_lower", "epsilon_sup",
                    "verdict", "exact_verdict", "pair", "samples", "seed", "confidence")}})
    return records


def loglog_slope(ns: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of log(value) against log(n) (−1 for the paper's O(1/n))."""
    x, y = np.log(np.asarray(ns, dtype=float)), np.log(np.asarray(values, dtype=float))
    return float(np.polyfit(x, y, 1)[0])


def slopes(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Fitted exponents per claim id: of ε_claim and of ε_exact."""
    out: dict[str, dict[str, float]] = {}
    for cid in sorted({r["claim_id"] for r in records}):
        rows = [r for r in records if r["claim_id"] == cid]
        if len(rows) >= 2:
            ns = [r["n"] for r in rows]
            out[cid] = {"epsilon_claim": loglog_slope(ns, [r["epsilon_claim"] for r in rows]),
                        "epsilon_exact": loglog_slope(ns, [r["epsilon_exact"] for r in rows])}
    return out
