"""OpenDP's Laplace audited through ``dpaudit.adapters.from_factory`` on one worker and on two,
in one run (issue #24): wall time, and the CPU time of every process.

Each *round* runs the audit of ``examples/opendp_laplace.py`` (``make_sum >> then_laplace``,
one OpenDP call per output, ``--samples`` per side) with ``n_jobs=1`` and ``n_jobs=2``, the order
alternating between rounds so a drift of the machine falls on both sides; the result is the
median round's ratio of wall times.

On a shared machine the wall ratio says more about the scheduler than about the adapter: Linux
groups the processes of one session (``/proc/sys/kernel/sched_autogroup_enabled``) and shares the
CPUs between busy groups, so with other sessions busy a second worker gets no more CPU than the
first had alone.  The CPU times do not depend on that: the *critical path* of the two-worker
audit is the CPU time of the parent plus that of the busiest worker, and
``one-worker CPU / critical path`` is the ratio an idle two-core machine would show (less the
pool's start, which the wall time of an idle run includes).

    PYTHONPATH=$PWD python benchmarks/opendp_scaling.py [--samples 100000] [--rounds 3]

Measured on the shared 2-core VM (load averages 8.5 to 13, autogroup on), 10^5 samples per side,
3 rounds each, two runs: one worker ~20 CPU-s (100 µs per OpenDP call); wall ratios 1.17x and 1.00x
(medians; rounds 0.87 to 1.86), CPU critical-path ratios 1.90x and 1.88x (rounds 1.72 to 1.95;
the lowest is each run's first round, which starts the pool and imports OpenDP in both workers:
two workers' CPU / one's 1.14 then, 1.01 to 1.04 once warm).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import psutil

from examples.opendp_laplace import audit, laplace_sum


def cpu_by_process() -> dict[int, float]:
    """CPU seconds (user + system) of this process and each of its descendants, by pid."""
    me = psutil.Process()
    out = {}
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
            out[proc.pid] = t.user + t.system
        except psutil.NoSuchProcess:
            continue
    return out


def timed(jobs: int, samples: int, claimed: float) -> dict:
    before = cpu_by_process()
    start = time.perf_counter()
    result = audit(1.0, False, jobs, samples, claimed, "auto")
    wall = time.perf_counter() - start
    after = cpu_by_process()
    used = {pid: after[pid] - before.get(pid, 0.0) for pid in after}
    parent = used.pop(os.getpid())
    workers = sorted((v for v in used.values() if v > 0.05), reverse=True)
    return {"jobs": jobs, "wall": wall, "parent_cpu": parent, "worker_cpu": workers,
            "cpu": parent + sum(workers), "critical_path": parent + (workers[0] if workers else 0.0),
            "finding": result.finding, "epsilon_lower": result.epsilon_lower}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    claimed = laplace_sum(1.0).map(1)
    rounds = []
    for r in range(args.rounds):
        pair = {}
        for jobs in ((1, 2) if r % 2 == 0 else (2, 1)):
            pair[jobs] = timed(jobs, args.samples, claimed)
            print(json.dumps({"round": r + 1, "load": os.getloadavg()[0], **pair[jobs]}), flush=True)
        rounds.append({"wall": pair[1]["wall"] / pair[2]["wall"],
                       "critical_path": pair[1]["cpu"] / pair[2]["critical_path"],
                       "cpu_overhead": pair[2]["cpu"] / pair[1]["cpu"]})
    summary = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    print(f"median of {args.rounds} rounds, {args.samples} samples per side: wall ratio {summary['wall']:.2f}x, "
          f"CPU critical-path ratio {summary['critical_path']:.2f}x, two workers' CPU / one's "
          f"{summary['cpu_overhead']:.2f} (rounds: {json.dumps(rounds)})")


if __name__ == "__main__":
    main()
