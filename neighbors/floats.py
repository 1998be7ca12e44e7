"""Rounding-adversarial neighbouring pairs for queries over real-valued records (sums, means, variances).

A query computed in floating point has an *implemented* sensitivity max |f̂(D) − f̂(D′)| that can exceed
the declared (mathematical) one: every addition rounds to the nearest double, so changing one record
shifts every later partial sum and can change how each of them rounds; a variance that subtracts large
nearly equal numbers (one pass: Σx²/n − m², or a second pass around a rounded mean) turns those
rounding errors into a change many times the declared bound (Casacuberta, Shoemate, Vadhan & Wagaman,
CCS 2022, §3–§4: the implemented sensitivity of naive sums exceeds the textbook one in essentially
every library).  The errors are largest where the data sit far from 0 relative to the clamping
interval [L, U] (the doubles near L are coarse against U − L), where partial sums cross binade edges
(2^k: the spacing of the doubles doubles), for large n, and for orders that decide how the running
sum rounds.

:func:`float_pairs` proposes datasets of one column of doubles (1-D arrays) built from those
ingredients, and their swap or add-remove neighbours.  Every record lies in [L, U] (the mechanism's
clamping bounds), so every pair is a valid neighbouring pair of the declared relation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpaudit.core import require
from dpaudit.neighbors.relations import Pair

SIZES = (1_000, 10_000)  # records per dataset: large enough for rounding to accumulate, cheap to sum
MAX_SIZE = 1_000_000


def binade_edges(lower: float, upper: float) -> list[float]:
    """The doubles next to every power of two 2^k inside [lower, upper] (2^k and its predecessor), and
    the ones next to the bounds themselves: where the spacing of the doubles changes."""
    out = {lower, upper, float(np.nextafter(lower, math.inf)), float(np.nextafter(upper, -math.inf))}
    for edge in (lower, upper):
        if edge != 0 and math.isfinite(edge):
            k = math.frexp(abs(edge))[1]
            for j in (k - 1, k, k + 1):
                for sign in (1.0, -1.0):
                    p = sign * math.ldexp(1.0, j)
                    out.update(v for v in (p, float(np.nextafter(p, -math.inf)), float(np.nextafter(p, math.inf)))
                               if lower <= v <= upper)
    return sorted(out)


def base_datasets(lower: float, upper: float, n: int, rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    """Datasets of ``n`` records in [lower, upper]: records at the bounds (all, alternating, a random mix),
    uniform records (in draw order, ascending, descending: the orders decide how a running sum rounds),
    records at binade edges, and a half-and-half split at the bounds (cancellation in variances)."""
    uniform = rng.uniform(lower, upper, n)
    mix = np.where(rng.random(n) < rng.random(), lower, upper)
    edges = np.array(binade_edges(lower, upper))
    out = [("all at the upper bound", np.full(n, upper)), ("all at the lower bound", np.full(n, lower)),
           ("bounds alternating", np.where(np.arange(n) % 2 == 0, lower, upper)),
           ("bounds at random", mix), ("uniform", uniform), ("uniform ascending", np.sort(uniform)),
           ("uniform descending", np.sort(uniform)[::-1]),
           ("binade edges at random", rng.choice(edges, n)),
           ("half at each bound", np.concatenate([np.full(n // 2, lower), np.full(n - n // 2, upper)]))]
    return [(name, np.clip(data, lower, upper)) for name, data in out]


def _changed(base: np.ndarray, name: str, position: int, value: float, relation: str) -> Pair:
    where = "first" if position == 0 else "last" if position == len(base) - 1 else f"at {position}"
    if relation == "add-remove":
        grown = np.insert(base, position, value)
        return Pair(base, grown, f"{name} (n={len(base)}), add {float(value)!r} {where}", "add-remove")
    other = base.copy()
    other[position] = value
    moved = f"record {where} {float(base[position])!r} -> {float(value)!r}"
    return Pair(base, other, f"{name} (n={len(base)}), {moved}", "swap")


def float_pairs(lower: float, upper: float, *, rng: np.random.Generator, sizes: Sequence[int] = SIZES,
                relation: str = "swap") -> list[Pair]:
    """Candidate neighbouring pairs of 1-D double datasets with records in [``lower``, ``upper``]: each of
    :func:`base_datasets` at each size, with its first or last record moved to the other bound (or a
    bound record added there, for ``add-remove``): the change that shifts the most partial sums, and the
    one that shifts only the last."""
    require(math.isfinite(lower) and math.isfinite(upper) and lower < upper, "bounds", (lower, upper),
            "must be finite with lower < upper")
    require(relation in ("swap", "add-remove"), "relation", relation, "a float search builds swap or add-remove pairs")
    for n in sizes:
        require(isinstance(n, int) and 2 <= n <= MAX_SIZE, "sizes", n,
                f"each size must be an integer in [2, {MAX_SIZE}]")
    pairs = []
    for n in sizes:
        for name, base in base_datasets(lower, upper, n, rng):
            for position in (0, n - 1):
                target = lower if base[position] - lower > upper - base[position] else upper
                pairs.append(_changed(base, name, position, target, relation))
    return pairs
