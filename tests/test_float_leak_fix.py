"""A correct Laplace written the obvious way (``x + rng.laplace(...)`` in doubles) is refuted through its
doubles; every surface that says so also says how to fix it (``on_grid``) and whether the mechanism,
as mathematics, holds (the value views) — so a float leak is told from a miscalibration.

Seeds are fixed; the "passes" check runs a correct mechanism at confidence 0.99 (a false alarm has
probability at most 1 %), its twin a miscalibrated one that must be caught."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit import audit_mechanism
from dpaudit.mechanisms.classic import on_grid
from dpaudit.reports.text import value_views_note
from dpaudit.testing import PrivacyViolation, assert_private

D, D_PRIME = np.array([0.0]), np.array([0.0, 1.0])
SAMPLES = 200_000


class FloatLaplace:
    """Laplace(1/ε) on a count, computed in doubles: correct as mathematics at scale 1 (ε = 1)."""

    name = "float-laplace"

    def __init__(self, scale: float = 1.0):
        self.scale = scale

    def sample(self, data, size, rng):
        return float(np.sum(data)) + rng.laplace(0.0, self.scale, size)


class GridLaplace(FloatLaplace):
    name = "grid-laplace"

    def sample(self, data, size, rng):
        return on_grid(float(np.sum(data)) + rng.laplace(0.0, self.scale, size))


def _message(mechanism) -> str:
    with pytest.raises(PrivacyViolation) as caught:
        assert_private(mechanism, D, D_PRIME, epsilon=1.0, samples=SAMPLES, seed=0)
    return str(caught.value)


def test_a_float_leak_of_a_correct_mechanism_says_the_fix_and_that_the_mathematics_holds():
    message = _message(FloatLaplace())
    assert "leaks through its doubles" in message
    assert "from dpaudit.mechanisms.classic import on_grid" in message and "on_grid(value + noise)" in message
    assert "as mathematics, holds" in message and "which holds here" in message


def test_the_same_mechanism_on_the_grid_passes():
    assert_private(GridLaplace(), D, D_PRIME, epsilon=1.0, samples=SAMPLES, seed=0)


def test_a_miscalibrated_twin_is_told_apart_from_a_float_leak():
    message = _message(FloatLaplace(scale=0.5))   # Laplace(1/2): true ε = 2 > 1
    assert "on_grid" in message and "miscalibrated as well" in message
    assert "as mathematics, does not hold" in message
    with pytest.raises(PrivacyViolation):           # and on the grid it is still caught
        assert_private(GridLaplace(scale=0.5), D, D_PRIME, epsilon=1.0, samples=SAMPLES, seed=0)


def test_print_result_and_the_report_note_carry_the_fix():
    result = audit_mechanism(FloatLaplace(), D, D_PRIME, samples=SAMPLES, epsilon=1.0, seed=0)
    assert "on_grid" in str(result)
    note = value_views_note(result.records()[0])   # the PDF's and the table's note on the record
    assert note is not None and "on_grid" in note
