"""Built-in scenarios: mechanism × neighbouring pair × claims × expected verdicts.

The default suite (``python -m audit run``) holds the classic references and every
``kl-mab/*`` and ``expmech/def2`` fixture of the claims table: valid claims must pass on the
worst pair that :func:`neighbors.search.worst_pair` finds, and the printed approximate
statements of Theorem 1 and Corollary 1 must be caught on the witnesses of spec A.2.4.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from audit.exact import pure_epsilon
from mechanisms.classic import ExponentialMechanism, Gaussian, Laplace, RandomizedResponse, ReportNoisyMax
from mechanisms.faulty import ExponentialMechanismWithoutFactor2
from mechanisms.kl_bandits import KLBandit
from neighbors import Dataset, Pair, add_remove, swap
from neighbors.search import worst_pair
from neighbors.synthetic import bandit_candidates, bandit_log, vote_record, votes

MECHANISMS: dict[str, type] = {cls.name: cls for cls in (
    RandomizedResponse, Laplace, Gaussian, ExponentialMechanism, ReportNoisyMax, KLBandit,
    ExponentialMechanismWithoutFactor2)}


@dataclass(frozen=True)
class Scenario:
    """One audit: a mechanism, a neighbouring pair and what each claim is expected to give."""

    name: str
    mechanism: Any
    pair: Pair
    expected: Mapping[str, str] = field(default_factory=dict)
    samples_factor: int = 1  # multiplies the run's sample budget (witnesses at large ε need more)
    about: str = ""


def _kl_log() -> Dataset:
    """An embedded synthetic bandit log: arm 0 = {R, 0, 0, 0} (least covered), arms 1, 2 random."""
    rng = np.random.default_rng(20261122)
    return bandit_log([[1.0, 0.0, 0.0, 0.0], np.round(rng.uniform(0, 1, 20), 3), np.round(rng.uniform(0, 1, 30), 3)])


def _kl_search(mechanism: KLBandit, relation: str) -> Pair:
    base = _kl_log()
    cands = bandit_candidates(mechanism.n_actions, mechanism.reward_range)
    pairs = add_remove(base, cands) if relation == "add-remove" else swap(base, cands)
    return worst_pair(mechanism, pairs, pure_epsilon)[0]


def default_suite() -> list[Scenario]:
    """The scenarios of ``python -m audit run``."""
    bit = Dataset({"bit": [0]})
    value = Dataset({"value": [0.5, 0.25]})
    ballots = votes([6, 5, 5, 2])
    expmech = ExponentialMechanism(1.0)
    exp_pair = worst_pair(expmech, add_remove(ballots, [vote_record(j, 4) for j in range(4)]), pure_epsilon)[0]
    kl = KLBandit(3, eta=0.25, beta0=0.5, reward_range=1.0, pi0=(0.02, 0.49, 0.49))
    row3 = bandit_log([[1.0], [0.067345] * 3000])
    row1 = bandit_log([[], [0.0] * 1_000_000])
    return [
        Scenario("rr", RandomizedResponse(1.0), Pair(bit, bit.add({"bit": 1}), "add a record with bit 1"),
                 {"classic/rr": "pass"}, about="randomized response, eps = 1"),
        Scenario("laplace", Laplace(1.0), Pair(value, value.add({"value": 1.0}), "add a record with value 1"),
                 {"classic/laplace": "pass"}, about="Laplace mechanism on a clipped sum, eps = 1"),
        Scenario("expmech", expmech, exp_pair, {"expmech/def2": "pass"},
                 about="exponential mechanism, non-monotone vote utility, worst add/remove pair"),
        Scenario("kl-mab-worst", kl, _kl_search(kl, "add-remove"), {"kl-mab/thm1-pure": "pass"},
                 about="KL bandit on the embedded log, worst add/remove pair by exact loss"),
        Scenario("kl-mab-swap", kl, _kl_search(kl, "swap"), {"kl-mab/thm1-swap": "pass"},
                 about="KL bandit on the embedded log, worst swap pair by exact loss"),
        Scenario("kl-mab-a24-row3", KLBandit(2, eta=0.001, beta0=0.95, n0=1000, k=3),
                 Pair(row3, row3.remove(0), "remove (b, 1): b = {1}, c has 3000 rewards 0.067345"),
                 {"kl-mab/thm1-pure": "not-applicable", "kl-mab/thm1-approx": "violation",
                  "kl-mab/cor1": "violation", "kl-mab/thm1-approx-corrected": "pass"},
                 about="spec A.2.4 row 3: claimed (4.03, 3.4e-4), exact delta 0.50"),
        Scenario("kl-mab-a24-row1", KLBandit(2, eta=0.003, beta0=0.7, n0=100, k=10_000),
                 Pair(row1, row1.add({"action": 0, "reward": 1.0}), "add (b, 1): b empty, c has 1e6 rewards 0"),
                 {"kl-mab/thm1-pure": "not-applicable", "kl-mab/thm1-approx": "violation",
                  "kl-mab/cor1": "violation", "kl-mab/thm1-approx-corrected": "pass"},
                 samples_factor=5, about="spec A.2.4 row 1: claimed (13.57, 1.45e-4), exact delta 1.00"),
    ]


SUITES = {"default": default_suite}
