"""The budget planner: how many samples per side refute a claim (or reach ε_lower ≥ X), and how long.

``python -m audit plan SCENARIO [--target violation | --epsilon X]``.  From a pilot run of the
scenario (the engine's own selection on a pilot budget) the planner takes, per claim level
(δ, confidence), the candidate events the run would choose among and their probabilities p
(favoured side) and q (other side):

* finite outputs with ``output_distribution`` (white box): every likelihood-ratio prefix of the
  outputs in both directions, with its exact (p, q) — the candidates of the ``rows`` view;
* a threshold event on a statistic s (continuous outputs): the thresholds of a grid dense in
  both tails (:func:`dpaudit.engine.streaming.threshold_grid`), with p(t) counted on a streamed pilot;
  where the exact curve δ(ε) of the pair is known (``exact_epsilon``), q(t) is its trade-off
  bound q = max_ε (p − δ(ε))e^{−ε} (Neyman–Pearson: attained by a likelihood-ratio threshold,
  which a well-fitted s is), else q(t) is counted too;
* otherwise, the pilot's chosen event with its estimation counts.

The expected bound of a candidate on n estimation outputs per side is the estimator's bound (the better of
its two tests) of its expected counts (pn, qn) (:func:`dpaudit.engine.estimate.bound_from_counts`); the run's
is the best candidate's.  The budget N per side adds the selection split (capped) and the
tail pilot (:mod:`dpaudit.engine.streaming`) to the estimation split n.  For a single look, N is the
smallest budget that certifies at the run's confidence.  Under the sequential rule
(:data:`dpaudit.engine.runner.RULE`, how ``--suite errata`` runs) the event is chosen for the whole
estimation split and each look spends its share of α: the planner gives the smallest budget
whose last look certifies and, for the scenario's own budget, the look where the run is
expected to stop.  ``samples_per_side`` is what the run as its suite runs it needs: the
samples the sequential run is expected to use (or the smallest sufficient budget), else the
single-look budget.  Wall times
come from timing estimation chunks of the pilot on one worker; chunks are independent, so
w workers divide the counting time by w (the selection split is not parallel).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.core import InputError, require
from dpaudit.engine import runner, streaming
from dpaudit.engine.api import RunContext, audit_mechanism
from dpaudit.engine.bounds import both_tests
from dpaudit.engine.jointratio import ODDS_SHARE
from dpaudit.engine.results import AuditResult, ClaimCheck
from dpaudit.engine.selection import DISCRETE_VECTOR_FRACTION, choose
from dpaudit.engine.views import SIDES, Event
from dpaudit.engine.views.base import prefix_families
from dpaudit.engine.views.rows import MAX_ROWS, well_observed
from dpaudit.runtime.execution import Execution, cpu_count
from dpaudit.runtime.progress import Progress

PLAN_PILOT = 15_000_000   # pilot budget per side: its selection split is the run's (capped) one
GRID_PILOT = 20_000_000   # streamed outputs per side that count a threshold grid
MAX_SAMPLES = 10 ** 14    # the planner searches budgets up to this many samples per side
TIMED_CHUNKS = 4
SIMULATIONS = 12          # simulated tail pilots per planned budget (the run's choice is noisy)

__all__ = ["BudgetPlan", "Requirement", "announce", "plan", "render"]


@dataclass(frozen=True)
class Candidates:
    """Candidate events of one level as probability pairs: ``p`` under the favoured side, ``q`` under
    the other, and where they come from (for the explanation).  ``families`` (threshold grids) are
    index arrays of nested candidates, in nesting order: the tail pilot's choice among them is
    simulated (:meth:`piloted`)."""

    p: np.ndarray
    q: np.ndarray
    source: str
    families: tuple[np.ndarray, ...] = ()
    # The exact output distributions (P[M(D)], P[M(D')]) when the candidates are the rows view's:
    # the run then chooses its event on a selection split (:meth:`choices` simulates that choice).
    outputs: tuple[np.ndarray, np.ndarray] | None = None

    def choices(self, n_sel: int, pilot: int, n: int, delta: float, confidence: float
                ) -> tuple[Candidates, np.ndarray]:
        """The events a run of n estimation outputs per side is simulated to choose, as
        (candidates, indices into them): the rows view's choice on ``n_sel`` selection outputs
        (:func:`_rows_selected`) when the exact output distributions are known, else the tail
        pilot's (:meth:`piloted`)."""
        if self.outputs is None or n_sel <= 0:
            return self, self.piloted(pilot, n, delta, confidence)
        p, q = _rows_selected(*self.outputs, n_sel, n, delta, (1 - confidence) / 2)
        return Candidates(p, q, self.source), np.arange(len(p))

    def piloted(self, pilot: int, n: int, delta: float, confidence: float) -> np.ndarray:
        """Indices of the candidates the tail pilot (:func:`dpaudit.engine.streaming.refine_thresholds`) picks in
        :data:`SIMULATIONS` simulated pilots of ``pilot`` outputs per side, for n estimation outputs:
        nested counts with Gaussian cell noise (fixed normals, so the result is smooth in ``pilot``),
        scored by :func:`dpaudit.engine.streaming.pilot_scores`.  Without families or a pilot: the best one."""
        if not self.families or pilot <= 0:
            return np.full(SIMULATIONS, self.best(n, delta, confidence))
        alpha = (1 - confidence) / 2
        picks = np.zeros(SIMULATIONS, dtype=np.int64)
        best = np.full(SIMULATIONS, -np.inf)
        noise = np.random.default_rng(0)
        for family in self.families:
            k_fav, k_oth = self.simulated_counts(family, pilot, noise)
            # the argmax of streaming.pilot_scores per simulation, inverting only the candidates that can win
            j, top = streaming.pilot_best(k_fav, k_oth, pilot, n, delta, alpha)
            better = top > best
            best[better], picks[better] = top[better], family[j][better]
        return picks

    def simulated_counts(self, family: np.ndarray, pilot: int, noise: np.random.Generator
                         ) -> tuple[np.ndarray, np.ndarray]:
        """One family's nested pilot counts (favoured side, other side), each of shape
        (:data:`SIMULATIONS`, len(family)): the cells between consecutive nested candidates hold
        ``pilot``·Δp outputs each, perturbed by Gaussian noise of their Poisson variance (normals drawn
        from ``noise``, favoured side first), and summed up the nesting (clipped at 0)."""
        counts = []
        for probs in (self.p[family], self.q[family]):
            cells = np.diff(probs, prepend=0.0).clip(min=0.0) * pilot
            z = noise.standard_normal((SIMULATIONS, len(family)))
            counts.append(np.maximum(np.cumsum(cells + np.sqrt(cells) * z, axis=1), 0.0))
        return counts[0], counts[1]

    def bounds(self, n: int, delta: float, confidence: float, index: np.ndarray | None = None) -> np.ndarray:
        """Each candidate's bound (:func:`dpaudit.engine.estimate.bound_from_counts`'s, by the better test,
        vectorised) from its expected counts (pn, qn) on n outputs per side (−inf where p ≤ δ); only
        those at ``index`` when given (the same values: the tests are elementwise)."""
        alpha = (1 - confidence) / 2
        m = max(n, 1)
        p, q = (self.p, self.q) if index is None else (self.p[index], self.q[index])
        return np.where(p > delta, both_tests(p * m, m, q * m, m, delta, alpha), -np.inf)

    def best(self, n: int, delta: float, confidence: float) -> int:
        """The candidate a run with n estimation outputs per side would choose: the best expected bound."""
        return int(np.argmax(self.bounds(n, delta, confidence)))

    def expected_bound(self, n: int, delta: float, confidence: float, index: int | None = None) -> float:
        """The expected bound of candidate ``index`` (None: the best one) on n outputs per side."""
        values = self.bounds(n, delta, confidence)
        value = values.max() if index is None else values[index]
        return max(0.0, float(value)) if np.isfinite(value) else 0.0


