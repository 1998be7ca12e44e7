"""Black-box pair search: audit a mechanism without being told its worst neighbouring pair.

``dpaudit.neighbors.search`` ranks pairs by their exact loss and so needs ``output_distribution``.
:func:`search_pair` needs only ``sample``.  A *space* proposes candidate pairs — a library of
query-vector patterns (:class:`QueryVectors`, the setting of Ding et al., CCS 2018 "StatDP",
and Bichsel et al., S&P 2021 "DP-Sniper") or the neighbours of a dataset under a set of
candidate records (:class:`RecordSpace`) — and the search scores them on a *pilot* budget by
the bound each would give: the Clopper–Pearson ε lower bound the final audit is predicted to
certify from the pilot samples drawn for that pair (:func:`pilot_score`).  Successive halving
(Jamieson & Talwalkar, AISTATS 2016) spends the pilot: every round draws more samples for the
surviving pairs, scores them on everything drawn for them so far and keeps the better half; after the first round the
space proposes refinements of the best pairs, which catch up on samples before competing.
The last round's best :data:`FINALISTS` pairs are then compared on their pilot samples pooled
with the final audit's own selection split (:mod:`dpaudit.engine.finalists`), and the best of them on
that evidence is audited.

Validity.  The pilot only *chooses* the pair.  The winner is then audited by
:func:`dpaudit.engine.api.audit_mechanism` on fresh samples — streams ``SeedSequence(seed,
spawn_key=(phase, side, chunk))`` that share no spawn key with the pilot's
``(PILOT_KEY, pair, round, side)`` nor with any estimation split (the finalists' comparison reads
selection splits only) — so, conditionally on the chosen pair, the reported bound is
the ordinary audit of a fixed pair and keeps its confidence however many pairs were tried.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from dpaudit.core import RELATIONS, Guarantee, InputError, Relation, check_positive, require
from dpaudit.engine.api import RunContext, audit_mechanism, stopped_result
from dpaudit.engine.estimate import (
    Level,
    check_confidence,
    check_deltas,
    check_outputs,
    resolve_views,
    unmeasured,
)
from dpaudit.engine.finalists import best_finalist
from dpaudit.engine.results import AuditResult
from dpaudit.engine.selection import predicted_bound
from dpaudit.engine.streaming import SELECTION_FRACTION
from dpaudit.neighbors import Dataset, Pair, neighbours
from dpaudit.runtime.interrupts import stopped_by_user

__all__ = ["PILOT_KEY", "QueryVectors", "RecordSpace", "Space", "search_pair", "space_from_spec"]

PILOT_KEY = 0x5EA2C4  # first spawn-key entry of every pilot stream; the runner's keys start with a phase (0 or 1)
_MIN_PILOT = 100      # pilot samples per side and pair in a round, at least
PILOT_TIEBREAK_CONFIDENCE = 0.5  # the lenient selection level of pilot_score's tie-break
# the pilot's best pairs compared on the final audit's own selection split (dpaudit.engine.finalists)
FINALISTS = 3


class Space(Protocol):
    """Where :func:`search_pair` looks: candidate pairs, and refinements of the best ones."""

    def describe(self) -> str:
        """The space in words, for records."""
        ...

    def candidates(self, rng: np.random.Generator) -> list[Pair]:
        """The initial candidate pairs."""
        ...

    def refine(self, best: Sequence[Pair], rng: np.random.Generator) -> list[Pair]:
        """New pairs near the best pilot pairs (may be empty)."""
        ...


# --- query vectors ---------------------------------------------------------------------------

def _fmt(v: np.ndarray) -> str:
    return "(" + ", ".join(f"{x:g}" for x in v) + ")"


MAX_DIM = 4096  # query answers per vector at most: the unit basis of the patterns is dim^2 floats (128 MiB)


@dataclass(frozen=True)
class QueryVectors:
    """Pairs of query-answer vectors q, q′ ∈ ℝ^dim with ‖q − q′‖_∞ ≤ ``sensitivity``.

    The pattern library of StatDP (Ding et al. 2018, §5.2) with Δ = ``sensitivity`` and q built
    on a base level b ∈ {0, Δ} (the level matters for thresholded mechanisms such as the sparse
    vector): one above (q′ = q + Δe_i), one below (q − Δe_i), all above, all below, half-half
    (first half up, rest down, and reversed), one up rest down and one down rest up (at
    coordinate i), and the X shape (Δ on the first half against Δ on the second).  The
    single-coordinate patterns start at the first and last positions i; with ``permutations``
    (the order of the queries matters for a sparse vector with a cutoff) refinement moves a
    best pair of such a pattern to every other position — staged so, the first round scores 24
    pairs whatever ``dim``, not 8·dim + 10 (90 at dim 10), and each gets the more samples.
    Refinement also mutates the best pairs one coordinate at a time: a change of q′_j − q_j
    within {−Δ, 0, Δ} and a move of the base q_j by ±Δ.
    """

    dim: int
    sensitivity: float = 1.0
    permutations: bool = True
    refinements: int = 8     # mutations of the best pilot pairs added after the first round
    relation: str = "add-remove"  # the relation the pairs stand for (neighbouring datasets' answers)

    def __post_init__(self) -> None:
        require(isinstance(self.dim, int) and not isinstance(self.dim, bool) and 1 <= self.dim <= MAX_DIM, "dim",
                self.dim, f"must be an integer from 1 to {MAX_DIM} (the candidate patterns are built from the "
                f"{self.dim} x {self.dim} unit basis: {8 * self.dim ** 2 / 2**30:.3g} GiB asked)")
        check_positive("sensitivity", self.sensitivity)
        require(isinstance(self.refinements, int) and self.refinements >= 0, "refinements", self.refinements,
                "must be an integer >= 0")
        require(self.relation in RELATIONS, "relation", self.relation, f"must be one of {', '.join(RELATIONS)}")

    def describe(self) -> str:
        return f"query vectors of dimension {self.dim} (|q_i - q'_i| <= {self.sensitivity:g})"

    def _pair(self, q: np.ndarray, q_prime: np.ndarray, pattern: str) -> Pair:
        return Pair(q.astype(float), q_prime.astype(float), f"{pattern}: q = {_fmt(q)}, q' = {_fmt(q_prime)}",
                    self.relation)

    def _positional(self, i: int) -> list[tuple[str, np.ndarray]]:
        """The single-coordinate patterns at position ``i`` (their differences q′ − q in units of Δ)."""
        e = np.eye(self.dim)[i]
        out = [(f"one above at {i}", e), (f"one below at {i}", -e)]
        if self.dim > 1:
            out += [(f"one up rest down at {i}", 2 * e - 1), (f"one down rest up at {i}", 1 - 2 * e)]
        return out

    def _on_levels(self, diffs: Iterable[tuple[str, np.ndarray]], levels: Iterable[float]) -> list[Pair]:
        ones = np.ones(self.dim)
        return [self._pair(level * ones, level * ones + self.sensitivity * d, f"{name}, base {level:g}")
                for level in levels for name, d in diffs]

    def candidates(self, rng: np.random.Generator) -> list[Pair]:
        m, step = self.dim, self.sensitivity
        ones, half = np.ones(m), np.arange(m) < max(1, m // 2)
        # The sparse vector's hard patterns first (half-half, all up/down, one up rest down: Lyu, Su
        # & Li 2017, §4; Ding et al. 2018, §5.2): ties of the pilot's ranking go to the earlier pair.
        diffs: list[tuple[str, np.ndarray]] = []
        if m > 1:
            diffs += [("half-half", np.where(half, 1.0, -1.0)), ("half-half reversed", np.where(half, -1.0, 1.0))]
        diffs += [("all above", ones), ("all below", -ones)]
        for i in sorted({m - 1, 0}, reverse=True):
            diffs += self._positional(i)[::-1] if m > 1 else self._positional(i)
        out = self._on_levels(diffs, (0.0, step))
        if m > 1:
            out += [self._pair(step * half, step * ~half, "X shape"), self._pair(step * ~half, step * half, "X shape")]
        return _unique(out)

    def _moved(self, pair: Pair) -> list[Pair]:
        """``pair`` at every other position, when it is a single-coordinate pattern on a base level."""
        q, diff = np.asarray(pair.d, dtype=float), (np.asarray(pair.d_prime, dtype=float) - np.asarray(pair.d))
        if self.dim < 3 or np.any(q != q[0]):
            return []
        for i in range(self.dim):
            for k, (_, d) in enumerate(self._positional(i)):
                if np.array_equal(diff, self.sensitivity * d):
                    others = [self._positional(j)[k] for j in range(self.dim) if j != i]
                    return self._on_levels(others, (float(q[0]),))
        return []

    def refine(self, best: Sequence[Pair], rng: np.random.Generator) -> list[Pair]:
        out = [p for pair in best for p in self._moved(pair)] if self.permutations else []
        step = self.sensitivity
        for k in range(self.refinements):
            pair = best[k % len(best)]
            q, q_prime = np.array(pair.d, dtype=float), np.array(pair.d_prime, dtype=float)
            j = int(rng.integers(self.dim))
            diff = q_prime - q
            diff[j] = rng.choice([v for v in (-step, 0.0, step) if v != diff[j]])
            if rng.random() < 0.5:
                q[j] += step * rng.choice([-1.0, 1.0])
            if np.any(diff != 0):
                out.append(self._pair(q, q + diff, f"refined (coordinate {j})"))
        return _unique(out)


def _unique(pairs: Iterable[Pair]) -> list[Pair]:
    """Pairs without repeats; (D, D′) and (D′, D) are one pair (ε is symmetric in the pair)."""
    seen, out = set(), []
    for p in pairs:
        keys = tuple(_key(x) for x in (p.d, p.d_prime))
        if keys in seen or keys[::-1] in seen:
            continue
        seen.add(keys)
        out.append(p)
    return out


def _key(data: Any) -> Any:
    if isinstance(data, Dataset):
        return data.fingerprint
    if isinstance(data, np.ndarray):
        return (data.dtype.str, data.shape, data.tobytes())
    return repr(data)


# --- records -----------------------------------------------------------------------------

Record = Mapping[str, Any]


@dataclass(frozen=True)
class RecordSpace:
    """Neighbours of a ``base`` dataset under ``relations``, with candidate ``records``.

    ``records`` is a list of records (column → value) or a sampler ``records(rng) -> record``
    drawn ``draws`` times.  Neighbours: remove a record of ``base`` or add a candidate
    (``add-remove``), replace a record by a candidate (``swap``), flip ``label_column`` of a
    record (``label-flip``), zero its ``feature_columns`` (``zero-out``) — every distinct
    record of ``base`` (:func:`neighbors.neighbours`).  At most ``max_pairs`` candidates are
    kept (a random subset).  Refinement, for a sampler, draws ``draws`` fresh records and
    builds their additions and swaps: a random search, which needs no gradient of a black box.
    """

    base: Dataset
    records: Sequence[Record] | Callable[[np.random.Generator], Record] = ()
    relations: tuple[str, ...] = ("add-remove", "swap")
    draws: int = 16
    label_column: str = "label"
    feature_columns: tuple[str, ...] = ()
    max_pairs: int = 256

    def __post_init__(self) -> None:
        require(isinstance(self.base, Dataset), "base", type(self.base).__name__, "must be a neighbors.Dataset")
        relations = (self.relations,) if isinstance(self.relations, str) else tuple(self.relations)
        require(bool(relations), "relations", self.relations, "must name at least one relation")
        for r in relations:
            require(r in ("add-remove", "swap", "label-flip", "zero-out"), "relations", r,
                    "must be among add-remove, swap, label-flip and zero-out")
        object.__setattr__(self, "relations", relations)
        object.__setattr__(self, "feature_columns", tuple(self.feature_columns))
        require(isinstance(self.draws, int) and self.draws >= 1, "draws", self.draws, "must be an integer >= 1")
        require(isinstance(self.max_pairs, int) and self.max_pairs >= 1, "max_pairs", self.max_pairs,
                "must be an integer >= 1")
        needs_records = any(r in ("swap",) for r in relations)
        require(callable(self.records) or bool(list(self.records)) or not needs_records, "records", self.records,
                "swap neighbours need candidate records (a list or a sampler)")

    def describe(self) -> str:
        return f"neighbours of a dataset of {self.base.describe()} by {', '.join(self.relations)}"

    def _draw(self, rng: np.random.Generator) -> list[Record]:
        if callable(self.records):
            return [self.records(rng) for _ in range(self.draws)]
        return list(self.records)

    def _pairs(self, records: list[Record], relations: Iterable[str]) -> list[Pair]:
        out: list[Pair] = []
        for r in relations:
            out += neighbours(r, self.base, records, self.label_column, self.feature_columns)
        return out

    def candidates(self, rng: np.random.Generator) -> list[Pair]:
        pairs = _unique(self._pairs(self._draw(rng), self.relations))
        if len(pairs) > self.max_pairs:
            keep = np.sort(rng.choice(len(pairs), self.max_pairs, replace=False))
            pairs = [pairs[i] for i in keep]
        return pairs

    def refine(self, best: Sequence[Pair], rng: np.random.Generator) -> list[Pair]:
        if not callable(self.records):
            return []
        relations = [r for r in self.relations if r in ("add-remove", "swap")]
        pairs = [p for p in self._pairs(self._draw(rng), relations) if not p.description.startswith("remove")]
        return _unique(pairs)


# --- the command line's and configs' spaces ------------------------------------------------

SPEC_FORMS = "queries:DIM (vectors of DIM query answers) or records (neighbours of the --data records)"


def space_from_spec(spec: Any, relation: Relation | str, base: Dataset | None, where: str = "search"
                    ) -> QueryVectors | RecordSpace:
    """The space named by ``dpaudit run --search SPEC`` or a config scenario's ``search = SPEC``.

    ``queries:DIM`` is :class:`QueryVectors` (DIM, Δ = 1) for a mechanism whose input is a
    vector of query answers; ``base`` must be None.  ``records`` is the :class:`RecordSpace`
    of ``base`` under ``relation`` with ``base``'s own distinct records as the candidates:
    remove one, add a copy of one, swap one for another, flip one's ``label``, or zero one's
    other columns.  Refused (:class:`~dpaudit.core.InputError` naming ``where``) otherwise.
    """
    text = spec.strip() if isinstance(spec, str) else None
    if text is not None and text.startswith("queries:"):
        dim = text.partition(":")[2].strip()
        require(dim.isdigit() and int(dim) >= 1, where, spec, "queries:DIM needs an integer DIM >= 1, e.g. queries:5")
        require(base is None, where, spec, "a query-vector search builds its own inputs: drop the data")
        return QueryVectors(int(dim), relation=relation)
    require(text == "records", where, spec, f"must be {SPEC_FORMS}")
    require(isinstance(base, Dataset), where, spec, "a record search needs a base dataset (--data, or the "
            "scenario's data)")
    assert isinstance(base, Dataset)  # for the type checker: require above refused anything else
    require(relation in ("add-remove", "swap", "label-flip", "zero-out"), "relation", relation,
            "a record search enumerates add-remove, swap, label-flip or zero-out neighbours")
    if relation == "label-flip":
        require("label" in base.columns, where, spec, "label-flip neighbours need a 'label' column in the data")
    features = tuple(c for c in base.columns if c != "label")
    records = [base.record(i) for i in base.unique_records()]
    require(relation != "swap" or len(records) >= 2, where, spec, "swap neighbours need two distinct records")
    return RecordSpace(base, records, relations=(relation,), feature_columns=features)


# --- the search ------------------------------------------------------------------------------

@dataclass
class _Candidate:
    pair: Pair
    x: list[np.ndarray] = field(default_factory=list)
    y: list[np.ndarray] = field(default_factory=list)
    score: float = -math.inf
    tiebreak: float = -math.inf
    samples: int = 0
    rounds: int = 0
    skipped: str = ""

    def record(self) -> dict[str, Any]:
        return {"pair": self.pair.description, "relation": self.pair.relation, "pilot_samples": self.samples,
                "rounds": self.rounds, "score": None if self.skipped else self.score,
                "tiebreak": None if self.skipped else self.tiebreak,
                **({"skipped": self.skipped} if self.skipped else {})}


def _rng(seed: int, index: int, round_: int, side: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(PILOT_KEY, index, round_, side)))


def pilot_score(x: np.ndarray, y: np.ndarray, views: Sequence[str], delta: float, final: int,
                confidence: float, seed: int = 0) -> tuple[float, float]:
    """A pair's pilot score and its tie-break: the ε lower bound its final audit is predicted to
    give, *not floored at 0*, with the selection pessimistic at the final level and at the
    lenient :data:`PILOT_TIEBREAK_CONFIDENCE`.

    The prediction is the selection's own (:func:`dpaudit.engine.selection.predicted_bound`): the event
    :func:`~dpaudit.engine.selection.select_events` would choose on the pilot samples, scored by its
    pessimistic Clopper–Pearson bounds at the final level α = (1 − ``confidence``)/2 projected to
    the final estimation size n = ``final`` × (1 − SELECTION_FRACTION) and bounded again,

        score = max_S log((CP_lower(p̂_S·n, n) − δ) / CP_upper(q̂_S·n, n)),  p̂_S, q̂_S pessimistic at α.

    The winner of a maximum, it is biased upward, but alike for every pair of one search (the
    same views, the same pilot sizes in a round), and the pessimism of α keeps a tail event that
    rests on a handful of counts from winning: at pilot sizes it ranks pairs far more reliably
    than a split-and-recount score (report noisy max returning the value, ε₀ = 0.1, 4·10^4
    samples per side, 10 seeds: the ε = 0.25 pair scores 0.12 ± 0.03, the ε = 0.15 pair
    0.04 ± 0.03, where the cross-fitted recount this replaced gave −0.02 ± 0.25 and −0.24 ± 0.31).
    Validity never rests on it: the winner is audited on fresh samples.

    While no event of a pair clears the pessimism at α, its best event is a near-trivial one
    whose score depends on the pilot size alone (−3.7/n for the whole output space), the same
    for every such pair; the tie-break, the same prediction with the selection bounds at the
    lenient level, then ranks them by how close they come (it sees a weak but real tail signal
    at small pilots, at the cost of more noise).  Where no event clears δ the score is
    −1000 + (the score at δ = 0)/1000, below every pair that clears δ and still ordered.
    """
    n = max(1, round(final * (1 - SELECTION_FRACTION)))
    lenient = (1.0 - PILOT_TIEBREAK_CONFIDENCE) / 2.0
    (score, tiebreak), (at_zero, _) = predicted_bound(x, y, (delta, 0.0), (n, n), confidence, views, seed,
                                                      (None, lenient))
    if not math.isfinite(score):
        score = -1e3 + (at_zero if math.isfinite(at_zero) else -1e3) / 1e3
    return float(score), float(tiebreak) if math.isfinite(tiebreak) else -1e3


def search_pair(mechanism: Any, space: Space, *, samples: int = 1_000_000, seed: int = 0,
                claims: Iterable[Guarantee] | None = None, epsilon: float | None = None, delta: float | None = None,
                deltas: Sequence[float] | None = None, confidence: float = 0.95, pilot: float = 0.5,
                n_jobs: int = 1, discrete: bool | None = None, events: str | Sequence[str] = "auto",
                expected: Mapping[str, str] | None = None, sequential: bool = False,
                context: RunContext | None = None) -> AuditResult:
    """Search ``space`` for the pair with the largest ε lower bound, then audit it on fresh samples.

    ``samples`` is the final audit's budget per side (as in :func:`~dpaudit.engine.api.audit_mechanism`);
    the pilot spends ``pilot`` × ``samples`` more per side over all candidates by successive
    halving, each round scoring every surviving pair by the ε lower bound its pilot samples
    predict for the final audit (:func:`pilot_score`) at the first δ (``deltas``, else the
    claim's δ, else 0).  The winner is
    audited with ``audit_mechanism(mechanism, d, d′, samples=samples, seed=seed, ...)`` under its
    relation, on streams disjoint from the pilot's, so the returned bound holds with
    ``confidence`` (module docstring).  ``claims``, ``epsilon``/``delta``, ``expected``,
    ``discrete``, ``events``, ``sequential`` (of the final audit) and ``context`` mean what they
    mean there; explicit ``claims`` keep only the candidates of their relation.  Only
    ``mechanism.sample`` is used to choose the pair; a pair on which the mechanism is undefined
    (it raises :class:`~dpaudit.core.InputError`) is skipped.

    The result's ``search`` records the space, the pilot budget, the chosen pair and every pair
    tried with its last pilot score and the pilot samples it got.
    """
    _check_arguments(mechanism, space, samples, seed, pilot)
    confidence = check_confidence(confidence)
    claims = None if claims is None else list(claims)
    score_delta = _score_delta(claims, deltas, delta, epsilon)
    start = time.perf_counter()
    tried: list[_Candidate] = []
    try:  # the pilot: a Ctrl-C here ends the scenario with no pair chosen and no bound
        context = RunContext() if context is None else context
        pilot_run = _Pilot(mechanism, space, claims, samples, seed, score_delta, confidence, tried)
        winner, checked = pilot_run.choose(pilot, context, discrete, events)
    except KeyboardInterrupt as exc:
        if not stopped_by_user(exc):
            raise
        return _stopped(mechanism, space, claims, tried, deltas, delta, epsilon, confidence, seed, context, start)
    pilot_seconds = time.perf_counter() - start
    result = audit_mechanism(mechanism, winner.pair.d, winner.pair.d_prime, samples=samples, deltas=deltas,
                             confidence=confidence, seed=seed, n_jobs=n_jobs, relation=winner.pair.relation,
                             claims=claims, epsilon=epsilon, delta=delta, expected=expected, discrete=discrete,
                             events=events, sequential=sequential,
                             context=replace(context, pair=winner.pair.description))
    record = {"space": space.describe(), "pilot_fraction": pilot,
              "pilot_samples": sum(c.samples for c in tried), "pilot_seconds": pilot_seconds,
              "score_delta": score_delta, "chosen": winner.pair.description,
              "chosen_score": winner.score, "finalists": checked, "tried": [c.record() for c in tried]}
    own_record = getattr(space, "search_record", None)  # what a space adds of its own (a float search's screen)
    if callable(own_record):
        record.update(own_record(winner.pair.description))
    return replace(result, search=record, seconds=time.perf_counter() - start)


def _check_arguments(mechanism: Any, space: Space, samples: int, seed: int, pilot: float) -> None:
    """:func:`search_pair`'s own arguments, refused with an :class:`~dpaudit.core.InputError` naming them."""
    require(callable(getattr(mechanism, "sample", None)), "mechanism", mechanism,
            "must have a sample(data, size, rng) method")
    require(all(callable(getattr(space, m, None)) for m in ("candidates", "refine", "describe")), "space", space,
            "must be an audit.QueryVectors, an audit.RecordSpace or implement dpaudit.engine.search.Space")
    require(isinstance(samples, int) and not isinstance(samples, bool) and samples >= 20, "samples", samples,
            "must be an integer >= 20")
    require(isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0, "seed", seed,
            "must be an integer >= 0")
    require(isinstance(pilot, (int, float)) and 0 < pilot <= 10, "pilot", pilot,
            "must be in (0, 10]: the pilot budget as a fraction of samples")


def _score_delta(claims: list[Guarantee] | None, deltas: Sequence[float] | None, delta: float | None,
                 epsilon: float | None) -> float:
    """The δ the pilot scores at: the first of ``deltas``, else the claims' least δ, else ``delta``
    (with ``epsilon``), else 0."""
    if claims:
        return float(deltas[0]) if deltas else min(c.delta for c in claims)
    return float(deltas[0]) if deltas else float(delta or 0.0) if epsilon is not None else 0.0


@dataclass
class _Pilot:
    """One search's pilot: successive halving over ``space``'s candidates, every pair tried kept in
    ``tried`` (the caller's list, so that a stopped search can name what it scored)."""

    mechanism: Any
    space: Space
    claims: list[Guarantee] | None
    samples: int
    seed: int
    score_delta: float
    confidence: float
    tried: list[_Candidate]
    views: Sequence[str] = ()  # resolved once the space has proposed candidates (its error first)
    datasets: dict[Any, int] = field(default_factory=dict)

    def draw(self, c: _Candidate, index: int, round_: int, n: int) -> None:
        """``n`` more samples per side for candidate ``index`` in round ``round_``, and its new score."""
        if c.skipped:
            return
        try:
            # Common random numbers: pairs that share D draw the same D-samples in a round, so their
            # scores differ by what D′ does, not by the noise of D's draws.
            d_stream = self.datasets.setdefault(_key(c.pair.d), len(self.datasets))
            c.x.append(check_outputs(self.mechanism.sample(c.pair.d, n, _rng(self.seed, d_stream, round_, 0)), n))
            c.y.append(check_outputs(self.mechanism.sample(c.pair.d_prime, n, _rng(self.seed, index, round_, 1)), n))
        except InputError as exc:
            c.skipped = str(exc)
            return
        c.samples += n
        c.rounds = round_ + 1
        c.score, c.tiebreak = pilot_score(np.concatenate(c.x), np.concatenate(c.y), self.views, self.score_delta,
                                          self.samples, self.confidence, self.seed)

    def rank(self, i: int) -> tuple[float, float, int]:
        """The ranking key of candidate ``i``: best score, then best tie-break, then the earlier."""
        return -self.tried[i].score, -self.tried[i].tiebreak, i

    def wanted(self, pair: Pair) -> bool:
        """Whether ``pair`` is of a relation the claims test (every pair without claims)."""
        return not self.claims or pair.relation in {g.relation for g in self.claims}

    def refine(self, alive: list[int], round_: int, rng: np.random.Generator) -> list[int]:
        """``alive`` with the space's new refinements of its two best pairs, caught up with the survivors'
        samples (pairs already tried, in either order, are not drawn again)."""
        best = sorted(alive, key=self.rank)[:2]
        fresh = [c for c in self.space.refine([self.tried[i].pair for i in best], rng) if self.wanted(c)]
        known = {(_key(c.pair.d), _key(c.pair.d_prime)) for c in self.tried}
        for p in fresh:
            if (_key(p.d), _key(p.d_prime)) in known or (_key(p.d_prime), _key(p.d)) in known:
                continue
            self.tried.append(_Candidate(p))
            j = len(self.tried) - 1
            self.draw(self.tried[j], j, round_, self.tried[alive[0]].samples)  # catch up with the survivors' samples
            if not self.tried[j].skipped:
                alive.append(j)
        return alive

    def halve(self, pilot: float, rng: np.random.Generator) -> list[int]:
        """The rounds of successive halving over the pool (refined after the first); the last survivors."""
        budget = max(1, math.ceil(pilot * self.samples))
        rounds = max(1, math.ceil(math.log2(len(self.tried))))
        per_round = budget // rounds
        alive = list(range(len(self.tried)))
        for r in range(rounds):
            n = max(_MIN_PILOT, per_round // max(1, len(alive)))
            for i in alive:
                self.draw(self.tried[i], i, r, n)
            alive = [i for i in alive if not self.tried[i].skipped]
            if r == 0 and alive:
                alive = self.refine(alive, r, rng)
            require(bool(alive), "space", self.space.describe(), "the mechanism is undefined on every candidate pair")
            if len(alive) == 1:
                break
            alive = sorted(alive, key=self.rank)[:max(1, math.ceil(len(alive) / 2))]
        return alive

    def choose(self, pilot: float, context: RunContext, discrete: bool | None, events: str | Sequence[str]
               ) -> tuple[_Candidate, list[dict[str, Any]]]:
        """The pair to audit and the finalists' record: the pilot's rounds, then the best pairs of the
        last round (scored on equal pilot samples) compared with the final audit's selection split."""
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(PILOT_KEY,)))
        pool = [_Candidate(p) for p in self.space.candidates(rng) if self.wanted(p)]
        require(bool(pool), "space", self.space.describe(), "proposes no candidate pair (of the claims' relation)")
        self.views = resolve_views(discrete, events)
        self.tried[:] = pool
        alive = self.halve(pilot, rng)
        last = max(self.tried[i].rounds for i in alive)
        finalists = sorted((i for i, c in enumerate(self.tried) if c.rounds == last and not c.skipped),
                           key=self.rank)[:FINALISTS]
        chosen, checked = best_finalist(self.mechanism, [(self.tried[i].pair, self.tried[i].x, self.tried[i].y)
                                                         for i in finalists],
                                        self.samples, self.seed, context.key, self.views, self.score_delta,
                                        self.confidence)
        return self.tried[finalists[chosen]], checked


