"""dpaudit: empirical differential-privacy auditing.

Public entry points::

    audit_samples(x, y, *, deltas=(0.0,), confidence=0.95, discrete=None) -> Estimate
    audit_mechanism(mechanism, d, d_prime, *, samples=1_000_000, deltas=(0.0,), confidence=0.95,
                    seed=0, n_jobs=1, relation="add-remove", claims=None) -> AuditResult
    assert_private(mechanism, d, d_prime, *, epsilon, delta=0.0, ...)   # for test suites
    search_pair(mechanism, QueryVectors(dim) | RecordSpace(base, records), *, samples, ...) -> AuditResult
    dpaudit.engine.stattests.register(StatTest(name=..., bound=..., ...))   # a statistical test of one's own

Two default confidences, on purpose: an audit reports a measurement, at 0.95 (``audit_samples``,
``audit_mechanism``, ``search_pair``, the command line and configs); ``assert_private`` fails a
build, and a suite runs many, so it defaults to 0.99 (20 correct mechanisms raise a false alarm
with probability up to 1 − 0.95^20 ≈ 64 % at 0.95, up to 1 − 0.99^20 ≈ 18 % at 0.99).

Names are imported on first use (PEP 562), so ``import dpaudit`` — and the pytest plugin that
pytest loads in every run — costs nothing until an audit is asked for.

This folder is also the top-level ``audit`` package that keeps ``python -m audit`` working: the
wheel installs it as this file and ``__main__.py`` only, and wherever the whole folder is reachable
under that name (the checkout's root on ``sys.path``, an editable install) ``audit.core`` and its
siblings are refused, so no module is ever loaded twice under two names.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import signal
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"


def _starting_interrupted(signum: int, frame: object) -> None:
    """SIGINT while the command line is still importing itself (before :mod:`dpaudit.cli.supervise`
    takes SIGINT over): the command stops as an interrupted one, 130, with one word, no traceback."""
    os.write(2, b"interrupted\n")
    os._exit(130)


def _is_the_command() -> bool:
    """Whether this process is the ``dpaudit`` console script or ``python -m dpaudit``/``audit``
    (never a program that imports dpaudit: its Ctrl-C is its own)."""
    orig = list(getattr(sys, "orig_argv", []))
    module = any(orig[i:i + 2] in (["-m", "dpaudit"], ["-m", "audit"]) for i in range(1, min(len(orig), 4)))
    return module or "-mdpaudit" in orig[1:3] or os.path.basename(sys.argv[0] if sys.argv else "") == "dpaudit"


if _is_the_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _starting_interrupted)  # dpaudit.cli.supervise.run puts the default back

# name -> module that owns it
_EXPORTS = {
    "audit_mechanism": "dpaudit.engine.api",
    "audit_samples": "dpaudit.engine.estimate",
    "Estimate": "dpaudit.engine.estimate",
    "Bound": "dpaudit.engine.estimate",
    "AuditResult": "dpaudit.engine.results",
    "ClaimCheck": "dpaudit.engine.results",
    "Result": "dpaudit.engine.protocol",
    "Event": "dpaudit.engine.views",
    "assert_private": "dpaudit.testing",
    "search_pair": "dpaudit.engine.search",
    "QueryVectors": "dpaudit.engine.search",
    "RecordSpace": "dpaudit.engine.search",
    "Dataset": "dpaudit.neighbors",
    "Pair": "dpaudit.neighbors",
    "Mechanism": "dpaudit.mechanisms.base",
    "Guarantee": "dpaudit.core",
    "InputError": "dpaudit.core",
    "StatTest": "dpaudit.engine.stattests",
}

__all__ = sorted([*_EXPORTS, "__version__"])

if TYPE_CHECKING:  # the same names for type checkers; "x as x" marks them as re-exports
    from dpaudit.core import Guarantee as Guarantee
    from dpaudit.core import InputError as InputError
    from dpaudit.engine.api import audit_mechanism as audit_mechanism
    from dpaudit.engine.estimate import Bound as Bound
    from dpaudit.engine.estimate import Estimate as Estimate
    from dpaudit.engine.estimate import audit_samples as audit_samples
    from dpaudit.engine.protocol import Result as Result
    from dpaudit.engine.results import AuditResult as AuditResult
    from dpaudit.engine.results import ClaimCheck as ClaimCheck
    from dpaudit.engine.search import QueryVectors as QueryVectors
    from dpaudit.engine.search import RecordSpace as RecordSpace
    from dpaudit.engine.search import search_pair as search_pair
    from dpaudit.engine.views import Event as Event
    from dpaudit.mechanisms.base import Mechanism as Mechanism
    from dpaudit.neighbors import Dataset as Dataset
    from dpaudit.neighbors import Pair as Pair
    from dpaudit.testing import assert_private as assert_private


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


class _CommandOnly(importlib.abc.MetaPathFinder):
    """Refuses every submodule of ``audit`` but ``audit.__main__``.

    Under the name ``audit`` this folder is only the command (``python -m audit``).  Where the
    whole folder is reachable under that name, ``import audit.core`` would otherwise execute
    audit/core/ a second time as a module of its own, whose ``InputError`` is not
    ``dpaudit.core.InputError`` (an ``except`` for one misses the other).

    Why a finder and not something plainer (issue 42): a submodule is looked up through its
    package's ``__path__``, and ``python -m audit`` finds ``audit.__main__`` through that same
    ``__path__`` (runpy), so emptying or narrowing ``__path__`` when imported as ``audit`` breaks the
    command unless ``__main__.py`` moves to a folder of its own (which the wheel's two-file ``audit``
    and ``python -m dpaudit`` would then both need).  A separate two-file folder mapped to ``audit``
    in pyproject would fix the editable install but not the checkout's root, where ``sys.path[0]``
    reaches this folder as ``audit`` whatever pyproject says.  Replacing ``sys.modules["audit"]``
    by ``dpaudit`` still resolves ``audit.core`` through this folder, as a second module."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith("audit.") and fullname != "audit.__main__":
            raise ModuleNotFoundError(f"No module named {fullname!r}: `audit` is only the name of dpaudit's command "
                                      f"(python -m audit); import dpaudit{fullname.removeprefix('audit')}",
                                      name=fullname)
        return None


# Ahead of the path finders (and of an editable install's finder, which maps `audit` to this folder).
if __name__ == "audit" and not any(type(f).__name__ == "_CommandOnly" for f in sys.meta_path):
    sys.meta_path.insert(0, _CommandOnly())
