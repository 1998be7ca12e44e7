"""The toy family's catalog module: one mechanism, one generator, one scenario."""

from __future__ import annotations

from dpaudit.catalog import Family, Scenario
from dpaudit.catalog.family import entry
from dpaudit.neighbors import Dataset, Pair
from tests.toyfamily.mechanism import NoisySign


def bits(ones: int, zeros: int) -> Dataset:
    """``ones`` records with bit 1 and ``zeros`` with bit 0."""
    return Dataset({"bit": [1] * ones + [0] * zeros})


def scenarios() -> list[Scenario]:
    d = bits(1, 3)
    return [Scenario("toy-sign", NoisySign(1.0), Pair(d, d.remove(0), "remove the only one"),
                     {"toy/sign": "pass"}, about="toy noisy sign, eps = 1")]


FAMILY = Family(name="toy", about="a toy third-party family", mechanisms=(entry(NoisySign),),
                generators={"toy_bits": bits}, scenarios=scenarios)
