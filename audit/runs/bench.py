"""``dpaudit bench``: throughput and tightness, measured in one run.

Throughput: seconds of ``audit_mechanism`` end to end (selection, every view, streamed
counting, bounds) for each family's bench cases (:mod:`dpaudit.catalog`), beside two plain
references measured in the same run on the same budget:

* *draw and count* (the case's own ``reference``): draw the output distribution and count
  one fixed event — the least work any sampling auditor must do;
* *split and count* (:func:`split_and_count`): the plain auditor with no views — draw a 20 %
  selection split, pick the best per-coordinate threshold there, count it on the rest with
  the same chunking and the same ``mechanism.sample``.

Tightness: ε_lower ÷ ceiling, where the *ceiling* is the estimator's bound (the better of its
joint test of the ratio and the Clopper–Pearson pair, :func:`dpaudit.engine.bounds.both_tests`) of the
best event fixed in advance at the expected counts of the default estimation budget, 80 % of the
samples — also for discrete vector outputs, whose audits select on 30 % and so are held to a
ceiling of more estimation samples than their own (:func:`dpaudit.engine.bounds.best_event`;
each case documents which events its ceiling searches in
:mod:`dpaudit.catalog.classic`), per view and over seeds (median and minimum), and
ε_lower ÷ ε_true for the tightness cases.  The *same-sample* ceiling counts that best event on
the audit's own estimation samples (:func:`dpaudit.engine.runner.estimation_outputs`): ours ÷ it is
then free of the luck of the estimation split, which both bounds share.  Beside each ceiling, the
*old* one (``ceiling_pair``): the Clopper–Pearson pair's alone, which the estimator used before the
joint test (:func:`dpaudit.engine.bounds.pair_only`), so that a gain is read against the same yardstick.

The default suite: the wall time of the real command ``python -m dpaudit run --quiet`` (its own
process, default budget and workers), the number a newcomer waits for (:func:`default_suite`).

``families`` (``bench --family NAME``, repeatable, as for ``run``) keeps the named families: their
bench cases, tightness rows and extra benchmarks, and the default suite's scenarios of them
(``run --quiet --family NAME ...``, so that row is the time of that command, not of the whole suite).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit import catalog
from dpaudit.catalog.family import timed
from dpaudit.core import InputError
from dpaudit.engine.api import audit_mechanism
from dpaudit.engine.bounds import TESTS, best_candidate, better_test, both_tests, pair_only, projected_counts
from dpaudit.engine.runner import CHUNK, estimation_outputs
from dpaudit.engine.streaming import SELECTION_FRACTION
from dpaudit.engine.views import VIEWS

CONFIDENCE = 0.95


def estimation_samples(samples: int) -> int:
    """The estimation split of an audit of ``samples`` per side (what its ceiling is computed for)."""
    return samples - max(1, int(samples * SELECTION_FRACTION))


def split_and_count(mechanism: Any, d: Any, d_prime: Any, samples: int, seed: int, delta: float = 0.0,
                    confidence: float = CONFIDENCE) -> float:
    """The plain split-and-count auditor: ε_lower from the best per-coordinate threshold
    {x_j ≥ t} or {x_j ≤ t} (t at 128 pooled quantiles of the selection split), chosen on a
    20 % selection split and counted chunk by chunk on the rest."""
    n_sel = max(1, int(samples * SELECTION_FRACTION))
    n_est = samples - n_sel
    rngs = np.random.SeedSequence(seed).spawn(2)
    sel = [np.asarray(mechanism.sample(side, n_sel, np.random.default_rng(r.spawn(1)[0])), dtype=float)
           for side, r in zip((d, d_prime), rngs, strict=True)]
    x, y = (a.reshape(n_sel, -1) for a in sel)
    best: tuple[float, int, float, bool, int, str] | None = None
    alpha = (1 - confidence) / 2
    for j in range(x.shape[1]):
        t = np.unique(np.quantile(np.concatenate([x[:, j], y[:, j]]), np.linspace(0, 1, 128)))
        sx, sy = np.sort(x[:, j]), np.sort(y[:, j])
        for upper in (True, False):
            kx = n_sel - np.searchsorted(sx, t, "left") if upper else np.searchsorted(sx, t, "right")
            ky = n_sel - np.searchsorted(sy, t, "left") if upper else np.searchsorted(sy, t, "right")
            for fav, (kf, ko) in enumerate(((kx, ky), (ky, kx))):
                score, i = best_candidate(kf, ko, (n_sel, n_sel), (n_est, n_est), delta, alpha)
                if best is None or score > best[0]:
                    k1, k2 = projected_counts(kf[i:i + 1], ko[i:i + 1], (n_sel, n_sel), (n_est, n_est), alpha)
                    best = (score, j, float(t[i]), upper, fav, better_test(k1[0], n_est, k2[0], n_est, delta, alpha))
    assert best is not None  # structural: at least one coordinate and one threshold
    _, j, t_best, upper, fav, test = best  # the test fixed with the event, as the estimator's
    counts = np.zeros(2)
    for s, (side, r) in enumerate(zip((d, d_prime), rngs, strict=True)):
        left = n_est
        for child in r.spawn(-(-n_est // CHUNK)):
            size = min(CHUNK, left)
            out = np.asarray(mechanism.sample(side, size, np.random.default_rng(child))).reshape(size, -1)
            counts[s] += np.count_nonzero(out[:, j] >= t_best if upper else out[:, j] <= t_best)
            left -= size
    return max(0.0, float(TESTS[test](counts[fav], n_est, counts[1 - fav], n_est, delta, alpha)))


def pair_ceiling(ceiling: Any, n: int) -> float:
    """The old ceiling: a case's ``ceiling`` function at ``n`` with the Clopper–Pearson pair alone
    (past :func:`_once`'s cache, which holds the new one)."""
    with pair_only():
        return float(getattr(ceiling, "__wrapped__", ceiling)(n, CONFIDENCE).epsilon)


def same_sample_ceiling(case: Any, samples: int, seed: int, confidence: float = CONFIDENCE) -> float:
    """:func:`same_sample_bound` of a bench case."""
    return same_sample_bound(case.mechanism, case.d, case.d_prime, case.ceiling, case.deltas[0], samples, seed,
                             confidence)


def same_sample_bound(mechanism: Any, d: Any, d_prime: Any, best_at: Any, delta: float, samples: int, seed: int,
                      confidence: float = CONFIDENCE) -> float:
    """The ceiling's event counted on the audit's own estimation samples (seed ``seed``): the
    bound the best event fixed in advance gives on exactly the samples the audit's event was
    counted on, so that ours ÷ this ceiling is free of the estimation split's luck, which both
    share.  The counts are bounded by the better of the estimator's two tests (:func:`both_tests`): the
    ceiling's own value, without the test being fixed in advance (a yardstick, not a claim)."""
    best = best_at(estimation_samples(samples), confidence)
    k, sizes = np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)
    for s in (0, 1):
        for out in estimation_outputs(mechanism, (d, d_prime), samples, seed, s, delta=delta, confidence=confidence):
            k[s] += int(np.count_nonzero(best.contains(out)))
            sizes[s] += len(out)
    n = int(sizes[0])  # the audit's own estimation split (smaller where its selection split was extended)
    alpha = (1 - confidence) / 2
    return max(0.0, float(both_tests(k[best.favours], n, k[1 - best.favours], n, delta, alpha)))


