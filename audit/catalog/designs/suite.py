"""The one-run scenarios of the training mechanisms, for ``run --suite onerun`` (wired by the
CLI): every design at its audited size and every faulty twin, each with its expected verdicts.

The epoch-shuffled DP-SGD twin is not here: isolated canaries cannot refute it (see
:mod:`dpaudit.catalog.designs.dpsgd`); nor is Algorithm 2 as printed, whose flaw lies in the
tail a single run cannot reach (see :mod:`dpaudit.catalog.designs.covariance`).  Opacus's design
needs the ``opacus`` extra and is added only when its import succeeds.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

from dpaudit.catalog.designs.alignment import mle_design
from dpaudit.catalog.designs.covariance import covariance_design
from dpaudit.catalog.designs.dpsgd import HALVED_M, HALVED_RULE, blackbox_design, whitebox_design
from dpaudit.catalog.designs.mle_dedicated import mle_dedicated_design
from dpaudit.catalog.designs.policy import TWIN_M, TWIN_RULE, dppg_design
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


@dataclass(frozen=True)
class DesignEntry:
    """One design of the suite: its name, known without building it, and the builder that makes it
    (building computes accountant curves, planned thresholds and base data: seconds of CPU), with
    the modules its claims need (it is left out when one is not installed)."""

    name: str
    build: Callable[[], CanaryDesign]
    needs: tuple[str, ...] = ()


def _opacus() -> CanaryDesign:
    from dpaudit.catalog.designs.opacus_sgd import opacus_design  # optional dependency (the opacus extra)

    return opacus_design()


_DPSGD = ("dp_accounting",)
ENTRIES = (
    DesignEntry("dpsgd-whitebox", functools.partial(whitebox_design, epsilon=8.0), _DPSGD),
    DesignEntry("dpsgd-blackbox", functools.partial(blackbox_design, epsilon=8.0), _DPSGD),
    # at m = 2000 and k+ = k- = 200: refuted with probability 0.999, not 0.93 (dpsgd.HALVED_RULE)
    DesignEntry("dpsgd-whitebox-noise-halved", functools.partial(
        whitebox_design, noise_multiplier=1.19, bug="noise-halved", m=HALVED_M, rule=HALVED_RULE), _DPSGD),
    DesignEntry("dpsgd-whitebox-no-clip-canaries", functools.partial(
        whitebox_design, noise_multiplier=1.19, bug="no-clip-canaries"), _DPSGD),
    DesignEntry("dppg-whitebox", dppg_design),
    # the twins at 1000 canary users and k+ = k- = 100: refuted with probability 0.998, not 0.917 (policy.TWIN_RULE)
    DesignEntry("dppg-whitebox-wrong-relation", functools.partial(
        dppg_design, bug="wrong-relation", m=TWIN_M, rule=TWIN_RULE)),
    DesignEntry("dppg-whitebox-reward-convention", functools.partial(
        dppg_design, bug="reward-convention", m=TWIN_M, rule=TWIN_RULE)),
    DesignEntry("align-alg1-instantiated", functools.partial(mle_design, calibration="instantiated")),
    DesignEntry("align-alg1-paper", functools.partial(mle_design, calibration="paper")),
    DesignEntry("align-alg1-dedicated-instantiated", functools.partial(mle_dedicated_design,
                                                                        calibration="instantiated")),
    DesignEntry("align-alg1-dedicated-paper", functools.partial(mle_dedicated_design, calibration="paper")),
    DesignEntry("align-alg2-tight", functools.partial(covariance_design, calibration="tight")),
    DesignEntry("opacus-whitebox", _opacus, ("opacus", "dp_accounting")),
)


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
