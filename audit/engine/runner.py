"""Monte Carlo: draw samples in chunks, select events, stream counts.

Every chunk has its own generator, spawned from the root seed by
``SeedSequence(seed, spawn_key=(*key, phase, side, chunk))``, and chunk sizes do not depend
on the number of workers, so one seed gives the same numbers for any ``n_jobs``.  Only the
selection split is held in memory; the estimation split is reduced to event counts chunk by
chunk, so memory is bounded whatever the sample budget.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.core import InputError, require
from dpaudit.engine.estimate import (
    Bound,
    Estimate,
    Level,
    bound_from_counts,
    check_outputs,
    convergence,
    futile,
    resolve_views,
    unmeasured,
)
from dpaudit.engine.expected_stop import expected_look
from dpaudit.engine.memory import check_memory, outputs_per_part
from dpaudit.engine.selection import (
    DISCRETE_VECTOR_FRACTION,
    count_members,
    describe_outputs,
    rows_exhaustive,
    select_events,
    settled,
)
from dpaudit.engine.streaming import (
    SELECTION_FRACTION,
    chunk_size,
    count_from_counts,
    counts_capable,
    pilot_size,
    refine_thresholds,
    selection_size,
)
from dpaudit.engine.tradeoff import tradeoff_points
from dpaudit.engine.views import ChunkCache, Event
from dpaudit.runtime.blame import what_code_did
from dpaudit.runtime.checkpoint import events_fingerprint, recording
from dpaudit.runtime.chunks import Chunks, parts, plan_chunks
from dpaudit.runtime.execution import Execution
from dpaudit.runtime.heartbeat import beating
from dpaudit.runtime.interrupts import (
    USER_INTERRUPT,
    stopped_by_user,
)
from dpaudit.runtime.progress import Progress
from dpaudit.runtime.readonly import WROTE_TO_INPUT, read_only, wrote_to_input

TRADEOFF_POINTS = 24

CHUNK = 1 << 18
SELECTION, ESTIMATION = 0, 1
SIDES = ("D", "D'")


class MechanismError(RuntimeError):
    """The audited mechanism raised or returned unusable outputs while sampling."""


def chunk_rng(seed: int, key: tuple[int, ...], phase: int, side: int, chunk: int) -> np.random.Generator:
    """The generator of one chunk: its own SeedSequence stream from (seed, scenario key, phase, side,
    chunk), so a chunk's draws never depend on where or when it runs."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(*key, phase, side, chunk)))


def mechanism_name(mechanism: Any) -> str:
    """The mechanism's ``name`` when it is a string, else its type's name."""
    try:
        name = getattr(mechanism, "name", None)
    except KeyboardInterrupt:
        if USER_INTERRUPT.is_set():
            raise
        name = None
    except BaseException:  # a name property may raise, sys.exit included: dpaudit.engine.api refuses it up front
        name = None
    return name if isinstance(name, str) else type(mechanism).__name__


PROBE_SEED = 0x5EED_0F_0E  # the stream of the one output that tells an output's size (never counted)
SMALL_DRAW = 4096  # outputs a draw asks for in one call without asking an output's size first
_PROBED: dict[int, tuple[Any, tuple[int, int]]] = {}  # per process: id -> (mechanism, (width, itemsize))


def output_size(mechanism: Any, data: Any) -> tuple[int, int]:
    """(values per output, bytes per value) of ``mechanism``'s outputs: one output drawn from its own
    stream (:data:`PROBE_SEED`, never counted), once per mechanism and process (the object is kept
    with its size, so its id is not reused for another)."""
    known = _PROBED.get(id(mechanism))
    if known is None or known[0] is not mechanism:
        probe = _draw_once(mechanism, data, 1, np.random.default_rng(PROBE_SEED))
        known = (mechanism, (int(np.prod(probe.shape[1:], dtype=np.int64)), int(probe.dtype.itemsize)))
        _PROBED[id(mechanism)] = known
    return known[1]


def part_size(mechanism: Any, data: Any, size: int) -> int:
    """Outputs one ``sample`` call is asked for when ``size`` are wanted: all of them, or, for outputs so
    wide that ``size`` of them pass :data:`dpaudit.engine.memory.PART_BYTES`, that many bytes' worth
    (a chunk of 2^18 outputs of 10,000 floats is 19.5 GiB; parts of 3,355 are 256 MiB).  Sized from
    the outputs' width alone, so the parts, and the values drawn, are the same in every process and run."""
    if size <= SMALL_DRAW:
        return size
    width, itemsize = output_size(mechanism, data)
    return min(size, outputs_per_part(width, itemsize))


