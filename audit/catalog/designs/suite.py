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
from dpaudit.catalog.designs.entry import DesignEntry
from dpaudit.onerun.design import CanaryDesign

__all__ = ["ENTRIES", "DesignEntry", "design_names", "entries", "left_out", "onerun_designs"]

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
# order.  Opacus's module imports torch, so its one design is registered here and built lazily.
ENTRIES = (*dpsgd.DESIGNS, *policy.DESIGNS, *alignment.DESIGNS, *mle_dedicated.DESIGNS, *covariance.DESIGNS,
           DesignEntry("opacus-whitebox", _opacus, ("opacus", "dp_accounting")))


def entries(*, include_opacus: bool = True) -> list[DesignEntry]:
    """The suite's designs on this install, in order, unbuilt (:func:`onerun_designs` builds them)."""
    return [e for e in ENTRIES if all(_available(m) for m in e.needs)
            and (include_opacus or "opacus" not in e.needs)]


def design_names(*, include_opacus: bool = True) -> list[str]:
    """The names of :func:`onerun_designs`' designs, in its order, without building one."""
    return [e.name for e in entries(include_opacus=include_opacus)]


def onerun_designs(*, include_opacus: bool = True) -> list[CanaryDesign]:
    """The designs, built (their claims computed); each is audited with ``design.audit(seed)``.
    Designs whose claims need an extra that is not installed are left out (:func:`left_out`)."""
    return [e.build() for e in entries(include_opacus=include_opacus)]
