"""Deliberately broken mechanisms: what a caught bug looks like.

Each samples from a mechanism that leaks more than the guarantee it states.  The test
suite uses them as the twins of "no violation" tests: an audit that cannot catch these
proves nothing when it passes a correct mechanism.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import ClassVar

from mechanisms.align_mle import PrivateMLE
from mechanisms.classic import ExponentialMechanism, Gaussian


@dataclass(frozen=True)
class ExponentialMechanismWithoutFactor2(ExponentialMechanism):
    """Samples ∝ exp(ε u / Δu) — the factor 2 of Definition 2 dropped — yet claims ε.

    For a non-monotone utility its exact privacy loss approaches 2ε.
    """

    name: ClassVar[str] = "exponential-mechanism-without-factor-2"

    def _temperature(self) -> float:
        return self.sensitivity / self.epsilon


@dataclass(frozen=True)
class ClaimsWithDoubledEta:
    """Samples from a KL-paper policy with its η but states the claims computed with 2η.

    Every KL-paper bound scales like 1/η, so the stated ε is half of what the analysis
    gives; on a fixture where that analysis is tight (the corrected RLHF bounds) the
    audit must report a violation.
    """

    base: object
    name: ClassVar[str] = "kl-policy-claiming-double-eta"

    def output_distribution(self, data):
        return self.base.output_distribution(data)

    def sample(self, data, size, rng):
        return self.base.sample(data, size, rng)

    def pair_guarantees(self, data, data_prime, relation):
        wrong = dataclasses.replace(self.base, eta=2 * self.base.eta)
        if hasattr(wrong, "pair_guarantees"):
            return wrong.pair_guarantees(data, data_prime, relation)
        return wrong.guarantees(data, relation)


@dataclass(frozen=True)
class GaussianOnHalfSensitivity(Gaussian):
    """The classical Gaussian mechanism calibrated as if the sensitivity were Δ/2, claiming (ε, δ)."""

    name: ClassVar[str] = "gaussian-on-half-sensitivity"

    @property
    def sigma(self) -> float:
        return super().sigma / 2


@dataclass(frozen=True)
class PrivateMLEOnTenthNoise(PrivateMLE):
    """Algorithm 1 whose objective noise is a tenth of the printed σ_b while it keeps the printed
    claim (ε/2, δ/2): the kind of calibration bug an audit of Algorithm 1 must catch."""

    name: ClassVar[str] = "align-mle-tenth-noise"

    @functools.cached_property
    def sigma_b(self) -> float:
        return PrivateMLE.sigma_b.func(self) / 10
