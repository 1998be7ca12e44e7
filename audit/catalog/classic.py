"""The textbook references: randomized response, Laplace, Gaussian, the exponential mechanism
(with the factor 2 of the KL paper's Definition 2) and report-noisy-max, plus the broken
exponential mechanism of :mod:`mechanisms.faulty`."""

from __future__ import annotations

import numpy as np

from audit.catalog.family import BenchCase, Family, Scenario, TightnessCase, entry
from audit.exact import pure_epsilon
from mechanisms.classic import ExponentialMechanism, Gaussian, Laplace, RandomizedResponse, ReportNoisyMax
from mechanisms.faulty import ExponentialMechanismWithoutFactor2
from neighbors import Dataset, Pair, add_remove
from neighbors.search import worst_pair
from neighbors.synthetic import vote_record, votes


def _bit_pair() -> Pair:
    bit = Dataset({"bit": [0]})
    return Pair(bit, bit.add({"bit": 1}), "add a record with bit 1")


def scenarios() -> list[Scenario]:
    """Randomized response and Laplace at ε = 1, and the exponential mechanism on its worst pair."""
    value = Dataset({"value": [0.5, 0.25]})
    expmech = ExponentialMechanism(1.0)
    ballots = votes([6, 5, 5, 2])
    exp_pair = worst_pair(expmech, add_remove(ballots, [vote_record(j, 4) for j in range(4)]), pure_epsilon).pair
    return [
        Scenario("rr", RandomizedResponse(1.0), _bit_pair(), {"classic/rr": "pass"}, about="randomized response, eps = 1"),
        Scenario("laplace", Laplace(1.0), Pair(value, value.add({"value": 1.0}), "add a record with value 1"),
                 {"classic/laplace": "pass"}, about="Laplace mechanism on a clipped sum, eps = 1"),
        Scenario("expmech", expmech, exp_pair, {"expmech/def2": "pass"},
                 about="exponential mechanism, non-monotone vote utility, worst add/remove pair"),
    ]


def categorical_reference(p: np.ndarray):
    """A plain draw-and-count reference for a finite output distribution ``p`` (counts output 0)."""
    return lambda rng, n: int(np.count_nonzero(rng.choice(len(p), n, p=p) == 0))


def bench() -> list[BenchCase]:
    rr = RandomizedResponse(1.0)
    pair = _bit_pair()
    value = Dataset({"value": [0.5]})
    return [
        BenchCase("randomized response", rr, pair.d, pair.d_prime, categorical_reference(rr.output_distribution(pair.d))),
        BenchCase("laplace", Laplace(1.0), value, value.add({"value": 1.0}),
                  lambda rng, n: int(np.count_nonzero(0.5 + rng.laplace(0, 1, n) >= 1.0))),
    ]


def tightness() -> list[TightnessCase]:
    value = Dataset({"value": [0.5]})
    laplace_pair = Pair(value, value.add({"value": 1.0}), "add a record with value 1")
    return [TightnessCase("randomized response eps=1", RandomizedResponse(1.0), _bit_pair(), 1_000_000, 1.0),
            TightnessCase("laplace eps=1", Laplace(1.0), laplace_pair, 1_000_000, 1.0),
            TightnessCase("laplace eps=0.1", Laplace(0.1), laplace_pair, 10_000_000, 0.1)]


FAMILY = Family(
    name="classic",
    about="textbook references (Dwork & Roth 2014) and the exponential mechanism of the KL paper's Definition 2",
    mechanisms=tuple(entry(cls) for cls in (RandomizedResponse, Laplace, Gaussian, ExponentialMechanism,
                                            ReportNoisyMax, ExponentialMechanismWithoutFactor2)),
    generators={"votes": votes},
    scenarios=scenarios,
    bench=bench,
    tightness=tightness,
)
