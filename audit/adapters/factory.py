"""A library object that cannot travel between processes, built once in each worker from a factory.

OpenDP's measurements hold ctypes pointers into a native library: no pickler can send one to a
worker process, so ``per_call(measurement, n_jobs=2)`` cannot run.  :func:`from_factory` carries
instead a *factory* — a module-level function or a ``functools.partial`` of one, which pickles by
reference — and each process calls it once, on its first draw, and keeps the object for the
adapter's later draws in that process (joblib's loky workers live across calls, so a run builds
the object once per worker, not once per chunk).

A draw of ``size`` outputs is split into blocks of :data:`PER_CALL_BLOCK`; each block is either
``size`` single releases (``release(obj, data)``, by default ``obj(data)``) or, with a ``batch``
hook, one call ``batch(obj, data, n)`` for a library that can draw many outputs at once.  Blocks
run in ``n_jobs`` worker processes; the outputs are the same law wherever a block runs, since
the library draws its own fresh noise (operating-system entropy for OpenDP) on each call.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from joblib import Parallel, delayed

from dpaudit.adapters.shipping import PER_CALL_BLOCK, blocks, check_n_jobs, shippable
from dpaudit.core import require

__all__ = ["LibraryMechanism", "from_factory", "library_object"]

CACHE_SIZE = 16  # library objects kept per process (the most recently used adapters')

_BUILT: OrderedDict[str, Any] = OrderedDict()  # adapter token -> its library object, in this process
_LOCK = threading.Lock()


def library_object(mechanism: LibraryMechanism) -> Any:
    """The library object of ``mechanism`` in this process: built by its factory on first use."""
    with _LOCK:  # a threaded backend must not build it twice
        obj = _BUILT.get(mechanism.token)
        if obj is None:
            obj = mechanism.factory()
            _BUILT[mechanism.token] = obj
            while len(_BUILT) > CACHE_SIZE:
                _BUILT.popitem(last=False)
        _BUILT.move_to_end(mechanism.token)
        return obj


def _call(obj: Any, data: Any) -> Any:
    return obj(data)


def _block(mechanism: LibraryMechanism, data: Any, n: int) -> np.ndarray:
    obj = library_object(mechanism)
    if mechanism.batch is None:
        release = mechanism.release or _call
        return np.asarray([release(obj, data) for _ in range(n)])
    out = np.asarray(mechanism.batch(obj, data, n))
    if out.ndim == 0 or len(out) != n:
        raise ValueError(f"the batch hook returned {'a scalar' if out.ndim == 0 else f'{len(out)} outputs'} "
                         f"for a batch of {n}; it must return one output per draw")
    return out


@dataclass(frozen=True, eq=False)
class LibraryMechanism:
    """A mechanism whose library object is built in each process by ``factory`` (see :func:`from_factory`).

    The adapter itself holds only picklable things (the factory, the hooks, a token naming its
    object in each process' cache), so the engine and the adapter may both send it to workers.
    """

    factory: Callable[[], Any]
    name: str
    release: Callable[[Any, Any], Any] | None = None
    batch: Callable[[Any, Any, int], Any] | None = None
    n_jobs: int = 1
    block: int = PER_CALL_BLOCK
    token: str = field(default_factory=lambda: uuid.uuid4().hex, repr=False)
    seeded: bool = field(default=False, init=False)

    def library(self) -> Any:
        """This process' library object (built on first use)."""
        return library_object(self)

    def sample(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` outputs on ``data``; ``rng`` is not used (the library draws its own noise)."""
        parts = blocks(size, self.block)
        if self.n_jobs == 1 or len(parts) < 2:
            out = [_block(self, data, n) for n in parts]
        else:
            out = Parallel(n_jobs=self.n_jobs)(delayed(_block)(self, data, n) for n in parts)
        return np.concatenate(out) if out else np.asarray([])


def _label(factory: Any) -> str:
    inner = getattr(factory, "func", factory)  # a functools.partial names its function
    return getattr(inner, "__name__", type(inner).__name__)


def from_factory(factory: Callable[[], Any], *, name: str | None = None,
                 release: Callable[[Any, Any], Any] | None = None,
                 batch: Callable[[Any, Any, int], Any] | None = None, n_jobs: int = 1,
                 block: int = PER_CALL_BLOCK) -> LibraryMechanism:
    """An auditable mechanism from a library object that each process builds with ``factory()``.

    ``factory`` takes no argument and returns the library object (an OpenDP measurement, a
    diffprivlib mechanism, ...); it must be picklable — a module-level function or a
    ``functools.partial`` of one with picklable arguments — the object it returns need not be.
    One output is ``release(obj, data)`` (default ``obj(data)``, an OpenDP measurement's call);
    ``batch(obj, data, n)``, when given, returns ``n`` outputs in one call and replaces the
    per-output loop.  ``sample(data, size, rng)`` draws in blocks of ``block`` outputs, spread over
    ``n_jobs`` worker processes (−1: every core) when there are two blocks or more.

    The library draws its own noise, so the mechanism cannot be seeded (``seeded = False``: the
    audit's results say "not reproducible: unseeded mechanism"), and each call must draw fresh
    randomness — a library object holding a seeded generator would repeat its stream in every
    worker.  Give ``n_jobs`` here or to the audit (``audit_mechanism(..., n_jobs=)``), not both:
    each worker of the audit would start a pool of its own.
    """
    require(callable(factory), "factory", factory, "must be a callable taking no argument that returns the "
            "library object (a module-level function or a functools.partial)")
    for field_name, hook in (("factory", factory), ("release", release), ("batch", batch)):
        if hook is None:
            continue
        require(callable(hook), field_name, hook, "must be callable")
        why = shippable(hook)
        require(not why, field_name, hook, f"must be picklable to reach worker processes ({why}); use a "
                "module-level function or a functools.partial of one")
    label = name if name is not None else _label(factory)
    require(isinstance(label, str) and bool(label), "name", name, "must be a non-empty string")
    check_n_jobs(n_jobs)
    require(isinstance(block, int) and not isinstance(block, bool) and block >= 1, "block", block,
            "must be an integer >= 1")
    return LibraryMechanism(factory, label, release, batch, n_jobs, block)
