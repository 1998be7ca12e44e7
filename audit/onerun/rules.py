"""Guessing rules that are valid by construction, each with its multiplicity correction.

A one-run bound (Steinke et al. 2023, Thm 3.3; Mahloujifar et al. 2025, Thm 9) holds for a
guessing rule fixed *before* the secret is seen.  Choosing the number of guesses after looking
at which guesses were right is a data-dependent choice among many tests and breaks the level.
Three rules keep it:

* :class:`Fixed` — k₊ "in" guesses on the highest scores and k₋ "out" guesses on the lowest,
  fixed in advance.  One test at level α.
* :class:`Grid` — G fixed (k₊, k₋) pairs, each tested at α/G (Bonferroni): if the claim holds,
  P[any of the G tests rejects] ≤ Σ α/G = α, so the largest bound over the grid is valid.
* :class:`Split` — the canaries are split at random (a stream of the rule's own seed,
  independent of the secret and of the scores) into a selection part and a bound part; k is
  chosen on the selection part, whose secret bits are then spent, and the one test runs on
  the bound part alone at level α, never with fewer guesses than can reject at all
  (:func:`smallest_capable_k`, a function of the bound part's size and α only).  Conditioning on
  the selection part's bits, the bound part is a game of its own with m = its size.

Scores rank the canaries.  Ties are broken by a tie-break key (:func:`counts`): m distinct
values in uniformly random order (:func:`tiebreak_keys`, from a seed that
:func:`~dpaudit.onerun.bound.one_run_bound` draws from fresh entropy after the scores and the secret
exist, and records), so the canaries are ranked by (score, key) and the canary order of a user's
secret (e.g. "included canaries first") cannot turn ties into a finding.  Without a key, tied
scores at a cut are counted worst-case: valid, but without power on discrete scores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dpaudit.core import require

__all__ = ["Fixed", "Grid", "Rule", "Split", "Test", "counts", "default_rule", "smallest_capable_k", "tiebreak_keys"]


@dataclass(frozen=True)
class Test:
    """One guessing test: on ``m`` canaries, ``r = k₊ + k₋`` guesses of which ``v`` are right, at level α."""

    m: int
    k_plus: int
    k_minus: int
    v: int
    alpha: float

    @property
    def r(self) -> int:
        return self.k_plus + self.k_minus

    def to_dict(self) -> dict[str, float | int]:
        return {"m": self.m, "k_plus": self.k_plus, "k_minus": self.k_minus, "r": self.r, "v": self.v,
                "alpha": self.alpha}


def _check_k(k_plus: int, k_minus: int, m: int | None = None) -> None:
    for name, k in (("k_plus", k_plus), ("k_minus", k_minus)):
        require(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0, name, k,
                "must be an integer >= 0")
    require(k_plus + k_minus >= 1, "k_plus + k_minus", k_plus + k_minus, "must be >= 1 (at least one guess)")
    if m is not None:
        require(k_plus + k_minus <= m, "k_plus + k_minus", k_plus + k_minus,
                f"must be <= m = {m} (a canary is guessed at most once)")


def _block(ascending: np.ndarray, value: float) -> tuple[int, int]:
    """[lo, hi): the positions of ``value`` in the sorted scores (its tied block)."""
    return int(np.searchsorted(ascending, value, side="left")), int(np.searchsorted(ascending, value, side="right"))


def tiebreak_keys(seed: int, m: int) -> np.ndarray:
    """The tie-break key of a game of m canaries drawn from ``seed``: a uniformly random permutation
    of 0..m−1 (stream ``SeedSequence(seed, spawn_key=(9,))``).  Distinct values, so every tied block
    is put in a uniformly random order and no pair falls back to the canary index."""
    require(isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0, "tiebreak", seed,
            "must be an integer >= 0 (the seed of the tie-break key)")
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(9,))).permutation(m)


def _check_tiebreak(tiebreak: np.ndarray, m: int) -> np.ndarray:
    keys = np.asarray(tiebreak).reshape(-1)
    require(keys.size == m and keys.dtype.kind in "iuf", "tiebreak", f"<{keys.size} values of dtype {keys.dtype}>",
            f"must be one real key per canary ({m}), e.g. tiebreak_keys(seed, {m})")
    return keys


def _ones_below(scores: np.ndarray, secret: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """ones[i]: the included canaries among the i lowest by (score, key); one sort, O(m log m)."""
    order = np.lexsort((keys, scores))
    return np.concatenate(([0], np.cumsum(secret[order], dtype=np.int64)))


def _right(ones: np.ndarray, k_plus: int, k_minus: int) -> int:
    """Right guesses: "in" on the k₊ highest, "out" on the k₋ lowest (k₊ + k₋ ≤ m: disjoint)."""
    m = ones.size - 1
    return int(ones[m] - ones[m - k_plus]) + k_minus - int(ones[k_minus])


def counts(scores: np.ndarray, secret: np.ndarray, k_plus: int, k_minus: int,
           tiebreak: np.ndarray | None = None) -> int:
    """The number of right guesses: ``in`` on the k₊ highest scores, ``out`` on the k₋ lowest.

    ``tiebreak``: a key per canary (m distinct values, :func:`tiebreak_keys`).  The canaries are
    ranked by (score, key): ties are broken by the key, never by the canary index.

    Validity: the key is drawn from fresh entropy *after* the scores and the secret exist,
    independently of both (:func:`~dpaudit.onerun.bound.one_run_bound` draws its seed and records
    it), so the ranking is a randomised guessing rule fixed in advance: a post-processing of the
    output with randomness independent of S.  The one-run tests hold at their level for such a
    rule (Steinke, Nasr, Jagielski 2023, Thm 3.3; Mahloujifar et al. 2025, Thm 9 for the f-DP
    test).  A key chosen after looking at S (or the best of several tried) is not, and voids the
    bound.  On tied scores that carry nothing (all zero), the guesses fall on uniformly random
    canaries, whatever the canary order of the secret.

    ``tiebreak=None``: tied scores at a cut are counted worst-case.  Let t₊ be the k₊-th highest
    score.  The canaries scored above t₊ are guessed "in"; the p = k₊ − #{s > t₊} remaining "in"
    guesses fall in the block B₊ = {s = t₊}, and are counted as taking B₊'s out-canaries first:
    max(0, p − zeros(B₊)) of them are right.  Symmetrically at t₋, the k₋-th lowest score: the q
    "out" guesses in B₋ = {s = t₋} take its in-canaries first, max(0, q − ones(B₋)) right.  When
    both cuts fall in one block (t₊ = t₋), these two minima are reached jointly: p + q ≤ |B|
    (k₊ + k₋ ≤ m), so the plus side takes min(p, zeros) zeros and the minus side min(q, ones)
    ones without competing for the same canaries.  This count is, for every (scores, S), ≤ the
    count under any order of the tied blocks that does not look at S, in particular the random
    key's, so it can only lower P[v ≥ c] and every bound keeps its level; the price is power on
    heavily tied scores (binary outputs give no right guess at all).

    One sort, O(m log m), vectorised.
    """
    _check_k(k_plus, k_minus, scores.size)
    if tiebreak is not None:
        return _right(_ones_below(scores, secret, _check_tiebreak(tiebreak, scores.size)), k_plus, k_minus)
    return _worst_case(scores, secret, k_plus, k_minus)


def _worst_case(scores: np.ndarray, secret: np.ndarray, k_plus: int, k_minus: int) -> int:
    """:func:`counts` without a key: tied blocks at the cuts counted worst-case."""
    m = scores.size
    order = np.argsort(scores, kind="stable")
    asc = scores[order]
    ones = np.concatenate(([0], np.cumsum(secret[order], dtype=np.int64)))  # ones among the i lowest
    right = 0
    if k_plus:
        lo, hi = _block(asc, asc[m - k_plus])
        zeros_in_block = (hi - lo) - int(ones[hi] - ones[lo])
        right += int(ones[m] - ones[hi]) + max(0, k_plus - (m - hi) - zeros_in_block)
    if k_minus:
        lo, hi = _block(asc, asc[k_minus - 1])
        ones_in_block = int(ones[hi] - ones[lo])
        right += (lo - int(ones[lo])) + max(0, k_minus - lo - ones_in_block)
    return right


Objective = Callable[[int, int, int, float], float]  # (m, r, v, alpha) -> bound, used by Split


@dataclass(frozen=True)
class Fixed:
    """k₊ and k₋ fixed in advance; no correction."""

    k_plus: int
    k_minus: int

    def __post_init__(self) -> None:
        _check_k(self.k_plus, self.k_minus)

    def tests(self, scores: np.ndarray, secret: np.ndarray, alpha: float, objective: Objective,
              tiebreak: np.ndarray | None = None) -> list[Test]:
        v = counts(scores, secret, self.k_plus, self.k_minus, tiebreak)
        return [Test(scores.size, self.k_plus, self.k_minus, v, alpha)]

    def to_dict(self) -> dict[str, object]:
        return {"rule": "fixed", "k_plus": self.k_plus, "k_minus": self.k_minus, "correction": "none"}


@dataclass(frozen=True)
class Grid:
    """A grid of (k₊, k₋) pairs fixed in advance; each tested at α / G (Bonferroni)."""

    pairs: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        require(len(self.pairs) >= 1, "Grid.pairs", self.pairs, "must hold at least one (k_plus, k_minus)")
        for kp, km in self.pairs:
            _check_k(kp, km)
        object.__setattr__(self, "pairs", tuple((int(a), int(b)) for a, b in self.pairs))

    @classmethod
    def symmetric(cls, ks: Sequence[int]) -> Grid:
        """k₊ = k₋ = k for each k."""
        return cls(tuple((int(k), int(k)) for k in ks))

    def tests(self, scores: np.ndarray, secret: np.ndarray, alpha: float, objective: Objective,
              tiebreak: np.ndarray | None = None) -> list[Test]:
        each = alpha / len(self.pairs)
        for kp, km in self.pairs:
            _check_k(kp, km, scores.size)
        if tiebreak is None:
            return [Test(scores.size, kp, km, counts(scores, secret, kp, km), each) for kp, km in self.pairs]
        ones = _ones_below(scores, secret, _check_tiebreak(tiebreak, scores.size))  # one ranking for every pair
        return [Test(scores.size, kp, km, _right(ones, kp, km), each) for kp, km in self.pairs]

    def to_dict(self) -> dict[str, object]:
        return {"rule": "grid", "pairs": [list(p) for p in self.pairs],
                "correction": f"bonferroni over {len(self.pairs)} pairs (each at alpha/{len(self.pairs)})"}


@dataclass(frozen=True)
class Split:
    """Choose k on a random ``select`` fraction of the canaries, bound on the rest at level α.

    ``fractions`` are the candidate guess fractions k₊/n = k₋/n tried on the selection part.
    """

    select: float = 0.5
    fractions: tuple[float, ...] = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
    seed: int = 0

    def __post_init__(self) -> None:
        require(0.0 < self.select < 1.0, "Split.select", self.select, "must be in (0, 1)")
        require(len(self.fractions) >= 1 and all(0 < f <= 0.5 for f in self.fractions), "Split.fractions",
                self.fractions, "must be fractions in (0, 0.5]")
        require(isinstance(self.seed, int) and self.seed >= 0, "Split.seed", self.seed, "must be an integer >= 0")

    def parts(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """The selection and bound parts: a permutation from the rule's own seed."""
        n_sel = round(self.select * m)
        require(1 <= n_sel <= m - 2, "Split.select", self.select, f"leaves an empty part with m = {m} canaries")
        perm = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(7,))).permutation(m)
        return perm[:n_sel], perm[n_sel:]

    def tests(self, scores: np.ndarray, secret: np.ndarray, alpha: float, objective: Objective,
              tiebreak: np.ndarray | None = None, *, floor: float = 0.0) -> list[Test]:
        """The one test on the bound part; ``tiebreak`` (a key per canary) ranks each part by its
        own canaries' keys.  ``floor``: the claim the bound part's test should be able to reject
        (an objective value, 0 without a claim): k is never below the smallest k whose ceiling
        exceeds it, or, when no k's does, the smallest whose ceiling exceeds 0."""
        sel, bnd = self.parts(scores.size)
        keys = None if tiebreak is None else _check_tiebreak(tiebreak, scores.size)
        best, best_f = 0.0, None
        for f in self.fractions:
            k = max(1, round(f * sel.size))
            if 2 * k > sel.size:
                continue
            v = counts(scores[sel], secret[sel], k, k, None if keys is None else keys[sel])
            value = objective(sel.size, 2 * k, v, alpha)
            if value > best:
                best, best_f = value, f
        # No fraction gave a positive bound on the selection part (best_f None), or the one chosen is
        # too small for the bound part: take the smallest k whose test there can reject the claim (or 0).
        k_min = smallest_capable_k(int(bnd.size), alpha, objective, floor=floor) if floor > 0 else None
        k_min = smallest_capable_k(int(bnd.size), alpha, objective) if k_min is None else k_min
        require(k_min is not None, "Split.select", self.select,
                f"leaves a bound part of {bnd.size} canaries where no test at alpha = {alpha:g} can give a positive "
                "bound, even with every guess right: hold out more canaries (a smaller select) or play a larger game")
        assert k_min is not None
        k_b = k_min if best_f is None else max(k_min, min(bnd.size // 2, round(best_f * bnd.size)))
        v = counts(scores[bnd], secret[bnd], k_b, k_b, None if keys is None else keys[bnd])
        return [Test(int(bnd.size), k_b, k_b, v, alpha)]

    def to_dict(self) -> dict[str, object]:
        return {"rule": "split", "select": self.select, "fractions": list(self.fractions), "seed": self.seed,
                "correction": "k chosen on the selection part, bound on the held-out part only (no reuse)",
                "fallback": "when no fraction gives a positive bound on the selection part (or the chosen k "
                            "cannot reject on the bound part), the smallest k whose test on the bound part can "
                            "reject the claim (fallback_floor; else eps = 0) with every guess right; refused when "
                            "no k can reject eps = 0"}


def smallest_capable_k(n: int, alpha: float, objective: Objective, *, floor: float = 0.0) -> int | None:
    """The smallest k (k₊ = k₋ = k ≤ n/2) whose test on n canaries at level α can reject ε = ``floor``
    (0: any positive bound): ``objective(n, 2k, 2k, α) > floor``, every guess right; None when even
    k = ⌊n/2⌋ cannot.  A test
    below it can never give a positive bound (4 guesses all right at α = 0.05: P = 2⁻⁴ > α even at
    ε = 0), so no rule falls back to it.  The ceiling grows with k (more right guesses are more
    evidence), so bisection finds it."""
    top = n // 2
    if top < 1 or objective(n, 2 * top, 2 * top, alpha) <= floor:
        return None
    lo, hi = 0, top  # the ceiling is 0 at lo (or lo = 0) and positive at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if objective(n, 2 * mid, 2 * mid, alpha) > floor:
            hi = mid
        else:
            lo = mid
    return hi


Rule = Fixed | Grid | Split


def default_rule(m: int) -> Grid:
    """k₊ = k₋ over a geometric grid up to m/2 (Bonferroni over the grid): a rule for users who do
    not know their mechanism's strength in advance."""
    ks = sorted({k for k in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000)
                 if 2 * k <= m} | {m // 2})
    return Grid.symmetric([k for k in ks if k >= 1])