def _stopped(mechanism: Any, space: Space, claims: list[Guarantee] | None, tried: list[_Candidate],
             deltas: Sequence[float] | None, delta: float | None, epsilon: float | None, confidence: float,
             seed: int, context: RunContext | None, start: float) -> AuditResult:
    """The result of a search the user stopped during its pilot: no pair chosen, nothing of an
    audit counted, so no bound (ε_lower 0 at every δ) and no claim checked
    (:func:`dpaudit.engine.api.stopped_result`); the pairs scored so far are named in the note."""
    relation = (claims[0].relation if claims else tried[0].pair.relation if tried
                else getattr(space, "relation", "add-remove"))
    asked = check_deltas(deltas or ((delta or 0.0,) if epsilon is not None else (0.0,)))
    levels = [Level(delta=d, confidence=confidence) for d in asked]
    scored = sum(1 for c in tried if c.samples)
    est = unmeasured(levels, 0, f"interrupted by the user during the pair search's pilot over {space.describe()} "
                     f"({scored} of {len(tried)} candidate pairs scored): no pair was chosen and no sample of an "
                     "audit was drawn, so there is no bound (eps_lower 0 at every delta)")
    context = RunContext() if context is None else context
    return stopped_result(mechanism, relation, "no pair chosen (the pair search was interrupted)", est, seed=seed,
                          scenario=context.scenario, seconds=time.perf_counter() - start)