@dataclass(frozen=True)
class Requirement:
    """What one claim (or ``--epsilon`` target) needs."""

    claim_id: str
    delta: float
    target: float
    confidence: float
    exact: float | None        # the white box's ε(δ), when known
    single: int | None         # smallest budget per side whose single look certifies (None: out of reach)
    sequential: int | None     # smallest budget per side whose last sequential look certifies
    stop: tuple[int, int] | None  # with the scenario's budget: (look, samples per side used), None: no look
    candidates: str
    event: tuple[float, float] | None = None  # (p, q) of the event a one-look run of ``single`` decides on


@dataclass(frozen=True)
class BudgetPlan:
    scenario: str
    budget: int                      # the scenario's own budget per side (samples × samples_factor)
    confidence: float
    requirements: tuple[Requirement, ...]
    rate: float                      # estimation outputs per second and side on one worker
    selection_seconds: float         # the pilot's selection (not parallel)
    counts: bool                     # drawn as counts (sample_counts)
    pilot_seconds: float
    sequential: bool                 # the scenario's suite runs it with the sequential rule

    @staticmethod
    def _needed(r: Requirement, sequential: bool) -> int | None:
        if not sequential:
            return r.single
        return r.stop[1] if r.stop is not None else r.sequential

    @property
    def samples_per_side(self) -> int | None:
        """Samples per side the run needs for its first refutation: for a sequential run, what it is
        expected to use with its own budget (where it stops), or the smallest budget whose last look
        certifies when its own does not reach; for a single look, the smallest budget that certifies."""
        found = [n for n in (self._needed(r, self.sequential) for r in self.requirements) if n is not None]
        return min(found) if found else None

    def seconds(self, samples: int, workers: int) -> float:
        """Expected wall time of a run of ``samples`` per side on ``workers`` workers."""
        return self.selection_seconds + 2 * samples / (self.rate * max(1, workers))


