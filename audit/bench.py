"""``python -m audit bench``: throughput and tightness, measured in one run.

Throughput: samples per second (both sides) through ``audit_mechanism`` end to end —
selection, every view, streamed counting, bounds — for each family's bench cases (:mod:`audit.catalog`), and
the same figure for a plain-numpy reference that only draws the same output distribution
and counts one fixed event, the least work any sampling auditor must do.  Their ratio is
the price of everything dpaudit adds.  Tightness: ε_lower/ε_true on randomized response and
the Laplace mechanism at the budgets of the acceptance tests.
"""

from __future__ import annotations

import platform
from typing import Any

import numpy as np

from audit import catalog
from audit.api import audit_mechanism
from audit.catalog.family import timed


def run(samples: int = 2_000_000, seed: int = 0) -> dict[str, Any]:
    """Throughput rows, tightness rows and each family's extra benchmarks."""
    rows = []
    for case in (c for f in catalog.families() for c in f.bench()):
        mech, d, dp = case.mechanism, case.d, case.d_prime
        audit_mechanism(mech, d, dp, samples=20_000, seed=seed)  # warm caches and imports
        result, ours = timed(lambda mech=mech, d=d, dp=dp: audit_mechanism(mech, d, dp, samples=samples, seed=seed))
        rng = np.random.default_rng(seed)
        _, plain = timed(lambda case=case, rng=rng: [case.reference(rng, samples) for _ in range(2)])
        rows.append({"family": case.name, "samples_per_side": samples, "ours_seconds": ours, "plain_seconds": plain,
                     "ours_per_second": 2 * samples / ours, "plain_per_second": 2 * samples / plain,
                     "ratio_ours_to_plain": plain / ours, "epsilon_lower": result.epsilon_lower})
    tight = []
    for t in (t for f in catalog.families() for t in f.tightness()):
        r, secs = timed(lambda t=t: audit_mechanism(t.mechanism, t.pair.d, t.pair.d_prime, samples=t.samples, seed=seed,
                                                    deltas=t.deltas, relation=t.pair.relation))
        tight.append({"audit": t.label, "samples_per_side": t.samples, "epsilon_true": t.epsilon_true,
                      "epsilon_lower": r.epsilon_lower, "tightness": r.epsilon_lower / t.epsilon_true, "seconds": secs})
    extra = {name: measure(seed) for f in catalog.families() for name, measure in f.benchmarks.items()}
    return {"throughput": rows, "tightness": tight, **extra,
            "machine": {"python": platform.python_version(), "numpy": np.__version__,
                        "processor": platform.processor() or platform.machine()}}


def table(report: dict[str, Any]) -> str:
    lines = ["throughput (samples per second, both sides; plain = draw the same distribution and count one event)",
             f"{'family':22s} {'ours/s':>12s} {'plain/s':>12s} {'ours/plain':>11s} {'eps_lower':>10s}"]
    for r in report["throughput"]:
        lines.append(f"{r['family']:22s} {r['ours_per_second']:12.3g} {r['plain_per_second']:12.3g} "
                     f"{r['ratio_ours_to_plain']:11.3f} {r['epsilon_lower']:10.4f}")
    lines += ["", "tightness (eps_lower / eps_true, seed 0, confidence 0.95)",
              f"{'audit':28s} {'samples':>10s} {'eps_lower':>10s} {'tightness':>10s} {'seconds':>8s}"]
    for t in report["tightness"]:
        lines.append(f"{t['audit']:28s} {t['samples_per_side']:10d} {t['epsilon_lower']:10.5f} "
                     f"{t['tightness']:10.4f} {t['seconds']:8.2f}")
    pg = report.get("dp_pg_rounds")
    if pg:
        lines += ["", f"DP-PG (d = {pg['d']}, m = {pg['m']}, {pg['responses']} responses): "
                  f"{pg['rounds_per_second']:.3g} "
                  f"rounds/s batched across runs, {pg['plain_loop_rounds_per_second']:.3g} in a plain loop over runs "
                  f"({pg['ratio']:.0f}x)"]
    al = report.get("align_mle")
    if al:
        lines += [f"Algorithm 1 private MLE (d = {al['d']}, n = {al['n']}, exact minimiser): "
                  f"{al['trials_per_second']:.3g} trials/s batched Newton, {al['scipy_loop_trials_per_second']:.3g} "
                  f"in a per-trial scipy.optimize loop ({al['ratio']:.0f}x); solutions agree to "
                  f"{al['max_abs_difference']:.1e}"]
    return "\n".join(lines) + "\n"
