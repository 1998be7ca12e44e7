"""Opacus's DP-SGD audited in one run (the ``opacus`` extra; skipped when it is absent).

Seed 0; confidence 95 %.  The twin that shows the audit can fail: an Opacus run with the noise
halved (0.595) against the claims of σ = 1.19 (ε ≈ 2) must be refuted, seed 0."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("opacus", reason="the opacus extra is not installed (pip install dpaudit[opacus])")
pytest.importorskip("torch", reason="the opacus extra is not installed (pip install dpaudit[opacus])")

from dpaudit.catalog.designs.opacus_sgd import opacus_design, opacus_epsilon
from dpaudit.onerun.design import refuted
from tests.onerun_seeded import seeded
from tests.slow_shared import one_torch_thread  # noqa: F401  (a fixture, used by name below)


def test_opacus_epsilon_agrees_with_our_pld_claim():
    ours = opacus_design(m=10, steps=500).claims[0].epsilon
    assert opacus_epsilon(0.656, 0.02, 500, 1e-5) == pytest.approx(ours, abs=0.05)


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.filterwarnings("ignore:Full backward hook")
def test_opacus_run_passes_and_its_broken_twin_is_refuted():
    design = opacus_design()
    result = seeded(design, 0)
    assert design.as_expected(result)
    assert result.epsilon_lowers[0] > 1.0          # the canaries are seen through the library
    claimed = opacus_design(noise_multiplier=1.19)   # the accountant's eps ~ 2
    halved = replace(claimed.mechanism, noise_multiplier=1.19 / 2)
    broken = replace(claimed, mechanism=halved)      # the claims stay those of the full noise
    assert refuted(seeded(broken, 0))
