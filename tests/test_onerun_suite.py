"""The one-run scenarios of the training mechanisms: every design and twin gives its expected
verdicts on seed 0 (95 % confidence), and the correct designs are listed with pass expectations."""

from __future__ import annotations

import pytest

from dpaudit.onerun.designs.suite import onerun_designs


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Full backward hook")
def test_every_design_as_expected_on_seed_0():
    designs = onerun_designs()
    names = [d.name for d in designs]
    assert len(set(names)) == len(names)
    failed = [d.name for d in designs if not d.as_expected(d.audit(0))]
    assert failed == []
    twins = [d for d in designs if "violation" in d.expected.values()]
    assert len(twins) >= 4  # noise x0.5, no clipping, DP-PG wrong relation, DP-PG reward convention
    assert all(d.expected for d in designs)
    assert {"align-alg1-dedicated-instantiated", "align-alg1-dedicated-paper", "align-alg2-tight"} <= set(names)
