"""The canary game of one-run auditing (Steinke, Nasr, Jagielski, NeurIPS 2023, Algorithm 1).

m canaries; a secret ``S ~ Bernoulli(½)^m``; the training dataset is the base data plus the
canaries with ``S_i = 1``, built with the relation the claim is stated for:

* ``add-remove``: each canary is one record, appended when included;
* ``user-level``: each canary is one user (a sequence of records), added as a whole user.

The mechanism runs once; the scorer sees the output and the canaries (never S) and gives one
float per canary, higher meaning "in".  R independent runs with m canaries each are one game of
R·m canaries: each canary changes one run's dataset only, so the composed mechanism is as
private towards each canary as one run is, and the bounds apply with R·m in place of m.

The secret.  Algorithm 1 needs S independent of everything the guesser sees but the output:
S is drawn from fresh operating-system entropy (``numpy.random.SeedSequence()`` with no seed),
never from the run's seed, which the user's code knows (a scorer that re-derived S from a
documented stream of the seed, or simply reused the seed for its own randomness, would "guess"
every canary).  While the game is played S is held packed in a private holder: each run's
dataset is built by a helper that returns the dataset only, so no frame of the mechanism's or
the scorer's call stack holds S, a slice of it, or the dataset of a finished run as a local.
The record stores S (packed bits, :func:`pack_secret`) with its SHA-256, so a result stays
re-checkable (:meth:`GameRecord.verify`) without re-deriving anything.  :data:`PREMISE`: a bound
holds only if the scorer does not read S (code that digs through the interpreter's objects could);
the record says so.  A caller that needs the same game twice passes ``secret=`` explicitly (its
own Bernoulli(½) draw, checked by :func:`dpaudit.onerun.bound.one_run_bound`).

Streams: ``SeedSequence(seed, spawn_key=(1, run))`` is the mechanism's generator of run ``run``
(reproducible training randomness); S comes from no seed.

``SystemExit`` or ``KeyboardInterrupt`` raised by the user's mechanism or scorer (a ``sys.exit(0)``
in a training script) is the user's bad input: an :class:`~dpaudit.core.InputError` naming the
function, never the end of the caller's process.
"""

from __future__ import annotations

import base64
import hashlib
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpaudit.core import InputError, Relation, check_real_array, require
from dpaudit.engine.memory import human_size
from dpaudit.onerun.progress import current as current_progress
from dpaudit.runtime import execution
from dpaudit.runtime.heartbeat import beating
from dpaudit.runtime.interrupts import USER_INTERRUPT

__all__ = ["MAX_GAME", "PREMISE", "CanaryGame", "GameRecord", "Runnable", "Scorer", "check_game_size", "fresh_secret",
           "pack_secret", "play", "secret_sha256", "unpack_secret", "user_call"]

RELATIONS = (Relation.ADD_REMOVE.value, Relation.USER_LEVEL.value)
MAX_GAME = 10**8  # canaries of one game, all runs together: a results file claiming more is refused too
BYTES_PER_CANARY = 200  # peak of a game and its saved lists, on the high side (measured: 198 B at 1e6 canaries)
PREMISE = ("the scorer does not read the secret: it is drawn from fresh entropy, independent of the seed, and kept "
           "out of the mechanism's and the scorer's frames; a scorer that reads it anyway voids the bound")
FRESH, SUPPLIED = "fresh entropy", "supplied by the caller"


@runtime_checkable
class Runnable(Protocol):
    """A mechanism that trains once: ``run(dataset, rng) -> output``."""

    def run(self, dataset: Any, rng: np.random.Generator) -> Any: ...


@runtime_checkable
class Scorer(Protocol):
    """``score(output, canaries) -> one float per canary``, higher meaning "in"."""

    def score(self, output: Any, canaries: Sequence[Any]) -> Any: ...


def secret_sha256(secret: np.ndarray) -> str:
    """SHA-256 of the secret as bytes (one byte 0/1 per canary, in canary order)."""
    return hashlib.sha256(np.asarray(secret, dtype=np.uint8).tobytes()).hexdigest()


def _scores_sha256(scores: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(scores, dtype=np.float64).tobytes()).hexdigest()


