"""A design of ``run --suite onerun`` as its module registers it: the name, known without building
it, and the builder that makes it.

Each design module lists its own entries (``DESIGNS``, at its end, beside the builders and the
sizes they use); :mod:`.suite` only joins the modules' lists in the suite's order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dpaudit.onerun.design import CanaryDesign

__all__ = ["DesignEntry"]


@dataclass(frozen=True)
class DesignEntry:
    """One design of the suite: its name, known without building it, and the builder that makes it
    (building computes accountant curves, planned thresholds and base data: seconds of CPU), with
    the modules its claims need (it is left out when one is not installed)."""

    name: str
    build: Callable[[], CanaryDesign]
    needs: tuple[str, ...] = ()
