"""What can travel to a worker process: the pickler joblib's loky workers (and Dask) use."""

from __future__ import annotations

from typing import Any

try:  # joblib's loky backend and Dask ship tasks with cloudpickle; joblib < 1.5 vendors its own copy
    import cloudpickle
except ImportError:  # pragma: no cover - depends on the joblib release
    from joblib.externals import cloudpickle  # type: ignore[no-redef, unused-ignore]

from dpaudit.core import require

__all__ = ["PER_CALL_BLOCK", "blocks", "check_n_jobs", "shippable"]

PER_CALL_BLOCK = 10_000  # outputs per task when an adapter fans a draw out to worker processes


def shippable(obj: Any) -> str:
    """Empty when ``obj`` can be sent to a worker process; otherwise why not (the pickler's error).

    cloudpickle sends lambdas and closures by value, but not what holds a ctypes pointer, a lock or
    an open file: OpenDP's measurements are such objects."""
    try:
        cloudpickle.dumps(obj)
    except Exception as exc:  # the pickler raises TypeError, ValueError, PicklingError, ... by object
        return f"{type(exc).__name__}: {exc}"
    return ""


def check_n_jobs(n_jobs: Any) -> int:
    """``n_jobs`` validated: an integer >= 1, or -1 for every core."""
    require(isinstance(n_jobs, int) and not isinstance(n_jobs, bool) and (n_jobs >= 1 or n_jobs == -1),
            "n_jobs", n_jobs, "must be an integer >= 1, or -1 for every core")
    return n_jobs


def blocks(size: int, block: int = PER_CALL_BLOCK) -> list[int]:
    """``size`` split into tasks of ``block`` outputs (the last one shorter)."""
    full, rest = divmod(size, block)
    return [block] * full + ([rest] if rest else [])
