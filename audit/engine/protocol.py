"""What every audit result answers, multi-run and one-run alike.

:class:`~dpaudit.engine.results.AuditResult` (``audit_mechanism``, ``search_pair``) and
:class:`~dpaudit.onerun.result.OneRunResult` (``audit_one_run``, ``one_run_bound``) are different
records of different experiments, but code that only needs the verdict and the bounds takes either
through :class:`Result`: the ε lower bound at each reported δ (``bounds``, ``epsilon_at``), which
holds with probability ``confidence`` over the audit's randomness, the overall ``verdict`` of the
claims checked, a ``summary()`` in words (also ``str(result)``) and a JSON-ready ``to_dict()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = ["Result"]


@runtime_checkable
class Result(Protocol):
    """The protocol both result types follow (``isinstance(r, dpaudit.Result)`` holds for each).

    ``bounds``: δ → the ε lower bound at that δ, one entry per reported δ (the first is the headline);
    ``epsilon_at(delta)``: one of them (``KeyError`` for a δ not reported); ``confidence``: the level
    at which every bound holds; ``verdict``: ``"violation"`` if any claim is refuted, else ``"pass"``
    if any claim holds, else ``"not-applicable"``."""

    @property
    def bounds(self) -> Mapping[float, float]: ...

    @property
    def confidence(self) -> float: ...

    @property
    def verdict(self) -> str: ...

    def epsilon_at(self, delta: float) -> float: ...

    def summary(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...
