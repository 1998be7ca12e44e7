"""The one-run scenarios of the training mechanisms: every design and twin gives its expected
verdicts on seed 0 (95 % confidence), and the correct designs are listed with pass expectations."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from dpaudit.catalog.designs.suite import onerun_designs
from tests.onerun_seeded import seeded


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Full backward hook")
def test_every_design_as_expected_on_seed_0():
    designs = onerun_designs()
    names = [d.name for d in designs]
    assert len(set(names)) == len(names)
    failed = [d.name for d in designs if not d.as_expected(seeded(d, 0))]
    assert failed == []
    twins = [d for d in designs if "violation" in d.expected.values()]
    assert len(twins) >= 4  # noise x0.5, no clipping, DP-PG wrong relation, DP-PG reward convention
    assert all(d.expected for d in designs)
    assert {"align-alg1-dedicated-instantiated", "align-alg1-dedicated-paper", "align-alg2-tight"} <= set(names)


def test_designs_needing_a_missing_extra_are_left_out_and_named(monkeypatch):
    """Without dp_accounting (the `onerun` extra; `.[test]` alone does not install it) the DP-SGD and
    Opacus designs are left out and `left_out()` names the extra; with it, they are there.  What is
    checked is which entries are built: each kept entry's builder is a stand-in returning its name (the
    designs themselves, seconds of CPU to build, are built and audited by test_every_design_as_expected_on_seed_0)."""
    from dpaudit.catalog.designs import suite as designs

    monkeypatch.setattr(designs, "_available", lambda module: module != "dp_accounting")
    # a design left out is never built (a patch of the module's builder would miss the registered entry's)
    monkeypatch.setattr(designs, "ENTRIES", tuple(
        dataclasses.replace(e, build=lambda: pytest.fail("built a design whose extra is missing"))
        if "dp_accounting" in e.needs else dataclasses.replace(e, build=lambda name=e.name: SimpleNamespace(name=name))
        for e in designs.ENTRIES))
    names = [d.name for d in designs.onerun_designs(include_opacus=True)]
    assert names == [e.name for e in designs.ENTRIES if "dp_accounting" not in e.needs]
    assert names and not any(n.startswith(("dpsgd", "opacus")) for n in names)
    assert any("'onerun' extra" in note and "DP-SGD" in note for note in designs.left_out())
    monkeypatch.setattr(designs, "_available", lambda module: True)
    assert designs.left_out() == []
