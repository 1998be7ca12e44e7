"""The independent-canary test on the white-box DP-SGD design (issue 36, point 4): the premise's
checks (the shared-coordinate twin refused by construction, flagged by the dependence pilot) and
the readings at eps = 8 (slow tier).  Confidence 95 %; pilot seeds 5000+ (no audited run uses them).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("dp_accounting", reason="the onerun extra (dp-accounting) is not installed")

from dpaudit.catalog.designs.dpsgd import family_rejection, isolated_family_rejection, whitebox_design
from dpaudit.core import InputError
from dpaudit.onerun.isolated import premise_pilot
from tests.onerun_seeded import seeded

SMALL = {"m": 200, "steps": 100, "n_base": 300}  # the premise checks at a cheaper scale (a pilot run ~0.01 s)


def test_dpsgd_shared_coordinate_twin_is_refused_and_its_pilot_flagged():
    with pytest.raises(InputError, match="isolated_canaries"):
        whitebox_design(canaries_per_coordinate=2, **SMALL)
    twin = whitebox_design(canaries_per_coordinate=2, declare_isolated=False, **SMALL)
    assert twin.isolated_canaries is None
    assert premise_pilot(twin, seeds=[5000, 5001, 5002]).flagged  # measured z = 5.7
    design = whitebox_design(**SMALL)
    assert design.isolated_canaries is not None
    assert not premise_pilot(design, seeds=[5000, 5001, 5002]).flagged  # measured z = -0.44


@pytest.mark.slow
def test_whitebox_dpsgd_eps8_isolated_readings():
    """Issue 36: seeds 0-9, m = 1000.  Measured: GDP reading (mu read as eps at 1e-5) median 3.96,
    1.16 x the f-DP family reading's median 3.41; the DP-SGD family read through the test, median
    5.34 (1.57 x).  The planner's median mu at m = 1000 is 0.92 (read 3.97): 1.35 x 3.41 = 4.60 needs
    mu 1.044, which the planned test reaches at m ~ 4000 (docs/onerun_designs.md)."""
    design = whitebox_design(epsilon=8.0)
    results = [seeded(design, seed) for seed in range(10)]
    fdp = np.median([family_rejection(r, design.mechanism).epsilon for r in results])
    read = np.median([r.isolated.gdp_epsilon_read for r in results])
    through = np.median([isolated_family_rejection(r.isolated, design.mechanism).epsilon for r in results])
    assert fdp == pytest.approx(3.41, abs=0.05)
    assert read >= 3.9
    assert through >= 1.35 * fdp
    assert premise_pilot(design, seeds=[5000, 5001, 5002]).z == pytest.approx(0.0, abs=3.0)
    twin = whitebox_design(epsilon=8.0, canaries_per_coordinate=2, declare_isolated=False)
    assert premise_pilot(twin, seeds=[5000]).flagged  # measured z = 10.4 on one run


@pytest.mark.slow
def test_whitebox_dpsgd_isolated_false_rejections_and_a_caught_twin():
    """The design's own claims (the accountant's (eps, delta) and curve) under the test, 100 seeds:
    the planned threshold's point lies on the accountant's curve (750k simulated canaries: 1 - TPR
    0.5712 against f(FPR) 0.5709), so a rejection has probability ~0.3 % per run (exact binomial
    sum); measured 1 of 100 (seed 1065, the curve) and 0 of seeds 0-99.  We require <= 2 (P > 2
    ~ 0.5 %).  The unclipped-canary twin is refuted on both claims in 5 of 5."""
    design = whitebox_design(epsilon=8.0)
    hits = sum(seeded(design, seed).isolated.rejected for seed in range(1000, 1100))
    assert hits <= 2
    twin = whitebox_design(noise_multiplier=1.19, bug="no-clip-canaries")
    assert all(seeded(twin, seed).isolated.rejected for seed in range(5))
