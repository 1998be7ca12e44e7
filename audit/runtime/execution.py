"""Where chunks run (local processes or a Dask cluster), checkpoints, and progress.

* :class:`Execution` carries the worker count, the backend (``local``: joblib's loky
  processes; ``dask``: joblib's Dask backend on a ``dask.distributed`` client), an optional
  :class:`Checkpoint` and the progress mode.  Chunk seeds never depend on it, so every
  backend gives the same numbers for one seed.
* :class:`Checkpoint` appends one JSON line per finished chunk (its counts, its sample count,
  the run's fingerprint and a checksum) to a file in the output folder, with one ``write`` and
  an ``fsync``; a line torn by a kill, edited, duplicated or moved is rejected on reading, so
  ``--resume`` recounts only the chunks it cannot trust and never counts one twice.
* Resources: workers capped at chunks and CPUs, the memory a process may still use, and a
  Dask scheduler checked to speak Dask before the client waits on it.
* Progress (:mod:`dpaudit.runtime.progress`): a tqdm bar on a terminal; in a
  non-interactive log, a plain line every few seconds (from a timer, so slow chunks do not
  silence it) with samples done, rate, the projected end and the current ε_lower.
"""

from __future__ import annotations

import importlib
import itertools
import logging
import os
import socket
import time
import types
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from threadpoolctl import ThreadpoolController

from dpaudit.core import InputError, require
from dpaudit.runtime.checkpoint import Checkpoint

BACKENDS = ("local", "dask")


class EnvironmentFailure(RuntimeError):
    """The machine or the cluster failed under the run (a lost scheduler, a dead worker): exit 3, never a finding."""


_THREADPOOLS: ThreadpoolController | None = None


def single_threaded_blas() -> Any:
    """A context in which BLAS uses one thread: the engine's own products are tall and thin
    (rows × a few dozen features), where extra BLAS threads gain little and, on a machine whose
    cores are busy (the pool's workers, other jobs), spin against them and cost several times
    the work.  Parallelism comes from the worker processes instead.  The mechanism's sampling
    is left as it is."""
    global _THREADPOOLS
    if _THREADPOOLS is None:  # found once per process: the BLAS libraries numpy and scipy loaded
        _THREADPOOLS = ThreadpoolController()
    return _THREADPOOLS.limit(limits=1, user_api="blas")


