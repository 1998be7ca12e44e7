"""The one-run game's secret is independent of everything the user's code can see (issue 37, item 3).

S is drawn from fresh entropy, never from the seed; no frame of the mechanism's or the scorer's
call stack holds S, a slice of it, or the run's dataset as a local; the record stores S (packed)
with its hash and says what the bound assumes.

Statistics: with S independent of the scorer, the v right guesses of r = 100 are Binomial(100, ½)
(scores 0/1 of an unrelated bit vector; ties, broken independently of S, do not change that), so
v >= 85 has probability < 1e-12; the old seed-derived S gave v = 100.
"""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

from dpaudit.core import Guarantee, InputError
from dpaudit.onerun import CanaryGame, Fixed, audit_one_run
from dpaudit.onerun.game import GameRecord, secret_sha256
from tests.plugins.training_runs import RR_GAME_CONFIG

M = 1000


def blind(dataset, rng):
    """A data-blind training run: its output says nothing about the dataset."""
    return rng.standard_normal(4)


def rederive(output, canaries):
    """A scorer that re-derives S from the documented stream of the seed (0) the old game used."""
    rng = np.random.default_rng(np.random.SeedSequence(0, spawn_key=(0,)))
    return rng.integers(0, 2, size=len(canaries), dtype=np.int8).astype(float)


@pytest.mark.fresh_entropy
def test_a_scorer_that_rederives_the_secret_from_the_seed_guesses_at_chance():
    claim = Guarantee(epsilon=1.0, delta=1e-5, claim_id="user/claim")
    res = audit_one_run(blind, rederive, m=M, rule=Fixed(50, 50), seed=0, claims=[claim])
    assert res.v < 85, f"{res.v}/100 right: the scorer knows the secret"
    assert res.secret_source == "fresh entropy"


@pytest.mark.fresh_entropy
def test_the_seed_does_not_determine_the_secret():
    a = audit_one_run(blind, rederive, m=M, rule=Fixed(50, 50), seed=3)
    b = audit_one_run(blind, rederive, m=M, rule=Fixed(50, 50), seed=3)
    assert a.secret_sha256 != b.secret_sha256  # equal with probability 2^-1000
    stream = np.random.default_rng(np.random.SeedSequence(3, spawn_key=(0,))).integers(0, 2, size=M, dtype=np.int8)
    assert not np.array_equal(a.secret, stream) and not np.array_equal(b.secret, stream)


class StackWalker:
    """A mechanism and a scorer that look through every frame of their call stack for the secret
    (an array equal to S or to a contiguous slice of it) and for the run's dataset."""

    def __init__(self, m: int):
        self.m, self.seen, self.datasets = m, [], []

    def _look(self, skip: int) -> None:
        for info in inspect.stack()[skip:]:
            for value in list(info.frame.f_locals.values()):
                if isinstance(value, np.ndarray) and value.ndim == 1 and value.size >= 8:
                    self.seen.append(np.array(value, copy=True))
                elif isinstance(value, list) and value and all(isinstance(x, (int, np.integer)) for x in value):
                    self.seen.append(list(value))

    def run(self, dataset, rng):
        self.datasets.append(list(dataset))
        self._look(skip=2)  # this frame holds the dataset (its argument), the mechanism's own
        return rng.standard_normal(self.m)

    def score(self, output, canaries):
        self._look(skip=1)
        return output


def _windows(secret: np.ndarray, length: int) -> np.ndarray:
    return np.lib.stride_tricks.sliding_window_view(secret, length)


@pytest.mark.parametrize("runs", [1, 3])
def test_no_frame_of_the_mechanism_or_scorer_holds_the_secret_or_the_dataset(runs):
    walker = StackWalker(40)
    record = CanaryGame(m=40, seed=1, runs=runs).play(walker, walker, canaries=range(40))
    secret = record.secret
    assert len(walker.datasets) == runs
    for value in walker.seen:
        if isinstance(value, list):
            assert value not in walker.datasets, "a frame holds a run's dataset (which canaries are in)"
            continue
        if value.size <= secret.size and set(np.unique(value)) <= {0, 1}:
            assert not (_windows(secret, value.size) == value).all(axis=1).any(), \
                "a frame holds the secret or a slice of it"


def test_the_api_path_holds_no_secret_in_a_frame_either():
    walker = StackWalker(40)
    res = audit_one_run(walker, walker, m=40, rule=Fixed(5, 5), seed=2)
    for value in walker.seen:
        if isinstance(value, np.ndarray) and value.size <= res.m and set(np.unique(value)) <= {0, 1}:
            assert not (_windows(res.secret, value.size) == value).all(axis=1).any()