def _audit(case: Any, samples: int, seed: int, events: str = "auto") -> float:
    return audit_mechanism(case.mechanism, case.d, case.d_prime, samples=samples, seed=seed, deltas=case.deltas,
                           events=events).epsilon_lower


def throughput(case: Any, samples: int, seed: int) -> dict[str, Any]:
    """One bench case's times: ours, draw-and-count, split-and-count (same budget, same run)."""
    _audit(case, 20_000, seed)  # warm caches and imports
    eps, ours = timed(lambda: _audit(case, samples, seed))
    rng = np.random.default_rng(seed)
    _, plain = timed(lambda: [case.reference(rng, samples) for _ in range(2)])
    split_eps, split = timed(lambda: split_and_count(case.mechanism, case.d, case.d_prime, samples, seed,
                                                     case.deltas[0]))
    row = {"family": case.name, "samples_per_side": samples, "ours_seconds": ours, "plain_seconds": plain,
           "split_seconds": split, "ours_per_second": 2 * samples / ours, "plain_per_second": 2 * samples / plain,
           "ratio_ours_to_plain": plain / ours, "ours_time_over_split": ours / split,
           "epsilon_lower": eps, "split_epsilon_lower": split_eps}
    ceiling = case.ceiling(estimation_samples(samples), CONFIDENCE).epsilon if case.ceiling is not None else 0.0
    if ceiling > 0:  # a budget too small for any event to certify anything has no ratio to show
        same = same_sample_ceiling(case, samples, seed)
        row.update(ceiling=ceiling, ceiling_pair=pair_ceiling(case.ceiling, estimation_samples(samples)),
                   ours_over_ceiling=eps / ceiling, split_over_ceiling=split_eps / ceiling,
                   same_sample_ceiling=same, **({"ours_over_same_sample_ceiling": eps / same} if same > 0 else {}))
    return row