def _split(budget: int, threshold: bool, discrete: bool = False) -> tuple[int, int, int]:
    """(in-memory selection, tail pilot, estimation) outputs per side of a budget (the runner's split;
    ``discrete``: outputs whose selection split the runner extends,
    :func:`dpaudit.engine.runner.extension_size`)."""
    n_sel = streaming.selection_size(budget, streaming.SELECTION_FRACTION)
    pilot = streaming.pilot_size(budget, streaming.SELECTION_FRACTION, n_sel) if threshold else 0
    if discrete:
        n_sel = max(n_sel, streaming.selection_size(budget, DISCRETE_VECTOR_FRACTION))
    return n_sel, pilot, budget - n_sel - pilot


def _median_bound(cands: Candidates, picks: np.ndarray, n: int, delta: float, confidence: float) -> float:
    """The median over simulated choices of the chosen candidate's expected bound on n outputs per side."""
    values = cands.bounds(n, delta, confidence, picks)
    return max(0.0, float(np.median(np.where(np.isfinite(values), values, 0.0))))


def _smallest(ok, low: int = 100, high: int = MAX_SAMPLES) -> int | None:
    """The smallest integer budget in [low, high] for which ``ok`` holds (``ok`` monotone), or None."""
    if not ok(high):
        return None
    while high - low > 1 and high > low * 1.01:  # 1 %: finer than any planning error
        # The geometric midpoint rounds down to ``low`` when high - low is small (low 100, high
        # 102: int(sqrt(10200)) = 100), which never narrows the interval: keep it strictly inside.
        mid = min(high - 1, max(low + 1, math.isqrt(low * high)))
        if ok(mid):
            high = mid
        else:
            low = mid
    return high


def _looks(n_est: int, chunk: int) -> list[tuple[int, float]]:
    """(estimation outputs per side, share of α) at each look of the sequential rule (runner.LOOKS)."""
    chunks = max(1, math.ceil(n_est / chunk))
    stops = sorted({max(1, int(np.ceil(chunks * f))) for f in runner.LOOKS})
    spend = dict(zip(stops, runner.SPENDING[-len(stops):], strict=True)) if len(stops) > 1 else {stops[0]: 1.0}
    total = sum(spend.values())
    return [(min(n_est, s * chunk), spend[s] / total) for s in stops]


def _trade_off_q(p: np.ndarray, profile: Sequence[tuple[float, float]]) -> np.ndarray:
    """The smallest q any event with probability p under the favoured side can have, from the exact
    privacy profile: q ≥ max over (ε, δ(ε)) of (p − δ(ε))e^{−ε}."""
    eps = np.array([e for e, _ in profile])
    dl = np.array([d for _, d in profile])
    return np.max((p[:, None] - dl[None, :]) * np.exp(-eps[None, :]), axis=1).clip(min=0.0)


