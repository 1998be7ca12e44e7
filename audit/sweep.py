"""Rates: ε_claim(n), ε_exact(n), ε_lower(n) over dataset sizes for the three KL mechanisms.

The KL paper states O(1/n) privacy for growing coverage (Theorem 1 and Corollaries 2–3).
Each family builds a fixture of size n whose coverage grows linearly in n, audits its
worst (or canonical) pair, and records the printed and corrected claims beside the exact
and empirical losses; :func:`loglog_slope` fits the exponent the report compares with −1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from audit.api import audit_mechanism
from audit.exact import pure_epsilon
from mechanisms.base import require
from mechanisms.kl_bandits import KLBandit
from mechanisms.kl_linear import KLLinearBandit
from mechanisms.kl_rlhf import KLRLHF
from neighbors import Pair, add_remove
from neighbors.search import worst_pair
from neighbors.synthetic import bandit_candidates, bandit_log, comparisons, linear_log


def _mab(n: int) -> tuple[Any, Pair]:
    per_arm = max(2, n // 3)
    # Arms 1 and 2 have arm 0's mean, so π(arm 0) stays near π0 and its event is observable.
    log = bandit_log([[1.0] + [0.0] * (per_arm - 1), [1 / per_arm] * per_arm, [1 / per_arm] * per_arm])
    mech = KLBandit(3, eta=0.02, beta0=0.5, pi0=(0.02, 0.49, 0.49))
    return mech, worst_pair(mech, add_remove(log, bandit_candidates(3)), pure_epsilon).pair


def _linear(n: int) -> tuple[Any, Pair]:
    phi = np.tile(np.eye(2), (max(1, n // 2), 1))
    rewards = np.zeros(len(phi))
    rewards[0] = 1.0
    log = linear_log(phi, rewards)
    mech = KLLinearBandit(((1.0, 0.0), (-1.0, 0.0), (0.0, 1.0)), ridge=2.0, beta0=0.2, eta=0.02,
                          pi0=(0.02, 0.49, 0.49), k1=1.0)
    return mech, Pair(log, log.remove(0), "remove the reward-1 point along e1")


def _rlhf(n: int) -> tuple[Any, Pair]:
    n = max(4, n - n % 2)
    log = comparisons(np.full((n, 1), 2.0), [1] * (n // 2) + [0] * (n // 2))
    mech = KLRLHF(((1.0,), (-1.0,)), ridge=1.0, beta0=0.01, eta=0.02, pi0=(0.98, 0.02))
    return mech, Pair(log, log.flip(0), f"flip one label (k {n // 2} -> {n // 2 - 1})", "label-flip")


FAMILIES: dict[str, Callable[[int], tuple[Any, Pair]]] = {"kl-mab": _mab, "kl-linear": _linear, "kl-rlhf": _rlhf}


def sweep(family: str, ns: Sequence[int], *, samples: int = 200_000, seed: int = 0, confidence: float = 0.95,
          n_jobs: int = 1) -> list[dict[str, Any]]:
    """One record per (n, claim): n, claim id and kind, ε_claim, ε_exact, ε_lower, ε_sup."""
    require(family in FAMILIES, "family", family, f"must be one of {', '.join(FAMILIES)}")
    require(len(ns) >= 1 and all(isinstance(n, int) and n >= 2 for n in ns), "n", list(ns),
            "must be integers >= 2")
    records = []
    for i, n in enumerate(ns):
        mech, pair = FAMILIES[family](n)
        result = audit_mechanism(mech, pair.d, pair.d_prime, samples=samples, seed=seed, confidence=confidence,
                                 n_jobs=n_jobs, relation=pair.relation, pair=pair.description, key=(i,),
                                 scenario=f"{family}-n{n}")
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