def cpu_count() -> int:
    """CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def available_memory() -> int | None:
    """Bytes this process can still allocate without swapping: ``MemAvailable``, and the cgroup
    limit when there is one (a container's limit is what the OOM killer enforces); None if unknown."""
    found = []
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = Path("/sys/fs/cgroup/memory.current").read_text().strip()
        if limit != "max":
            found.append(max(0, int(limit) - int(used)))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


@dataclass
class Execution:
    """How chunks are run: workers, backend, checkpoint, progress.

    Local workers are capped at the number of tasks and of CPUs: more processes than chunks or
    cores only cost start-up and memory.  ``client`` (the Dask client, when there is one) lets a
    failure be told apart from a lost scheduler.
    """

    n_jobs: int = 1
    backend: str = "local"
    checkpoint: Checkpoint | None = None
    progress: str = "off"  # off | bar | log
    log_every: float = 5.0
    client: Any = field(default=None, repr=False)
    label: str = ""  # the progress bar's: the scenario's name (default: the mechanism's)
    position: tuple[int, int] | None = None  # (scenario index, scenarios in the run): the overall progress line

    def __post_init__(self) -> None:
        require(self.backend in BACKENDS, "backend", self.backend, f"must be one of {', '.join(BACKENDS)}")
        require(self.progress in ("off", "bar", "log"), "progress", self.progress, "must be off, bar or log")

    def workers(self, tasks: int) -> int:
        """Local worker processes for ``tasks`` chunks: at most one per chunk and per CPU."""
        wanted = cpu_count() if self.n_jobs < 1 else self.n_jobs
        return max(1, min(wanted, tasks, cpu_count()))

    def map(self, fn: Callable, arglists: Iterable[tuple], count: int | None = None) -> Generator[Any, None, None]:
        """Results of ``fn(*args)`` for each args, in order, computed where this execution says.

        ``arglists`` may be a generator (then ``count`` says how many it yields): it is read as
        chunks are handed out, never listed, so a budget of millions of chunks holds only the
        chunks in flight.

        Locally, a worker pool starts only when it pays: with more than one chunk per worker to
        run, the first chunk runs in this process and is timed, and the rest go to the pool only
        if running them here would take longer than what the pool saves costs to start
        (:data:`POOL_STARTUP_SECONDS`, once per process; loky keeps its workers).  Small budgets
        therefore run in process.  Where a chunk runs never changes its numbers (its seed is its
        own)."""
        if count is None:
            arglists = list(arglists)
            count = len(arglists)
        if self.backend == "dask":
            client = self.client
            try:
                if client is None:  # a client the caller made current (distributed.Client(...) in a with)
                    from distributed import get_client  # optional dependency: the [dask] extra
                    client = get_client()
                yield from _dask_map(client, fn, iter(arglists), count)
            except Exception as exc:
                status = getattr(client, "status", "running")
                if client is not None and status != "running":
                    # distributed's own error here is an internal of its reconnect (e.g. a TypeError
                    # about a FutureCancelledError): it stays in the log, the line says what happened.
                    raise EnvironmentFailure(f"lost the Dask scheduler (client {status}): the chunks counted so far "
                                             "are in the checkpoint of --out DIR; continue with --resume DIR once "
                                             "the cluster is back") from exc
                raise
            return
        workers = self.workers(count)
        rest = iter(arglists)
        if workers == 1 or count <= workers:  # at most one chunk per worker: no pool
            yield from (fn(*a) for a in rest)
            return
        first = next(rest, None)
        if first is None:
            return
        start = time.perf_counter()
        yield fn(*first)
        per_chunk = time.perf_counter() - start
        in_process = per_chunk * (count - 1)
        saved = in_process * (1 - 1 / min(workers, count - 1))
        if saved <= (POOL_DISPATCH_SECONDS if _pool_started else POOL_STARTUP_SECONDS):
            yield from (fn(*a) for a in rest)
            return
        _mark_pool_started()
        # joblib reads a generator of tasks as it dispatches them (pre_dispatch: 2 per worker).
        yield from Parallel(n_jobs=workers, return_as="generator")(delayed(fn)(*a) for a in rest)


# Dask: how much work one task holds.  A counting chunk of the largest scenarios is ~60 ms of work,
# while a task costs the scheduler and the round trip several ms, and its arguments (mechanism,
# datasets, events) were pickled into every task: one chunk per task scaled to 1.24x on two
# workers.  So a task runs a batch of consecutive chunks sized to about TASK_SECONDS of measured
# work, never more than a fair share of what is left (the last batches stay small, so workers
# finish together), and DASK_IN_FLIGHT tasks per worker thread are queued so a worker does not idle
# while the scheduler hands it the next.  Each chunk keeps its own seed (it is an argument), so the
# numbers never depend on the batching.
TASK_SECONDS = 1.0
DASK_IN_FLIGHT = 2


@dataclass(frozen=True)
class _Shared:
    """Stands in a task's arguments for the ``index``-th object of the ``bundle``-th bundle sent
    to every worker once."""

    bundle: int
    index: int


@dataclass(frozen=True)
class _Bundle:
    """Shared objects, scattered as ONE pickle: Dask serialises a bare list element by element,
    which would turn objects shared by reference (one statistic used by many events, evaluated
    once per chunk by identity) into copies, each evaluated again."""

    objects: tuple[Any, ...]


def _plain(value: Any) -> bool:
    """Small values pickled into each task as they are: scalars, tuples of them, module functions."""
    if value is None or isinstance(value, bool | int | float | str | bytes | np.generic | types.FunctionType):
        return True
    return isinstance(value, tuple) and all(_plain(v) for v in value)


class _Sharer:
    """Every non-plain argument (mechanism, datasets, events, ...) scattered once to all workers,
    the arguments of a task rewritten with :class:`_Shared` in its place.  Arguments are read as
    tasks are submitted: the objects met in one task's arguments are scattered together, in one
    :class:`_Bundle` (a run's chunks meet two or three such bundles: the mechanism with D, then D′)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.where: dict[int, _Shared] = {}
        self.objects: list[Any] = []   # held, so no id is reused while the map runs
        self.bundles: list[Any] = []   # the futures of the scattered bundles

    def row(self, args: tuple) -> tuple:
        new: list[Any] = []
        for value in args:
            if not _plain(value) and id(value) not in self.where and all(v is not value for v in new):
                new.append(value)
        if new:
            [future] = self.client.scatter([_Bundle(tuple(new))], broadcast=True, hash=False)
            for i, value in enumerate(new):
                self.where[id(value)] = _Shared(len(self.bundles), i)
                self.objects.append(value)
            self.bundles.append(future)
        return tuple(value if _plain(value) else self.where[id(value)] for value in args)


def _run_batch(fn: Callable, bundles: list[_Bundle], batch: list[tuple]) -> tuple[list[Any], float]:
    """On a worker: ``fn`` on each chunk's arguments (shared objects put back), and the seconds it took."""
    start = time.perf_counter()
    out = [fn(*(bundles[v.bundle].objects[v.index] if isinstance(v, _Shared) else v for v in args))
           for args in batch]
    return out, time.perf_counter() - start


def _dask_map(client: Any, fn: Callable, arglists: Iterator[tuple], count: int) -> Iterator[Any]:
    """``fn(*args)`` for each of the ``count`` args on the Dask cluster of ``client``, yielded in
    order, chunks batched into tasks of about :data:`TASK_SECONDS` (the first tasks hold one chunk
    each, to time them).  The args are read as tasks are submitted, and only the tasks in flight
    (:data:`DASK_IN_FLIGHT` per worker thread) and the results waiting for an earlier one are held."""
    if count <= 0:
        return
    from distributed import as_completed  # optional dependency: the [dask] extra
    sharer = _Sharer(client)
    slots = max(1, sum(client.nthreads().values()))
    starts: dict[Any, tuple[int, int, Any]] = {}  # task key -> (first chunk, chunks, future): running
    timed = [0.0, 0]  # worker seconds, chunks: the measured cost of a chunk
    position = 0

    def submit() -> Any:
        nonlocal position, count
        size = 1
        if timed[1]:
            fair = -(-(count - position) // (slots * DASK_IN_FLIGHT))
            size = max(1, min(fair, int(TASK_SECONDS * timed[1] / max(timed[0], 1e-9))))
        batch = [sharer.row(args) for args in itertools.islice(arglists, size)]
        if not batch:  # fewer args than announced: the map ends with them
            count = position
            return None
        future = client.submit(_run_batch, fn, sharer.bundles[:], batch, pure=False)
        starts[future.key] = (position, len(batch), future)
        position += len(batch)
        return future

    initial = [submit() for _ in range(min(count, slots * DASK_IN_FLIGHT))]
    queue = as_completed([f for f in initial if f is not None], with_results=True)
    done: dict[int, Any] = {}
    following = 0
    try:
        for future, (values, seconds) in queue:
            first, size, _ = starts.pop(future.key)
            timed[0] += seconds
            timed[1] += size
            done.update(zip(range(first, first + size), values, strict=True))
            if position < count and (future := submit()) is not None:
                queue.add(future)
            while following in done:
                yield done.pop(following)
                following += 1
    finally:
        if starts:  # stopped early (an error, or the caller stopped reading): free the workers
            client.cancel([f for _, _, f in starts.values()])


# What a local pool costs, for Execution.map's choice: starting loky workers that import numpy,
# scipy and dpaudit (about a second on a laptop), and handing chunks to workers already running.
POOL_STARTUP_SECONDS = 1.5
POOL_DISPATCH_SECONDS = 0.1
_pool_started = False


def _mark_pool_started() -> None:
    global _pool_started
    _pool_started = True


DASK_SCHEMES = ("tcp", "tls", "inproc", "ucx", "ws", "wss")
HANDSHAKE_SECONDS = 5.0


def check_scheduler_address(address: Any) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a Dask scheduler address such as ``tcp://host:8786``, or an
    :class:`InputError` naming it."""
    text = address if isinstance(address, str) else ""
    scheme, sep, rest = text.partition("://")
    if not sep or scheme not in DASK_SCHEMES or not rest:
        raise InputError(f"scheduler = {address!r} is invalid: use an address such as tcp://host:8786")
    if scheme == "inproc":
        return scheme, rest, None
    host, colon, port = rest.rpartition(":")
    host = host.strip("[]")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"scheduler = {address!r} is invalid: give host and port, such as tcp://host:8786")
    return scheme, host, int(port)


def _dask_handshake_problem(host: str, port: int, seconds: float = HANDSHAKE_SECONDS) -> str | None:
    """None when the peer at host:port greets like a Dask scheduler, else what is wrong.

    A Dask TCP server sends its handshake as soon as it accepts (an 8-byte length, frame
    headers, then a msgpack map with ``compression`` and ``pickle-protocol``); a web server or
    anything else stays silent or says something else.  Without this check the client waits for
    a handshake that never comes, forever."""
    deadline = time.monotonic() + seconds
    try:
        sock = socket.create_connection((host, port), timeout=seconds)
    except OSError as exc:
        return f"cannot connect ({exc.strerror or type(exc).__name__})"
    data = b""
    with sock:
        try:
            while time.monotonic() < deadline and len(data) < 4096:
                sock.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
                if len(data) >= 8 and len(data) >= 8 + int.from_bytes(data[:8], "little"):
                    break
        except OSError:  # socket.timeout included: silence is the answer
            pass
    if len(data) < 8:
        return f"no Dask handshake within {seconds:g} s (is it a Dask scheduler's port?)"
    length = int.from_bytes(data[:8], "little")
    if not 16 <= length <= 1 << 20 or not (b"compression" in data or b"pickle-protocol" in data):
        return f"the peer does not speak the Dask protocol (it sent {data[:24]!r})"
    return None


# The local cluster's housekeeping, switched off.  Its workers share this machine's cores with
# each other and with the scheduler: with one worker the housekeeping runs on an idle core for
# free, with one worker per core every wake-up is taken from a worker's counting.  Each worker's
# statistical profiler takes the GIL every 10 ms to walk the task's stack (for a dashboard nobody
# looks at here); work stealing rebalances queues every 100 ms, which the map's own in-flight limit
# (two tasks per worker thread) makes moot; the GIL-contention monitor samples every 1 ms; the
# nannies (threads of this process) poll each worker's memory every 100 ms, the system monitors
# every 500 ms, the event loops' tick every 20 ms.
LOCAL_CLUSTER_CONFIG = {"distributed.worker.profile.enabled": False,
                        "distributed.scheduler.work-stealing": False,
                        "distributed.admin.system-monitor.gil.enabled": False,
                        "distributed.worker.memory.monitor-interval": "1s",
                        "distributed.admin.system-monitor.interval": "2s",
                        "distributed.admin.tick.interval": "200ms"}


def connect_dask(scheduler: str | None, n_workers: int, modules: tuple[str, ...] = ()) -> Any:
    """A ``dask.distributed`` client (a local cluster when ``scheduler`` is None), after checking
    that the peer is a Dask scheduler and that every worker can import dpaudit and the audited
    mechanisms' modules — a missing import, or a port that is not Dask's, otherwise hangs silently."""
    try:
        from dask import config as dask_config  # optional dependency: the [dask] extra
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError("backend = 'dask' needs dask.distributed: pip install 'dpaudit[dask]'") from None
    # distributed logs every failed reconnect with a traceback; a lost cluster is reported once, by us.
    _silence_dask_logs()
    if scheduler is not None:
        scheme, host, port = check_scheduler_address(scheduler)
        if scheme == "tcp" and port is not None:
            problem = _dask_handshake_problem(host, port)
            if problem:
                raise InputError(f"scheduler = {scheduler!r}: {problem}")
    try:
        if scheduler is None:
            # distributed's nannies start workers with MALLOC_TRIM_THRESHOLD_=65536, which also pins
            # glibc's mmap threshold: every chunk-sized array is then mapped, zero-filled and unmapped
            # again (a third of a counting worker's time went to page faults: 1.1e7 vs 1.6e7 samples/s
            # on align-alg2-zero-out).  A chunk allocates and frees the same sizes each time, which
            # glibc's adaptive default serves from the heap.  Only for the cluster made here.
            environ = {k: v for k, v in dask_config.get("distributed.nanny.pre-spawn-environ", {}).items()
                       if k != "MALLOC_TRIM_THRESHOLD_"}
            with dask_config.set({"distributed.nanny.pre-spawn-environ": environ, **LOCAL_CLUSTER_CONFIG}):
                # A Ctrl-C at a terminal reaches the whole process group: the workers made here leave
                # it to this process (which ends the run with a partial result) instead of each
                # printing its own KeyboardInterrupt traceback (dpaudit.runtime.interrupts.dask_setup).
                cluster = LocalCluster(n_workers=max(1, n_workers), threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=":0", silence_logs=logging.ERROR,
                                       preload=["dpaudit.runtime.interrupts"])
            client = Client(cluster, timeout=30)
        else:
            client = Client(scheduler, timeout=10)
    except Exception as exc:  # distributed raises OSError, TimeoutError, ValueError, ... for a bad peer
        where = "a local cluster" if scheduler is None else f"scheduler = {scheduler!r}"
        raise InputError(f"{where}: cannot start or connect ({type(exc).__name__}: {exc})") from None
    _silence_dask_logs()  # again: the client's and the cluster's loggers exist now, each with its own level
    # dpaudit under its one import name and the audited mechanisms' modules: a worker started outside
    # a checkout has no generic top-level `mechanisms` or `neighbors`, and needs none.
    wanted = ("dpaudit", *dict.fromkeys(m for m in modules if m != "dpaudit"))
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


def _silence_dask_logs() -> None:
    """Mute distributed's (and its event loop's) loggers: distributed configures a level per logger
    (``distributed.client`` logs a lost scheduler's reconnect with a traceback at ERROR), so the
    parent's level alone does not reach them."""
    names = [n for n in list(logging.root.manager.loggerDict) if n.split(".")[0] in ("distributed", "tornado")]
    for name in ("distributed", "distributed.client", "tornado", *names):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _probe_imports(modules: tuple[str, ...]) -> str:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:
            return f"{name!r} ({type(exc).__name__}: {exc})"
    return ""
