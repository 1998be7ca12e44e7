"""The one-run scenarios of the training mechanisms, for ``run --suite onerun`` (wired by the
CLI): every design at its audited size and every faulty twin, each with its expected verdicts.

The epoch-shuffled DP-SGD twin is not here: isolated canaries cannot refute it (see
:mod:`dpaudit.onerun.designs.dpsgd`); nor is Algorithm 2 as printed, whose flaw lies in the
tail a single run cannot reach (see :mod:`dpaudit.onerun.designs.covariance`).  Opacus's design
needs the ``opacus`` extra and is added only when its import succeeds.
"""

from __future__ import annotations

import importlib.util

from dpaudit.onerun.designs.alignment import mle_design
from dpaudit.onerun.designs.base import CanaryDesign
from dpaudit.onerun.designs.covariance import covariance_design
from dpaudit.onerun.designs.dpsgd import blackbox_design, whitebox_design
from dpaudit.onerun.designs.mle_dedicated import mle_dedicated_design
from dpaudit.onerun.designs.policy import dppg_design

__all__ = ["onerun_designs"]


def onerun_designs(*, include_opacus: bool = True) -> list[CanaryDesign]:
    """The designs, built (their claims computed); each is audited with ``design.audit(seed)``."""
    out = [
        whitebox_design(epsilon=8.0),
        blackbox_design(epsilon=8.0),
        whitebox_design(noise_multiplier=1.19, bug="noise-halved"),
        whitebox_design(noise_multiplier=1.19, bug="no-clip-canaries"),
        dppg_design(),
        dppg_design(bug="wrong-relation"),
        dppg_design(bug="reward-convention"),
        mle_design(calibration="instantiated"),
        mle_design(calibration="paper"),
        mle_dedicated_design(calibration="instantiated"),
        mle_dedicated_design(calibration="paper"),
        covariance_design(calibration="tight"),
    ]
    if include_opacus and importlib.util.find_spec("opacus") is not None:
        from dpaudit.onerun.designs.opacus_sgd import opacus_design  # optional dependency (the opacus extra)

        out.append(opacus_design())
    return out
