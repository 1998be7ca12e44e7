"""Large budgets: the counts capability, the capped selection with its tail pilot, the errata suite
and the budget planner (issue 18)."""

import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats

from dpaudit import Guarantee, audit_mechanism, catalog
from dpaudit.engine import memory, runner, streaming
from dpaudit.engine.plan import Candidates, plan, render
from dpaudit.engine.selection import count_members
from dpaudit.engine.statistics import Identity
from dpaudit.engine.views import Event
from dpaudit.mechanisms.base import capabilities
from dpaudit.mechanisms.kl_bandits import KLBandit
from dpaudit.mechanisms.kl_extensions import InexactPolicy, RepeatedSampling
from dpaudit.neighbors.synthetic import bandit_log
from dpaudit.runtime.execution import Execution
from dpaudit.runtime.progress import projected_end
from dpaudit.testing import MechanismCheckError, check_mechanism

MECH = KLBandit(3, eta=0.25, beta0=0.5, pi0=(0.02, 0.49, 0.49))
LOG = bandit_log([[1.0, 0.0, 0.0, 0.0], [0.2, 0.9, 0.4], [0.5] * 6])
ALPHA = 1e-3  # level of the chi-square tests below: a correct capability fails one with probability 1e-3


def _homogeneity_pvalue(counts: np.ndarray, drawn: np.ndarray) -> float:
    """Chi-square test that two count vectors come from one distribution (cells seen in either)."""
    table = np.vstack([counts, np.bincount(drawn, minlength=len(counts))])
    table = table[:, table.sum(axis=0) > 0]
    return float(stats.chi2_contingency(table)[1])


@dataclass(frozen=True)
class BrokenCounts:
    """A KL bandit's own ``sample`` beside a ``sample_counts`` that each subclass breaks its own way."""

    base: KLBandit
    name: str = "broken-counts"

    def sample(self, data, size, rng):
        return self.base.sample(data, size, rng)


@dataclass(frozen=True)
class Skewed(BrokenCounts):
    """A KL bandit whose sample_counts draws from a slightly different policy (a broken capability)."""

    name: str = "skewed"

    def sample_counts(self, data, size, rng):
        p = self.base.output_distribution(data) * np.array([1.0, 1.002, 0.998])
        return rng.multinomial(size, p / p.sum())


class Spy:
    """The bandit with (``counts=True``) or without its capability, recording the sizes it is asked for."""

    name = "spy"

    def __init__(self, base: KLBandit, counts: bool) -> None:
        self.base, self.sampled, self.counted = base, [], []
        if counts:
            self.sample_counts = self._sample_counts

    def sample(self, data, size, rng):
        self.sampled.append(size)
        return self.base.sample(data, size, rng)

    def _sample_counts(self, data, size, rng):
        self.counted.append(size)
        return self.base.sample_counts(data, size, rng)


@pytest.mark.parametrize("mechanism", [MECH, InexactPolicy(MECH, iterations=2, step=1.0)],
                         ids=["kl-bandit", "inexact"])
def test_counts_have_the_law_of_sample_at_1e7_draws(mechanism):
    """sample_counts vs np.bincount(sample) at 1e7 draws each: chi-square homogeneity at level 1e-3."""
    assert "sample_counts" in capabilities(mechanism)
    counts = mechanism.sample_counts(LOG, 10_000_000, np.random.default_rng(1))
    drawn = mechanism.sample(LOG, 10_000_000, np.random.default_rng(2))
    assert counts.sum() == 10_000_000 and counts.dtype.kind == "i"
    assert _homogeneity_pvalue(counts, drawn) > ALPHA


def test_a_skewed_counts_capability_is_caught_at_1e7_draws():
    """The twin: probabilities off by 0.2 % are rejected by the same test."""
    broken = Skewed(MECH)
    counts = broken.sample_counts(LOG, 10_000_000, np.random.default_rng(1))
    drawn = broken.sample(LOG, 10_000_000, np.random.default_rng(2))
    assert _homogeneity_pvalue(counts, drawn) < ALPHA


def test_repeated_sampling_counts_agree_with_sample():
    mech = RepeatedSampling(MECH, 4)
    counts = mech.sample_counts(LOG, 1_000_000, np.random.default_rng(3))
    drawn = mech.sample(LOG, 1_000_000, np.random.default_rng(4))
    assert _homogeneity_pvalue(counts, drawn) > ALPHA