def draw(mechanism: Any, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """``mechanism.sample(data, size, rng)``, validated (a failure names the mechanism), in parts of
    :func:`part_size` outputs from ``rng`` in turn when the outputs are wide."""
    part = part_size(mechanism, data, size)
    if part >= size:
        return _draw_once(mechanism, data, size, rng)
    return np.concatenate([_draw_once(mechanism, data, n, rng) for n in parts(size, part)])


def _draw_once(mechanism: Any, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """One ``mechanism.sample(data, size, rng)`` call, validated; a failure names the mechanism.

    ``SystemExit`` and ``KeyboardInterrupt`` raised by the mechanism itself are failures of the
    mechanism too: a ``sys.exit(0)`` inside ``sample`` must not end the run as if it had passed.  A
    ``MemoryError`` is not: the size asked for is dpaudit's (:func:`part_size`), and a part that
    does not fit is the machine's (exit 3), not the mechanism's fault."""
    name = mechanism_name(mechanism)
    try:
        with beating(f"mechanism {name!r} sample(size={size})"):
            out = mechanism.sample(read_only(data), size, rng)
    except (InputError, MemoryError):
        raise
    except KeyboardInterrupt:
        if USER_INTERRUPT.is_set():
            raise
        raise MechanismError(f"mechanism {name!r} raised KeyboardInterrupt while sampling") from None
    except SystemExit as exc:
        raise MechanismError(f"mechanism {name!r} {what_code_did(exc)} while sampling: a mechanism must "
                             "return its outputs, not end the process") from None
    except BaseException as exc:  # a user's mechanism may raise anything (GeneratorExit too): report it, do not crash
        if wrote_to_input(exc):
            raise MechanismError(f"mechanism {name!r} " + WROTE_TO_INPUT.format(detail=exc)) from None
        raise MechanismError(f"mechanism {name!r} {what_code_did(exc)} while sampling: {exc}") from exc
    return check_outputs(out, size, where=f"mechanism {name!r} sample")


OutputKind = tuple[str, tuple[int, ...]]  # (dtype.str, shape of one output)


def output_kind(outputs: np.ndarray) -> OutputKind:
    return outputs.dtype.str, tuple(outputs.shape[1:])


def conform(outputs: np.ndarray, kind: OutputKind, where: str) -> np.ndarray:
    """``outputs`` in the kind the side's first chunk fixed, or a :class:`MechanismError`.

    Counting must not depend on a chunk's dtype: integer rows are compared by their bytes, so
    the same rows returned as floats in a later chunk would silently fall outside every event.
    A chunk of the other numeric family is converted when that keeps every value (integral
    floats to the first chunk's integers, integers to floats); otherwise the run stops."""
    dtype, shape = np.dtype(kind[0]), tuple(kind[1])
    if outputs.shape[1:] != shape:
        raise MechanismError(f"{where} returned outputs of shape {outputs.shape[1:]}, but the first chunk's were "
                             f"{shape}: a mechanism's outputs must keep one shape")
    if (outputs.dtype.kind in "biu") == (dtype.kind in "biu"):
        return outputs  # same family: every view compares these values as the first chunk's
    with np.errstate(all="ignore"):
        converted = outputs.astype(dtype)
        lossless = bool(np.array_equal(converted, outputs))
    if not lossless:
        raise MechanismError(f"{where} returned {outputs.dtype} outputs, but the first chunk's were {dtype} and these "
                             f"values do not convert to it exactly: a mechanism's outputs must keep one type")
    return converted


def _where(mechanism: Any, phase: int, side: int, chunk: int) -> str:
    split = "selection" if phase == SELECTION else "estimation"
    return f"mechanism {mechanism_name(mechanism)!r}, chunk {chunk} of the {split} split under {SIDES[side]},"


def chunk_sizes(total: int, chunk: int = CHUNK) -> Chunks:
    """``total`` draws in chunks of ``chunk`` (the last one shorter): the selection split's chunking."""
    return Chunks(total, chunk)


def _estimation_chunks(mechanism: Any, n_est: int) -> Chunks:
    """The estimation split's chunk sizes: :data:`CHUNK`, or larger for a mechanism whose draws are
    counted (:func:`dpaudit.engine.streaming.chunk_size`), and larger still past
    :data:`dpaudit.runtime.chunks.MAX_CHUNKS` chunks per side.  The chunk seeds follow these sizes, so
    every reader of the estimation split must size it here."""
    return plan_chunks(n_est, chunk_size(mechanism, CHUNK, n_est))


def draw_chunk(mechanism, data, size, seed, key, phase, side, chunk, kind: OutputKind | None = None) -> np.ndarray:
    """``size`` outputs of ``mechanism`` on ``data`` from the chunk's own stream (:func:`chunk_rng`),
    conformed to ``kind`` when given (a chunk that breaks it is named by phase, side and index)."""
    out = draw(mechanism, data, size, chunk_rng(seed, key, phase, side, chunk))
    return out if kind is None else conform(out, kind, _where(mechanism, phase, side, chunk))


def extension_size(samples: int, n_sel: int, x: np.ndarray, y: np.ndarray, delta: float, n_est: int,
                   confidence: float) -> int:
    """Outputs per side the selection split ``x``, ``y`` (``n_sel`` per side) is extended by before
    the event is chosen: up to :data:`dpaudit.engine.selection.DISCRETE_VECTOR_FRACTION` of the
    budget for integer vector outputs whose rows the rows view counts exhaustively
    (:func:`dpaudit.engine.selection.rows_exhaustive`) and whose choice is not settled
    (:func:`dpaudit.engine.selection.settled`: the split's two halves choose different events),
    else 0.  A function of the selection outputs only, drawn on streams of their own: the
    estimation split is still drawn after the event is fixed, so its bound keeps its confidence."""
    extra = max(0, selection_size(samples, DISCRETE_VECTOR_FRACTION) - n_sel)
    if not extra or not rows_exhaustive(x[:len(x) // 2], y[:len(y) // 2]):  # on the fitting halves, as selection does
        return 0
    if settled(x, y, delta, (n_est, n_est), confidence):
        return 0
    return extra


def estimation_outputs(mechanism: Any, sides: tuple[Any, Any], samples: int, seed: int, side: int,
                       key: tuple[int, ...] = (), selection_fraction: float = SELECTION_FRACTION,
                       delta: float = 0.0, confidence: float = 0.95) -> Iterator[np.ndarray]:
    """The outputs of the estimation split that :func:`estimate` counts for side ``side`` (0: D,
    1: D′) of an audit of ``samples`` per side on the datasets ``sides``, chunk by chunk, drawn
    again from the same chunk seeds: another event can then be counted on exactly the audit's
    samples (the bench's same-sample ceiling).  The selection split is drawn again too, since its
    outputs decide how far it extends (:func:`extension_size`).  Budgets whose tail pilot runs
    (:func:`dpaudit.engine.streaming.pilot_size`) are refused: their estimation split depends on the pilot."""
    n_sel = selection_size(samples, selection_fraction)
    require(pilot_size(samples, selection_fraction, n_sel) == 0, "samples", samples,
            "a budget small enough that no tail pilot runs (the selection cap does not bind)")
    split = [np.concatenate([draw_chunk(mechanism, data_of, size, seed, key, SELECTION, s, c)
                             for c, size in enumerate(chunk_sizes(n_sel))]) for s, data_of in enumerate(sides)]
    n_est = samples - n_sel
    n_est -= extension_size(samples, n_sel, split[0], split[1], delta, n_est, confidence)
    for c, size in enumerate(_estimation_chunks(mechanism, n_est)):
        yield draw_chunk(mechanism, sides[side], size, seed, key, ESTIMATION, side, c)


def count_chunk(mechanism, data, size, seed, key, side, chunk, events: Sequence[Event],
                kind: OutputKind | None = None) -> np.ndarray:
    """How many of one estimation chunk's ``size`` outputs fall in each of ``events``, from the chunk's
    own stream: counted by the mechanism where it can count, else drawn and counted here."""
    # Finite outputs handed back as counts (dpaudit.engine.streaming): no outputs drawn, same law.
    where = _where(mechanism, ESTIMATION, side, chunk)
    try:
        counted = count_from_counts(mechanism, read_only(data), size, chunk_rng(seed, key, ESTIMATION, side, chunk),
                                    events, kind, where, MechanismError, conform)
    except KeyboardInterrupt:
        if USER_INTERRUPT.is_set():
            raise
        raise MechanismError(f"{where} sample_counts raised KeyboardInterrupt") from None
    if counted is not None:
        return counted
    return _count_drawn(mechanism, data, size, chunk_rng(seed, key, ESTIMATION, side, chunk), events, kind, where)


def _count_drawn(mechanism: Any, data: Any, size: int, rng: np.random.Generator, events: Sequence[Event],
                 kind: OutputKind | None, where: str) -> np.ndarray:
    """Members of each event among ``size`` outputs drawn from ``rng``: the outputs :func:`draw`
    gives, counted part by part (:func:`part_size`), so a chunk of wide outputs is never held whole."""
    counts = None
    for n in parts(size, part_size(mechanism, data, size)):
        out = _draw_once(mechanism, data, n, rng)
        counted = count_members(out if kind is None else conform(out, kind, where), events)
        counts = counted if counts is None else counts + counted
    assert counts is not None  # a chunk holds at least one output
    return counts


PARTS = 3  # the phase of the spawn keys of a large chunk's parts (selection 0, estimation 1, tail pilot 2)


def _n_parts(mechanism: Any, size: int) -> int:
    """The tasks a chunk of ``size`` is counted in: one (its own seed, as always), or, for a chunk
    larger than :data:`CHUNK` outputs that are drawn (past the chunk cap, :mod:`dpaudit.runtime.chunks`),
    one per :data:`CHUNK` outputs, each with its own seed."""
    return 1 if size <= CHUNK or counts_capable(mechanism) else -(-size // CHUNK)


def _parts_of(mechanism: Any, size: int) -> Iterator[tuple[int, int]]:
    """(part index, outputs) of a chunk's tasks; index −1 for a chunk counted whole."""
    if _n_parts(mechanism, size) == 1:
        yield -1, size
        return
    yield from enumerate(parts(size, CHUNK))


def _count_part(mechanism, data, size, seed, key, side, chunk, part, events: Sequence[Event],
                kind: OutputKind | None = None) -> np.ndarray:
    """Members of each event among one task's outputs: the whole chunk (``part`` −1), or part
    ``part`` of a large chunk, drawn from ``SeedSequence(seed, spawn_key=(*key, PARTS, side,
    chunk, part))``.  A part is what one task holds in memory and what a Ctrl-C can end after."""
    if part < 0:
        return count_chunk(mechanism, data, size, seed, key, side, chunk, events, kind)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(*key, PARTS, side, chunk, part)))
    return _count_drawn(mechanism, data, size, rng, events, kind, _where(mechanism, ESTIMATION, side, chunk))


LOOKS = (0.125, 0.25, 0.5, 1.0)          # fractions of the estimation budget
SPENDING = (0.125, 0.125, 0.25, 0.5)      # share of alpha spent at each look (sums to 1)
RULE = ("alpha-spending over looks at 1/8, 1/4, 1/2 and all of the budget with alpha x (1/8, 1/8, 1/4, 1/2) "
        "(Bonferroni across looks: the stopped bound holds with the stated confidence)")


def estimate(mechanism: Any, d: Any, d_prime: Any, *, samples: int, levels: Sequence[Level | tuple[float, float]],
             seed: int, execution: Execution | None = None, key: tuple[int, ...] = (),
             discrete: bool | None = None, events: str | Sequence[str] = "auto", selection_fraction: float = 0.2,
             sequential: bool = False, targets: dict[int, float] | None = None) -> Estimate:
    """ε lower bounds at each (δ, confidence) level from ``samples`` draws per side.

    With ``sequential``, the estimation split is counted in looks (:data:`LOOKS`) and the run
    stops at the first look where some level's bound exceeds its entry in ``targets`` (a
    violation is certified) or where no target can be reached even if the current
    frequencies held for the whole budget; each look's bounds use its share of α
    (:data:`RULE`), so the reported bound keeps its confidence.  ``execution`` says where
    chunks run and holds the checkpoint; chunks already in the checkpoint are not redrawn.
    """
    execution = execution or Execution()
    n_sel = selection_size(samples, selection_fraction)  # capped: a pilot for huge budgets (dpaudit.engine.streaming)
    sizes = _estimation_chunks(mechanism, samples - n_sel)
    workers = 1 if execution.backend == "dask" else execution.workers(2 * len(sizes))
    check_memory(samples, 1, 8, workers, selection_fraction)  # the least any output needs: before any sample
    progress = Progress(execution.progress, 2 * samples, execution.label or mechanism_name(mechanism),
                        execution.log_every, position=execution.position)
    run = _Run(mechanism=mechanism, sides=(d, d_prime), samples=samples, levels=[Level.of(lv) for lv in levels],
               seed=seed, key=key,
               execution=execution, workers=workers, progress=progress, selection_fraction=selection_fraction,
               sequential=sequential, targets=targets or {})  # None and {} alike: nothing to stop for, a single look
    tally = _Tally()
    try:
        try:
            selected = _select(run, tally, discrete=discrete, events=events)
        except KeyboardInterrupt as exc:
            if not stopped_by_user(exc):
                raise
            # Nothing of the estimation split was counted: no bound, whatever the selection saw.
            return unmeasured(levels, min(tally.drawn_per_side), f"interrupted by the user during {tally.phase}: no "
                              "estimation sample was counted, so there is no bound (eps_lower 0 at every delta)")
        try:
            _count_looks(run, selected, tally)
        except KeyboardInterrupt as exc:  # between the counting loops (a look's bounds, the checkpoint's lookups)
            if not stopped_by_user(exc):
                raise
            tally.interrupted = True
            tally.k, tally.done = tally.state[0], tally.state[1]
    finally:
        progress.close()
    return _estimate_of(run, selected, tally)


@dataclass(frozen=True)
class _Run:
    """The settings of one :func:`estimate` that every step reads: the mechanism and its pair, the
    budget per side, the levels (δ, confidence), where the chunks come from (seed, spawn key) and
    run (execution, workers), the progress display, the selection fraction and the sequential
    rule's targets (level index → ε; empty: a single look)."""

    mechanism: Any
    sides: tuple[Any, Any]
    samples: int
    levels: Sequence[Level]
    seed: int
    key: tuple[int, ...]
    execution: Execution
    workers: int
    progress: Progress
    selection_fraction: float
    sequential: bool
    targets: dict[int, float]

    @property
    def deltas(self) -> list[float]:
        return [lv.delta for lv in self.levels]

    @property
    def confidences(self) -> list[float]:
        return [lv.confidence for lv in self.levels]


class _Tally:
    """Where one :func:`estimate` stands, kept where its Ctrl-C handlers find it wherever the
    interrupt lands: the phase of the selection split and the outputs drawn per side, then the
    estimation split's counts.  Each field is replaced by a single assignment (a Ctrl-C lands
    between bytecodes), so a handler never reads a half-updated state."""

    def __init__(self) -> None:
        self.phase = "the selection split"  # where a Ctrl-C before any estimation output is counted lands
        self.drawn_per_side = [0, 0]
        self.looked: list[float] = []  # the first level's bound at each finished look (alpha-spending looks only)
        self.k = np.zeros((2, 0), dtype=np.int64)  # the counts of the whole chunk pairs of the finished looks
        self.done = 0  # chunk pairs counted at the last finished look
        # The counts of the whole chunk pairs, how many there are, and the pair in progress (counts, outputs per side).
        self.state: tuple[np.ndarray, int, np.ndarray, tuple[int, int]] = (self.k, 0, np.zeros_like(self.k), (0, 0))
        # the counts, chunk pairs and bounds of the last finished look
        self.at_look: tuple[np.ndarray, int, tuple[Bound, ...]] = (self.k, 0, ())
        self.note: str | None = None
        # The first event's counts after 1, 2, 4, ... chunk pairs (convergence), not per chunk: a
        # huge budget has millions of chunks.
        self.series: list[tuple[int, int, int]] = []
        self.interrupted = False

    def running_epsilon(self) -> float | None:
        """What progress shows before the run is over: only a figure as valid as the final one, the
        bound of a finished look of a sequential run (each look spends its share of alpha).  The
        bound of the chunks counted so far is valid at one fixed sample size, but shown at every
        line it is a look without a correction: its maximum over the run overstates epsilon (a
        mechanism of true epsilon 1 showed 1.415).  So nothing else is shown."""
        return self.looked[-1] if self.looked else None


@dataclass(frozen=True)
class _Selected:
    """What the selection split decided: its final size and the estimation split's (``n_sel``,
    ``n_est`` per side, tail pilot included), the estimation chunks, the chosen events (one per
    level) and the trade-off family counted beside them (``counted``: both), each side's output
    kind, the outputs in words, the looks (chunk pairs at each) with their shares of α, the checkpoint's fingerprint of
    the counted events and the chunk counts at which convergence is recorded."""

    n_sel: int
    n_est: int
    sizes: Chunks
    chosen: list[Event]
    family: list[Event]
    kinds: list[OutputKind | None]
    display: Any
    stops: list[int]
    spend: dict[int, float]
    counted: list[Event]  # chosen + family: the events every chunk is counted on
    fingerprint: str
    marks: set[int]


def _select(run: _Run, tally: _Tally, *, discrete: bool | None, events: str | Sequence[str]) -> _Selected:
    """The selection split drawn (extended for undecided discrete vector outputs), the events chosen
    on it (re-chosen thresholds from a tail pilot on huge budgets), and the plan of the estimation
    split: its chunks, its looks and their shares of α.  ``tally.phase`` names each step as it starts."""
    n_sel = selection_size(run.samples, run.selection_fraction)
    n_est = run.samples - n_sel
    x, y, kinds = _draw_selection_split(run, tally, n_sel)
    tally.phase = "the check whether the selection split settles the choice"
    extra = extension_size(run.samples, n_sel, x, y, run.deltas[0], n_est, run.confidences[0])
    if extra:  # discrete vector outputs: the selection split grows, on chunk streams after its own
        tally.phase = "the selection split's extension (discrete vector outputs)"
        x, y = _extend_selection(run, tally, kinds, x, y, start=len(chunk_sizes(n_sel)), extra=extra)
        n_sel, n_est = n_sel + extra, n_est - extra
    tally.phase = "the event selection on the selection split"
    memo = ChunkCache()  # what the selection computes on x and y and the display shows again
    picked, family = select_events(x, y, run.deltas, (n_est, n_est), run.confidences, resolve_views(discrete, events),
                                   run.seed, tradeoff_points=TRADEOFF_POINTS, memo=memo)
    # Huge budgets: a streamed tail pilot, part of the selection split, re-chooses tail thresholds.
    tally.phase = "the tail pilot (part of the selection split)"
    pilot = pilot_size(run.samples, run.selection_fraction, n_sel)
    picked, pilot = refine_thresholds(
        picked, x, y, n_pilot=pilot, n_est=n_est - pilot, deltas=run.deltas, confidences=run.confidences,
        mechanism=run.mechanism, sides=run.sides, seed=run.seed, key=run.key, kinds=kinds, execution=run.execution,
        draw=draw_chunk,
        on_chunk=lambda size: run.progress.update(size, run.progress.done + size, tally.running_epsilon))
    tally.drawn_per_side = [n + pilot for n in tally.drawn_per_side]
    tally.phase = "the preparation of the estimation split"
    n_sel, n_est = n_sel + pilot, n_est - pilot
    sizes = _estimation_chunks(run.mechanism, n_est)
    chosen = list(picked)
    display = describe_outputs(x, y, chosen[0], memo=memo)
    del memo
    # the selection split's frequencies of the chosen events: the first forecast of the sequential stop
    seen = (np.stack([count_members(x, chosen), count_members(y, chosen)]), len(x)) if run.sequential and \
        run.targets else None
    del x, y
    stops, spend = _looks_of(run, len(sizes))
    counted = chosen + family
    pairs = [(lv.delta, lv.confidence) for lv in run.levels]  # the fingerprint's text as before Level: runs resume
    selected = _Selected(n_sel=n_sel, n_est=n_est, sizes=sizes, chosen=chosen, family=family, kinds=kinds,
                         display=display, stops=stops, spend=spend, counted=counted,
                         fingerprint=events_fingerprint(counted, pairs, n_est) if run.execution.checkpoint else "",
                         marks={2 ** i for i in range(max(1, len(sizes)).bit_length())})
    if len(stops) > 1 and seen is not None:
        _expect(run, selected, *seen, 0)
    tally.k = np.zeros((2, len(selected.counted)), dtype=np.int64)
    tally.state = (tally.k, 0, np.zeros_like(tally.k), (0, 0))
    return selected


def _draw_selection_split(run: _Run, tally: _Tally, n_sel: int
                          ) -> tuple[np.ndarray, np.ndarray, list[OutputKind | None]]:
    """The selection split of each side (``n_sel`` outputs) and the kind of each side's outputs.

    The first chunk of each side fixes the kind of its outputs (dtype family, shape); the very
    first one also gives the real size of an output for the memory check."""
    sel_sizes = chunk_sizes(n_sel)
    with recording(run.execution.checkpoint):  # what sample reaches at call time: checked on resume
        # the memory the split needs, from the real size of an output, before a chunk of them is asked for
        width, itemsize = output_size(run.mechanism, run.sides[0])
        check_memory(run.samples, width, itemsize, run.workers, run.selection_fraction)
        first = draw_chunk(run.mechanism, run.sides[0], sel_sizes[0], run.seed, run.key, SELECTION, 0, 0)
    tally.drawn_per_side[0] = sel_sizes[0]
    kinds: list[OutputKind | None] = [output_kind(first), None]
    check_memory(run.samples, int(np.prod(first.shape[1:], dtype=np.int64)), first.dtype.itemsize, run.workers,
                 run.selection_fraction)
    run.progress.update(sel_sizes[0], sel_sizes[0], tally.running_epsilon)
    run.progress.announce()
    drawn = {(0, 0): first, **_draw_selection(run, tally, kinds, [(s, c, sel_sizes[c]) for s in (0, 1)
                                                                  for c in range(len(sel_sizes)) if (s, c) != (0, 0)])}
    x = np.concatenate([drawn[(0, c)] for c in range(len(sel_sizes))])
    y = np.concatenate([drawn[(1, c)] for c in range(len(sel_sizes))])
    if x.shape[1:] != y.shape[1:]:
        raise MechanismError(f"outputs under D have shape {x.shape[1:]} but under D' {y.shape[1:]}")
    return x, y, kinds


def _draw_selection(run: _Run, tally: _Tally, kinds: list[OutputKind | None],
                    tasks: list[tuple[int, int, int]]) -> dict[tuple[int, int], np.ndarray]:
    """Selection chunks (side, chunk, size), each conformed to its side's kind as it arrives (the
    first chunk of a side without a kind fixes it)."""
    out: dict[tuple[int, int], np.ndarray] = {}
    outputs = run.execution.map(draw_chunk, [(run.mechanism, run.sides[s], size, run.seed, run.key, SELECTION, s, c)
                                              for s, c, size in tasks])
    try:
        for (s, c, size), drawn_chunk in zip(tasks, outputs, strict=True):
            if kinds[s] is None:
                kinds[s] = output_kind(drawn_chunk)
            out[(s, c)] = conform(drawn_chunk, kinds[s], _where(run.mechanism, SELECTION, s, c))  # type: ignore[arg-type]
            tally.drawn_per_side[s] += size
            run.progress.update(size, run.progress.done + size, tally.running_epsilon)
    finally:
        outputs.close()  # an interrupt: cancels what is still in flight
    return out


def _extend_selection(run: _Run, tally: _Tally, kinds: list[OutputKind | None], x: np.ndarray, y: np.ndarray, *,
                      start: int, extra: int) -> tuple[np.ndarray, np.ndarray]:
    """The selection split grown by ``extra`` outputs per side (:func:`extension_size`), drawn on the
    chunk streams numbered from ``start``, after the split's own."""
    check_memory(run.samples, int(np.prod(x.shape[1:], dtype=np.int64)), x.dtype.itemsize, run.workers,
                 DISCRETE_VECTOR_FRACTION)
    more = list(enumerate(chunk_sizes(extra), start=start))
    grown = _draw_selection(run, tally, kinds, [(s, c, size) for s in (0, 1) for c, size in more])
    x = np.concatenate([x, *(grown.pop((0, c)) for c, _ in more)])  # popped: nothing kept twice
    y = np.concatenate([y, *(grown.pop((1, c)) for c, _ in more)])
    return x, y


def _looks_of(run: _Run, n_chunks: int) -> tuple[list[int], dict[int, float]]:
    """The chunk pairs counted at each look (:data:`LOOKS` of the estimation split when the run is
    sequential with targets, else one look at the end) and each look's share of α (:data:`SPENDING`)."""
    looks = run.sequential and bool(run.targets)
    stops = sorted({max(1, int(np.ceil(n_chunks * f))) for f in LOOKS}) if looks else [n_chunks]
    spend = dict(zip(stops, SPENDING[-len(stops):], strict=True)) if len(stops) > 1 else {stops[-1]: 1.0}
    if len(stops) > 1:  # fewer looks than planned (a small budget): the spent shares still sum to 1
        total = sum(spend.values())
        spend = {k: v / total for k, v in spend.items()}
    return stops, spend


def _expect(run: _Run, selected: _Selected, counts: np.ndarray, n: int, after: int) -> None:
    """The progress line's projected end: the look the run is expected to stop at, from ``counts``
    of the chosen events on ``n`` outputs per side, among the looks after the first ``after``."""
    ends = [(selected.sizes.upto(s), selected.spend[s]) for s in selected.stops]
    j = expected_look(selected.chosen, run.deltas, run.confidences, counts, n, ends, run.targets, after)
    run.progress.expect(2 * (selected.n_sel + ends[j][0]), f"look {j + 1} of {len(selected.stops)}")


def _saved(run: _Run, selected: _Selected, s: int, c: int) -> np.ndarray | None:
    """The checkpoint's counts of chunk ``c`` of side ``s``, or None (no checkpoint, or not counted yet)."""
    if run.execution.checkpoint is None:
        return None
    return run.execution.checkpoint.get(run.key, selected.fingerprint, s, c, len(selected.counted), selected.sizes[c])


def _count_looks(run: _Run, selected: _Selected, tally: _Tally) -> None:
    """The estimation split counted look by look; after each, its bounds at the look's share of α
    and, under the sequential rule, the stop (a violation certified, or no claim reachable)."""
    for look, stop in enumerate(selected.stops):
        _count_chunks(run, selected, tally, lo=tally.done, hi=stop)
        tally.k, tally.done = tally.state[0], tally.state[1]
        if tally.interrupted:
            break
        if _look(run, selected, tally, look, stop):
            break


def _count_chunks(run: _Run, selected: _Selected, tally: _Tally, *, lo: int, hi: int) -> None:
    """Chunk pairs ``lo`` to ``hi`` − 1 counted into ``tally.state`` (a side the checkpoint holds is
    read, not redrawn); a user's Ctrl-C sets ``tally.interrupted`` and keeps what was counted."""
    mechanism, sizes = run.mechanism, selected.sizes
    need = {c: [s for s in (0, 1) if _saved(run, selected, s, c) is None] for c in range(lo, hi)} if (
        run.execution.checkpoint) else None

    def sides_to_count(c: int) -> list[int]:
        return need[c] if need is not None else [0, 1]

    def tasks() -> Iterator[tuple]:
        # Chunk pairs in order, both sides' parts interleaved (an interrupted run then holds
        # as many outputs of each side); generated as tasks are handed out, never listed.
        for c in range(lo, hi):
            todo = sides_to_count(c)
            for p, size in _parts_of(mechanism, sizes[c]):
                for s in todo:
                    yield (mechanism, run.sides[s], size, run.seed, run.key, s, c, p, selected.counted,
                           selected.kinds[s])

    n_tasks = sum(len(sides_to_count(c)) * _n_parts(mechanism, sizes[c]) for c in range(lo, hi))
    results = run.execution.map(_count_part, tasks(), n_tasks)
    try:
        for c in range(lo, hi):
            _count_chunk_pair(run, selected, tally, c, sides_to_count(c), results)
    except KeyboardInterrupt as exc:
        if not stopped_by_user(exc):
            raise
        tally.interrupted = True  # the user's Ctrl-C: a partial result of what was counted
    finally:
        results.close()  # cancels what is still in flight


def _count_chunk_pair(run: _Run, selected: _Selected, tally: _Tally, c: int, todo: list[int],
                      results: Iterator[np.ndarray]) -> None:
    """Chunk pair ``c``: the sides in ``todo`` counted part by part from ``results``, the others
    read from the checkpoint; the pair recorded in the checkpoint and added to the whole pairs."""
    sizes = selected.sizes
    base = np.zeros_like(tally.k)
    for s in (0, 1):
        kept = _saved(run, selected, s, c) if s not in todo else None
        if kept is not None:
            base[s] = kept
    tally.state = (tally.state[0], tally.state[1], base, (0 if 0 in todo else sizes[c], 0 if 1 in todo else sizes[c]))
    for _, size in _parts_of(run.mechanism, sizes[c]):
        for s in todo:
            counts = next(results)
            part_k = tally.state[2].copy()
            part_k[s] += counts
            part_n = (tally.state[3][0] + size * (s == 0), tally.state[3][1] + size * (s == 1))
            tally.state = (tally.state[0], tally.state[1], part_k, part_n)
            run.progress.update(size, run.progress.done + size, tally.running_epsilon)
    if run.execution.checkpoint:
        for s in todo:
            run.execution.checkpoint.add(run.key, selected.fingerprint, s, c, tally.state[2][s], sizes[c])
    tally.state = (tally.state[0] + tally.state[2], c + 1, np.zeros_like(tally.k), (0, 0))
    if tally.state[1] in selected.marks:
        tally.series.append((sizes.upto(tally.state[1]), int(tally.state[0][0, 0]), int(tally.state[0][1, 0])))


def _look(run: _Run, selected: _Selected, tally: _Tally, look: int, stop: int) -> bool:
    """The bounds at a finished look (at its share of α) kept in ``tally``; under the sequential rule,
    the look shown and noted, and whether the run stops here."""
    n_done = selected.sizes.upto(tally.done)
    share = selected.spend[stop]
    k, stops = tally.k, selected.stops
    bounds = tuple(bound_from_counts(ev, delta, k[0, i], n_done, k[1, i], n_done, 1 - (1 - conf) * share)
                   for i, (ev, delta, conf) in enumerate(zip(selected.chosen, run.deltas, run.confidences,
                                                             strict=True)))
    tally.at_look = (k.copy(), tally.done, bounds)  # before the look is shown: a Ctrl-C between keeps them one
    tally.looked.append(bounds[0].epsilon_lower)
    if len(stops) == 1:
        return False
    run.progress.update(0, 2 * selected.n_sel + 2 * n_done, tally.running_epsilon)  # the look's bound
    rule = RULE if len(stops) == len(LOOKS) else (  # a small budget merges looks: say so
        f"{RULE}; this budget holds {len(stops)} distinct looks "
        f"(last {len(stops)} shares renormalised)")
    tally.note = f"{rule}; look {look + 1} of {len(stops)} at {n_done} estimation samples per side"
    if any(bounds[i].epsilon_lower > t for i, t in run.targets.items()):
        tally.note += ": stopped, violation certified"
        return True
    if stop < len(selected.sizes) and futile(bounds, run.targets, selected.n_est,
                                             1 - (1 - run.confidences[0]) * SPENDING[-1]):
        tally.note += ": stopped, no claim can be reached within the budget"
        return True
    if look + 1 < len(stops):
        _expect(run, selected, k[:, :len(selected.chosen)], n_done, look + 1)
    return False


def _estimate_of(run: _Run, selected: _Selected, tally: _Tally) -> Estimate:
    """The :class:`Estimate` of what was counted: the last look's bounds, or after a user's Ctrl-C
    the last finished look's (sequential) or those of every output counted so far."""
    sizes, chosen, confidences = selected.sizes, selected.chosen, run.confidences
    n_d = n_dp = sizes.upto(tally.done)
    k_d, k_dp = tally.k[0], tally.k[1]
    bounds, note = tally.at_look[2], tally.note
    if tally.interrupted:
        if tally.looked:  # a sequential run: the last finished look's bounds stand, at that look's share of alpha
            k_d, k_dp, done, bounds = tally.at_look[0][0], tally.at_look[0][1], tally.at_look[1], tally.at_look[2]
            n_d = n_dp = sizes.upto(done)
        else:  # every output counted so far, the pair in progress too: at each side a prefix of its streams
            k_d, k_dp = tally.k[0] + tally.state[2][0], tally.k[1] + tally.state[2][1]
            n_d, n_dp = n_d + tally.state[3][0], n_dp + tally.state[3][1]
            if not (n_d and n_dp):  # nothing counted on a side: no bound to report
                return unmeasured(run.levels, selected.n_sel + min(n_d, n_dp), "interrupted by the user during the "
                                  "estimation split, before an output of each side was counted: there is no bound "
                                  "(eps_lower 0 at every delta)")
            # The user's stop cannot depend on the counts (no bound is shown before a look), so the
            # bound of the outputs counted is valid at its full confidence (the first look's share
            # for a sequential run).
            share = selected.spend[selected.stops[0]]
            bounds = tuple(bound_from_counts(ev, delta, k_d[i], n_d, k_dp[i], n_dp, 1 - (1 - conf) * share)
                           for i, (ev, delta, conf) in enumerate(zip(chosen, run.deltas, confidences, strict=True)))
        note = ((note + "; ") if note else "") + (f"interrupted by the user: a partial result of {min(n_d, n_dp)} "
                                                 f"of {selected.n_est} estimation samples per side")
    series = [point for point in tally.series if point[0] < min(n_d, n_dp)]
    if n_d == n_dp:
        series.append((n_d, int(k_d[0]), int(k_dp[0])))
    curve = tradeoff_points(selected.family, k_d[len(chosen):], n_d, k_dp[len(chosen):], n_dp, confidences[0])
    return Estimate(bounds, confidences[0], selected.n_sel + min(n_d, n_dp), selected.n_sel, sequential=note,
                    tradeoff=curve, convergence=convergence(chosen[0], run.deltas[0], confidences[0], series),
                    display=selected.display)
