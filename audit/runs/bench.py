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
import platform
import resource
import time
from collections.abc import Callable, Sequence
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
from dpaudit.runs import costs

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


def cpu_timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and the CPU seconds it took: this process's (every thread) and its waited-for children's."""
    def now() -> float:
        child = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + child.ru_utime + child.ru_stime
    start = now()
    out = fn()
    return out, now() - start


def throughput(case: Any, samples: int, seed: int, reps: int = 3) -> dict[str, Any]:
    """One bench case's times: ours, draw-and-count, split-and-count (same budget, same run).  Ours
    and split-and-count each run ``reps`` times, interleaved and in reverse order every other round;
    ``ours_time_over_split`` is the ratio of their median CPU seconds (the acceptance figure: CPU,
    because a shared machine inflates wall time without changing the work)."""
    _audit(case, 20_000, seed)  # warm caches and imports
    split_and_count(case.mechanism, case.d, case.d_prime, 20_000, seed, case.deltas[0])
    ours_cpu: list[float] = []
    split_cpu: list[float] = []
    for rep in range(reps):
        for first in ((True, False) if rep % 2 == 0 else (False, True)):
            if first:
                (eps, ours), cpu = cpu_timed(lambda: timed(lambda: _audit(case, samples, seed)))
                ours_cpu.append(cpu)
            else:
                (split_eps, split), cpu = cpu_timed(lambda: timed(lambda: split_and_count(
                    case.mechanism, case.d, case.d_prime, samples, seed, case.deltas[0])))
                split_cpu.append(cpu)
    rng = np.random.default_rng(seed)
    _, plain = timed(lambda: [case.reference(rng, samples) for _ in range(2)])
    ours_med, split_med = float(np.median(ours_cpu)), float(np.median(split_cpu))
    row = {"family": case.name, "samples_per_side": samples, "ours_seconds": ours, "plain_seconds": plain,
           "split_seconds": split, "ours_per_second": 2 * samples / ours, "plain_per_second": 2 * samples / plain,
           "ratio_ours_to_plain": plain / ours, "ours_cpu_seconds": ours_med, "split_cpu_seconds": split_med,
           "reps": reps, "ours_time_over_split": ours_med / split_med,
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
    """The cost of ``python -m dpaudit run --quiet`` in a new process (interpreter start, suite
    build, every audit, the summary) at the default budget and workers: wall and CPU seconds, peak
    memory, its exit code (0: every verdict as expected) and the run's own last line; with
    ``families``, of ``run --quiet --family NAME ...`` (those families' scenarios of the suite)."""
    only = [arg for name in families for arg in ("--family", name)]
    cost = costs.command_cost(("run", "--quiet", *only))
    return {"command": cost.command, "seconds": cost.wall_seconds, "cpu_seconds": cost.cpu_seconds,
            "peak_mb": cost.peak_mb, "exit_code": cost.exit_code, "summary": cost.last_line}


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


PARTS = ("throughput", "views", "tightness", "benchmarks", "costs")
"""What ``bench --only`` may keep: the throughput rows, the per-view tightness rows, the
tightness rows, the families' extra benchmarks, and the commands' costs (:mod:`dpaudit.runs.costs`)."""


def run(samples: int = 2_000_000, seed: int = 0, seeds: int = 1, quick: bool = False,
        families: Sequence[str] = (), reps: int = 3, only: Sequence[str] = (), errata: bool = False,
        tests: bool = False) -> dict[str, Any]:
    """Throughput rows (``reps`` interleaved runs each), per-view tightness rows (over ``seeds``
    seeds from ``seed``), tightness rows, each family's extra benchmarks, and the commands'
    costs.  ``quick``: the tightness rows at ``samples`` too and no extra benchmarks nor costs (a
    smoke run of every row's machinery).  ``families``: only these families (module docstring).
    ``only``: only these of :data:`PARTS`.  ``errata``/``tests``: the costs include the errata
    suite and the README's test command (minutes each)."""
    parts = set(only or PARTS) - ({"benchmarks", "costs"} if quick else set())
    chosen = chosen_families(families)
    cases = [_once(c) for f in chosen for c in f.bench()]
    rows = [throughput(case, samples, seed, reps) for case in cases] if "throughput" in parts else []
    views = [r for case in cases if case.ceiling is not None
             for r in views_tightness(case, samples, range(seed, seed + seeds))] if "views" in parts else []
    tight = [tightness(t, samples if quick else t.samples, seed)
             for f in chosen for t in (_once(t) for t in f.tightness())] if "tightness" in parts else []
    extra = ({name: measure(seed) for f in chosen for name, measure in f.benchmarks.items()}
             if "benchmarks" in parts else {})
    if "costs" in parts:
        extra["default_suite"] = default_suite(families)
        if not families:
            extra["costs"] = costs.costs(reps=reps, errata=errata, tests=tests)
    ratios = [r["ours_time_over_split"] for r in rows]
    summary = ({"ours_over_split_median": float(np.median(ratios)), "ours_over_split_max": float(np.max(ratios)),
                "ours_over_split_worst": rows[int(np.argmax(ratios))]["family"], "cases": len(rows)}
               if rows else {})
    return {"throughput": rows, "throughput_summary": summary, "views": views, "tightness": tight, **extra,
            "machine": {"python": platform.python_version(), "numpy": np.__version__,
                        "processor": platform.processor() or platform.machine()}}


def tightness(t: Any, n: int, seed: int) -> dict[str, Any]:
    """One tightness row: ε_lower at ``n`` per side against ε_true, and against its ceilings where it has one."""
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
    return row


def _ratio(row: dict[str, Any], key: str) -> str:
    return f"{row[key]:.4f}" if row.get(key) is not None else "-"


def table(report: dict[str, Any]) -> str:
    lines = ["throughput (samples per second, both sides; plain = draw the same distribution and count one event; "
             "split = the plain split-and-count auditor, same budget, same sampler)",
             f"{'family':24s} {'ours/s':>10s} {'plain/s':>10s} {'ours/plain':>10s} {'cpu ours/split':>14s} "
             f"{'eps_lower':>10s} {'ceiling':>8s} {'CP ceil':>8s} {'ours/ceil':>9s} {'split/ceil':>10s}"]
    for r in report["throughput"]:
        lines.append(f"{r['family']:24s} {r['ours_per_second']:10.3g} {r['plain_per_second']:10.3g} "
                     f"{r['ratio_ours_to_plain']:10.3f} {r['ours_time_over_split']:14.2f} {r['epsilon_lower']:10.4f} "
                     f"{r.get('ceiling', float('nan')):8.4f} {r.get('ceiling_pair', float('nan')):8.4f} "
                     f"{_ratio(r, 'ours_over_ceiling'):>9s} "
                     f"{_ratio(r, 'split_over_ceiling'):>10s}")
    summary = report.get("throughput_summary")
    if summary:
        lines.append("ours / split (CPU, median of each case's interleaved runs): "
                     f"median {summary['ours_over_split_median']:.2f} over {summary['cases']} cases, "
                     f"max {summary['ours_over_split_max']:.2f} ({summary['ours_over_split_worst']})")
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
        lines += ["", f"default suite ({suite['command']}): {suite['seconds']:.1f} s wall, "
                  f"{suite['cpu_seconds']:.1f} CPU s, {suite['peak_mb']:.0f} MB, exit {suite['exit_code']}: "
                  f"{suite['summary']}"]
    if report.get("costs"):
        lines += ["", *costs.table(report["costs"])]
    return "\n".join(lines) + "\n"
