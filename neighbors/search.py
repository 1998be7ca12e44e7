"""Worst-case neighbouring pairs, by the exact privacy loss of each candidate pair.

For feature-valued records (linear bandits, RLHF comparisons) the candidates are built from
the data — ± the eigenvectors of Σ_D (smallest eigenvalue first), ± θ, random directions —
and the best one is refined by a local search on the unit sphere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.core import InputError, Relation, require
from dpaudit.neighbors.dataset import Dataset
from dpaudit.neighbors.relations import Pair, format_record

Loss = Callable[[np.ndarray, np.ndarray], float]


@dataclass(frozen=True)
class SearchResult:
    """The worst pair found, its loss, and how many candidates were scored or skipped."""

    pair: Pair
    loss: float
    evaluated: int
    skipped: int  # pairs on which the mechanism is undefined (e.g. no MLE on D′)


def _pair_loss(mechanism, pair: Pair, loss: Loss) -> float | None:
    try:
        return loss(mechanism.output_distribution(pair.d), mechanism.output_distribution(pair.d_prime))
    except InputError:
        return None


def worst_pair(mechanism, pairs: Iterable[Pair], loss: Loss) -> SearchResult:
    """The pair with the largest ``loss(P[M(D)], P[M(D′)])`` among ``pairs``.

    ``mechanism`` must expose ``output_distribution``; ``loss`` is typically
    ``dpaudit.engine.exact.epsilon_for_delta`` at some δ.  Pairs on which the mechanism is undefined
    are skipped and counted.  Ties keep the first pair.
    """
    require(hasattr(mechanism, "output_distribution"), "mechanism", getattr(mechanism, "name", mechanism),
            "worst-pair search needs output_distribution (a white-box mechanism)")
    best, evaluated, skipped = None, 0, 0
    for pair in pairs:
        value = _pair_loss(mechanism, pair, loss)
        if value is None:
            skipped += 1
            continue
        evaluated += 1
        if best is None or value > best[1]:
            best = (pair, value)
    require(best is not None, "pairs", f"({skipped} skipped)",
            "need at least one pair on which the mechanism is defined")
    assert best is not None  # require raised otherwise: narrows the type for the checker
    return SearchResult(best[0], best[1], evaluated, skipped)


def feature_directions(sigma: np.ndarray, theta: np.ndarray | None, rng: np.random.Generator,
                       n_random: int = 16) -> list[np.ndarray]:
    """± eigenvectors of Σ (smallest eigenvalue first), ± θ/‖θ‖, and random unit directions."""
    _, vecs = np.linalg.eigh(sigma)
    out = [s * vecs[:, i] for i in range(vecs.shape[1]) for s in (1.0, -1.0)]
    if theta is not None and np.linalg.norm(theta) > 0:
        t = theta / np.linalg.norm(theta)
        out += [t, -t]
    r = rng.normal(size=(n_random, sigma.shape[0]))
    out += list(r / np.linalg.norm(r, axis=1, keepdims=True))
    return out


def sphere_search(score: Callable[[np.ndarray], float | None], start: np.ndarray, rng: np.random.Generator,
                  steps: int = 200, step: float = 0.5) -> tuple[np.ndarray, float]:
    """Maximise ``score`` over unit vectors by stochastic hill climbing with shrinking steps."""
    best_v = start / np.linalg.norm(start)
    best = score(best_v)
    best = -np.inf if best is None else best
    for i in range(steps):
        trial = best_v + step * rng.normal(size=best_v.shape)
        norm = np.linalg.norm(trial)
        if norm == 0:
            continue
        value = score(trial / norm)
        if value is not None and value > best:
            best_v, best = trial / norm, value
        elif i % 10 == 9:
            step *= 0.7
    return best_v, best


def search_feature_pairs(mechanism, base: Dataset, relation: Relation | str,
                         make_record: Callable[[np.ndarray, Any], Mapping], extras: Sequence[Any],
                         directions: Sequence[np.ndarray], loss: Loss, rng: np.random.Generator,
                         refine_steps: int = 200) -> SearchResult:
    """Worst add/remove or swap pair with records ``make_record(direction, extra)``.

    Scores every removal (add/remove), every candidate addition or replacement built from
    ``directions`` × ``extras``, then refines the best candidate's direction on the sphere.
    """
    require(relation in (Relation.ADD_REMOVE, Relation.SWAP), "relation", relation,
            "feature search covers add-remove and swap")
    indices = base.unique_records()

    def build(v: np.ndarray, extra: Any, i: int | None) -> Pair:
        rec = make_record(v, extra)
        if i is None:
            return Pair(base, base.add(rec), f"add record {format_record(rec)}", relation)
        return Pair(base, base.replace(i, rec),
                    f"replace record {i} {format_record(base.record(i))} by {format_record(rec)}", relation)

    slots = [None] if relation == Relation.ADD_REMOVE else indices
    pairs = [build(v, e, i) for i in slots for e in extras for v in directions]
    if relation == Relation.ADD_REMOVE:
        pairs += [Pair(base, base.remove(i), f"remove record {i} {format_record(base.record(i))}", relation)
                  for i in indices]
    result = worst_pair(mechanism, pairs, loss)
    # Refine the best candidate of each (slot, extra) family whose start is the best of its family.
    best = result
    for i in slots:
        for e in extras:
            scored = [(v, _pair_loss(mechanism, build(v, e, i), loss)) for v in directions]
            family = [(v, s) for v, s in scored if s is not None]
            if not family:
                continue
            start = max(family, key=lambda t: t[1])[0]

            def score(u: np.ndarray, e: Any = e, i: int | None = i) -> float | None:
                return _pair_loss(mechanism, build(u, e, i), loss)

            v, value = sphere_search(score, start, rng, steps=refine_steps)
            if value > best.loss:
                best = SearchResult(build(v, e, i), value, best.evaluated, best.skipped)
    return best
