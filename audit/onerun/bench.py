"""CPU cost of the one-run bounds (``dpaudit bench`` may call :func:`bench`).

Process CPU time, not wall clock (the machine is shared).  Two kinds of rows:

* ``"kind": "bound"`` — one per (m, r, v) of :data:`CASES`: Steinke's ε at one δ and the largest
  rejected GDP μ, computed afresh (the functions' own memo, which a caller bounding many games
  enjoys, is bypassed).
* ``"kind": "rules"`` — one per m of :data:`RULE_MS`: the whole bound of one game
  (:func:`~dpaudit.onerun.bound.one_run_bound`) of m Gaussian canaries at μ = 1 under three rules,
  each a first call (every memo emptied): ``Fixed(m/10, m/10)``, the default grid (no claim) and
  the rule planned from the claims (``rule=None``; ``planned`` for a 1-GDP curve claim, the f-DP
  objective; ``planned_eps`` for a (1, 1e-5) claim, Steinke's), with the ratios
  ``planned_over_fixed`` and ``planned_eps_over_fixed_eps`` (each Fixed run holds the same claim).
  Each figure is the median over :data:`RULE_REPS` rounds in alternating order, all in this process;
  the bounds are reported beside them (they do not depend on the round).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit.core import Guarantee
from dpaudit.onerun.bound import one_run_bound
from dpaudit.onerun.claimrule import forget_plans
from dpaudit.onerun.curves import gdp
from dpaudit.onerun.fdp import largest_rejected_mu
from dpaudit.onerun.result import OneRunResult
from dpaudit.onerun.rules import Fixed
from dpaudit.onerun.steinke import epsilon_lower

__all__ = ["CASES", "RULE_MS", "RULE_REPS", "bench", "rules_bench"]

CASES = ((100, 100, 100), (1000, 1000, 881), (1000, 74, 73), (10000, 10000, 9000), (10000, 1000, 990))
RULE_MS = (10**4, 10**5, 10**6)
RULE_REPS = 3


def bench(delta: float = 1e-5, alpha: float = 0.05, *, rule_ms: tuple[int, ...] = RULE_MS) -> list[dict[str, Any]]:
    """One ``bound`` row per (m, r, v) of :data:`CASES` (CPU seconds of each bound), then one
    ``rules`` row per m of ``rule_ms`` (:func:`rules_bench`; none when empty)."""
    rows: list[dict[str, Any]] = []
    for m, r, v in CASES:
        t0 = time.process_time()
        eps = epsilon_lower.__wrapped__(m, r, v, delta=delta, alpha=alpha)
        t1 = time.process_time()
        mu = largest_rejected_mu.__wrapped__(m=m, c_prime=r, c=v, tau=alpha)
        t2 = time.process_time()
        rows.append({"kind": "bound", "m": m, "r": r, "v": v, "epsilon_lower": eps, "steinke_cpu_s": t1 - t0,
                     "gdp_mu": mu, "fdp_cpu_s": t2 - t1})
    return rows + rules_bench(rule_ms, delta=delta, confidence=float(f"{1.0 - alpha:.12g}"))


def _forget() -> None:
    """Every memo a bound or a plan keeps: the next call is a first call."""
    epsilon_lower.cache_clear()
    largest_rejected_mu.cache_clear()
    forget_plans()


def _game(m: int) -> tuple[np.ndarray, np.ndarray]:
    """m Gaussian canaries at μ = 1 (seeded): the secret and the scores."""
    rng = np.random.default_rng(np.random.SeedSequence(45, spawn_key=(m,)))
    secret = rng.integers(0, 2, m)
    return secret + rng.standard_normal(m), secret


def rules_bench(ms: tuple[int, ...] = RULE_MS, *, delta: float = 1e-5, confidence: float = 0.95,
                reps: int = RULE_REPS) -> list[dict[str, Any]]:
    """One ``rules`` row per m (module docstring): CPU seconds of a first call of each rule's bound."""
    rows = [_rules_row(m, delta=delta, confidence=confidence, reps=reps) for m in ms]
    _forget()
    return rows


def _rules_row(m: int, *, delta: float, confidence: float, reps: int) -> dict[str, Any]:
    curve, point = gdp(1.0, claim_id="bench-gdp"), Guarantee(epsilon=1.0, delta=1e-5, claim_id="bench-eps")
    scores, secret = _game(m)
    fixed = Fixed(max(1, m // 10), max(1, m // 10))
    bound = functools.partial(one_run_bound, scores, secret, deltas=(delta,), confidence=confidence, tiebreak=0)
    runs: dict[str, Callable[[], OneRunResult]] = {
        "fixed": functools.partial(bound, rule=fixed, claims=(curve,)),
        "grid": functools.partial(bound, rule=None, claims=()),
        "planned": functools.partial(bound, rule=None, claims=(curve,)),
        "fixed_eps": functools.partial(bound, rule=fixed, claims=(point,)),
        "planned_eps": functools.partial(bound, rule=None, claims=(point,))}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    results: dict[str, OneRunResult] = {}
    for rep in range(reps):  # alternating order: a drift of the machine's load falls on every rule alike
        for name in (list(runs) if rep % 2 == 0 else list(runs)[::-1]):
            _forget()
            t0 = time.process_time()
            results[name] = runs[name]()
            cpu[name].append(time.process_time() - t0)
    row: dict[str, Any] = {"kind": "rules", "m": m, "fixed_k": fixed.k_plus}
    for name, res in results.items():
        row[f"{name}_cpu_s"] = float(np.median(cpu[name]))
        row[f"{name}_epsilon_lower"] = res.epsilon_lowers[0]
        row[f"{name}_gdp_mu"] = res.gdp_mu_lower
    row["planned_k"] = results["planned"].tests[0].k_plus
    row["planned_eps_k"] = results["planned_eps"].tests[0].k_plus
    row["planned_over_fixed"] = row["planned_cpu_s"] / row["fixed_cpu_s"]
    row["planned_eps_over_fixed_eps"] = row["planned_eps_cpu_s"] / row["fixed_eps_cpu_s"]
    return row


if __name__ == "__main__":  # pragma: no cover
    for item in bench():
        print(item)
