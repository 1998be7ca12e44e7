"""CPU cost of the one-run bounds (``dpaudit bench`` may call :func:`bench`).

Process CPU time, not wall clock (the machine is shared); each case is the full bound of one
game: Steinke's ε at one δ and the largest rejected GDP μ, computed afresh (the functions' own
memo, which a caller bounding many games enjoys, is bypassed)."""

from __future__ import annotations

import time

from dpaudit.onerun.fdp import largest_rejected_mu
from dpaudit.onerun.steinke import epsilon_lower

__all__ = ["bench"]

CASES = ((100, 100, 100), (1000, 1000, 881), (1000, 74, 73), (10000, 10000, 9000), (10000, 1000, 990))


def bench(delta: float = 1e-5, alpha: float = 0.05) -> list[dict[str, float]]:
    """One row per (m, r, v) of :data:`CASES`: CPU seconds of each bound."""
    rows = []
    for m, r, v in CASES:
        t0 = time.process_time()
        eps = epsilon_lower.__wrapped__(m, r, v, delta=delta, alpha=alpha)
        t1 = time.process_time()
        mu = largest_rejected_mu.__wrapped__(m=m, c_prime=r, c=v, tau=alpha)
        t2 = time.process_time()
        rows.append({"m": m, "r": r, "v": v, "epsilon_lower": eps, "steinke_cpu_s": t1 - t0, "gdp_mu": mu,
                     "fdp_cpu_s": t2 - t1})
    return rows


if __name__ == "__main__":  # pragma: no cover
    for row in bench():
        print(row)
