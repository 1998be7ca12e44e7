"""Monte Carlo: draw samples in chunks, select events, stream counts.

Every chunk has its own generator, spawned from the root seed by
``SeedSequence(seed, spawn_key=(*key, phase, side, chunk))``, and chunk sizes do not depend
on the number of workers, so one seed gives the same numbers for any ``n_jobs``.  Only the
selection split is held in memory; the estimation split is reduced to event counts chunk by
chunk, so memory is bounded whatever the sample budget.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from dpaudit.core import InputError, require
from dpaudit.engine.checkpoint import recording
from dpaudit.engine.chunks import Chunks, parts, plan_chunks
from dpaudit.engine.estimate import (
    Bound,
    Estimate,
    bound_from_counts,
    check_outputs,
    convergence,
    futile,
    resolve_views,
    unmeasured,
)
from dpaudit.engine.execution import Execution, Progress, events_fingerprint
from dpaudit.engine.expected_stop import expected_look
from dpaudit.engine.interrupts import (  # noqa: F401  (re-exported: their old home)
    USER_INTERRUPT,
    Abort,
    note_user_abort,
    note_user_interrupt,
    stopped_by_user,
)
from dpaudit.engine.memory import MAX_SAMPLES, check_memory, memory_needed  # noqa: F401
from dpaudit.engine.readonly import WROTE_TO_INPUT, read_only, wrote_to_input
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
from dpaudit.engine.views import Event

TRADEOFF_POINTS = 24

CHUNK = 1 << 18
SELECTION, ESTIMATION = 0, 1
SIDES = ("D", "D'")


class MechanismError(RuntimeError):
    """The audited mechanism raised or returned unusable outputs while sampling."""


def _rng(seed: int, key: tuple[int, ...], phase: int, side: int, chunk: int) -> np.random.Generator:
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


def draw(mechanism: Any, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """``mechanism.sample(data, size, rng)``, validated; a failure names the mechanism.

    ``SystemExit`` and ``KeyboardInterrupt`` raised by the mechanism itself are failures of the
    mechanism too: a ``sys.exit(0)`` inside ``sample`` must not end the run as if it had passed."""
    name = mechanism_name(mechanism)
    try:
        out = mechanism.sample(read_only(data), size, rng)
    except InputError:
        raise
    except KeyboardInterrupt:
        if USER_INTERRUPT.is_set():
            raise
        raise MechanismError(f"mechanism {name!r} raised KeyboardInterrupt while sampling") from None
    except SystemExit as exc:
        raise MechanismError(f"mechanism {name!r} called sys.exit({exc.code!r}) while sampling: a mechanism must "
                             "return its outputs, not end the process") from None
    except BaseException as exc:  # a user's mechanism may raise anything (GeneratorExit too): report it, do not crash
        if wrote_to_input(exc):
            raise MechanismError(f"mechanism {name!r} " + WROTE_TO_INPUT.format(detail=exc)) from None
        raise MechanismError(f"mechanism {name!r} raised {type(exc).__name__} while sampling: {exc}") from exc
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


def _chunk_sizes(total: int, chunk: int = CHUNK) -> Chunks:
    return Chunks(total, chunk)


def _estimation_chunks(mechanism: Any, n_est: int) -> Chunks:
    """The estimation split's chunk sizes: :data:`CHUNK`, or larger for a mechanism whose draws are
    counted (:func:`dpaudit.engine.streaming.chunk_size`), and larger still past
    :data:`dpaudit.engine.chunks.MAX_CHUNKS` chunks per side.  The chunk seeds follow these sizes, so
    every reader of the estimation split must size it here."""
    return plan_chunks(n_est, chunk_size(mechanism, CHUNK, n_est))


def _draw_chunk(mechanism, data, size, seed, key, phase, side, chunk, kind: OutputKind | None = None) -> np.ndarray:
    out = draw(mechanism, data, size, _rng(seed, key, phase, side, chunk))
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
    split = [np.concatenate([_draw_chunk(mechanism, data_of, size, seed, key, SELECTION, s, c)
                             for c, size in enumerate(_chunk_sizes(n_sel))]) for s, data_of in enumerate(sides)]
    n_est = samples - n_sel
    n_est -= extension_size(samples, n_sel, split[0], split[1], delta, n_est, confidence)
    for c, size in enumerate(_estimation_chunks(mechanism, n_est)):
        yield _draw_chunk(mechanism, sides[side], size, seed, key, ESTIMATION, side, c)


def _count_chunk(mechanism, data, size, seed, key, side, chunk, events: Sequence[Event],
                 kind: OutputKind | None = None) -> np.ndarray:
    # Finite outputs handed back as counts (dpaudit.engine.streaming): no outputs drawn, same law.
    where = _where(mechanism, ESTIMATION, side, chunk)
    try:
        counted = count_from_counts(mechanism, read_only(data), size, _rng(seed, key, ESTIMATION, side, chunk), events,
                                    kind, where, MechanismError, conform)
    except KeyboardInterrupt:
        if USER_INTERRUPT.is_set():
            raise
        raise MechanismError(f"{where} sample_counts raised KeyboardInterrupt") from None
    if counted is not None:
        return counted
    return count_members(_draw_chunk(mechanism, data, size, seed, key, ESTIMATION, side, chunk, kind), events)


PARTS = 3  # the phase of the spawn keys of a large chunk's parts (selection 0, estimation 1, tail pilot 2)


def _n_parts(mechanism: Any, size: int) -> int:
    """The tasks a chunk of ``size`` is counted in: one (its own seed, as always), or, for a chunk
    larger than :data:`CHUNK` outputs that are drawn (past the chunk cap, :mod:`dpaudit.engine.chunks`),
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
        return _count_chunk(mechanism, data, size, seed, key, side, chunk, events, kind)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(*key, PARTS, side, chunk, part)))
    out = draw(mechanism, data, size, rng)
    where = _where(mechanism, ESTIMATION, side, chunk)
    return count_members(out if kind is None else conform(out, kind, where), events)


