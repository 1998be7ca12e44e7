"""The KL-regularization paper (Zhang, Shi, Panaganti, Ziani, Wierman): the KL bandit (eq. 8),
the linear bandit (eq. 10), RLHF with the Bradley–Terry MLE (eq. 11) and the §4.4 extensions.

The default suite holds every ``kl-mab/*``, ``kl-linear/*``, ``kl-rlhf/*``, ``kl/repeated-T`` and
``kl/inexact`` fixture of the claims table: valid claims must pass on the worst pair that
:func:`neighbors.search.worst_pair` finds, and the printed approximate statements of Theorems 1–3
and Corollary 1 must be caught on the witnesses of spec A.2.4, A.3.3 and A.4.2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from audit.catalog.classic import categorical_reference
from audit.catalog.family import BenchCase, Family, Scenario, entry
from audit.exact import pure_epsilon
from mechanisms.kl_bandits import KLBandit
from mechanisms.kl_extensions import InexactPolicy, RepeatedSampling
from mechanisms.kl_linear import KLLinearBandit
from mechanisms.kl_rlhf import KLRLHF
from neighbors import Dataset, Pair, add_remove, swap
from neighbors.search import feature_directions, search_feature_pairs, worst_pair
from neighbors.synthetic import bandit_candidates, bandit_log, comparisons, linear_log, unit_vectors


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


def mab_scenarios() -> list[Scenario]:
    """The KL bandit's fixtures: worst add/remove and swap pairs, and the A.2.4 witnesses."""
    kl = KLBandit(3, eta=0.25, beta0=0.5, reward_range=1.0, pi0=(0.02, 0.49, 0.49))
    row3 = bandit_log([[1.0], [0.067345] * 3000])
    row1 = bandit_log([[], [0.0] * 1_000_000])
    return [
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


def scenarios() -> list[Scenario]:
    return [*mab_scenarios(), *kl_paper_scenarios()]


# --- rate sweeps: coverage growing linearly in n (Theorem 1, Corollaries 2-3 state O(1/n)) ---

def _mab(n: int) -> tuple[Any, Pair]:
    per_arm = max(2, n // 3)
    # Arms 1 and 2 have arm 0's mean, so π(arm 0) stays near π0 and its event is observable.
    log = bandit_log([[1.0] + [0.0] * (per_arm - 1), [1 / per_arm] * per_arm, [1 / per_arm] * per_arm])
    mech = KLBandit(3, eta=0.02, beta0=0.5, pi0=(0.02, 0.49, 0.49))
    return mech, worst_pair(mech, add_remove(log, bandit_candidates(3)), pure_epsilon).pair


def _linear(n: int) -> tuple[Any, Pair]:
    phi = np.tile(np.eye(2), (max(1, n // 2), 1))
    rewards = np.zeros(len(phi))
    rewards[0] = 1.0
    log = linear_log(phi, rewards)
    mech = KLLinearBandit(((1.0, 0.0), (-1.0, 0.0), (0.0, 1.0)), ridge=2.0, beta0=0.2, eta=0.02,
                          pi0=(0.02, 0.49, 0.49), k1=1.0)
    return mech, Pair(log, log.remove(0), "remove the reward-1 point along e1")


def _rlhf(n: int) -> tuple[Any, Pair]:
    n = max(4, n - n % 2)
    log = comparisons(np.full((n, 1), 2.0), [1] * (n // 2) + [0] * (n // 2))
    mech = KLRLHF(((1.0,), (-1.0,)), ridge=1.0, beta0=0.01, eta=0.02, pi0=(0.98, 0.02))
    return mech, Pair(log, log.flip(0), f"flip one label (k {n // 2} -> {n // 2 - 1})", "label-flip")


def bench() -> list[BenchCase]:
    mab = KLBandit(3, eta=0.25, beta0=0.5, pi0=(0.02, 0.49, 0.49))
    log = bandit_log([[1.0, 0.0, 0.0, 0.0], [0.5] * 20, [0.3] * 30])
    lin = KLLinearBandit(((1.0,), (-1.0,)), ridge=100.0, beta0=0.0, eta=0.02, pi0=(1e-3, 1 - 1e-3))
    empty = linear_log([], [], d=1)
    rlhf = KLRLHF(((1.0,), (-1.0,)), ridge=1.0, beta0=0.01, eta=0.1)
    canon = comparisons(np.full((10, 1), 2.0), [1] * 5 + [0] * 5)
    return [
        BenchCase("kl-bandit", mab, log, log.remove(0), categorical_reference(mab.output_distribution(log))),
        BenchCase("kl-linear", lin, empty, empty.add({"phi": [1.0], "reward": 1.0}),
                  categorical_reference(lin.output_distribution(empty))),
        BenchCase("kl-rlhf", rlhf, canon, canon.flip(0), categorical_reference(rlhf.output_distribution(canon))),
    ]


FAMILY = Family(
    name="kl",
    about="KL-regularization Itself is Differentially Private in Bandits and RLHF (Zhang et al.)",
    mechanisms=tuple(entry(cls) for cls in (KLBandit, KLLinearBandit, KLRLHF)),
    generators={"bandit_log": bandit_log, "comparisons": comparisons, "linear_log": linear_log},
    scenarios=scenarios,
    sweeps={"kl-mab": _mab, "kl-linear": _linear, "kl-rlhf": _rlhf},
    bench=bench,
)
