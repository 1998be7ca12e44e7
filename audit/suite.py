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
from mechanisms.kl_extensions import InexactPolicy, RepeatedSampling
from mechanisms.kl_linear import KLLinearBandit
from mechanisms.kl_rlhf import KLRLHF
from mechanisms.private_po import DPNPG, DPPG, DPREBEL
from neighbors import Dataset, Pair, add_remove, swap
from neighbors.search import feature_directions, search_feature_pairs, worst_pair
from neighbors.synthetic import (bandit_candidates, bandit_log, comparisons, linear_log, unit_vectors, vote_record,
                                 votes)

MECHANISMS: dict[str, type] = {cls.name: cls for cls in (DPPG, DPNPG, DPREBEL,
    RandomizedResponse, Laplace, Gaussian, ExponentialMechanism, ReportNoisyMax, KLBandit, KLLinearBandit, KLRLHF,
    ExponentialMechanismWithoutFactor2)}


@dataclass(frozen=True)
class Scenario:
    """One audit: a mechanism, a neighbouring pair and what each claim is expected to give."""

    name: str
    mechanism: Any
    pair: Pair
    expected: Mapping[str, str] = field(default_factory=dict)
    samples_factor: float = 1  # multiplies the run's sample budget (witnesses at large ε need more; slow
    # samplers whose claims are far from reach need less)
    about: str = ""
    claims: list | None = None  # explicit claims (e.g. a tight reference) instead of the mechanism's own


def _kl_log() -> Dataset:
    """An embedded synthetic bandit log: arm 0 = {R, 0, 0, 0} (least covered), arms 1, 2 random."""
    rng = np.random.default_rng(20261122)
    return bandit_log([[1.0, 0.0, 0.0, 0.0], np.round(rng.uniform(0, 1, 20), 3), np.round(rng.uniform(0, 1, 30), 3)])


def _kl_search(mechanism: KLBandit, relation: str) -> Pair:
    base = _kl_log()
    cands = bandit_candidates(mechanism.n_actions, mechanism.reward_range)
    pairs = add_remove(base, cands) if relation == "add-remove" else swap(base, cands)
    return worst_pair(mechanism, pairs, pure_epsilon).pair


def _linear_random() -> tuple[KLLinearBandit, Pair]:
    """A random linear-bandit log (d = 2, n = 30) and its worst add/remove pair by feature search."""
    rng = np.random.default_rng(7)
    log = linear_log(unit_vectors(30, 2, rng), np.round(rng.uniform(0, 1, 30), 3))
    feats = unit_vectors(4, 2, np.random.default_rng(8))
    probe = KLLinearBandit(feats, ridge=2.0, beta0=0.2, eta=0.1)
    sigma, theta = probe.statistics(log)
    lam_min = float(np.linalg.eigvalsh(sigma)[0])
    k1 = float(np.ceil(100 * len(log) / (2 * (lam_min - 1))) / 100)  # the smallest k1 meeting Cor. 2's coverage
    mech = KLLinearBandit(feats, ridge=2.0, beta0=0.2, eta=0.1, k1=k1)
    found = search_feature_pairs(mech, log, "add-remove", lambda v, r: {"phi": v.tolist(), "reward": r}, (0.0, 1.0),
                                 feature_directions(sigma, theta, np.random.default_rng(9)), pure_epsilon,
                                 np.random.default_rng(10), refine_steps=100)
    return mech, found.pair


def _linear_a33(lambda0: float) -> Scenario:
    log = linear_log(np.ones((99, 1)), [1.0] * 10 + [0.0] * 89)
    mech = KLLinearBandit(((1.0,), (0.0,)), ridge=1.0, beta0=1.0, eta=5e-4, lambda0=lambda0)
    return Scenario(f"kl-linear-a33-{lambda0:g}", mech, Pair(log, log.remove(0), "remove a reward-1 point (phi = 1)"),
                    {"kl-linear/thm2-pure": "pass", "kl-linear/thm2-approx": "violation"},
                    about=f"spec A.3.3, lambda0 = {lambda0:g}: 99 points phi = 1, ten with reward 1; exact delta 0.50")