def _profile(mechanism: Any, d: Any, d_prime: Any) -> list[tuple[float, float]] | None:
    """(ε, δ) points of the pair's exact curve, δ from 1e-15 to 0.5, or None when not known."""
    if not callable(getattr(mechanism, "exact_epsilon", None)):
        return None
    out = []
    for dl in np.geomspace(1e-15, 0.5, 400):
        e = mechanism.exact_epsilon(d, d_prime, float(dl))
        if e is None:
            return None
        if math.isfinite(e):
            out.append((float(e), float(dl)))
    return out or None


def _rows_selected(p_all: np.ndarray, q_all: np.ndarray, n_sel: int, n_est: int, delta: float, alpha: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Exact (p, q) of the events the in-memory selection chooses in :data:`SIMULATIONS` simulated
    selection splits of ``n_sel`` outputs per side: multinomial counts of every output on the
    fitting and the scoring half, then the rows view's prefixes (:class:`dpaudit.engine.views.rows.Rows`)
    scored as :func:`dpaudit.engine.selection.choose` scores them.  A rare, decisive output that the
    selection split sees too seldom to trust is not chosen; assuming the best event was (the
    white box's view) made the plan optimistic by the selection's own noise."""
    rng = np.random.default_rng(0)
    n_fit = n_sel // 2
    n_score = n_sel - n_fit
    probs = (p_all / p_all.sum(), q_all / q_all.sum())
    ps, qs = np.zeros(SIMULATIONS), np.ones(SIMULATIONS)
    for i in range(SIMULATIONS):
        c = [rng.multinomial(n, pr).astype(float) for n in (n_fit, n_score) for pr in probs]
        seen = np.flatnonzero(sum(c) > 0)  # the view knows only the outputs the split observed
        if len(seen) < 1 or len(seen) > MAX_ROWS:
            continue  # no rows candidate: the run would choose no event from this view
        c = [a[seen] for a in c]
        families = prefix_families((c[0], c[1]), (c[2], c[3]), (n_fit, n_fit),
                                   lambda fav, idx: Event(fav, "rows", members=idx),
                                   pooled=well_observed(c[0] + c[1], n_fit))
        event, family, _ = choose(families, (n_score, n_score), (n_est, n_est), delta, alpha, (n_fit, n_fit))
        members = seen[np.asarray(event.members, dtype=np.int64)]
        fav, oth = (p_all, q_all) if family.fav == 0 else (q_all, p_all)
        ps[i], qs[i] = fav[members].sum(), oth[members].sum()
    return ps, qs


def _rows_candidates(p_all: np.ndarray, q_all: np.ndarray) -> Candidates:
    """Every likelihood-ratio prefix of finite outputs, both directions, with exact probabilities."""
    ps, qs = [], []
    for fav, oth in ((p_all, q_all), (q_all, p_all)):
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(oth > 0, fav / np.where(oth > 0, oth, 1), np.inf)
        order = np.argsort(-ratio, kind="stable")
        ps.append(np.cumsum(fav[order]))
        qs.append(np.cumsum(oth[order]))
    return Candidates(np.concatenate(ps), np.concatenate(qs), "exact output distributions (white box), the event "
                      "chosen on the run's selection split", outputs=(p_all, q_all))


def _grid_candidates(mechanism: Any, d: Any, d_prime: Any, event: Event, *, seed: int, key: tuple[int, ...],
                     execution: Execution, profile: list[tuple[float, float]] | None, samples: int) -> Candidates:
    """Thresholds of ``event``'s statistic on a grid dense in both tails, counted on ``samples``
    streamed outputs per side (the tail pilot's own streams); q from the exact curve where known."""
    stat = event.statistic
    assert stat is not None  # structural: only threshold events come here
    place = [runner.draw(mechanism, data, min(samples, 1 << 21), np.random.default_rng(
        np.random.SeedSequence(seed, spawn_key=(*key, 3, side)))) for side, data in enumerate((d, d_prime))]
    grid = streaming.threshold_grid(np.concatenate([stat(place[0]), stat(place[1])]), [event.threshold])
    kind = runner.output_kind(place[0])
    sizes = [streaming.CHUNK] * (samples // streaming.CHUNK) + ([samples % streaming.CHUNK]
                                                                   if samples % streaming.CHUNK else [])
    tasks = [(s, c) for s in (0, 1) for c in range(len(sizes))]
    ge = [np.zeros(len(grid)), np.zeros(len(grid))]
    le = [np.zeros(len(grid)), np.zeros(len(grid))]
    progress = Progress(execution.progress, 2 * samples, f"{execution.label or 'plan'}: tail grid",
                        execution.log_every)
    try:
        for (s, c), found in zip(tasks, execution.map(streaming.pilot_chunk, [
                (runner.draw_chunk, mechanism, (d, d_prime)[s], sizes[c], seed, key, s, c, kind, [stat], [grid])
                for s, c in tasks]), strict=True):
            ge[s] += found[0][0]
            le[s] += found[0][1]
            progress.update(sizes[c], progress.done + sizes[c], lambda: None)
    finally:
        progress.close()
    ps: list[np.ndarray] = []
    qs: list[np.ndarray] = []
    families: list[np.ndarray] = []
    for counts in (ge, le):
        for fav in (0, 1):
            p = counts[fav] / samples
            offset = sum(len(x) for x in ps)
            ps.append(p)
            qs.append(_trade_off_q(p, profile) if profile is not None else counts[1 - fav] / samples)
            families.append(offset + np.argsort(p, kind="stable"))  # nested: the tail first
    where = ("p counted on a tail grid, q from the exact curve's trade-off bound" if profile is not None
             else "p and q counted on a tail grid (no exact curve: noisy in the far tail)")
    return Candidates(np.concatenate(ps), np.concatenate(qs), f"{where} ({samples:.3g} outputs per side); the "
                      f"tail pilot's choice simulated {SIMULATIONS} times", tuple(families))


def _counted_candidates(check: ClaimCheck) -> Candidates:
    """The pilot's chosen event with its estimation frequencies."""
    bound = check.bound
    assert bound is not None  # structural: only levels with a bound are planned
    k_d, n_d, k_dp, n_dp = bound.counts
    fav = (k_d / n_d, k_dp / n_dp) if bound.event.favours == SIDES[0] else (k_dp / n_dp, k_d / n_d)
    return Candidates(np.array([fav[0]]), np.array([fav[1]]), "the pilot's event and its counted frequencies")


def _rate(mechanism: Any, d: Any, events: list[Event], kind: Any, seed: int, key: tuple[int, ...]) -> float:
    """Estimation outputs per second and side on one worker: a few chunks counted in this process."""
    size = streaming.chunk_size(mechanism, runner.CHUNK, runner.CHUNK * streaming.COUNTS_CHUNK_FACTOR
                                * streaming.COUNTS_MIN_CHUNKS)
    runner.count_chunk(mechanism, d, size, seed, key, 0, 0, events, kind)  # warm caches
    start = time.perf_counter()
    for c in range(1, TIMED_CHUNKS + 1):
        runner.count_chunk(mechanism, d, size, seed, key, 0, c, events, kind)
    return TIMED_CHUNKS * size / max(time.perf_counter() - start, 1e-9)


def announce(pilot: int = PLAN_PILOT, grid_pilot: int = GRID_PILOT) -> str:
    """What :func:`plan` runs before it answers, in words (said before it starts: it takes minutes)."""
    return (f"a pilot audit of {pilot:,} samples per side (the run's own selection), then, for a threshold "
            f"event, {grid_pilot:,} outputs per side counted on a tail grid, and {TIMED_CHUNKS} timed chunks")


# (wanted target of the plan): name, delta, epsilon to exceed, confidence, eps_exact, the pilot's event, its check
_Wanted = tuple[str, float, float, float, float | None, Event, ClaimCheck | None]


@dataclass(frozen=True)
class _Setting:
    """What every level's planning shares: the scenario's mechanism and pair, the seeds, where the
    grid pilot runs, whether the run's selection split grows (discrete vector outputs) and the
    scenario's own budget per side."""

    mech: Any
    d: Any
    dp: Any
    seed: int
    key: tuple[int, ...]
    execution: Execution
    grid_pilot: int
    discrete: bool
    budget: int


def plan(scenario: Any, *, confidence: float = 0.95, seed: int = 0, key: tuple[int, ...] = (0,),
         samples: int = 1_000_000, epsilon: float | None = None, delta: float | None = None,
         pilot: int = PLAN_PILOT, grid_pilot: int = GRID_PILOT, execution: Execution | None = None,
         sequential: bool = False) -> BudgetPlan:
    """The budget ``scenario`` (a catalog :class:`~dpaudit.catalog.Scenario`) needs: to refute each of
    its applicable claims (default), or to reach ε_lower ≥ ``epsilon`` at ``delta``.  ``samples`` is
    the run's base budget (the scenario's own budget is ``samples × samples_factor``)."""
    require(epsilon is None or (math.isfinite(epsilon) and epsilon >= 0), "--epsilon", epsilon,
            "must be a finite number >= 0")
    require(delta is None or 0 <= delta < 1, "--delta", delta, "must be in [0, 1)")
    execution = execution or Execution(n_jobs=-1)
    mech, pair = scenario.mechanism, scenario.pair
    d, dp = pair.d, pair.d_prime
    start = time.perf_counter()
    deltas = (0.0,) if delta is None else (delta,)
    pilot_run = audit_mechanism(mech, d, dp, samples=pilot, deltas=deltas, confidence=confidence, seed=seed,
                                relation=pair.relation, claims=scenario.claims, expected=scenario.expected,
                                context=RunContext(execution=execution, key=key, scenario=scenario.name))
    pilot_seconds = time.perf_counter() - start
    wanted = _wanted(scenario.name, pilot_run, epsilon=epsilon, delta=deltas[0], confidence=confidence)
    outputs = None
    if callable(getattr(mech, "output_distribution", None)):
        outputs = (np.asarray(mech.output_distribution(d), dtype=float),
                   np.asarray(mech.output_distribution(dp), dtype=float))
    events = [b.event for b in pilot_run.estimate.bounds]
    first = runner.draw(mech, d, 16, np.random.default_rng(seed))
    kind = runner.output_kind(first)
    # whether the run's selection split grows (runner.extension_size), as it did for the pilot audit
    discrete = pilot_run.estimate.selection_samples > streaming.selection_size(pilot, streaming.SELECTION_FRACTION)
    setting = _Setting(mech=mech, d=d, dp=dp, seed=seed, key=key, execution=execution, grid_pilot=grid_pilot,
                       discrete=discrete, budget=max(20, round(samples * scenario.samples_factor)))
    grids = _Grids(setting)
    reqs = [_requirement(setting, want, _candidates(want, outputs=outputs, grids=grids)) for want in wanted]
    rate = _rate(mech, d, events, kind, seed, key)
    selection = min(pilot_seconds, float(pilot_run.seconds))
    counted = 2 * (pilot_run.samples - pilot_run.estimate.selection_samples)
    selection = max(0.0, selection - counted / rate)
    return BudgetPlan(scenario.name, setting.budget, confidence, tuple(reqs), rate, selection,
                      streaming.counts_capable(mech), pilot_seconds, sequential)


def _one_point_per_renyi_curve(checks: list[ClaimCheck]) -> list[ClaimCheck]:
    """``checks`` with each zCDP or RDP claim's curve (its points share a claim id and a ``stated_as``,
    :mod:`dpaudit.claims`) reduced to the point the pilot came closest to refuting (the largest
    ε_lower − ε_claim): the run refutes the claim when any point is refuted, so the plan's budget is that
    point's, and planning each of the K points would cost K times as much for one number."""
    best: dict[str, ClaimCheck] = {}
    for c in checks:
        if c.claim.stated_as is None or c.bound is None:
            continue
        margin = c.bound.epsilon_lower - c.claim.epsilon
        held = best.get(c.claim.claim_id)
        if held is None or margin > held.bound.epsilon_lower - held.claim.epsilon:  # type: ignore[union-attr]
            best[c.claim.claim_id] = c
    return [c for c in checks if c.claim.stated_as is None or best.get(c.claim.claim_id) is c]


def _wanted(name: str, pilot_run: AuditResult, *, epsilon: float | None, delta: float,
            confidence: float) -> list[_Wanted]:
    """The levels to plan: ε_lower ≥ ``epsilon`` at ``delta`` when given, else every applicable claim
    the pilot bounded that the scenario expects refuted (every bounded one if none is)."""
    checks = [c for c in pilot_run.claims if c.claim.applicable and c.bound is not None]
    if epsilon is not None:
        level = next((c for c in checks if c.bound is not None and c.bound.delta == delta), None)
        base = pilot_run.estimate.bounds[0]
        return [(f"eps_lower >= {epsilon:g}", delta, epsilon, confidence,
                 level.epsilon_exact if level is not None else pilot_run.epsilon_exact, base.event, None)]
    refutable = _one_point_per_renyi_curve(
        [c for c in checks if c.expected_verdict in ("violation", "exact-violation")] or checks)
    if not refutable:
        raise InputError(f"scenario {name!r} checks no applicable claim: give --epsilon X")
    return [(c.claim.claim_id, c.claim.delta, c.claim.epsilon, c.bound.confidence, c.epsilon_exact,
             c.bound.event, c) for c in refutable if c.bound is not None]


class _Grids:
    """The threshold grids' candidates, one per statistic, counted on first use (the exact curve's
    profile too, once): levels that share a statistic share its grid pilot."""

    def __init__(self, setting: _Setting) -> None:
        self.setting = setting
        self.profile: list[tuple[float, float]] | None = None
        self.grids: dict[int, Candidates] = {}

    def of(self, event: Event) -> Candidates:
        """The grid candidates of ``event``'s statistic."""
        s = self.setting
        if id(event.statistic) not in self.grids:
            if self.profile is None:
                self.profile = _profile(s.mech, s.d, s.dp)
            self.grids[id(event.statistic)] = _grid_candidates(s.mech, s.d, s.dp, event, seed=s.seed, key=s.key,
                                                               execution=s.execution, profile=self.profile,
                                                               samples=s.grid_pilot)
        return self.grids[id(event.statistic)]


def _candidates(want: _Wanted, *, outputs: tuple[np.ndarray, np.ndarray] | None, grids: _Grids) -> Candidates:
    """The candidate events of one level: the rows view's from the exact distributions, a threshold
    grid, or the pilot's counted event (module docstring)."""
    event, check = want[5], want[6]
    if outputs is not None and event.view == "rows":
        return _rows_candidates(*outputs)
    if event.view == "threshold" and event.statistic is not None:
        return grids.of(event)
    if check is not None:
        return _counted_candidates(check)
    return Candidates(np.array([0.0]), np.array([1.0]), "no event")


def _requirement(setting: _Setting, want: _Wanted, cands: Candidates) -> Requirement:
    """One level's budgets: the smallest single-look budget that certifies (and the event it is
    expected to choose), the smallest whose last sequential look certifies, and the look where a
    sequential run of the scenario's own budget is expected to stop."""
    name, dl, target, conf, exact, event, _ = want
    threshold = event.view == "threshold" and event.statistic is not None
    mech, discrete = setting.mech, setting.discrete
    memo: dict[tuple[int, int, int], tuple[Candidates, np.ndarray]] = {}

    def choices(n_sel: int, pilot: int, n_est: int) -> tuple[Candidates, np.ndarray]:
        """cands.choices, once per split: both searches and the stop evaluate the same budgets (a
        deterministic function of the split: its simulations draw from fixed seeds)."""
        if (n_sel, pilot, n_est) not in memo:
            memo[n_sel, pilot, n_est] = cands.choices(n_sel, pilot, n_est, dl, conf)
        return memo[n_sel, pilot, n_est]

    def certifies(b: int) -> bool:
        n_sel, pilot, n_est = _split(b, threshold, discrete)
        chosen, picks = choices(n_sel, pilot, n_est)
        return _median_bound(chosen, picks, n_est, dl, conf) > target

    single = _smallest(certifies)
    decided = None
    if single is not None:
        n_sel, pilot, n_est = _split(single, threshold, discrete)
        # the simulated choice whose bound is the median one (_median_bound's), not a median of indices
        chosen, picks = choices(n_sel, pilot, n_est)
        pick = int(picks[np.argsort(chosen.bounds(n_est, dl, conf, picks), kind="stable")[len(picks) // 2]])
        decided = (float(chosen.p[pick]), float(chosen.q[pick]))

    def last_look(b: int) -> bool:
        n_sel, pilot, n_est = _split(b, threshold, discrete)
        n_last, share = _looks(n_est, streaming.chunk_size(mech, runner.CHUNK, n_est))[-1]
        chosen, picks = choices(n_sel, pilot, n_est)  # chosen for the whole estimation split
        return _median_bound(chosen, picks, n_last, dl, 1 - (1 - conf) * share) > target

    seq_budget = _smallest(last_look)
    stop = None
    n_sel, pilot, n_est = _split(setting.budget, threshold, discrete)
    chosen, picks = choices(n_sel, pilot, n_est)
    for i, (n_look, share) in enumerate(_looks(n_est, streaming.chunk_size(mech, runner.CHUNK, n_est)), start=1):
        if _median_bound(chosen, picks, n_look, dl, 1 - (1 - conf) * share) > target:
            stop = (i, n_sel + pilot + n_look)
            break
    return Requirement(name, dl, target, conf, exact, single, seq_budget, stop, cands.source, decided)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _why(r: Requirement) -> str:
    """Where a one-look budget comes from: the deciding event's probabilities, and, when the other
    side's count is about 0 at that budget, the closed form n ≈ log(1/α_ψ)·e^ε/(p − δ), α_ψ = 0.9 α the
    joint test's share (:mod:`dpaudit.engine.jointratio`): with k₂ = 0 the conditional law puts all
    m = k₁ ≈ pn outputs on the favoured side with probability ≈ exp(−m·n/(ψ(n − m))), so
    ψ_lo ≈ m·n/((n − m) log(1/α_ψ)) and r_lo(1 − δ/p) ≈ (p − δ)·n/log(1/α_ψ) (the Clopper–Pearson
    pair's q_hi ≈ log(2/α)/n gave log(2/α) in place of log(1/α_ψ): 3.69 against 3.10 at α = 0.05)."""
    assert r.event is not None and r.single is not None
    p, q = r.event
    text = f"deciding event: probability {p:.4g} vs {q:.3g} under the other side"
    if r.delta > 0:
        text += f" (p - delta = {p - r.delta:.4g})"
    if q * r.single < 1 and p > r.delta:
        closed = -math.log(ODDS_SHARE * (1 - r.confidence)) * math.exp(r.target) / (p - r.delta)
        text += (f"; the other side's count is about 0, so n ~ log(1/(0.9 alpha))*e^eps/(p - delta) = {closed:.3g} "
                 "estimation outputs per side")
    return text


def render(result: BudgetPlan, workers: Sequence[int] = ()) -> str:
    """``samples_per_side=N`` on the first line, then the explanation."""
    n = result.samples_per_side
    lines = [f"samples_per_side={n if n is not None else 'unreachable'}"]
    mode = "sequential rule (as its suite runs it)" if result.sequential else "one look"
    lines.append(f"scenario {result.scenario}, {mode}: confidence {result.confidence:g}; its own budget "
                 f"{result.budget:.3g} per side; {'drawn as counts' if result.counts else 'outputs drawn'} at "
                 f"{result.rate:.3g} per second and side on one worker (pilot {result.pilot_seconds:.0f} s)")
    for r in result.requirements:
        exact = "" if r.exact is None else f", exact eps(delta) {r.exact:.4g}"
        lines.append(f"  {r.claim_id}: eps_lower > {r.target:.4g} at delta {r.delta:.3g} (confidence "
                     f"{r.confidence:.4g}{exact})")
        if r.single is None:
            why = (f"the exact eps {r.exact:.4g} does not exceed it" if r.exact is not None and r.exact <= r.target
                   else f"not within {MAX_SAMPLES:.0e} samples per side")
            lines.append(f"    out of reach: {why}")
            continue
        lines.append(f"    one look: {r.single:.3g} samples per side")
        if r.event is not None:
            lines.append("    " + _why(r))
        if r.sequential is not None:
            lines.append(f"    sequential rule: a budget of {r.sequential:.3g} per side certifies at its last look")
        if r.stop is not None:
            lines.append(f"    with the scenario's budget, the sequential run is expected to stop at look {r.stop[0]} "
                         f"after {r.stop[1]:.3g} samples per side")
        lines.append(f"    candidates: {r.candidates}")
    if n is not None:
        shown = workers or sorted({1, 2, cpu_count(), 4, 8})
        times = ", ".join(f"{w} worker{'s' if w > 1 else ''} {_duration(result.seconds(n, w))}" for w in shown)
        lines.append(f"expected wall time for {n:.3g} per side on this machine: {times} "
                     f"(each added worker divides the counting time; {result.selection_seconds:.0f} s of "
                     "selection do not)")
    return "\n".join(lines) + "\n"
