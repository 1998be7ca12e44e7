"""``python -m audit bench``: the ceilings it divides by, and its JSON record."""

import json

import numpy as np
import pytest
from scipy import stats

from dpaudit.catalog import classic
from dpaudit.cli import main, parser
from dpaudit.core import InputError
from dpaudit.engine.bounds import (
    CEILING_SHORTLIST,
    all_subsets,
    best_event,
    ceiling,
    clopper_pearson,
    epsilon_from_bounds,
    joint_epsilon,
)
from dpaudit.mechanisms.classic import Laplace, RandomizedResponse
from dpaudit.neighbors import Dataset
from dpaudit.runs import bench, costs
from dpaudit.runs.bench import estimation_samples, split_and_count


def _case(name):
    return next(c for c in classic.bench() if c.name.startswith(name))


@pytest.mark.parametrize("samples,expected", [(1_000_000, 0.809), (10_000_000, 0.919)])
def test_gaussian_ceiling_matches_the_figures_of_issue_16(samples, expected):
    """Analytic Gaussian with ε(1e-5) = 1: the best threshold event fixed in advance on 80 % of
    the samples certifies 0.809 at 1e6 and 0.919 at 1e7 with the joint test of the ratio (the
    Clopper–Pearson pair's 0.753 and 0.884, computed independently in issue #16)."""
    case = _case("gaussian")
    assert case.ceiling(estimation_samples(samples), 0.95).epsilon == pytest.approx(expected, abs=5e-4)
    assert classic.analytic_gaussian_shift(1.0, 1e-5) == pytest.approx(0.268, abs=5e-4)


def test_ceiling_is_the_best_single_event_at_expected_counts():
    """Randomized response ε = 1: the ceiling is the Clopper–Pearson bound of output 1 (or 0) at
    its expected counts — recomputed here by hand — and no other set does better."""
    rr = RandomizedResponse(1.0)
    p = rr.output_distribution(Dataset({"bit": [0]}))
    q = rr.output_distribution(Dataset({"bit": [0, 1]}))
    n = 800_000
    lo, _ = clopper_pearson(p[0] * n, n, 0.025)
    _, hi = clopper_pearson(q[0] * n, n, 0.025)
    by_hand = float(epsilon_from_bounds(lo, hi, 0.0))
    assert ceiling(*all_subsets(p, q), n, 0.0, 0.95) == pytest.approx(by_hand, rel=1e-9)
    assert 0.99 < by_hand < 1.0
    # twin: a worse event alone (the whole output space) certifies nothing
    assert ceiling(np.array([1.0]), np.array([1.0]), n, 0.0, 0.95) == 0.0


def test_sparse_vector_distribution_matches_its_sampler():
    """The exact output distribution behind the sparse vector's ceiling agrees with 10^6 draws
    (each cell within 5 standard errors); a distribution for other queries does not."""
    case = _case("sparse")
    rows = case.mechanism.sample(case.d_prime, 1_000_000, np.random.default_rng(0))
    first = np.where((rows == 1).any(axis=1), np.argmax(rows == 1, axis=1), rows.shape[1])
    freq = np.bincount(first, minlength=rows.shape[1] + 1) / len(rows)
    exact = classic.sparse_vector_distribution(case.mechanism, case.d_prime)
    se = np.sqrt(exact * (1 - exact) / len(rows))
    assert np.all(np.abs(freq - exact) <= 5 * se)
    other = classic.sparse_vector_distribution(case.mechanism, case.d)
    assert np.any(np.abs(freq - other) > 5 * se)


def test_split_and_count_reference_is_a_valid_auditor():
    """The plain reference certifies most of Laplace ε = 1 and nothing on identical sides."""
    value = Dataset({"value": [0.5]})
    assert 0.9 <= split_and_count(Laplace(1.0), value, value.add({"value": 1.0}), 400_000, 0) <= 1.0
    assert split_and_count(Laplace(1.0), value, value, 400_000, 0) < 0.05