def _rlhf_approx(lambda0: float) -> Scenario:
    log = comparisons(np.full((100, 1), 2.0), [1] * 57 + [0] * 43)
    probe = KLRLHF(((1.0,), (0.0,)), ridge=1.0, beta0=3.0, eta=2e-3)
    u = probe.utility(log) / probe.eta
    p1 = float(1 / (1 + np.exp(u[0] - u[1])))  # pi0 that makes pi(a1; D) = 1/2
    mech = KLRLHF(((1.0,), (0.0,)), ridge=1.0, beta0=3.0, eta=2e-3, pi0=(p1, 1 - p1), lambda0=lambda0)
    return Scenario(f"kl-rlhf-approx-{lambda0:g}", mech, Pair(log, log.flip(0), "flip one label 1 -> 0 (57 -> 56)",
                                                               "label-flip"),
                    {"kl-rlhf/thm3-label": "violation", "kl-rlhf/thm3-label-approx": "violation",
                     "kl-rlhf/thm3-label-corrected": "pass"},
                    about=f"spec A.4.2 approximate label DP, lambda0 = {lambda0:g}: exact delta about 0.5")


def kl_paper_scenarios() -> list[Scenario]:
    """The fixtures of claims.md for kl-linear/*, kl-rlhf/*, kl/repeated-T and kl/inexact."""
    kl = KLBandit(3, eta=0.25, beta0=0.5, reward_range=1.0, pi0=(0.02, 0.49, 0.49))
    mab_pair = _kl_search(kl, "add-remove")
    empty = linear_log([], [], d=1)
    tight = KLLinearBandit(((1.0,), (-1.0,)), ridge=100.0, beta0=0.0, eta=0.02, pi0=(1e-3, 1 - 1e-3))
    lin_mech, lin_pair = _linear_random()
    canon10 = comparisons(np.full((10, 1), 2.0), [1] * 5 + [0] * 5)
    canon11 = comparisons(np.full((11, 1), 2.0), [1] * 5 + [0] * 6)
    plus_minus = ((1.0,), (-1.0,))
    label_expect = {"kl-rlhf/thm3-label": "violation", "kl-rlhf/thm3-label-corrected": "pass"}
    return [
        Scenario("kl-linear-tight", tight, Pair(empty, empty.add({"phi": [1.0], "reward": 1.0}), "add (phi = 1, r = R) to the empty log"),
                 {"kl-linear/thm2-pure": "pass"},
                 about="spec A.3.2 tight family: n = 0 -> 1, lambda = 100, beta0 = 0 (exact/claim about 0.98)"),
        Scenario("kl-linear-random", lin_mech, lin_pair, {"kl-linear/thm2-pure": "pass", "kl-linear/cor2-pure": "pass"},
                 about="random linear log (d = 2, n = 30), worst add/remove pair by feature search"),
        _linear_a33(1.6e5), _linear_a33(4e4), _linear_a33(1e4),
        Scenario("kl-rlhf-label", KLRLHF(plus_minus, ridge=1.0, beta0=0.01, eta=0.1),
                 Pair(canon10, canon10.flip(0), "flip one label 1 -> 0 (k 5 -> 4)", "label-flip"), label_expect,
                 about="spec A.4.2 canonical family, n = 10, k 5 -> 4, uniform pi0, eta = 0.1 (exact 3.38 vs 1.25)"),
        Scenario("kl-rlhf-label-tight", KLRLHF(plus_minus, ridge=1.0, beta0=0.01, eta=0.1, pi0=(0.999, 0.001)),
                 Pair(canon10, canon10.flip(0), "flip one label 1 -> 0 (k 5 -> 4)", "label-flip"), label_expect,
                 about="canonical family with pi0 on argmin du: the corrected label bound is tight"),
        Scenario("kl-rlhf-addremove", KLRLHF(plus_minus, ridge=1.0, beta0=0.01, eta=0.1, pi0=(1e-3, 1 - 1e-3)),
                 Pair(canon11, canon11.remove(10), "D = n = 10, k = 5 plus (z = 2, y = 0); D' removes it"),
                 {"kl-rlhf/thm4-addremove": "violation", "kl-rlhf/thm4-addremove-corrected": "pass"},
                 about="spec A.4.2 canonical family, add (z = 2, y = 0), eta = 0.1"),
        _rlhf_approx(1e4), _rlhf_approx(2500), _rlhf_approx(625),
        Scenario("kl-repeated-T", RepeatedSampling(kl, 10), mab_pair,
                 {"kl/repeated-T": "pass", "kl/repeated-T-advanced": "pass"},
                 about="T = 10 draws from the MAB fixture's worst pair: exact T-fold loss vs composition"),
        Scenario("kl-inexact", InexactPolicy(kl, iterations=3, step=1.0), mab_pair,
                 {"kl/inexact": "pass", "kl/inexact-corrected": "pass"},
                 about="3 mirror-ascent steps toward the MAB policy: (eps + 2 eps_hat, e^eps_hat delta)"),
    ]


