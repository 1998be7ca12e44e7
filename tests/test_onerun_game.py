"""The canary game: its secret stream, datasets per relation, runs, records and bad user code."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.core import InputError
from dpaudit.onerun import CanaryGame, Fixed, Grid, Split, audit_one_run, one_run_bound, plan_canaries
from dpaudit.onerun.fixtures import GaussianCanaries, NullCanaries, coordinate_score
from dpaudit.onerun.game import secret_sha256
from dpaudit.onerun.planner import best_fixed_rule


class Recorder:
    """A mechanism and scorer that record what they were shown."""

    def __init__(self, m: int):
        self.m, self.datasets, self.scored = m, [], []

    def run(self, dataset, rng):
        self.datasets.append(list(dataset))
        return rng.standard_normal(self.m)

    def score(self, output, canaries):
        self.scored.append(list(canaries))
        return output


@pytest.mark.fresh_entropy
def test_secret_is_fresh_balanced_and_hashed():
    # the secret no longer follows the seed (issue 37 item 3): the same seed gives two different
    # secrets, each balanced (|S| in (400, 600) for m = 1000 fails with probability < 1e-9) and hashed
    rec = Recorder(1000)
    a = CanaryGame(m=1000, seed=4).play(rec, rec, canaries=range(1000))
    b = CanaryGame(m=1000, seed=4).play(rec, rec, canaries=range(1000))
    assert not np.array_equal(a.secret, b.secret) and 400 < a.secret.sum() < 600 and 400 < b.secret.sum() < 600
    assert a.secret_sha256 == secret_sha256(a.secret) != secret_sha256(b.secret) == b.secret_sha256
    # the mechanism's randomness still follows the seed
    assert np.array_equal(a.scores, b.scores)


def test_add_remove_dataset_holds_exactly_the_included_canaries_and_scorer_never_sees_s():
    rec = Recorder(50)
    record = CanaryGame(m=50, seed=1).play(rec, rec, canaries=range(50), base=["b0", "b1"])
    included = [j for j in range(50) if record.secret[j]]
    assert rec.datasets == [["b0", "b1", *included]]
    assert rec.scored == [list(range(50))]  # every canary, in order, whatever S is


def test_numpy_base_and_user_level():
    game = CanaryGame(m=3, seed=0)
    out = game.dataset(np.zeros((2, 2)), [np.ones(2), 2 * np.ones(2), 3 * np.ones(2)], np.array([1, 0, 1]))
    assert out.shape == (4, 2) and out[2, 0] == 1 and out[3, 0] == 3
    users = CanaryGame(m=2, seed=0, relation="user-level").dataset([["u"]], [["a", "b"], ["c"]], np.array([1, 1]))
    assert users == [["u"], ["a", "b"], ["c"]]
    with pytest.raises(InputError, match="user-level"):
        CanaryGame(m=1, relation="user-level").dataset([], ["abc"], np.array([1]))
    with pytest.raises(InputError, match="relation"):
        CanaryGame(m=2, relation="swap")


def test_runs_combine_into_one_game_of_r_times_m():
    rec = Recorder(10)
    record = CanaryGame(m=10, seed=2, runs=3).play(rec, rec, canaries=range(10))
    assert record.m == 30 and len(rec.datasets) == 3
    for run in range(3):
        assert rec.datasets[run] == [j for j in range(10) if record.secret[10 * run + j]]
    res = audit_one_run(GaussianCanaries(3.0, 100), coordinate_score, m=100, runs=4, rule=Fixed(20, 20), seed=1)
    assert res.m == 400 and res.runs == 4 and res.tests[0].m == 400


def test_same_seed_and_secret_same_result_and_record_fields():
    # the same game twice needs the same secret given explicitly (issue 37 item 3: the seed no longer fixes it),
    # and the same tie-break seed (drawn from fresh entropy when not given)
    secret = np.random.default_rng(12).integers(0, 2, 200)
    kw = dict(m=200, rule=Grid.symmetric([10, 20]), seed=9, deltas=(1e-5, 1e-6), secret=secret, tiebreak=3)
    a = audit_one_run(GaussianCanaries(2.0, 200), coordinate_score, **kw)
    b = audit_one_run(GaussianCanaries(2.0, 200), coordinate_score, **kw)
    assert a.to_json() == b.to_json()
    doc = a.to_dict()
    for key in ("m", "r", "v", "k_plus", "k_minus", "rule", "correction", "alpha", "bounds", "secret_sha256", "claims",
                "tiebreak"):
        assert key in doc
    assert doc["tiebreak"] == "3"
    assert "bonferroni over 2" in doc["correction"] and doc["tests"][0]["alpha"] == pytest.approx(0.025)
    assert a.epsilon_at(1e-6) >= a.epsilon_at(1e-5)  # a smaller delta is a stronger claim


def test_misbehaving_scorer_and_mechanism_are_bad_input():
    with pytest.raises(InputError, match="scores"):
        audit_one_run(NullCanaries(10), lambda o, c: np.full(10, np.nan), m=10)
    with pytest.raises(InputError, match="scores"):
        audit_one_run(NullCanaries(10), lambda o, c: np.zeros(9), m=10)
    with pytest.raises(InputError, match="mechanism"):
        audit_one_run(object(), coordinate_score, m=10)
    with pytest.raises(InputError, match="canaries"):
        CanaryGame(m=10).play(NullCanaries(10), coordinate_score, canaries=range(7))


def test_sample_protocol_is_accepted():
    class Sampler:
        def sample(self, data, size, rng):
            return rng.standard_normal((size, 20))

    res = audit_one_run(Sampler(), coordinate_score, m=20, rule=Fixed(2, 2))
    assert res.r == 4


def test_split_rule_bounds_only_on_the_held_out_part():
    secret = np.random.default_rng(0).integers(0, 2, 1000)
    scores = 3.0 * secret + np.random.default_rng(1).standard_normal(1000)
    res = one_run_bound(scores, secret, rule=Split(select=0.4, seed=3))
    assert res.tests[0].m == 600 and res.epsilon_lowers[0] > 0
    assert res.rule["rule"] == "split" and "held-out" in res.rule["correction"]


def test_planner_reaches_its_target_and_says_when_it_cannot():
    from dpaudit.onerun import gdp_mu
    plan = plan_canaries(2.0, mu=gdp_mu(4.0, 1e-5))
    assert plan is not None
    _rule, value = best_fixed_rule(plan.m, delta=1e-5, mu=gdp_mu(4.0, 1e-5))
    assert value >= 2.0 and plan.expected_epsilon_lower >= 2.0
    assert best_fixed_rule(plan.m // 2, delta=1e-5, mu=gdp_mu(4.0, 1e-5))[1] < 2.0
    runs = plan_canaries(2.0, mu=gdp_mu(4.0, 1e-5), canaries_per_run=1000)
    assert runs is not None and runs.canaries_per_run == 1000 and runs.runs * 1000 >= plan.m * 0.9
    assert plan_canaries(5.0, epsilon=1.0, max_canaries=4000) is None  # RR at eps = 1 cannot show 5


def test_a_claim_for_another_relation_is_not_applicable():
    from dpaudit.core import Guarantee
    res = audit_one_run(GaussianCanaries(4.0, 100), coordinate_score, m=100, rule=Fixed(20, 20),
                        claims=[Guarantee(epsilon=0.1, delta=1e-5, relation="swap", claim_id="x/swap"),
                                Guarantee(epsilon=0.1, delta=1e-5, claim_id="x/ar")])
    assert [c.verdict for c in res.claims] == ["not-applicable", "violation"]
    assert res.alpha == 0.05


def test_record_verifies_against_its_stored_hash_and_catches_an_altered_secret():
    import dataclasses
    rec = Recorder(20)
    record = CanaryGame(m=20, seed=3, runs=2).play(rec, rec, canaries=range(20))
    record.verify()
    flipped = record.secret.copy()
    flipped[0] = 1 - flipped[0]
    with pytest.raises(InputError, match="secret"):
        dataclasses.replace(record, secret=flipped).verify()