def check_game_size(canaries: int, runs: int, field: str = "runs x canaries") -> None:
    """Refuse, before anything is built or trained, a game of more than :data:`MAX_GAME` canaries or
    one whose arrays (scores, secret, the ranking, the saved lists: :data:`BYTES_PER_CANARY` each)
    would not fit in the memory available — an :class:`InputError` with the estimate, never a
    ``MemoryError`` half-way."""
    total = int(canaries) * int(runs)
    require(total <= MAX_GAME, field, f"{canaries} x {runs} = {total}",
            f"a one-run game holds at most {MAX_GAME:.0e} canaries over all its runs")
    need, have = total * BYTES_PER_CANARY, execution.available_memory()
    require(have is None or need <= have, field, f"{canaries} x {runs} = {total}",
            f"the game needs about {human_size(need)} of memory (about {BYTES_PER_CANARY} B per canary: scores, "
            f"secret, ranking and the saved lists) but about {human_size(have or 0)} is available: use fewer "
            "canaries or runs")


def fresh_secret(size: int) -> np.ndarray:
    """S ~ Bernoulli(½)^size from fresh operating-system entropy (no seed: nothing the user's code
    knows determines it)."""
    return np.random.default_rng(np.random.SeedSequence()).integers(0, 2, size=size, dtype=np.int8)


def pack_secret(secret: np.ndarray) -> str:
    """The bits as base64 of ``numpy.packbits`` (big-endian within a byte, zero-padded): m/6 characters."""
    return base64.b64encode(np.packbits(np.asarray(secret, dtype=np.uint8)).tobytes()).decode("ascii")