def test_counting_from_counts_equals_counting_the_repeated_outputs():
    """Membership is computed once per outcome by the views' own code: identical to counting outputs."""
    counts = np.array([5, 0, 17, 3], dtype=np.int64)

    @dataclass(frozen=True)
    class Fixed:
        name: str = "fixed"

        def sample_counts(self, data, size, rng):
            return counts

    outputs = np.repeat(np.arange(4), counts)
    events = [Event("D", "rows", members=np.array([0, 2])), Event("D'", "rows", members=np.array([3])),
              Event("D", "threshold", Identity(), threshold=1.5, upper=True),
              Event("D", "threshold", Identity(), threshold=2.0, upper=False)]
    got = streaming.count_from_counts(Fixed(), None, int(counts.sum()), np.random.default_rng(0), events,
                                      runner.output_kind(outputs), "here")
    assert got.tolist() == count_members(outputs, events).tolist() == [22, 3, 20, 22]


def test_the_runner_counts_estimation_chunks_without_drawing_them():
    d, dp = LOG, LOG.remove(0)
    with_counts, without = Spy(MECH, counts=True), Spy(MECH, counts=False)
    counted = audit_mechanism(with_counts, d, dp, samples=2_000_000, seed=0)
    drawn = audit_mechanism(without, d, dp, samples=2_000_000, seed=0)
    n_sel = counted.estimate.selection_samples
    # + 1: the one output runner.output_size draws (its own stream, never counted) to size the parts of a draw
    assert sum(with_counts.sampled) == 2 * n_sel + 1 and sum(with_counts.counted) == 2 * (2_000_000 - n_sel)
    assert sum(without.sampled) == 2 * 2_000_000 + 1 and not without.counted  # absent: every output is drawn
    # Same selection split, so the same event; counts of the same law: agreement within sampling noise.
    assert counted.estimates[0].event.describe() == drawn.estimates[0].event.describe()
    for i in (0, 2):
        k_c, k_d = counted.estimates[0].counts[i], drawn.estimates[0].counts[i]
        assert abs(k_c - k_d) < 6 * math.sqrt(k_d + 1)
    exact = MECH.epsilon_sup_pi0(d, dp)  # the pair's loss is at most its supremum over reference policies
    assert 0 < counted.epsilon_lower <= exact and 0 < drawn.epsilon_lower <= exact


def test_counts_that_do_not_sum_to_size_are_a_mechanism_error():
    @dataclass(frozen=True)
    class Short(BrokenCounts):
        name: str = "short"

        def sample_counts(self, data, size, rng):
            return np.array([size - 1, 0, 0])

    with pytest.raises(runner.MechanismError, match="sample_counts returned counts summing to"):
        audit_mechanism(Short(MECH), LOG, LOG.remove(0), samples=100_000, seed=0)


def test_selection_is_capped_and_memory_stays_bounded_at_any_budget():
    assert streaming.selection_size(10**12, 0.2) == streaming.SELECTION_CAP
    assert streaming.selection_size(1000, 0.2) == 200
    for budget in (10**9, 10**11):
        assert memory.memory_needed(budget, 4, 8, 2) < 2 * 2**30  # a 4-vector at any budget
    assert streaming.pilot_size(10**7, 0.2, streaming.selection_size(10**7, 0.2)) == 0
    assert streaming.pilot_size(10**11, 0.2, streaming.SELECTION_CAP) == streaming.PILOT_CAP


def test_a_large_counted_budget_uses_the_capped_selection_and_refutes_row2():
    """Theorem 1 witness row 2 from samples alone: 1.8e10 per side drawn as counts, sequential, in seconds."""
    sc = next(s for s in catalog.suite("errata", ["kl"]) if s.name == "kl-mab-a24-row2")
    r = audit_mechanism(sc.mechanism, sc.pair.d, sc.pair.d_prime, samples=round(1e6 * sc.samples_factor), seed=0,
                        expected=sc.expected, sequential=True)
    assert r.estimate.selection_samples == streaming.SELECTION_CAP
    assert r.as_expected and {c.claim.claim_id: c.verdict for c in r.claims}["kl-mab/thm1-approx"] == "violation"
    short = audit_mechanism(sc.mechanism, sc.pair.d, sc.pair.d_prime, samples=2_000_000_000, seed=0,
                            expected=sc.expected, sequential=True)
    assert not short.as_expected  # the twin: a third of the budget cannot reach 20.30


@dataclass(frozen=True)
class Shift:
    """N(mu, 1) under D (data = 1), N(0, 1) under D' (data = 0)."""

    mu: float
    name: str = "shift"

    def sample(self, data, size, rng):
        return rng.standard_normal(size) + self.mu * data


