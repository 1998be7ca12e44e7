"""Audit diffprivlib's ``Laplace(epsilon=1)`` through dpaudit's factory adapter, with the default
views and with the threshold view alone, beside a miscalibrated one (scale 1/2, true ε = 2).

    pip install diffprivlib
    python examples/diffprivlib_laplace.py [--samples 1000000]

diffprivlib adds a double to a double, so its outputs are not on one grid and the *floating* view
of the default audit tells the two inputs apart by the outputs' low bits (the implementation's
ε is infinite).  The *threshold* view only asks whether an output exceeds a threshold, so it
bounds the ε of the mechanism as mathematics: it stays below 1 for ``Laplace(epsilon=1)`` and
exceeds 1 for the miscalibrated one.  The adapter builds the diffprivlib object in each process
(``random_state=None``: the library draws its own noise, so the run is not reproducible).
"""

from __future__ import annotations

import argparse
from functools import partial

import numpy as np

from dpaudit import audit_mechanism
from dpaudit.adapters import from_factory


def laplace(epsilon: float):
    from diffprivlib.mechanisms import Laplace

    return Laplace(epsilon=epsilon, sensitivity=1.0)


def randomise(mechanism, data) -> float:
    return mechanism.randomise(float(np.sum(data)))


D, D_PRIME = np.array([0.0]), np.array([0.0, 1.0])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=1_000_000, help="outputs per side (default 1e6)")
    parser.add_argument("--jobs", type=int, default=1, help="adapter workers (default 1)")
    args = parser.parse_args(argv)
    for label, epsilon in (("Laplace(epsilon=1)", 1.0), ("miscalibrated, scale 1/2", 2.0)):
        mech = from_factory(partial(laplace, epsilon), name=f"diffprivlib-laplace-{epsilon:g}", release=randomise,
                            n_jobs=args.jobs)
        for events in ("auto", "threshold"):
            result = audit_mechanism(mech, D, D_PRIME, samples=args.samples, epsilon=1.0, events=events)
            view = result.estimate.bounds[0].event
            print(f"{label}, events={events}: {result.finding}, eps_lower {result.epsilon_lower:.3f} "
                  f"({view.view} view)", flush=True)


if __name__ == "__main__":
    main()