LOOKS = (0.125, 0.25, 0.5, 1.0)          # fractions of the estimation budget
SPENDING = (0.125, 0.125, 0.25, 0.5)      # share of alpha spent at each look (sums to 1)
RULE = ("alpha-spending over looks at 1/8, 1/4, 1/2 and all of the budget with alpha x (1/8, 1/8, 1/4, 1/2) "
        "(Bonferroni across looks: the stopped bound holds with the stated confidence)")


def estimate(mechanism: Any, d: Any, d_prime: Any, *, samples: int, levels: Sequence[tuple[float, float]],
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
    targets = targets or {}  # None and {} alike: nothing to stop for, a single look
    deltas = [lv[0] for lv in levels]
    confidences = [lv[1] for lv in levels]
    n_sel = selection_size(samples, selection_fraction)  # capped: a pilot for huge budgets (dpaudit.engine.streaming)
    n_est = samples - n_sel
    sides = (d, d_prime)
    sizes = _estimation_chunks(mechanism, n_est)
    workers = 1 if execution.backend == "dask" else execution.workers(2 * len(sizes))
    check_memory(samples, 1, 8, workers, selection_fraction)  # the least any output needs: before any sample
    progress = Progress(execution.progress, 2 * samples, execution.label or mechanism_name(mechanism),
                        execution.log_every, position=execution.position)
    k = np.zeros((2, 0), dtype=np.int64)
    chosen: list[Event] = []

    looked: list[float] = []  # the first level's bound at each finished look (alpha-spending looks only)

    def running_epsilon() -> float | None:
        """What progress shows before the run is over: only a figure as valid as the final one, the
        bound of a finished look of a sequential run (each look spends its share of alpha).  The
        bound of the chunks counted so far is valid at one fixed sample size, but shown at every
        line it is a look without a correction: its maximum over the run overstates epsilon (a
        mechanism of true epsilon 1 showed 1.415).  So nothing else is shown."""
        return looked[-1] if looked else None

    interrupted = False
    # the counts, chunk pairs and bounds of the last finished look
    at_look: tuple[np.ndarray, int, tuple[Bound, ...]] = (k, 0, ())
    phase = "the selection split"  # where a Ctrl-C before any estimation output is counted lands
    drawn_per_side = [0, 0]
    try:
        try:
            # The first chunk of each side fixes the kind of its outputs (dtype family, shape); the very
            # first one also gives the real size of an output for the memory check.
            sel_sizes = _chunk_sizes(n_sel)
            with recording(execution.checkpoint):  # what sample reaches at call time: checked on resume
                first = _draw_chunk(mechanism, d, sel_sizes[0], seed, key, SELECTION, 0, 0)
            drawn_per_side[0] = sel_sizes[0]
            kinds: list[OutputKind | None] = [output_kind(first), None]
            check_memory(samples, int(np.prod(first.shape[1:], dtype=np.int64)), first.dtype.itemsize, workers,
                         selection_fraction)
            progress.update(sel_sizes[0], sel_sizes[0], running_epsilon)
            progress.announce()

            def draw_selection(tasks: list[tuple[int, int, int]]) -> dict[tuple[int, int], np.ndarray]:
                """Selection chunks (side, chunk, size), each conformed to its side's kind as it arrives."""
                out: dict[tuple[int, int], np.ndarray] = {}
                outputs = execution.map(_draw_chunk, [(mechanism, sides[s], size, seed, key, SELECTION, s, c)
                                                      for s, c, size in tasks])
                try:
                    for (s, c, size), drawn_chunk in zip(tasks, outputs, strict=True):
                        if kinds[s] is None:
                            kinds[s] = output_kind(drawn_chunk)
                        out[(s, c)] = conform(drawn_chunk, kinds[s], _where(mechanism, SELECTION, s, c))  # type: ignore[arg-type]
                        drawn_per_side[s] += size
                        progress.update(size, progress.done + size, running_epsilon)
                finally:
                    outputs.close()  # an interrupt: cancels what is still in flight
                return out

            drawn = {(0, 0): first, **draw_selection([(s, c, sel_sizes[c]) for s in (0, 1)
                                                      for c in range(len(sel_sizes)) if (s, c) != (0, 0)])}
            x = np.concatenate([drawn[(0, c)] for c in range(len(sel_sizes))])
            y = np.concatenate([drawn[(1, c)] for c in range(len(sel_sizes))])
            if x.shape[1:] != y.shape[1:]:
                raise MechanismError(f"outputs under D have shape {x.shape[1:]} but under D' {y.shape[1:]}")
            phase = "the check whether the selection split settles the choice"
            extra = extension_size(samples, n_sel, x, y, deltas[0], n_est, confidences[0])
            if extra:  # discrete vector outputs: the selection split grows, on chunk streams after its own
                phase = "the selection split's extension (discrete vector outputs)"
                check_memory(samples, int(np.prod(x.shape[1:], dtype=np.int64)), x.dtype.itemsize, workers,
                             DISCRETE_VECTOR_FRACTION)
                more = list(enumerate(_chunk_sizes(extra), start=len(sel_sizes)))
                grown = draw_selection([(s, c, size) for s in (0, 1) for c, size in more])
                x = np.concatenate([x, *(grown.pop((0, c)) for c, _ in more)])  # popped: nothing kept twice
                y = np.concatenate([y, *(grown.pop((1, c)) for c, _ in more)])
                n_sel, n_est = n_sel + extra, n_est - extra
            phase = "the event selection on the selection split"
            picked, family = select_events(x, y, deltas, (n_est, n_est), confidences, resolve_views(discrete, events),
                                           seed, tradeoff_points=TRADEOFF_POINTS)
            # Huge budgets: a streamed tail pilot, part of the selection split, re-chooses tail thresholds.
            phase = "the tail pilot (part of the selection split)"
            pilot = pilot_size(samples, selection_fraction, n_sel)
            picked, pilot = refine_thresholds(
                picked, x, y, n_pilot=pilot, n_est=n_est - pilot, deltas=deltas, confidences=confidences,
                mechanism=mechanism, sides=sides, seed=seed, key=key, kinds=kinds, execution=execution,
                draw=_draw_chunk, on_chunk=lambda size: progress.update(size, progress.done + size, running_epsilon))
            drawn_per_side = [n + pilot for n in drawn_per_side]
            phase = "the preparation of the estimation split"
            n_sel, n_est = n_sel + pilot, n_est - pilot
            sizes = _estimation_chunks(mechanism, n_est)
            chosen.extend(picked)
            display = describe_outputs(x, y, chosen[0])
            # the selection split's frequencies of the chosen events: the first forecast of the sequential stop
            seen = (np.stack([count_members(x, chosen), count_members(y, chosen)]), len(x)) if sequential and targets \
                else None
            counted = chosen + family
            del x, y, drawn, first
            looks = sequential and bool(targets)
            stops = sorted({max(1, int(np.ceil(len(sizes) * f))) for f in LOOKS}) if looks else [len(sizes)]
            spend = dict(zip(stops, SPENDING[-len(stops):], strict=True)) if len(stops) > 1 else {stops[-1]: 1.0}
            if len(stops) > 1:  # fewer looks than planned (a small budget): the spent shares still sum to 1
                total = sum(spend.values())
                spend = {k: v / total for k, v in spend.items()}

            def expect(counts: np.ndarray, n: int, after: int) -> None:  # the progress line's projected end
                ends = [(sizes.upto(s), spend[s]) for s in stops]
                j = expected_look(chosen, deltas, confidences, counts, n, ends, targets, after)
                progress.expect(2 * (n_sel + ends[j][0]), f"look {j + 1} of {len(stops)}")

            if len(stops) > 1 and seen is not None:
                expect(*seen, 0)
            k = np.zeros((2, len(counted)), dtype=np.int64)
            fingerprint = events_fingerprint(counted, levels, n_est) if execution.checkpoint else ""
            # The first event's counts after 1, 2, 4, ... chunk pairs (convergence), not per chunk: a
            # huge budget has millions of chunks.
            marks = {2 ** i for i in range(max(1, len(sizes)).bit_length())}
            series: list[tuple[int, int, int]] = []
            done, note = 0, None

            def saved(s: int, c: int) -> np.ndarray | None:
                if execution.checkpoint is None:
                    return None
                return execution.checkpoint.get(key, fingerprint, s, c, len(counted), sizes[c])

            # One state, replaced by single assignments (a Ctrl-C lands between bytecodes): the counts of
            # the whole chunk pairs, how many there are, and the pair in progress (counts, outputs per side).
            state: tuple[np.ndarray, int, np.ndarray, tuple[int, int]] = (k, 0, np.zeros_like(k), (0, 0))
        except KeyboardInterrupt as exc:
            if not stopped_by_user(exc):
                raise
            # Nothing of the estimation split was counted: no bound, whatever the selection saw.
            return unmeasured(levels, min(drawn_per_side), f"interrupted by the user during {phase}: no "
                              "estimation sample was counted, so there is no bound (eps_lower 0 at every delta)")
        try:
            for look, stop in enumerate(stops):
                need = {c: [s for s in (0, 1) if saved(s, c) is None] for c in range(done, stop)} if (
                    execution.checkpoint) else None

                def sides_to_count(c: int, need: dict[int, list[int]] | None = need) -> list[int]:
                    return need[c] if need is not None else [0, 1]

                def tasks(lo: int = done, hi: int = stop) -> Iterator[tuple]:
                    # Chunk pairs in order, both sides' parts interleaved (an interrupted run then holds
                    # as many outputs of each side); generated as tasks are handed out, never listed.
                    for c in range(lo, hi):
                        todo = sides_to_count(c)
                        for p, size in _parts_of(mechanism, sizes[c]):
                            for s in todo:
                                yield (mechanism, sides[s], size, seed, key, s, c, p, counted, kinds[s])

                n_tasks = sum(len(sides_to_count(c)) * _n_parts(mechanism, sizes[c]) for c in range(done, stop))
                results = execution.map(_count_part, tasks(), n_tasks)
                try:
                    for c in range(done, stop):
                        todo = sides_to_count(c)
                        base = np.zeros_like(k)
                        for s in (0, 1):
                            kept = saved(s, c) if s not in todo else None
                            if kept is not None:
                                base[s] = kept
                        state = (state[0], state[1], base, (0 if 0 in todo else sizes[c], 0 if 1 in todo else sizes[c]))
                        for _, size in _parts_of(mechanism, sizes[c]):
                            for s in todo:
                                counts = next(results)
                                part_k = state[2].copy()
                                part_k[s] += counts
                                part_n = (state[3][0] + size * (s == 0), state[3][1] + size * (s == 1))
                                state = (state[0], state[1], part_k, part_n)
                                progress.update(size, progress.done + size, running_epsilon)
                        if execution.checkpoint:
                            for s in todo:
                                execution.checkpoint.add(key, fingerprint, s, c, state[2][s], sizes[c])
                        state = (state[0] + state[2], c + 1, np.zeros_like(k), (0, 0))
                        if state[1] in marks:
                            series.append((sizes.upto(state[1]), int(state[0][0, 0]), int(state[0][1, 0])))
                except KeyboardInterrupt as exc:
                    if not stopped_by_user(exc):
                        raise
                    interrupted = True  # the user's Ctrl-C: a partial result of what was counted
                finally:
                    results.close()  # cancels what is still in flight
                k, done = state[0], state[1]
                n_done = sizes.upto(done)
                if interrupted:
                    break
                share = spend[stop]
                bounds = tuple(bound_from_counts(ev, delta, k[0, i], n_done, k[1, i], n_done, 1 - (1 - conf) * share)
                               for i, (ev, delta, conf) in enumerate(zip(chosen, deltas, confidences, strict=True)))
                at_look = (k.copy(), done, bounds)  # before the look is shown: a Ctrl-C between keeps them one
                looked.append(bounds[0].epsilon_lower)
                if len(stops) > 1:
                    progress.update(0, 2 * n_sel + 2 * n_done, running_epsilon)  # the look's bound
                    rule = RULE if len(stops) == len(LOOKS) else (  # a small budget merges looks: say so
                        f"{RULE}; this budget holds {len(stops)} distinct looks "
                        f"(last {len(stops)} shares renormalised)")
                    note = f"{rule}; look {look + 1} of {len(stops)} at {n_done} estimation samples per side"
                    if any(bounds[i].epsilon_lower > t for i, t in targets.items()):
                        note += ": stopped, violation certified"
                        break
                    if stop < len(sizes) and futile(bounds, targets, n_est, 1 - (1 - confidences[0]) * SPENDING[-1]):
                        note += ": stopped, no claim can be reached within the budget"
                        break
                    if look + 1 < len(stops):
                        expect(k[:, :len(chosen)], n_done, look + 1)
        except KeyboardInterrupt as exc:  # between the counting loops (a look's bounds, the checkpoint's lookups)
            if not stopped_by_user(exc):
                raise
            interrupted = True
            k, done = state[0], state[1]
    finally:
        progress.close()
    n_d = n_dp = sizes.upto(done)
    k_d, k_dp = k[0], k[1]
    if interrupted:
        if looked:  # a sequential run: the last finished look's bounds stand, at that look's share of alpha
            k_d, k_dp, done, bounds = at_look[0][0], at_look[0][1], at_look[1], at_look[2]
            n_d = n_dp = sizes.upto(done)
        else:  # every output counted so far, the pair in progress too: at each side a prefix of its streams
            k_d, k_dp = k[0] + state[2][0], k[1] + state[2][1]
            n_d, n_dp = n_d + state[3][0], n_dp + state[3][1]
            if not (n_d and n_dp):  # nothing counted on a side: no bound to report
                return unmeasured(levels, n_sel + min(n_d, n_dp), "interrupted by the user during the estimation "
                                  "split, before an output of each side was counted: there is no bound (eps_lower "
                                  "0 at every delta)")
            # The user's stop cannot depend on the counts (no bound is shown before a look), so the
            # bound of the outputs counted is valid at its full confidence (the first look's share
            # for a sequential run).
            share = spend[stops[0]]
            bounds = tuple(bound_from_counts(ev, delta, k_d[i], n_d, k_dp[i], n_dp, 1 - (1 - conf) * share)
                           for i, (ev, delta, conf) in enumerate(zip(chosen, deltas, confidences, strict=True)))
        note = ((note + "; ") if note else "") + (f"interrupted by the user: a partial result of {min(n_d, n_dp)} "
                                                 f"of {n_est} estimation samples per side")
    series = [point for point in series if point[0] < min(n_d, n_dp)]
    if n_d == n_dp:
        series.append((n_d, int(k_d[0]), int(k_dp[0])))
    curve = tradeoff_points(family, k_d[len(chosen):], n_d, k_dp[len(chosen):], n_dp, confidences[0])
    return Estimate(bounds, confidences[0], n_sel + min(n_d, n_dp), n_sel, sequential=note, tradeoff=curve,
                    convergence=convergence(chosen[0], deltas[0], confidences[0], series),
                    display=display)
