"""The canary game of one-run auditing (Steinke, Nasr, Jagielski, NeurIPS 2023, Algorithm 1).

m canaries; a secret ``S ~ Bernoulli(½)^m`` drawn from the game's own random stream; the
training dataset is the base data plus the canaries with ``S_i = 1``, built with the relation
the claim is stated for:

* ``add-remove``: each canary is one record, appended when included;
* ``user-level``: each canary is one user (a sequence of records), added as a whole user.

The mechanism runs once; the scorer sees the output and the canaries (never S) and gives one
float per canary, higher meaning "in".  R independent runs with m canaries each are one game of
R·m canaries: each canary changes one run's dataset only, so the composed mechanism is as
private towards each canary as one run is, and the bounds apply with R·m in place of m.

Streams: ``SeedSequence(seed, spawn_key=(0,))`` draws S, ``spawn_key=(1, run)`` is the
mechanism's generator of run ``run``; the record keeps the seed and a SHA-256 of S, so a
result can be re-checked (:func:`secret_sha256`) and a killed run resumed with the same S.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpaudit.core import InputError, Relation, require

__all__ = ["CanaryGame", "GameRecord", "Runnable", "Scorer", "play", "secret_sha256"]

RELATIONS = (Relation.ADD_REMOVE.value, Relation.USER_LEVEL.value)


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


@dataclass(frozen=True)
class GameRecord:
    """What one game produced: the scores, the secret (kept out of the scorer's reach) and how to
    reproduce them."""

    scores: np.ndarray        # (R·m,) floats, run-major
    secret: np.ndarray        # (R·m,) 0/1
    canaries_per_run: int
    runs: int
    seed: int
    relation: str

    @property
    def m(self) -> int:
        return int(self.secret.size)

    @property
    def secret_sha256(self) -> str:
        return secret_sha256(self.secret)

    def verify(self) -> None:
        """Re-derive S from the seed and check it is the recorded one (a re-check, or a resume
        after a killed run): raises :class:`InputError` when the record was altered."""
        again = CanaryGame(m=self.canaries_per_run, seed=self.seed, runs=self.runs, relation=self.relation).secret()
        require(secret_sha256(again) == self.secret_sha256, "secret", self.secret_sha256,
                f"does not match the stream of seed {self.seed}: the record was altered or is from another game")

    def to_dict(self) -> dict[str, object]:
        return {"m": self.m, "canaries_per_run": self.canaries_per_run, "runs": self.runs, "seed": self.seed,
                "relation": self.relation, "secret_sha256": self.secret_sha256,
                "streams": {"secret": [self.seed, 0], "mechanism": [self.seed, 1, "run"]}}


@dataclass(frozen=True)
class CanaryGame:
    """m canaries per run, ``runs`` runs, one seed."""

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

    def secret(self) -> np.ndarray:
        """S ~ Bernoulli(½)^(R·m), from the game's own stream (run-major)."""
        rng = np.random.default_rng(np.random.SeedSequence(int(self.seed), spawn_key=(0,)))
        return rng.integers(0, 2, size=self.m * self.runs, dtype=np.int8)

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

    def play(self, mechanism: Any, scorer: Any, canaries: Sequence[Any], base: Any = ()) -> GameRecord:
        """Run the game: one training run per ``runs``; returns the scores and the secret."""
        canaries = list(canaries)
        total = self.m * self.runs
        require(len(canaries) in (self.m, total), "canaries", f"<{len(canaries)} canaries>",
                f"must hold m = {self.m} canaries (reused by every run) or runs·m = {total}")
        run_fn = _runner(mechanism)
        score_fn = _scorer(scorer)
        secret = self.secret()
        scores = np.empty(total)
        for run in range(self.runs):
            own = canaries if len(canaries) == self.m else canaries[run * self.m:(run + 1) * self.m]
            inc = secret[run * self.m:(run + 1) * self.m]
            output = run_fn(self.dataset(base, own, inc), self.mechanism_rng(run))
            scores[run * self.m:(run + 1) * self.m] = _check_scores(score_fn(output, own), self.m)
        return GameRecord(scores=scores, secret=secret, canaries_per_run=self.m, runs=self.runs, seed=int(self.seed),
                          relation=self.relation)


def play(mechanism: Any, scorer: Any, canaries: Sequence[Any], *, m: int | None = None, runs: int = 1,
         seed: int = 0, relation: str = Relation.ADD_REMOVE.value, base: Any = ()) -> GameRecord:
    """Convenience: :meth:`CanaryGame.play` with m read from the canaries when not given."""
    canaries = list(canaries)
    m = len(canaries) // runs if m is None else m
    return CanaryGame(m=m, seed=seed, runs=runs, relation=relation).play(mechanism, scorer, canaries, base)


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
    try:
        arr = np.asarray(values, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InputError(f"scores = {values!r:.80} is invalid: must be {m} real numbers ({exc})") from exc
    require(arr.size == m, "scores", f"<{arr.size} values>", f"must be one float per canary ({m})")
    require(bool(np.all(np.isfinite(arr))), "scores", f"<{int(np.sum(~np.isfinite(arr)))} non-finite>",
            "must all be finite (a scorer returned NaN or infinity)")
    return arr
