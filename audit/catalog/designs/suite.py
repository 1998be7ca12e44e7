"""The one-run scenarios of the training mechanisms, for ``run --suite onerun`` (wired by the
CLI): every design at its audited size and every faulty twin, each with its expected verdicts.

The epoch-shuffled DP-SGD twin is not here: isolated canaries cannot refute it (see
:mod:`dpaudit.catalog.designs.dpsgd`); nor is Algorithm 2 as printed, whose flaw lies in the
tail a single run cannot reach (see :mod:`dpaudit.catalog.designs.covariance`).  Opacus's design
needs the ``opacus`` extra and is added only when its import succeeds.
"""

from __future__ import annotations

import importlib.util

from dpaudit.catalog.designs import alignment, covariance, dpsgd, mle_dedicated, policy
from dpaudit.catalog.designs.entry import DesignEntry, DesignSummary
from dpaudit.onerun.design import CanaryDesign

__all__ = ["ENTRIES", "OPACUS", "DesignEntry", "DesignSummary", "design_names", "entries", "left_out", "onerun_designs",
           "summaries"]

# Designs whose claims need an optional dependency: (module, the extra that installs it, what needs it).
OPTIONAL = (("dp_accounting", "onerun", "the DP-SGD designs (their PLD accountant curves)"),
            ("opacus", "opacus", "the Opacus design"))


def _available(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def left_out() -> list[str]:
    """What ``onerun_designs()`` leaves out on this install, and the extra that would add it."""
    return [f"{what} need the {extra!r} extra (pip install 'dpaudit[{extra}]')"
            for module, extra, what in OPTIONAL if not _available(module)]


def _opacus() -> CanaryDesign:
    from dpaudit.catalog.designs.opacus_sgd import opacus_design  # optional dependency (the opacus extra)

    return opacus_design()


# Each design module registers its own designs (DESIGNS, beside its builders); the suite joins them in
# order.  Opacus's module imports torch, so its one design is registered here and built lazily (its summary
# names dpsgd's calibrated sigma = 0.656 at epsilon = 8, as the DP-SGD designs').
OPACUS = DesignEntry(DesignSummary("opacus-whitebox", dpsgd.FAMILY, "Opacus DP-SGD, sigma=0.656, q=0.02, T=500, m=1000 "
                                                                    "input canaries (white box)", 1000,
                                   (("opacus/pld-accountant", "pass"), ("opacus/pld-curve", "pass"))),
                     _opacus, ("opacus", "dp_accounting"))
ENTRIES = (*dpsgd.DESIGNS, *policy.DESIGNS, *alignment.DESIGNS, *mle_dedicated.DESIGNS, *covariance.DESIGNS, OPACUS)


def entries(*, include_opacus: bool = True) -> list[DesignEntry]:
    """The suite's designs on this install, in order, unbuilt (:func:`onerun_designs` builds them)."""
    return [e for e in ENTRIES if all(_available(m) for m in e.needs)
            and (include_opacus or "opacus" not in e.needs)]


def design_names(*, include_opacus: bool = True) -> list[str]:
    """The names of :func:`onerun_designs`' designs, in its order, without building one."""
    return [e.name for e in entries(include_opacus=include_opacus)]


def summaries(family: str | None) -> list[DesignSummary]:
    """What ``list`` says of the designs of catalog family ``family`` on this install (None: the designs
    no family files), in :func:`onerun_designs`' order, without building one."""
    return [e.summary for e in entries() if e.summary.family == family]


def onerun_designs(*, include_opacus: bool = True) -> list[CanaryDesign]:
    """The designs, built (their claims computed); each is audited with ``design.audit(seed)``.
    Designs whose claims need an extra that is not installed are left out (:func:`left_out`)."""
    return [e.build() for e in entries(include_opacus=include_opacus)]