@pytest.mark.slow  # every family's bench cases and views at 2e4 samples (~15 s)
def test_bench_json_has_every_row_with_its_ceiling(capsys):
    """A smoke run at a tiny budget: per case throughput against both references, per view
    ε_lower / ceiling over two seeds, tightness rows, all as JSON on stdout."""
    assert main(["bench", "--samples", "20000", "--seeds", "2", "--quick", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    names = {r["family"] for r in report["throughput"]}
    assert {"sparse vector m=10", "noisy histogram 5 bins", "gaussian eps(1e-5)=1", "laplace"} <= names
    for r in report["throughput"]:
        assert r["ours_seconds"] > 0 and r["split_seconds"] > 0 and r["ours_time_over_split"] > 0
    with_ceiling = [r for r in report["throughput"] if "ceiling" in r]
    assert {r["family"] for r in with_ceiling} >= {"sparse vector m=10", "randomized response", "report noisy max"}
    assert all(r["ceiling"] > 0 and np.isfinite(r["ours_over_ceiling"]) for r in with_ceiling)
    views = {(v["family"], v["view"]) for v in report["views"]}
    assert ("sparse vector m=10", "rows") in views and ("laplace", "threshold") in views
    assert ("laplace", "rows") not in views  # rows needs integer outputs: skipped, not an error
    assert all(len(v["ratios"]) == 2 and v["min"] <= v["median"] for v in report["views"])
    assert {t["audit"] for t in report["tightness"]} >= {"laplace eps=1", "gaussian eps(1e-5)=1"}
    assert all(t["samples_per_side"] == 20000 for t in report["tightness"])


def test_laplace_shift_ceiling_uses_both_tails():
    """The Laplace ceiling is symmetric in the pair (both directions are searched)."""
    n = 800_000
    a = ceiling(stats.laplace.sf(np.linspace(-5, 5, 2001), 0.5), stats.laplace.sf(np.linspace(-5, 5, 2001), 1.5),
                n, 0.0, 0.95)
    b = _case("laplace").ceiling(n, 0.95).epsilon
    assert a == pytest.approx(b, abs=2e-3)


def _every_candidate_bounded(p_d, p_dp, n, delta, confidence, pair):
    """best_event's answer with the pair's bounds of every candidate inverted (no pruning): the
    shortlist by the pair's bound raised to the joint test's, then the argmax of both directions."""
    alpha = (1 - confidence) / 2
    k = np.clip(p_d, 0, 1) * n, np.clip(p_dp, 0, 1) * n
    (lo_d, hi_d), (lo_dp, hi_dp) = clopper_pearson(k[0], n, alpha), clopper_pearson(k[1], n, alpha)
    scores = [epsilon_from_bounds(lo_d, hi_dp, delta), epsilon_from_bounds(lo_dp, hi_d, delta)]
    for side, fav, oth in ((0, k[0], k[1]), (1, k[1], k[0])):
        if not pair:
            top = np.argsort(-scores[side], kind="stable")[:CEILING_SHORTLIST]
            scores[side][top] = np.maximum(scores[side][top], joint_epsilon(fav[top], n, oth[top], n, delta, alpha))
    i, j = int(np.argmax(scores[0])), int(np.argmax(scores[1]))
    best = (scores[0][i], i, 0) if scores[0][i] >= scores[1][j] else (scores[1][j], j, 1)
    return max(0.0, float(best[0])), best[1], best[2]


@pytest.mark.parametrize("dist,scale,n,delta", [(stats.laplace, 1.0, 800_000, 0.0), (stats.norm, 4.0, 80_000, 1e-5),
                                                (stats.logistic, 2.0, 3_000_000, 0.0)])
def test_the_pruned_ceiling_is_every_candidates_bit_for_bit(dist, scale, n, delta):
    """best_event inverts the pair's bounds only where a candidate can still be in the shortlist (or
    the best one); every candidate bounded gives the same ε (compared exactly), index and side, with
    the joint test and with the pair alone, on 2·5001 threshold events of a shift."""
    t = np.linspace(-30 * scale, 30 * scale + 1, 5001)
    p_d = np.concatenate([dist.sf(t, 0, scale), dist.cdf(t, 0, scale)])
    p_dp = np.concatenate([dist.sf(t, 1, scale), dist.cdf(t, 1, scale)])
    for pair in (False, True):
        assert tuple(best_event(p_d, p_dp, n, delta, 0.95, pair)) == _every_candidate_bounded(p_d, p_dp, n, delta,
                                                                                             0.95, pair)


def test_same_sample_ceiling_counts_the_audits_own_estimation_samples():
    """The samples the same-sample ceiling counts are the audit's: its own event, counted there
    by the bench's path, gives back the audit's counts exactly (seeded, 2e5 samples per side)."""
    from dpaudit.engine.api import audit_mechanism
    from dpaudit.engine.runner import estimation_outputs
    case = _case("sparse")
    r = audit_mechanism(case.mechanism, case.d, case.d_prime, samples=200_000, seed=3)
    bound = r.estimate.bounds[0]
    def counts(seed):
        return [sum(int(bound.event.contains(out).sum()) for out in
                    estimation_outputs(case.mechanism, (case.d, case.d_prime), 200_000, seed, s))
                for s, side in enumerate((case.d, case.d_prime))]
    k = counts(3)
    assert (k[0], k[1]) == (bound.counts[0], bound.counts[2])
    assert counts(4) != k  # twin: another seed's samples do not give these counts back


def test_the_default_suite_row_runs_the_real_command_of_the_chosen_families(monkeypatch):
    """The row measures ``python -m dpaudit run --quiet`` in a new process (every family), or with
    ``--family NAME`` for each family ``bench --family`` keeps, and reads back its exit code, last
    line, CPU and memory (the process is faked here: tests/test_scale.py runs it for real)."""
    seen = []

    def fake(args, **kwargs):
        seen.append(list(args))
        return costs.Cost(command="python -m dpaudit " + " ".join(args), cpu_seconds=2.5, wall_seconds=2.0,
                          peak_mb=300.0, exit_code=1, last_line="the last line")

    monkeypatch.setattr(costs, "command_cost", fake)
    whole, some = bench.default_suite(), bench.default_suite(["kl", "classic"])
    assert seen == [["run", "--quiet"], ["run", "--quiet", "--family", "kl", "--family", "classic"]]
    assert whole["command"] == "python -m dpaudit run --quiet"
    assert some["command"] == "python -m dpaudit run --quiet --family kl --family classic"
    assert (some["exit_code"], some["summary"], some["cpu_seconds"], some["peak_mb"]) == (1, "the last line", 2.5, 300)


def test_bench_parts_are_the_parsers():
    """``bench --only`` offers exactly the parts the bench has (the parser keeps its own copy so
    that ``--help`` imports no numpy)."""
    assert parser.BENCH_PARTS == bench.PARTS


def test_throughput_ratio_is_of_median_cpu_over_interleaved_runs(monkeypatch):
    """Ours and split-and-count alternate, in reverse order every other round, and the ratio is of
    their median CPU seconds: a made-up clock charging ours 1, 1, 5 s and split 2 s gives 0.5 (the
    mean would give 0.83)."""
    order, cpu = [], iter([1.0, 2.0, 2.0, 1.0, 5.0, 2.0])
    monkeypatch.setattr(bench, "_audit", lambda case, samples, seed, events="auto": order.append("ours") or 0.5)
    monkeypatch.setattr(bench, "split_and_count", lambda *a, **k: order.append("split") or 0.4)
    monkeypatch.setattr(bench, "cpu_timed", lambda fn: (fn(), next(cpu)))
    row = bench.throughput(_case("randomized"), 20_000, 0, reps=3)
    assert order[2:8] == ["ours", "split", "split", "ours", "ours", "split"]  # after one warm-up of each
    assert row["ours_time_over_split"] == pytest.approx(0.5)
    assert (row["ours_cpu_seconds"], row["split_cpu_seconds"], row["reps"]) == (1.0, 2.0, 3)


def test_bench_family_keeps_the_named_families_and_refuses_others(capsys):
    assert [f.name for f in bench.chosen_families(["kl"])] == ["kl"]
    assert len(bench.chosen_families()) == len(bench.catalog.families())
    with pytest.raises(InputError, match="did you mean 'kl'"):
        bench.chosen_families(["klx"])
    assert main(["bench", "--samples", "1e4", "--family", "nope"]) == 2
    assert "family = 'nope' is invalid" in capsys.readouterr().err


def test_wilson_uses_the_normal_quantile_of_scipy_stats_bit_for_bit():
    """The Wilson bounds' z is scipy.special.ndtri (what stats.norm.isf evaluates, without its
    per-call argument checks: the pair search scores thousands of candidates with it): the same
    doubles at every level."""
    from dpaudit.engine.bounds import wilson
    k = np.array([0.0, 1.0, 7.0, 50.0, 99.0, 100.0])
    for alpha in (1e-300, 1e-12, 0.025, 0.05, 0.25, 0.5, 0.975):
        z = stats.norm.isf(alpha)
        p = k / 100
        centre = (p + z * z / 200) / (1 + z * z / 100)
        half = z * np.sqrt(np.maximum(p * (1 - p), 0) / 100 + z * z / 40000) / (1 + z * z / 100)
        expected = np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)
        for g, e in zip(wilson(k, 100, alpha), expected, strict=True):
            np.testing.assert_array_equal(g, e)