def test_the_tail_pilot_moves_a_threshold_into_the_tail_for_a_large_estimation_split():
    mech = Shift(0.3)
    rng = np.random.default_rng(0)
    x, y = mech.sample(1, 200_000, rng), mech.sample(0, 200_000, rng)
    start = Event("D", "threshold", Identity(), threshold=0.0, upper=True)
    rows = Event("D", "rows", members=np.array([1]))
    refined, used = streaming.refine_thresholds(
        [start, rows], x, y, n_pilot=2_000_000, n_est=10**9, deltas=[1e-6, 0.0], confidences=[0.95, 0.95],
        mechanism=mech, sides=(1, 0), seed=0, key=(0,), kinds=[runner.output_kind(x)] * 2, execution=Execution(),
        draw=runner.draw_chunk)
    assert used == 2_000_000 and refined[1] is rows  # only threshold events are re-chosen
    ev = refined[0]
    # The shift is symmetric: the upper tail favours D, the lower tail D'; either is a tail event.
    if ev.upper:
        assert ev.favours == "D" and ev.threshold > 2.5
        ratio = math.log(stats.norm.sf(ev.threshold - 0.3) / stats.norm.sf(ev.threshold))
    else:
        assert ev.favours == "D'" and ev.threshold < -2.2
        ratio = math.log(stats.norm.cdf(ev.threshold) / stats.norm.cdf(ev.threshold - 0.3))
    assert ratio > 2 * math.log(stats.norm.sf(-0.3) / stats.norm.sf(0.0))  # far more than the first threshold's
    none, zero = streaming.refine_thresholds([rows], x, y, n_pilot=2_000_000, n_est=10**9, deltas=[0.0],
                                             confidences=[0.95], mechanism=mech, sides=(1, 0), seed=0, key=(0,),
                                             kinds=[runner.output_kind(x)] * 2, execution=Execution(),
                                             draw=runner.draw_chunk)
    assert zero == 0 and none == [rows]  # nothing to refine: no pilot drawn


def test_pilot_scores_do_not_take_a_three_to_zero_tail_for_a_sure_win():
    scores = streaming.pilot_scores(np.array([3, 5000]), np.array([0, 2000]), 10**7, 10**9, 0.0, 0.025)
    assert scores[1] > scores[0]


def test_the_errata_suite_has_a_witness_for_every_refuted_printed_claim():
    registry = catalog.claims()
    scenarios = catalog.suite("errata")
    covered = {cid for sc in scenarios for cid, v in sc.expected.items() if v == "violation"}
    refuted = {c.id for c in registry.values() if c.status == "refuted"}
    assert refuted and refuted <= covered
    names = {sc.name: sc for sc in scenarios}
    assert names["align-alg2-zero-out"].pair.relation == "zero-out"
    assert names["align-trajectory-h1-cov"].mechanism.model.H == 1
    assert names["kl-mab-a24-row2"].expected["kl-mab/thm1-approx"] == "violation"
    assert not any(v == "exact-violation" for sc in scenarios for v in sc.expected.values())  # samples decide
    assert "errata" in catalog.SEQUENTIAL_SUITES


def test_plan_row2_matches_the_closed_form():
    """k = 0 under D′: the joint test's ε_lower ≈ log((p − δ)·n/log(1/(0.9 α))) with p = 1/2
    (dpaudit.engine.plan._why; the Clopper–Pearson pair's log((p_lo − δ)/(1 − (α/2)^{1/n})) needed
    4.86·10⁹); the planner's one-look budget is where this reaches 20.30 (plus the capped selection split)."""
    sc = next(s for s in catalog.suite("errata", ["kl"]) if s.name == "kl-mab-a24-row2")
    alpha = 1 - catalog.SUITE_CONFIDENCE["errata"]  # planned as its suite runs it
    result = plan(sc, pilot=2_000_000, execution=Execution(), sequential=True, confidence=1 - alpha)
    req = {r.claim_id: r for r in result.requirements}["kl-mab/thm1-approx"]
    p = sc.mechanism.output_distribution(sc.pair.d)[0]
    n = -math.log(0.9 * alpha) * math.exp(20.3) / (p - req.delta)
    assert req.single == pytest.approx(n + streaming.SELECTION_CAP, rel=0.01)
    assert req.stop is not None and req.stop[0] == 4 and req.sequential > req.single
    assert result.samples_per_side == req.stop[1]
    assert render(result).startswith(f"samples_per_side={req.stop[1]}\n")
    assert req.event is not None and req.event[0] == pytest.approx(p) and req.event[1] * req.single < 1e-100
    assert f"n ~ log(1/(0.9 alpha))*e^eps/(p - delta) = {n:.3g}" in render(result)  # why it is not log(40)·e^20.3
    easy = plan(sc, pilot=2_000_000, execution=Execution(), epsilon=15.0, delta=req.delta, confidence=1 - alpha)
    assert easy.samples_per_side < req.single / 50  # the twin: a lower target needs far fewer


