"""A design of ``run --suite onerun`` as its module registers it: what ``list`` says of it, known
without building it, and the builder that makes it.

Each design module lists its own entries (``DESIGNS``, at its end, beside the builders and the
sizes they use); :mod:`.suite` only joins the modules' lists in the suite's order.  Building a
design calibrates noise, composes accountants and plans thresholds (seconds of CPU; the Opacus
design imports torch), so what ``list --json`` prints of it is written down here, beside its
builder: :meth:`DesignSummary.of` reads the same fields off a built design, and a test holds the two
equal for every design (``tests/test_listing_static.py``), so a builder that changes what it makes
fails CI until its summary says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dpaudit.onerun.design import CanaryDesign

__all__ = ["DesignEntry", "DesignSummary"]


@dataclass(frozen=True)
class DesignSummary:
    """What ``list --json`` gives of a one-run design: its name, the catalog family whose claims it
    checks (None: no family files it), its description, m canaries, the canaries' relation, the
    neighbours when they are not "each canary in or out" (``zero-out``), and the verdict it expects
    of each claim (a tuple of pairs, so that the summary is hashable like the entry holding it)."""

    name: str
    family: str | None
    description: str
    m: int
    expected: tuple[tuple[str, str], ...]
    relation: str = "add-remove"
    neighbours: str | None = None

    @classmethod
    def of(cls, design: CanaryDesign) -> DesignSummary:
        """The summary of a built design (a family's fixtures, a plugin's designs; the test's reference)."""
        return cls(name=design.name, family=design.family, description=design.description, m=design.m,
                   expected=tuple(design.expected.items()), relation=str(design.relation),
                   neighbours=design.neighbours)


@dataclass(frozen=True)
class DesignEntry:
    """One design of the suite: what ``list`` says of it (:class:`DesignSummary`, known without
    building it), the builder that makes it (building computes accountant curves, planned thresholds
    and base data: seconds of CPU), and the modules its claims need (it is left out when one is not
    installed)."""

    summary: DesignSummary
    build: Callable[[], CanaryDesign]
    needs: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.summary.name