def test_an_explicit_secret_replays_the_same_game():
    secret = np.random.default_rng(5).integers(0, 2, size=2 * 200)
    kw = dict(m=200, runs=2, rule=Fixed(20, 20), seed=4, secret=secret)
    from dpaudit.onerun.fixtures import GaussianCanaries, coordinate_score
    a = audit_one_run(GaussianCanaries(2.0, 200), coordinate_score, **kw)
    # a replay passes the recorded tie-break seed too (a new one is drawn from fresh entropy otherwise)
    b = audit_one_run(GaussianCanaries(2.0, 200), coordinate_score, tiebreak=a.tiebreak, **kw)
    assert a.tiebreak is not None and a.to_json(include_scores=True) == b.to_json(include_scores=True)
    assert np.array_equal(a.secret, secret) and a.secret_source == "supplied by the caller"
    with pytest.raises(InputError, match="secret"):
        audit_one_run(blind, rederive, m=10, secret=np.ones(9))
    with pytest.raises(InputError, match="secret"):
        audit_one_run(blind, rederive, m=10, secret=np.full(10, 2))


def test_the_record_and_the_json_store_the_secret_its_hash_and_the_premise():
    from dpaudit.onerun.game import PREMISE, unpack_secret
    res = audit_one_run(blind, rederive, m=M, rule=Fixed(50, 50), seed=0)
    doc = json.loads(res.to_json())
    assert np.array_equal(unpack_secret(doc["secret_bits"], M), res.secret)
    assert doc["secret_sha256"] == secret_sha256(res.secret) and doc["premise"] == PREMISE
    assert "does not read the secret" in doc["premise"]
    assert len(doc["secret_bits"]) <= M // 6 + 4  # compact: packed bits, not a list
    walker = StackWalker(30)
    record = CanaryGame(m=30, seed=7).play(walker, walker, canaries=range(30))
    rd = record.to_dict()
    assert np.array_equal(unpack_secret(rd["secret_bits"], 30), record.secret) and rd["premise"] == PREMISE
    assert rd["secret_source"] == "fresh entropy" and "secret" not in json.dumps(rd["streams"]).replace(
        '"secret": "fresh entropy"', "")


def test_verify_checks_the_stored_hash_not_the_seed():
    import dataclasses
    walker = StackWalker(30)
    record = CanaryGame(m=30, seed=7, runs=2).play(walker, walker, canaries=range(30))
    record.verify()
    dataclasses.replace(record, seed=8).verify()  # the secret never depended on the seed
    with pytest.raises(InputError, match="SHA-256"):
        dataclasses.replace(record, sha256="0" * 64).verify()
    flipped = record.secret.copy()
    flipped[-1] ^= 1
    with pytest.raises(InputError, match="secret"):
        GameRecord(scores=record.scores, secret=flipped, canaries_per_run=30, runs=2, seed=7,
                   relation="add-remove", sha256=record.sha256).verify()


def test_pack_and_unpack_refuse_a_wrong_length():
    from dpaudit.onerun.game import pack_secret, unpack_secret
    bits = np.random.default_rng(0).integers(0, 2, size=13)
    assert np.array_equal(unpack_secret(pack_secret(bits), 13), bits)
    with pytest.raises(InputError, match="secret_bits"):
        unpack_secret(pack_secret(bits), 100)
    with pytest.raises(InputError, match="secret_bits"):
        unpack_secret("!!!!", 13)


# --- a resumed command-line run takes the stored game, never a new secret ------------------------------

RESUME_CONFIG = RR_GAME_CONFIG


def _resume_run(tmp_path):
    from tests.clirun import in_process
    config = tmp_path / "onerun.toml"
    config.write_text(RESUME_CONFIG, encoding="utf-8")
    out = tmp_path / "run"
    first = in_process("run", config, "--allow-plugin", "tests.plugins.training_runs", "--quiet", "--out", out)
    assert first.returncode == 0, first.stderr
    return out, json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_a_resumed_run_keeps_the_stored_secret_and_scores(tmp_path):
    from tests.clirun import in_process
    out, before = _resume_run(tmp_path)
    assert "secret_bits" in before["scenarios"][0]
    again = in_process("run", "--resume", out, "--allow-plugin", "tests.plugins.training_runs", "--quiet")
    assert again.returncode == 0, again.stderr
    after = json.loads((out / "results.json").read_text(encoding="utf-8"))
    keep = ("secret_sha256", "secret_bits", "scores", "secret", "tests", "bounds", "seed")
    assert {k: after["scenarios"][0][k] for k in keep} == {k: before["scenarios"][0][k] for k in keep}
    assert after["records"][0]["onerun"] == before["records"][0]["onerun"]


def test_a_resume_refuses_a_tampered_stored_game(tmp_path):
    from tests.clirun import in_process
    out, before = _resume_run(tmp_path)
    sc = before["scenarios"][0]
    sc["secret"] = [1 - b for b in sc["secret"]]  # another game's secret under the stored hash
    (out / "results.json").write_text(json.dumps(before), encoding="utf-8")
    again = in_process("run", "--resume", out, "--allow-plugin", "tests.plugins.training_runs", "--quiet")
    assert again.returncode == 2 and "secret" in again.stderr, (again.returncode, again.stderr)