def views_tightness(case: Any, samples: int, seeds: Sequence[int]) -> list[dict[str, Any]]:
    """ε_lower ÷ ceiling for each view alone and all together (``auto``), over ``seeds``: against
    the expected-count ceiling and against the same-sample ceiling of each seed."""
    assert case.ceiling is not None  # structural: called only for cases with a ceiling
    ceiling = case.ceiling(estimation_samples(samples), CONFIDENCE).epsilon
    if ceiling <= 0:  # nothing certifiable at this budget (sparse vectors at eps 0.1 and 2e4 samples)
        return []
    same = [same_sample_ceiling(case, samples, s) for s in seeds]
    old = pair_ceiling(case.ceiling, estimation_samples(samples))
    rows = []
    for view in ("auto", *VIEWS):
        try:
            eps = [_audit(case, samples, s, view) for s in seeds]
        except InputError:  # the view does not apply to these outputs (rows on real numbers)
            continue
        ratios = [e / ceiling for e in eps]
        # a seed whose own estimation samples certify nothing with the ceiling's event has no ratio
        same_ratios = [e / c for e, c in zip(eps, same, strict=True) if c > 0]
        rows.append({"family": case.name, "view": view, "samples_per_side": samples, "ceiling": ceiling,
                     "ceiling_pair": old, "median_over_pair": float(np.median(eps)) / old if old > 0 else None,
                     "seeds": len(ratios), "median": float(np.median(ratios)), "min": float(np.min(ratios)),
                     "ratios": ratios, "same_sample_ceilings": same, "same_sample_ratios": same_ratios,
                     "same_sample_median": float(np.median(same_ratios)) if same_ratios else None,
                     "same_sample_min": float(np.min(same_ratios)) if same_ratios else None})
    return rows


def default_suite(families: Sequence[str] = ()) -> dict[str, Any]:
    """Wall seconds of ``python -m dpaudit run --quiet`` in a new process (interpreter start, suite
    build, every audit, the summary) at the default budget and workers, with its exit code (0:
    every verdict as expected) and the run's own last line; with ``families``, of
    ``run --quiet --family NAME ...`` (those families' scenarios of the suite)."""
    # The child imports the dpaudit this bench runs from (a checkout on sys.path, or the installed one).
    home = str(Path(__file__).parents[2])  # the folder holding the `dpaudit` package
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [home, os.environ.get("PYTHONPATH")]))}
    only = [arg for name in families for arg in ("--family", name)]
    command = ["-m", "dpaudit", "run", "--quiet", *only]
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *command], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    return {"command": " ".join(["python", *command]), "seconds": seconds,  # the command it ran
            "exit_code": proc.returncode, "summary": last}


def _once(case: Any) -> Any:
    """``case`` with its ceiling computed once per (n, confidence): a case's throughput row, its
    views and their same-sample ceilings ask for the same one up to 2 + 2·seeds times, and it is
    a pure function of its arguments (exact distributions and integrals: seconds for the sparse
    vector's and the Lyu, Su & Li laws)."""
    if case.ceiling is None:
        return case
    return dataclasses.replace(case, ceiling=functools.cache(case.ceiling))


def chosen_families(names: Sequence[str] = ()) -> list[Any]:
    """The families ``bench --family`` names (every family when none), each name checked."""
    known = [f.name for f in catalog.families()]
    for name in names:
        if name not in known:
            raise InputError(f"family = {name!r} is invalid: must be one of {', '.join(known)}"
                             f"{catalog.suggest(name, known)}")
    return [f for f in catalog.families() if not names or f.name in names]


