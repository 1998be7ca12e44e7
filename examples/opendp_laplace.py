"""Audit OpenDP's Laplace sum through dpaudit's factory adapter, on one worker and on two.

    pip install 'dpaudit[opendp]'      # opendp >= 0.16
    python examples/opendp_laplace.py --samples 100000 --rounds 3
    python examples/opendp_laplace.py --samples 100000 --batch --scale 0.5

An OpenDP measurement holds ctypes pointers into OpenDP's native library, so it cannot be pickled
and cannot be sent to a worker process.  ``from_factory`` carries a picklable factory instead (a
module-level function, or a ``functools.partial`` of one), and each worker process builds the
measurement once.  The measurement is ``make_sum >> then_laplace`` on a vector of floats in
[0, 1] under the symmetric distance: adding or removing one record moves the sum by at most 1, so
the measurement's ε is ``scale⁻¹`` (OpenDP's own privacy map gives ``1.0000000093`` for scale 1:
it rounds the sensitivity up to cover floating-point summation).  OpenDP samples the Laplace
exactly on a grid of floats, so no floating-point leak is expected: the audit's bound should
stay below the claim, and a scale of 1/2 claimed as ε = 1 (true ε = 2) should be refuted.

``--batch`` draws ``n`` outputs per OpenDP call: the sum comes from OpenDP's ``make_sum``
transformation, and a vector Laplace measurement (the same sampler, applied independently to each
coordinate) noises ``n`` copies of it at once.

The script reports the audit's finding and ε_lower, and with ``--rounds`` the wall time of the
same audit with ``n_jobs=1`` and ``n_jobs=2``, alternated in rounds so the machine's drift falls
on both sides; the ratio printed is the median round's.
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial

import numpy as np

from dpaudit import audit_mechanism
from dpaudit.adapters import from_factory


def laplace_sum(scale: float):
    """OpenDP's ``make_sum >> then_laplace(scale)`` on floats in [0, 1] (built in each worker)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0))), dp.symmetric_distance()
    return dp.t.make_sum(*space) >> dp.m.then_laplace(scale=scale)


def laplace_sum_batched(scale: float):
    """OpenDP's sum transformation and a vector Laplace of the same ``scale`` (for the batch hook)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0))), dp.symmetric_distance()
    noise = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float),
                              scale=scale)
    return dp.t.make_sum(*space), noise


def release_many(library, data, n: int) -> np.ndarray:
    """``n`` releases in one call: the sum once, then ``n`` independent Laplace draws around it."""
    total, noise = library
    return np.asarray(noise([total(list(data))] * n))


def release_one(measurement, data) -> float:
    return measurement(list(data))


def mechanism(scale: float, batch: bool, n_jobs: int):
    if batch:
        return from_factory(partial(laplace_sum_batched, scale), name="opendp-laplace-sum", batch=release_many,
                            n_jobs=n_jobs)
    return from_factory(partial(laplace_sum, scale), name="opendp-laplace-sum", release=release_one, n_jobs=n_jobs)


D, D_PRIME = np.array([0.0]), np.array([0.0, 1.0])  # add-remove neighbours: the sum moves by 1


def audit(scale: float, batch: bool, n_jobs: int, samples: int, epsilon: float, events: str):
    return audit_mechanism(mechanism(scale, batch, n_jobs), D, D_PRIME, samples=samples, epsilon=epsilon,
                           events=events)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=100_000, help="outputs per side (default 1e5)")
    parser.add_argument("--scale", type=float, default=1.0, help="Laplace scale (default 1: ε = 1)")
    parser.add_argument("--epsilon", type=float, default=None, help="claimed ε (default: OpenDP's privacy map)")
    parser.add_argument("--events", default="auto", help="dpaudit's views (default auto)")
    parser.add_argument("--batch", action="store_true", help="draw many outputs per OpenDP call")
    parser.add_argument("--jobs", type=int, default=2, help="workers of the audit run (default 2)")
    parser.add_argument("--rounds", type=int, default=0, help="time n_jobs=1 against n_jobs=2 over this many rounds")
    args = parser.parse_args(argv)
    claimed = args.epsilon if args.epsilon is not None else laplace_sum(1.0).map(1)  # the ε the user is promised
    if not args.rounds:
        result = audit(args.scale, args.batch, args.jobs, args.samples, claimed, args.events)
        print(result.finding, round(result.epsilon_lower, 3), f"(claim ε = {claimed:.10g}, scale {args.scale})")
        return
    ratios = []
    for r in range(args.rounds):
        seconds = {}
        for jobs in ((1, 2) if r % 2 == 0 else (2, 1)):
            start = time.perf_counter()
            result = audit(args.scale, args.batch, jobs, args.samples, claimed, args.events)
            seconds[jobs] = time.perf_counter() - start
            print(f"round {r + 1}, n_jobs={jobs}: {seconds[jobs]:.1f} s, {result.finding}, "
                  f"eps_lower {result.epsilon_lower:.3f}", flush=True)
        ratios.append(seconds[1] / seconds[2])
    print(f"n_jobs=2 vs n_jobs=1: {statistics.median(ratios):.2f}x (median of {args.rounds} rounds: "
          f"{', '.join(f'{x:.2f}' for x in ratios)}), {args.samples} samples per side"
          f"{', batch hook' if args.batch else ''}")


if __name__ == "__main__":
    main()
