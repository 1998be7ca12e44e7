"""The one-run scenarios of the training mechanisms, for ``run --suite onerun`` (wired by the
CLI): every design at its audited size and every faulty twin, each with its expected verdicts.

The epoch-shuffled DP-SGD twin is not here: isolated canaries cannot refute it (see
:mod:`dpaudit.catalog.designs.dpsgd`); nor is Algorithm 2 as printed, whose flaw lies in the
tail a single run cannot reach (see :mod:`dpaudit.catalog.designs.covariance`).  Opacus's design
needs the ``opacus`` extra and is added only when its import succeeds.
"""

from __future__ import annotations

import importlib.util

from dpaudit.catalog.designs.alignment import mle_design
from dpaudit.catalog.designs.covariance import covariance_design
from dpaudit.catalog.designs.dpsgd import HALVED_M, HALVED_RULE, blackbox_design, whitebox_design
from dpaudit.catalog.designs.mle_dedicated import mle_dedicated_design
from dpaudit.catalog.designs.policy import TWIN_M, TWIN_RULE, dppg_design
from dpaudit.onerun.design import CanaryDesign

__all__ = ["left_out", "onerun_designs"]

# Designs whose claims need an optional dependency: (module, the extra that installs it, what needs it).
OPTIONAL = (("dp_accounting", "onerun", "the DP-SGD designs (their PLD accountant curves)"),
            ("opacus", "opacus", "the Opacus design"))


def _available(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def left_out() -> list[str]:
    """What ``onerun_designs()`` leaves out on this install, and the extra that would add it."""
    return [f"{what} need the {extra!r} extra (pip install 'dpaudit[{extra}]')"
            for module, extra, what in OPTIONAL if not _available(module)]


def onerun_designs(*, include_opacus: bool = True) -> list[CanaryDesign]:
    """The designs, built (their claims computed); each is audited with ``design.audit(seed)``.
    Designs whose claims need an extra that is not installed are left out (:func:`left_out`)."""
    out = [
        whitebox_design(epsilon=8.0),
        blackbox_design(epsilon=8.0),
        # at m = 2000 and k+ = k- = 200: refuted with probability 0.999, not 0.93 (dpsgd.HALVED_RULE)
        whitebox_design(noise_multiplier=1.19, bug="noise-halved", m=HALVED_M, rule=HALVED_RULE),
        whitebox_design(noise_multiplier=1.19, bug="no-clip-canaries"),
    ] if _available("dp_accounting") else []
    out += [
        dppg_design(),
        # the twins at 1000 canary users and k+ = k- = 100: refuted with probability 0.998, not 0.917 (policy.TWIN_RULE)
        dppg_design(bug="wrong-relation", m=TWIN_M, rule=TWIN_RULE),
        dppg_design(bug="reward-convention", m=TWIN_M, rule=TWIN_RULE),
        mle_design(calibration="instantiated"),
        mle_design(calibration="paper"),
        mle_dedicated_design(calibration="instantiated"),
        mle_dedicated_design(calibration="paper"),
        covariance_design(calibration="tight"),
    ]
    if include_opacus and _available("opacus") and _available("dp_accounting"):
        from dpaudit.catalog.designs.opacus_sgd import opacus_design  # optional dependency (the opacus extra)

        out.append(opacus_design())
    return out