def unpack_secret(text: str, m: int) -> np.ndarray:
    """The m bits :func:`pack_secret` wrote, or an :class:`InputError` when ``text`` cannot hold them."""
    require(isinstance(text, str) and len(text) == 4 * (((m + 7) // 8 + 2) // 3), "secret_bits",
            f"<{len(text) if isinstance(text, str) else type(text).__name__} characters>",
            f"must be the base64 of {m} packed bits ({4 * (((m + 7) // 8 + 2) // 3)} characters)")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as exc:
        raise InputError(f"secret_bits = <{len(text)} characters> is invalid: not base64 ({exc})") from None
    return np.unpackbits(np.frombuffer(raw, dtype=np.uint8), count=m).astype(np.int8)


class _Sealed:
    """The secret during a game: packed bytes (no array of it lives in any frame), its hash and
    where it came from.  :meth:`bits` gives one run's slice to the dataset helper only."""

    __slots__ = ("_packed", "_size", "sha256", "source")

    def __init__(self, bits: np.ndarray, source: str) -> None:
        self._packed, self._size = np.packbits(bits.astype(np.uint8)).tobytes(), int(bits.size)
        self.sha256, self.source = secret_sha256(bits), source

    def bits(self, start: int, stop: int) -> np.ndarray:
        return np.unpackbits(np.frombuffer(self._packed, dtype=np.uint8), count=self._size)[start:stop].astype(np.int8)

    def unsealed(self) -> np.ndarray:
        return self.bits(0, self._size)


def _sealed(secret: Any, total: int) -> _Sealed:
    """A caller's ``secret`` (0/1, one bit per canary of all runs), or fresh entropy when None."""
    if secret is None:
        return _Sealed(fresh_secret(total), FRESH)
    try:
        bits = np.asarray(secret).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InputError(f"secret = {secret!r:.80} is invalid: must be {total} bits 0/1 ({exc})") from None
    require(bits.size == total, "secret", f"<{bits.size} bits>", f"must hold one bit per canary of all runs ({total})")
    require(bits.dtype.kind in "biuf" and bool(np.all((bits == 0) | (bits == 1))), "secret", "<values>",
            "must be 0/1 (1 = canary included), drawn Bernoulli(1/2) independently of the seed and the scorer")
    return _Sealed(bits.astype(np.int8), SUPPLIED)


def user_call(fn: Callable[..., Any], role: str, *args: Any) -> Any:
    """``fn(*args)`` for the user's ``role`` ("mechanism", "scorer"): a ``SystemExit`` (any code) or a
    ``KeyboardInterrupt`` it raises is an :class:`InputError` naming it; the user's own Ctrl-C under
    the application's handler (:data:`~dpaudit.runtime.interrupts.USER_INTERRUPT`) goes on."""
    try:
        return fn(*args)
    except KeyboardInterrupt:
        if USER_INTERRUPT.is_set():
            raise
        raise InputError(f"{role} {describe_callable(fn)} raised KeyboardInterrupt: a {role} must return, not "
                         "interrupt the audit") from None
    except SystemExit as exc:
        raise InputError(f"{role} {describe_callable(fn)} raised SystemExit({exc.code!r}): a {role} must return "
                         f"its {'output' if role == 'mechanism' else 'scores'}, not end the process") from None


def describe_callable(fn: Any) -> str:
    """``module.qualname`` of a function or bound method (a callable object: its type's)."""
    target = fn if hasattr(fn, "__qualname__") else type(fn)
    module, name = getattr(target, "__module__", None), getattr(target, "__qualname__", None)
    return f"{module}.{name}" if isinstance(module, str) and isinstance(name, str) else repr(type(fn).__name__)


@dataclass(frozen=True)
class GameRecord:
    """What one game produced: the scores, the secret (kept out of the scorer's reach while it ran),
    its SHA-256 taken when it was drawn, and how the mechanism's randomness is reproduced."""

    scores: np.ndarray        # (R·m,) floats, run-major
    secret: np.ndarray        # (R·m,) 0/1
    canaries_per_run: int
    runs: int
    seed: int
    relation: str
    sha256: str = ""          # of the secret when drawn ("" : computed from ``secret``)
    secret_source: str = SUPPLIED  # only CanaryGame.play says FRESH: a record built by hand is the caller's
    premise: str = field(default=PREMISE)
    # of the scores as the record was made: an in-place edit of either array is caught by verify()
    scores_sha256: str = field(default="", init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Keep read-only copies of the two arrays (a caller's array is never frozen under it, and
        an array of the record is not edited in place by accident) and the scores' digest; the
        secret's digest is the one taken when it was drawn.  ``flags.writeable`` can be set back on
        an array that owns its memory, so :meth:`verify` (which :func:`~dpaudit.onerun.bound.bound_record`
        calls) checks both digests too."""
        for name in ("scores", "secret"):
            arr = np.array(getattr(self, name), copy=True)
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "scores_sha256", _scores_sha256(self.scores))

    @property
    def m(self) -> int:
        return int(self.secret.size)

    @property
    def secret_sha256(self) -> str:
        return self.sha256 or secret_sha256(self.secret)

    def verify(self) -> None:
        """Check the stored secret against the hash taken when it was drawn (a re-check, or a resume):
        raises :class:`InputError` when the record was altered.  Nothing is re-derived from the seed."""
        require(self.secret.size == self.runs * self.canaries_per_run and self.scores.size == self.secret.size,
                "secret", f"<{self.secret.size} bits>", f"must hold runs x canaries_per_run = "
                f"{self.runs * self.canaries_per_run} bits, one per score")
        require(secret_sha256(self.secret) == self.secret_sha256, "secret", self.secret_sha256,
                "does not match its stored SHA-256: the record was altered or is from another game")
        require(_scores_sha256(self.scores) == self.scores_sha256, "scores", "<edited in place>",
                "no longer match the scores the game returned: a record's arrays are not to be altered")

    def to_dict(self) -> dict[str, object]:
        return {"m": self.m, "canaries_per_run": self.canaries_per_run, "runs": self.runs, "seed": self.seed,
                "relation": self.relation, "secret_sha256": self.secret_sha256,
                "secret_bits": pack_secret(self.secret), "secret_source": self.secret_source,
                "premise": self.premise, "streams": {"secret": self.secret_source, "mechanism": [self.seed, 1, "run"]}}


# The records CanaryGame.play made from a secret it drew itself (by identity: a record built by hand,
# copied with dataclasses.replace or restored from a file is not one of them, whatever its secret_source says).
_DRAWN_HERE: weakref.WeakValueDictionary[int, GameRecord] = weakref.WeakValueDictionary()


def _drawn_here(record: GameRecord) -> GameRecord:
    if record.secret_source == FRESH:
        _DRAWN_HERE[id(record)] = record
    return record


def drawn_by_dpaudit(record: GameRecord) -> bool:
    """True only for a record :meth:`CanaryGame.play` returned, in this process, from a secret it drew
    from fresh entropy: a ``secret_source`` of :data:`FRESH` set by hand, copied with
    ``dataclasses.replace`` or read back from a file (:func:`restored_game`) is not believed (a
    caller's secret is bounded under balanced rules only)."""
    return record.secret_source == FRESH and _DRAWN_HERE.get(id(record)) is record


def restored_game(**fields: Any) -> GameRecord:
    """A game read back from a results file (a resume, a re-check), with the file's ``secret_source``.

    **What it guarantees.**  The file's word is recorded, never believed: a restored game is never
    :func:`drawn_by_dpaudit`, so it is bounded as a caller's secret — balanced rules only, each ε
    under :func:`~dpaudit.onerun.steinke.prior_guard` (which never binds at α ≤ ¼), after the count
    and order checks of a caller's secret.  Those bounds hold whoever drew the secret (Hoeffding's
    comparison, :func:`~dpaudit.onerun.bound.check_rule_for_secret`), so neither a forged results file
    nor this function called with ``secret_source="fresh entropy"`` and a secret of one's own buys an
    unbalanced rule.  A resumed game whose rule is unbalanced is refused: run it again, not resumed.
    (No file can prove it was written by dpaudit: anything dpaudit could sign on this machine, a
    caller could read and sign with.)"""
    return GameRecord(**fields)


@dataclass(frozen=True)
class CanaryGame:
    """m canaries per run, ``runs`` runs, one seed (of the mechanism's randomness only)."""

    m: int
    seed: int = 0
    runs: int = 1
    relation: str = Relation.ADD_REMOVE.value

    def __post_init__(self) -> None:
        require(isinstance(self.m, (int, np.integer)) and not isinstance(self.m, bool) and self.m >= 1, "m", self.m,
                "must be an integer >= 1 (canaries per run)")
        require(isinstance(self.runs, (int, np.integer)) and not isinstance(self.runs, bool) and self.runs >= 1,
                "runs", self.runs, "must be an integer >= 1")
        require(isinstance(self.seed, (int, np.integer)) and not isinstance(self.seed, bool) and self.seed >= 0,
                "seed", self.seed, "must be an integer >= 0")
        require(self.relation in RELATIONS, "relation", self.relation, f"must be one of {', '.join(RELATIONS)}")

    def mechanism_rng(self, run: int) -> np.random.Generator:
        return np.random.default_rng(np.random.SeedSequence(int(self.seed), spawn_key=(1, run)))

    def dataset(self, base: Any, canaries: Sequence[Any], included: np.ndarray) -> Any:
        """The training dataset of one run: ``base`` plus the included canaries.

        ``add-remove``: records appended (a numpy ``base`` gets ``np.concatenate``); ``user-level``:
        ``base`` is a list of users and each included canary is appended as one user."""
        chosen = [c for c, s in zip(canaries, included, strict=True) if s]
        if isinstance(base, np.ndarray) and self.relation == Relation.ADD_REMOVE.value:
            extra = np.asarray(chosen, dtype=base.dtype).reshape((len(chosen), *base.shape[1:]))
            return np.concatenate([base, extra], axis=0)
        if self.relation == Relation.USER_LEVEL.value:
            for user in chosen:
                require(isinstance(user, Sequence) and not isinstance(user, (str, bytes)), "canaries", user,
                        "user-level canaries must each be a sequence of records (one user)")
            return [*list(base), *[list(u) for u in chosen]]
        return [*list(base), *chosen]

    def _run_dataset(self, base: Any, canaries: Sequence[Any], sealed: _Sealed, run: int) -> Any:
        """Run ``run``'s dataset, and nothing else: its secret bits live in this frame only, which is
        gone before the mechanism is called."""
        return self.dataset(base, canaries, sealed.bits(run * self.m, (run + 1) * self.m))

    def play(self, mechanism: Any, scorer: Any, canaries: Sequence[Any], base: Any = (), *,
             secret: Any = None, progress: Callable[[int, int], None] | None = None) -> GameRecord:
        """Run the game: one training run per ``runs``; returns the scores and the secret.

        ``secret``: None (default) draws S from fresh entropy; a caller's own 0/1 array of runs·m
        bits replays a game (it must be a Bernoulli(½) draw independent of everything the scorer
        sees).  ``progress(done, runs)`` is called before the first training run and after each
        (default: the reporter of an enclosing :func:`dpaudit.onerun.progress.reporting`, else none)."""
        check_game_size(self.m, self.runs)
        canaries = list(canaries)
        total = self.m * self.runs
        require(len(canaries) in (self.m, total), "canaries", f"<{len(canaries)} canaries>",
                f"must hold m = {self.m} canaries (reused by every run) or runs·m = {total}")
        run_fn = _runner(mechanism)
        score_fn = _scorer(scorer)
        sealed = _sealed(secret, total)
        del secret  # from here on S lives in ``sealed`` only: no frame below this one sees it as a local
        scores = np.empty(total)
        report = progress if progress is not None else current_progress()
        if report is not None:
            report(0, self.runs)
        for run in range(self.runs):
            own = canaries if len(canaries) == self.m else canaries[run * self.m:(run + 1) * self.m]
            # the dataset is passed straight on: no local of this frame holds it while the scorer runs
            with beating(f"training run {run + 1}/{self.runs}"):  # one run may take many minutes
                output = user_call(run_fn, "mechanism", self._run_dataset(base, own, sealed, run),
                                   self.mechanism_rng(run))
            scores[run * self.m:(run + 1) * self.m] = _check_scores(user_call(score_fn, "scorer", output, own),
                                                                    self.m)
            del output
            if report is not None:
                report(run + 1, self.runs)
        return _drawn_here(GameRecord(scores=scores, secret=sealed.unsealed(), canaries_per_run=self.m,
                                      runs=self.runs, seed=int(self.seed), relation=self.relation,
                                      sha256=sealed.sha256, secret_source=sealed.source))


def play(mechanism: Any, scorer: Any, canaries: Sequence[Any], *, m: int | None = None, runs: int = 1,
         seed: int = 0, relation: str = Relation.ADD_REMOVE.value, base: Any = (), secret: Any = None) -> GameRecord:
    """Convenience: :meth:`CanaryGame.play` with m read from the canaries when not given."""
    canaries = list(canaries)
    m = len(canaries) // runs if m is None else m
    return CanaryGame(m=m, seed=seed, runs=runs, relation=relation).play(mechanism, scorer, canaries, base,
                                                                         secret=secret)


def _runner(mechanism: Any) -> Callable[[Any, np.random.Generator], Any]:
    if isinstance(mechanism, Runnable):
        return mechanism.run
    if hasattr(mechanism, "sample") and callable(mechanism.sample):
        return lambda data, rng: mechanism.sample(data, 1, rng)[0]
    if callable(mechanism):
        return mechanism
    raise InputError(f"mechanism = {mechanism!r} is invalid: must have run(dataset, rng), "
                     "sample(dataset, size, rng) or be callable as f(dataset, rng)")


def _scorer(scorer: Any) -> Callable[[Any, Sequence[Any]], Any]:
    if isinstance(scorer, Scorer):
        return scorer.score
    if callable(scorer):
        return scorer
    raise InputError(f"scorer = {scorer!r} is invalid: must have score(output, canaries) or be callable")


def _check_scores(values: Any, m: int) -> np.ndarray:
    # check_real_array: a float conversion would drop an imaginary part or parse text without a word
    arr = check_real_array("scores", values).reshape(-1)
    require(arr.size == m, "scores", f"<{arr.size} values>", f"must be one float per canary ({m})")
    require(bool(np.all(np.isfinite(arr))), "scores", f"<{int(np.sum(~np.isfinite(arr)))} non-finite>",
            "must all be finite (a scorer returned NaN or infinity)")
    return arr
