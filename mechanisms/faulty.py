"""Deliberately broken mechanisms: what a caught bug looks like.

Each samples from a mechanism that leaks more than the guarantee it states.  The test
suite uses them as the twins of "no violation" tests: an audit that cannot catch these
proves nothing when it passes a correct mechanism.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mechanisms.classic import ExponentialMechanism


@dataclass(frozen=True)
class ExponentialMechanismWithoutFactor2(ExponentialMechanism):
    """Samples ∝ exp(ε u / Δu) — the factor 2 of Definition 2 dropped — yet claims ε.

    For a non-monotone utility its exact privacy loss approaches 2ε.
    """

    name: ClassVar[str] = "exponential-mechanism-without-factor-2"

    def _temperature(self) -> float:
        return self.sensitivity / self.epsilon
