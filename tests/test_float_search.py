"""The rounding-adversarial pair search (dpaudit.engine.floatsearch, dpaudit.neighbors.floats) on naive and
exact float implementations of a sum, a mean and a two-pass variance (dpaudit.mechanisms.floatsums).

The white-box screen is deterministic (exact numbers asserted).  The audits from samples use confidence
0.95 and seeds 0..4: a naive implementation's claim is refuted on every seed (its realised sensitivity is
2–38 times the declared one, so the pair's true ε is 2–38 times the claim), and an exact one is refuted on at
most one of five (each audit is valid at 0.95: P(≥ 2 of 5 | valid) ≤ 1 − 0.95⁵ − 5·0.05·0.95⁴ = 0.023)."""

import json
import math

import numpy as np
import pytest

from dpaudit.core import InputError
from dpaudit.engine.floatsearch import FloatRecords, float_space_from_spec, realised_sensitivity, search_floats
from dpaudit.mechanisms.floatsums import (
    ExactMean,
    ExactSum,
    ExactVariance,
    NaiveMean,
    NaiveSum,
    NaiveVariance,
)
from dpaudit.neighbors.floats import binade_edges, float_pairs

NAIVE_MEAN = NaiveMean()
EXACT_MEAN = ExactMean()
NAIVE = (NaiveSum(), NaiveMean(), NaiveVariance())
EXACT = (ExactSum(), ExactMean(), ExactVariance())


def test_float_pairs_are_valid_neighbours_within_the_bounds():
    lower, upper = 2.0 ** 40, 2.0 ** 40 + 1
    pairs = float_pairs(lower, upper, rng=np.random.default_rng(0), sizes=(10, 1000))
    assert len(pairs) == 2 * 9 * 2
    for p in pairs:
        assert p.relation == "swap" and p.d.shape == p.d_prime.shape
        assert np.all((p.d >= lower) & (p.d <= upper)) and np.all((p.d_prime >= lower) & (p.d_prime <= upper))
        assert np.count_nonzero(p.d != p.d_prime) <= 1
    grown = float_pairs(-1.0, 1.0, rng=np.random.default_rng(0), sizes=(10,), relation="add-remove")
    assert all(len(p.d_prime) == len(p.d) + 1 for p in grown)
    edges = binade_edges(0.75, 4.0)
    assert {1.0, 2.0, 4.0, float(np.nextafter(2.0, 0.0))} <= set(edges) and min(edges) == 0.75


@pytest.mark.parametrize("make,field", [
    (lambda: float_pairs(1.0, 1.0, rng=np.random.default_rng(0)), "bounds"),
    (lambda: float_pairs(0.0, math.inf, rng=np.random.default_rng(0)), "bounds"),
    (lambda: float_pairs(0.0, 1.0, rng=np.random.default_rng(0), sizes=(1,)), "sizes"),
    (lambda: float_pairs(0.0, 1.0, rng=np.random.default_rng(0), relation="label-flip"), "relation"),
    (lambda: float_space_from_spec("floats", object(), "swap"), "lower and upper"),
    (lambda: float_space_from_spec("floats:1:x", NAIVE_MEAN, "swap"), "LOWER:UPPER"),
    (lambda: float_space_from_spec("floats:2:1", NAIVE_MEAN, "swap"), "LOWER < UPPER"),
    (lambda: float_space_from_spec("floaty", NAIVE_MEAN, "swap"), "floats"),
    (lambda: FloatRecords(0.0, 1.0, keep=0), "keep")])
def test_bad_float_search_inputs_name_their_field(make, field):
    with pytest.raises(InputError, match=field):
        make()


def screen(mechanism):
    """Every candidate's realised sensitivity (the white-box hook), the largest ratio first."""
    pairs = float_pairs(mechanism.lower, mechanism.upper, rng=np.random.default_rng(0))
    return sorted((realised_sensitivity(mechanism, p) for p in pairs), key=lambda r: -r.ratio)


def test_the_screen_measures_the_naive_implementations_above_their_declared_sensitivity():
    """Deterministic: the realised |f(D) - f(D')| of the candidates, as implemented.  Naive: the running sum
    of 10^4 records near 2^40 rounds to whole units of 2 (ulp(2^53.3)), so a change of 1 moves it by 4; the
    mean by 2^-12 against 10^-4; the two-pass variance around a rounded mean near 2^44 by 38 times its
    bound.  Exact (centred, fsum): never above the declared value (relaxed by 2^-32 for the last rounding)."""
    top = {m.name: screen(m)[0] for m in NAIVE}
    assert top["naive-float-sum"].ratio == 4.0 and top["naive-float-sum"].declared == 1.0
    assert top["naive-float-mean"].ratio >= 2.44140625
    assert top["naive-float-variance"].ratio > 30
    for m in EXACT:
        assert screen(m)[0].ratio <= 1.0


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", NAIVE + EXACT, ids=lambda m: m.name)
def test_the_search_finds_a_pair_unaided_refuting_the_naive_and_passing_the_exact(mechanism):
    """Value views only (``events="threshold"``): the audit is of the realised sensitivity, not of how
    the doubles of ``q + noise`` are spread (the floating view's question, Mironov 2012)."""
    refuted, ratios = 0, []
    for seed in range(5):
        result = search_floats(mechanism, samples=200_000, seed=seed, events="threshold")
        screen_record = result.search["sensitivity"]
        ratios.append(screen_record["chosen"]["ratio"])
        refuted += result.verdict == "violation"
    if mechanism.name.startswith("naive"):
        assert refuted == 5 and min(ratios) >= 2.0
    else:
        assert refuted <= 1 and max(ratios) <= 1.0


def test_the_command_line_searches_floats_and_records_the_screen(cli, tmp_path):
    naive = cli("run", "--mechanism", "tests.test_float_search:NAIVE_MEAN", "--search", "floats", "--events",
                "threshold", "--samples", "100000", "--quiet", "--out", tmp_path / "naive")
    assert naive.returncode == 1, naive.stdout + naive.stderr
    scenario = json.loads((tmp_path / "naive" / "results.json").read_text())["scenarios"][0]
    assert scenario["search"]["sensitivity"]["chosen"]["ratio"] > 2
    assert scenario["relation"] == "swap" and scenario["verdict"] == "violation"
    exact = cli("run", "--mechanism", "tests.test_float_search:EXACT_MEAN", "--search", "floats", "--events",
                "threshold", "--samples", "100000", "--quiet", "--json")
    assert exact.returncode == 0, exact.stdout + exact.stderr
    assert json.loads(exact.stdout)["records"][0]["verdict"] == "pass"
    bad = cli("run", "--mechanism", "tests.test_float_search:EXACT_MEAN", "--search", "floats", "--data",
              tmp_path / "x.npz", "--quiet")
    assert bad.returncode == 2 and "drop --data" in bad.stderr
