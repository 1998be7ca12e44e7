"""Where chunks run (local processes or a Dask cluster), checkpoints, and progress.

* :class:`Execution` carries the worker count, the backend (``local``: joblib's loky
  processes; ``dask``: joblib's Dask backend on a ``dask.distributed`` client), an optional
  :class:`Checkpoint` and the progress mode.  Chunk seeds never depend on it, so every
  backend gives the same numbers for one seed.
* :class:`Checkpoint` appends one JSON line per finished chunk (its counts) to a file in the
  output folder, with one ``write`` and an ``fsync``; a line torn by a kill is ignored on
  reading, so ``--resume`` recounts only the chunks that were lost.
* Progress: a tqdm bar on a terminal; in a non-interactive log, a plain line every few
  seconds with samples done, rate and the current ε_lower.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from joblib import Parallel, cpu_count, delayed, parallel_config
from tqdm import tqdm

from dpcore import InputError, require

BACKENDS = ("local", "dask")


class Checkpoint:
    """Finished chunks' counts, appended line by line to ``path``."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.done: dict[tuple, list[int]] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                    self.done[(tuple(rec["key"]), rec["events"], rec["side"], rec["chunk"])] = rec["counts"]
                except (ValueError, KeyError, TypeError):
                    continue  # a line torn by a kill, or edited by hand: recount that chunk
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def get(self, key: tuple, events: str, side: int, chunk: int, n_events: int, size: int) -> np.ndarray | None:
        """The saved counts of a chunk, or None (also when they cannot be right: then it is recounted)."""
        found = self.done.get((tuple(key), events, side, chunk))
        if not isinstance(found, list) or len(found) != n_events:
            return None
        if not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= size for c in found):
            return None
        return np.asarray(found, dtype=np.int64)

    def add(self, key: tuple, events: str, side: int, chunk: int, counts: np.ndarray) -> None:
        line = json.dumps({"key": list(key), "events": events, "side": side, "chunk": chunk,
                           "counts": [int(c) for c in counts]}) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self.done[(tuple(key), events, side, chunk)] = [int(c) for c in counts]


def events_fingerprint(events: list, levels: Any, n_est: int) -> str:
    """Identifies the counted events, so a checkpoint is only reused for the same audit."""
    text = json.dumps([e.to_dict() for e in events], sort_keys=True, default=str) + repr(levels) + repr(n_est)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


@dataclass
class Execution:
    """How chunks are run: workers, backend, checkpoint, progress."""

    n_jobs: int = 1
    backend: str = "local"
    checkpoint: Checkpoint | None = None
    progress: str = "off"  # off | bar | log
    log_every: float = 5.0
    _client: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        require(self.backend in BACKENDS, "backend", self.backend, f"must be one of {', '.join(BACKENDS)}")
        require(self.progress in ("off", "bar", "log"), "progress", self.progress, "must be off, bar or log")

    @property
    def workers(self) -> int:
        """The most local worker processes this execution may use (``n_jobs``, -1: every core)."""
        return cpu_count() if self.n_jobs == -1 else max(1, self.n_jobs)

    def map(self, fn: Callable, arglists: list[tuple]) -> Iterator[Any]:
        """Results of ``fn(*args)`` for each args, in order, computed where this execution says.

        Locally, a worker pool starts only when it pays: with more than one chunk per worker to
        run, the first chunk runs in this process and is timed, and the rest go to the pool only
        if running them here would take longer than what the pool saves costs to start
        (:data:`POOL_STARTUP_SECONDS`, once per process; loky keeps its workers).  Small budgets
        therefore run in process.  Where a chunk runs never changes its numbers (its seed is its
        own)."""
        if self.backend == "dask":
            with parallel_config(backend="dask"):
                yield from Parallel(n_jobs=-1, return_as="generator")(delayed(fn)(*a) for a in arglists)
            return
        workers = self.workers
        if workers == 1 or len(arglists) <= workers:  # at most one chunk per worker: no pool
            yield from (fn(*a) for a in arglists)
            return
        start = time.perf_counter()
        yield fn(*arglists[0])
        per_chunk = time.perf_counter() - start
        rest = arglists[1:]
        in_process = per_chunk * len(rest)
        saved = in_process * (1 - 1 / min(workers, len(rest)))
        if saved <= (POOL_DISPATCH_SECONDS if _pool_started else POOL_STARTUP_SECONDS):
            yield from (fn(*a) for a in rest)
            return
        _mark_pool_started()
        yield from Parallel(n_jobs=self.n_jobs, return_as="generator")(delayed(fn)(*a) for a in rest)