def run(samples: int = 2_000_000, seed: int = 0, seeds: int = 1, quick: bool = False,
        families: Sequence[str] = ()) -> dict[str, Any]:
    """Throughput rows, per-view tightness rows (over ``seeds`` seeds from ``seed``), tightness
    rows and each family's extra benchmarks.  ``quick``: the tightness rows at ``samples`` too
    and no extra benchmarks (a smoke run of every row's machinery), nor the default suite's run.
    ``families``: only these families (module docstring)."""
    chosen = chosen_families(families)
    cases = [_once(c) for f in chosen for c in f.bench()]
    rows = [throughput(case, samples, seed) for case in cases]
    views = [r for case in cases if case.ceiling is not None
             for r in views_tightness(case, samples, range(seed, seed + seeds))]
    tight = []
    for t in (_once(t) for f in chosen for t in f.tightness()):
        n = samples if quick else t.samples
        r, secs = timed(functools.partial(audit_mechanism, t.mechanism, t.pair.d, t.pair.d_prime, samples=n, seed=seed,
                                          deltas=t.deltas, relation=t.pair.relation))
        row = {"audit": t.label, "samples_per_side": n, "epsilon_true": t.epsilon_true,
               "epsilon_lower": r.epsilon_lower, "tightness": r.epsilon_lower / t.epsilon_true, "seconds": secs}
        if t.ceiling is not None:
            ceiling = t.ceiling(estimation_samples(n), CONFIDENCE).epsilon
            same = same_sample_bound(t.mechanism, t.pair.d, t.pair.d_prime, t.ceiling, t.deltas[0], n, seed)
            row.update(ceiling=ceiling, ceiling_pair=pair_ceiling(t.ceiling, estimation_samples(n)),
                       ours_over_ceiling=r.epsilon_lower / ceiling, same_sample_ceiling=same,
                       ours_over_same_sample_ceiling=r.epsilon_lower / same)
        tight.append(row)
    extra = {} if quick else {name: measure(seed) for f in chosen for name, measure in f.benchmarks.items()}
    if not quick:
        extra["default_suite"] = default_suite(families)
    return {"throughput": rows, "views": views, "tightness": tight, **extra,
            "machine": {"python": platform.python_version(), "numpy": np.__version__,
                        "processor": platform.processor() or platform.machine()}}


def _ratio(row: dict[str, Any], key: str) -> str:
    return f"{row[key]:.4f}" if row.get(key) is not None else "-"


def table(report: dict[str, Any]) -> str:
    lines = ["throughput (samples per second, both sides; plain = draw the same distribution and count one event; "
             "split = the plain split-and-count auditor, same budget, same sampler)",
             f"{'family':24s} {'ours/s':>10s} {'plain/s':>10s} {'ours/plain':>10s} {'t_ours/t_split':>14s} "
             f"{'eps_lower':>10s} {'ceiling':>8s} {'CP ceil':>8s} {'ours/ceil':>9s} {'split/ceil':>10s}"]
    for r in report["throughput"]:
        lines.append(f"{r['family']:24s} {r['ours_per_second']:10.3g} {r['plain_per_second']:10.3g} "
                     f"{r['ratio_ours_to_plain']:10.3f} {r['ours_time_over_split']:14.2f} {r['epsilon_lower']:10.4f} "
                     f"{r.get('ceiling', float('nan')):8.4f} {r.get('ceiling_pair', float('nan')):8.4f} "
                     f"{_ratio(r, 'ours_over_ceiling'):>9s} "
                     f"{_ratio(r, 'split_over_ceiling'):>10s}")
    if report.get("views"):
        n = report["views"][0]["seeds"]
        lines += ["", f"eps_lower / ceiling per view ({n} seed(s); ceiling = the estimator's bound of the best event "
                  "fixed in advance, expected counts, same estimation budget; CP ceil = the Clopper-Pearson pair's "
                  "alone, the ceiling before the joint test, and median/CP the median eps_lower over it)",
                  "and counted on each seed's own estimation samples (same-sample)",
                  f"{'family':24s} {'view':10s} {'samples':>9s} {'ceiling':>8s} {'CP ceil':>8s} {'median':>8s} "
                  f"{'min':>8s} {'same-sample median':>18s} {'min':>8s} {'median/CP':>9s}"]
        for v in report["views"]:
            lines.append(f"{v['family']:24s} {v['view']:10s} {v['samples_per_side']:9d} {v['ceiling']:8.4f} "
                         f"{v.get('ceiling_pair', float('nan')):8.4f} {v['median']:8.4f} {v['min']:8.4f} "
                         f"{_ratio(v, 'same_sample_median'):>18s} {_ratio(v, 'same_sample_min'):>8s} "
                         f"{_ratio(v, 'median_over_pair'):>9s}")
    lines += ["", "tightness (seed 0, confidence 0.95)",
              f"{'audit':28s} {'samples':>10s} {'eps_lower':>10s} {'/eps_true':>10s} {'/ceiling':>9s} "
              f"{'/same-sample':>12s} {'seconds':>8s}"]
    for t in report["tightness"]:
        lines.append(f"{t['audit']:28s} {t['samples_per_side']:10d} {t['epsilon_lower']:10.5f} "
                     f"{t['tightness']:10.4f} {_ratio(t, 'ours_over_ceiling'):>9s} "
                     f"{_ratio(t, 'ours_over_same_sample_ceiling'):>12s} {t['seconds']:8.2f}")
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
    suite = report.get("default_suite")
    if suite:
        lines += ["", f"default suite ({suite['command']}): {suite['seconds']:.1f} s wall, exit {suite['exit_code']}: "
                  f"{suite['summary']}"]
    return "\n".join(lines) + "\n"