def test_expected_bound_of_candidates_grows_with_n():
    cands = Candidates(np.array([2e-5, 1e-3]), np.array([1.2e-5, 0.8e-3]), "test")
    values = [cands.expected_bound(n, 5e-7, 0.95) for n in (10**6, 10**8, 10**10)]
    assert values == sorted(values) and values[-1] < math.log(2e-5 / 1.2e-5)


def test_progress_projects_the_end_of_the_budget():
    assert projected_end(600, 10.0, now=0.0).startswith(", projected end in 60 s (at ")
    assert projected_end(6000, 10.0).startswith(", projected end in 10.0 min (at ")
    assert projected_end(0, 10.0) == "" and projected_end(10, 0.0) == ""


def claim(eps):
    return Guarantee(epsilon=eps, delta=0.0, relation="add-remove", source="test", claim_id="test/claim")


@pytest.mark.slow  # 200 sequential audits, each counting its estimation split (~1-2 min)
def test_sequential_refutation_from_counts_keeps_its_confidence():
    """200 seeded sequential audits of a counts-capable mechanism exactly at its claim (its exact
    pure ε), confidence 0.95: at most 10 false violations (as the other 200-run tests)."""
    d, dp = LOG, LOG.remove(0)
    exact = float(np.max(np.abs(np.log(MECH.output_distribution(d)) - np.log(MECH.output_distribution(dp)))))
    results = [audit_mechanism(MECH, d, dp, samples=4_000_000, seed=s, claims=[claim(exact)], sequential=True)
               for s in range(200)]
    assert all(len(r.sequential or "") for r in results)  # the sequential rule ran (several looks)
    assert sum(r.verdict == "violation" for r in results) <= 10
    twin = [audit_mechanism(MECH, d, dp, samples=4_000_000, seed=s, claims=[claim(0.8 * exact)], sequential=True)
            for s in range(20)]
    assert sum(r.verdict == "violation" for r in twin) >= 18  # a claim below the truth is refuted


def test_check_mechanism_tests_the_counts_capability_against_sample():
    assert "sample-counts" in check_mechanism(MECH, LOG, LOG.remove(0))

    @dataclass(frozen=True)
    class Reversed(BrokenCounts):
        name: str = "reversed"

        def sample_counts(self, data, size, rng):
            return self.base.sample_counts(data, size, rng)[::-1].copy()

    with pytest.raises(MechanismCheckError, match="sample-counts"):
        check_mechanism(Reversed(MECH), LOG)


def test_the_errata_note_lists_each_refuted_claim_with_its_samples_and_seconds():
    from dpaudit.reports.text import errata_note

    base = {"scenario": "s", "mechanism": "m", "delta": 5e-7, "epsilon_claim": 0.5, "seconds": 12.0,
            "claim_status": "refuted", "exact_verdict": "violation"}
    records = [{**base, "claim_id": "a/x", "verdict": "violation", "epsilon_lower": 0.52, "samples": 1_650_000_000},
               {**base, "claim_id": "a/y", "verdict": "pass", "epsilon_lower": 0.48, "samples": 10_000},
               {**base, "claim_id": "a/z", "claim_status": "proven", "verdict": "pass", "epsilon_lower": 0.1,
                "samples": 10}]
    note = errata_note(records)
    assert "1 of 2 printed claims" in note and "a/z" not in note
    assert "a/x  [s]: eps_lower 0.52 > 0.5 at delta 5e-07 from 1.65e+09 samples per side in 12.0 s" in note
    assert "a/y  [s]: NOT refuted from samples" in note
    assert errata_note(records[2:]) == ""


@pytest.mark.slow  # builds the errata and full suites to look the name up (~20 s)
def test_plan_cli_prints_samples_per_side_first_and_names_unknown_scenarios(capsys):
    from dpaudit.cli import main

    assert main(["plan", "kl-rlhf-label", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("samples_per_side=") and "kl-rlhf/thm3-label" in out
    assert main(["plan", "kl-rlhf-labl"]) == 2
    assert "did you mean 'kl-rlhf-label'" in capsys.readouterr().err