# What a local pool costs, for Execution.map's choice: starting loky workers that import numpy,
# scipy and dpaudit (about a second on a laptop), and handing chunks to workers already running.
POOL_STARTUP_SECONDS = 1.5
POOL_DISPATCH_SECONDS = 0.1
_pool_started = False


def _mark_pool_started() -> None:
    global _pool_started
    _pool_started = True


def connect_dask(scheduler: str | None, n_workers: int, modules: tuple[str, ...] = ()) -> Any:
    """A ``dask.distributed`` client (a local cluster when ``scheduler`` is None), after checking
    that every worker can import dpaudit and the audited mechanisms' modules — a missing
    import otherwise hangs silently."""
    try:
        from distributed import Client, LocalCluster  # optional dependency: the [dask] extra
    except ImportError:
        raise InputError("backend = 'dask' needs dask.distributed: pip install 'dpaudit[dask]'") from None
    try:
        if scheduler is None:
            cluster = LocalCluster(n_workers=max(1, n_workers), threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=":0", silence_logs=logging.ERROR)
            client = Client(cluster, timeout=30)
        else:
            client = Client(scheduler, timeout=10)
    except (OSError, RuntimeError, TimeoutError) as exc:
        where = "a local cluster" if scheduler is None else f"scheduler = {scheduler!r}"
        raise InputError(f"{where}: cannot start or connect ({type(exc).__name__}: {exc})") from None
    wanted = ("audit", "mechanisms", "neighbors", *modules)
    try:
        answers = client.run(_probe_imports, wanted)
    except Exception as exc:  # any worker failure is reported the same way
        client.close()
        raise InputError(f"the Dask workers cannot run dpaudit: {type(exc).__name__}: {exc}") from None
    missing = {w: a for w, a in answers.items() if a}
    if missing:
        client.close()
        worker, problem = next(iter(missing.items()))
        raise InputError(f"Dask worker {worker} cannot import {problem}: install dpaudit and the mechanism's "
                         f"package on every worker")
    return client


def _probe_imports(modules: tuple[str, ...]) -> str:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:
            return f"{name!r} ({type(exc).__name__}: {exc})"
    return ""


class Progress:
    """A tqdm bar on a terminal; a plain line every ``every`` seconds in a log; nothing when off."""

    def __init__(self, mode: str, total: int, label: str, every: float = 5.0) -> None:
        self.mode, self.total, self.label, self.every = mode, total, label, every
        self.start = self.last = time.monotonic()
        self.bar = None
        if mode == "bar":
            self.bar = tqdm(total=total, desc=label, unit="sample", unit_scale=True, leave=False, file=sys.stderr)

    def update(self, samples: int, done: int, epsilon: Callable[[], float | None]) -> None:
        """``samples`` more drawn (``done`` in all); ``epsilon()`` is the current bound, or None
        while it means nothing yet (before the first estimation chunk on both sides, or before
        the first look of a sequential run), when it is not shown."""
        if self.bar is not None:
            self.bar.update(samples)
            value = epsilon()
            if value is not None:
                self.bar.set_postfix_str(f"eps_lower {value:.4g}", refresh=False)
        elif self.mode == "log":
            now = time.monotonic()
            if now - self.last >= self.every:
                self.last = now
                rate = done / max(now - self.start, 1e-9)
                value = epsilon()
                bound = "eps_lower pending" if value is None else f"current eps_lower {value:.4g}"
                print(f"[dpaudit] {self.label}: {done}/{self.total} samples, {rate:.3g}/s, {bound}",
                      file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