def default_suite() -> list[Scenario]:
    """The scenarios of ``python -m audit run``."""
    bit = Dataset({"bit": [0]})
    value = Dataset({"value": [0.5, 0.25]})
    ballots = votes([6, 5, 5, 2])
    expmech = ExponentialMechanism(1.0)
    exp_pair = worst_pair(expmech, add_remove(ballots, [vote_record(j, 4) for j in range(4)]), pure_epsilon).pair
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
        *kl_paper_scenarios(),
        *po_scenarios(),
        *align_scenarios(),
    ]


def po_scenarios() -> list[Scenario]:
    """The fixtures of claims.md for po/* (spec part C), with the tight Gaussian curve beside DP-PG's claims."""
    from audit import po_fixtures as po
    from neighbors.relations import Pair as _Pair
    from neighbors.search import worst_pair as _worst

    out = []
    # The violation needs 10^7 samples per side; the valid convention passes at any budget.
    for name, conv, expect, factor in (("po-dp-pg-reward", "reward", "violation", 10),
                                       ("po-dp-pg-advantage", "advantage", "pass", 2)):
        mech, pair = po.dppg(conv), po.population(2, 1, 0)
        out.append(Scenario(name, mech, pair, {"po/dp-pg": expect, "po/dp-pg-tight": "pass"}, samples_factor=factor,
                            about=f"DP-PG, claimed (4, 1e-5), {conv} convention (spec C.2)",
                            claims=po.tight_claims(mech, pair.d)))
    mech, pair = po.dppg("advantage", T=5, output="transcript"), po.population(2, 5, 2)
    out.append(Scenario("po-meta-one-pass", mech, pair, {"po/dp-pg": "pass", "po/meta": "pass", "po/dp-pg-tight": "pass"},
                        samples_factor=2, about="meta-algorithm, T = 5, one user changed in round 3: one round's loss",
                        claims=po.tight_claims(mech, pair.d)))
    mech, pair = po.dppg("advantage", T=5, schedule="repeat"), po.population(2, 1, 0)
    out.append(Scenario("po-meta-repeat", mech, pair, {"po/dp-pg": "violation", "po/meta": "violation",
                                                       "po/dp-pg-tight": "pass"}, samples_factor=6,
                        about="users repeat in all 5 rounds: the rounds compose and the one-pass claim fails",
                        claims=po.tight_claims(mech, pair.d)))
    base = po.batch()
    for name, mech, expect in (("po-dp-npg", po.npg(), "pass"), ("po-dp-npg-unenforced", po.npg(False), "violation"),
                               ("po-dp-rebel", po.rebel(), "pass")):
        pairs = [_Pair(base, base.replace(i, c), f"replace user {i} by {c}", "user-level")
                 for i in range(len(base)) for c in po.user_candidates()]
        pair = _worst(mech, pairs, pure_epsilon).pair
        cid = "po/dp-rebel" if name == "po-dp-rebel" else "po/dp-npg"
        out.append(Scenario(name, mech, pair, {cid: expect}, about=f"{mech.name} on one round's batch, worst user swap"))
    return out


def align_scenarios() -> list[Scenario]:
    """The fixtures of claims.md for align/* (spec part B)."""
    from audit import align_fixtures
    return align_fixtures.scenarios()


def full_suite() -> list[Scenario]:
    """The default suite plus fixtures that need 10^8 samples per side."""
    from audit import po_fixtures as po
    mech, pair = po.dppg("reward", epsilon=1.0), po.population(2, 1, 0)
    from audit import align_fixtures
    return [*default_suite(), *align_fixtures.full_scenarios(), Scenario(
        "po-dp-pg-reward-eps1", mech, pair, {"po/dp-pg": "violation", "po/dp-pg-tight": "pass"}, samples_factor=100,
        about="DP-PG, claimed (1, 1e-5), rewards in [-R, R]: tight 1.098 (spec C.2)", claims=po.tight_claims(mech, pair.d))]


SUITES = {"default": default_suite, "full": full_suite}
