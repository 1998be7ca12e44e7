"""The public API: audit_mechanism's user parameters and its RunContext, the epsilon=/delta=
shortcut, AuditResult's repr and summary, and the names the audit package exports."""

import dataclasses
import inspect
import re

import numpy as np
import pytest

import dpaudit
from dpaudit import Guarantee, InputError, audit_mechanism
from dpaudit.engine.api import RunContext
from dpaudit.mechanisms.classic import RandomizedResponse, on_grid
from dpaudit.neighbors import Dataset
from dpaudit.runtime.execution import Execution
from tests.zoo import LaplaceOnCount

BIT, BIT_PRIME = Dataset({"bit": [0]}), Dataset({"bit": [0, 1]})
N = 20_000


def numbers(result):
    """What an audit measured: per bound, its delta, epsilon_lower and counts."""
    return [(b.delta, b.epsilon_lower, b.counts) for b in result.estimates]


# --- the signature and the settings object -------------------------------------------------

def test_audit_mechanism_takes_the_pair_then_only_user_parameters_by_keyword():
    params = inspect.signature(audit_mechanism).parameters
    positional = [p for p in params.values() if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert [p.name for p in positional] == ["mechanism", "d", "d_prime"]
    assert {p for p in params if params[p].kind is inspect.Parameter.KEYWORD_ONLY} == {
        "samples", "deltas", "confidence", "seed", "n_jobs", "relation", "claims", "epsilon", "delta",
        "expected", "discrete", "events", "sequential", "progress", "context"}


@pytest.mark.parametrize("internal", [{"key": (1,)}, {"scenario": "x"}, {"pair": "x"},
                                      {"execution": Execution()}])
def test_internal_settings_are_not_keyword_arguments_any_more(internal):
    with pytest.raises(TypeError):
        audit_mechanism(LaplaceOnCount(1.0), 0, 1, samples=N, **internal)


def test_run_context_is_frozen_and_validated():
    ctx = RunContext(key=[2, 3], scenario="s", pair="remove record 0")
    assert ctx.key == (2, 3) and ctx.execution is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.scenario = "other"
    for bad in ({"key": (-1,)}, {"key": "1"}, {"key": (True,)}, {"scenario": 3}, {"pair": None},
                {"execution": "local"}):
        with pytest.raises(InputError, match="RunContext"):
            RunContext(**bad)
    with pytest.raises(InputError, match="context"):
        audit_mechanism(LaplaceOnCount(1.0), 0, 1, samples=N, context={"key": (1,)})


def test_the_context_labels_the_result_and_its_key_selects_the_random_streams():
    mech = LaplaceOnCount(1.0)
    plain = audit_mechanism(mech, 0, 1, samples=N, seed=4)
    same = audit_mechanism(mech, 0, 1, samples=N, seed=4, context=RunContext(key=()))
    labelled = audit_mechanism(mech, 0, 1, samples=N, seed=4,
                               context=RunContext(key=(7,), scenario="lap", pair="count 0 vs 1"))
    again = audit_mechanism(mech, 0, 1, samples=N, seed=4, context=RunContext(key=(7,)))
    assert numbers(plain) == numbers(same)  # the default context changes nothing
    assert numbers(labelled) == numbers(again)  # one key, one stream
    assert numbers(labelled) != numbers(plain)
    assert (labelled.scenario, labelled.pair) == ("lap", "count 0 vs 1")
    assert labelled.records()[0]["scenario"] == "lap" and labelled.records()[0]["pair"] == "count 0 vs 1"


def test_the_contexts_execution_overrides_n_jobs_and_progress(capsys):
    mech = LaplaceOnCount(1.0)
    local = audit_mechanism(mech, 0, 1, samples=N, seed=1, progress=False)
    assert "[dpaudit]" not in capsys.readouterr().err
    logged = audit_mechanism(mech, 0, 1, samples=N, seed=1, progress=False,
                             context=RunContext(execution=Execution(progress="log", log_every=0.0)))
    assert "[dpaudit]" in capsys.readouterr().err  # the context's progress mode, not progress=False
    assert numbers(local) == numbers(logged)


def test_mechanisms_own_claims_come_through_the_capability_protocols():
    @dataclasses.dataclass(frozen=True)
    class PairClaims:
        name: str = "pair-claims"

        def sample(self, data, size, rng):
            return on_grid(float(data) + rng.laplace(0.0, 1.0, size))

        def pair_guarantees(self, d, d_prime, relation):
            return [Guarantee(epsilon=2.0, relation=relation, claim_id="pair/two")]

        def guarantees(self, data, relation):
            raise AssertionError("pair_guarantees comes first")

    r = audit_mechanism(PairClaims(), 0, 1, samples=N)
    assert [c.claim.claim_id for c in r.claims] == ["pair/two"] and r.verdict == "pass"


# --- the epsilon=/delta= shortcut ------------------------------------------------------------

def test_epsilon_and_delta_stand_for_one_explicit_claim():
    mech = LaplaceOnCount(1.0)
    short = audit_mechanism(mech, 0, 1, samples=N, seed=2, epsilon=0.5, delta=1e-3, relation="swap")
    claim = Guarantee(epsilon=0.5, delta=1e-3, relation="swap", source="audit_mechanism", claim_id="user/claim")
    assert [c.claim for c in short.claims] == [claim]
    assert short.estimates[0].delta == 1e-3  # the bound is reported at the claim's delta by default
    long = audit_mechanism(mech, 0, 1, samples=N, seed=2, claims=[claim], deltas=(1e-3,), relation="swap")
    assert numbers(short) == numbers(long) and short.verdict == long.verdict == "violation"


def test_epsilon_alone_claims_pure_dp_and_keeps_explicit_deltas():
    r = audit_mechanism(RandomizedResponse(1.0), BIT, BIT_PRIME, samples=N, epsilon=1.0, deltas=(0.0, 0.1))
    assert r.claims[0].claim.delta == 0.0 and [b.delta for b in r.estimates] == [0.0, 0.1]
    assert r.verdict == "pass" and r.claims[0].exact_verdict == "pass"


@pytest.mark.parametrize("kwargs, field", [
    ({"epsilon": 1.0, "claims": []}, "epsilon"),
    ({"epsilon": 1.0, "claims": [Guarantee(epsilon=1.0)]}, "epsilon"),
    ({"delta": 1e-5}, "delta"),
    ({"epsilon": -1.0}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"),
    ({"epsilon": 1.0, "delta": 1.0}, "delta"),
    ({"epsilon": 1.0, "delta": "0"}, "delta"),
])
def test_bad_shortcut_use_is_an_input_error_naming_the_field(kwargs, field):
    with pytest.raises(InputError, match=f"^{field} = "):
        audit_mechanism(LaplaceOnCount(1.0), 0, 1, samples=N, **kwargs)


# --- repr and summary ------------------------------------------------------------------------

def test_repr_is_short_and_names_verdict_bounds_claims_and_samples():
    r = audit_mechanism(RandomizedResponse(1.0), BIT, BIT_PRIME, samples=N, epsilon=0.5)
    text = repr(r)
    assert len(text) < 400
    for part in ("finding='refuted (empirical)'", f"epsilon_lower={r.epsilon_lower:.4g}", "epsilon_exact=1",
                 "user/claim: eps<=0.5 refuted (empirical)", f"samples={N}"):
        assert part in text


def test_repr_stays_under_400_characters_with_many_long_claims():
    curve = [Guarantee(epsilon=3.0 - k / 10, delta=k / 100, claim_id="a/very-long-claim-identifier-for-a-curve")
             for k in range(1, 20)]
    named = [Guarantee(epsilon=1.0 + k, claim_id=f"another/extremely-long-claim-identifier-number-{k}")
             for k in range(12)]
    mech = dataclasses.replace(LaplaceOnCount(1.0), name="a-mechanism-with-a-name-far-longer-than-anyone-needs" * 3)
    r = audit_mechanism(mech, 0, 1, samples=N, claims=curve + named)
    assert len(repr(r)) < 400 and "+10 more" in repr(r)


def test_summary_says_verdict_bound_exact_value_claims_and_witness():
    r = audit_mechanism(RandomizedResponse(1.0), BIT, BIT_PRIME, samples=N, epsilon=0.5,
                        context=RunContext(pair="add a record with bit 1"))
    text = r.summary()
    assert "\n" not in text
    assert "refuted (empirical)" in text
    assert f"With confidence 95%, epsilon >= {r.epsilon_lower:.4g} at delta = 0" in text
    assert "exact epsilon of the pair at delta = 0 is 1" in text
    assert "'user/claim' epsilon <= 0.5 at delta = 0: refuted (empirical)" in text
    assert "add a record with bit 1" in text
    # the witness is the set {0} or, equivalently, the threshold event output <= 0
    assert re.search(r"Witness at delta = 0: S = output (in \{0\}|<= 0) ", text) and "Clopper-Pearson" in text
    assert str(r) == text


def test_summary_of_a_black_box_without_claims():
    text = str(audit_mechanism(LaplaceOnCount(1.0), 0, 1, samples=N))
    assert "not known (black box)" in text and "No claim was checked" in text and "S = output" in text


@dataclasses.dataclass(frozen=True)
class ManyOutputs:
    """40 outputs; on data 1 the upper half folds onto the lower half (the upper half is never seen
    under D′: its union is the best event by its counts, where sets of outputs of one likelihood ratio
    otherwise tie and a subset may win by the noise of the selection split)."""

    name: str = "many-outputs"

    def sample(self, data, size, rng):
        k = rng.integers(0, 40, size=size)
        return np.where(data == 1, k % 20, k)


@dataclasses.dataclass(frozen=True)
class Interleaved:
    """40 outputs; on data 1 each odd output folds onto the even one below it (never seen under D′,
    as :class:`ManyOutputs`)."""

    name: str = "interleaved"

    def sample(self, data, size, rng):
        k = rng.integers(0, 40, size=size)
        return np.where(data == 1, k - k % 2, k)


def test_a_witness_set_of_consecutive_outputs_reads_as_an_interval():
    r = audit_mechanism(ManyOutputs(), 0, 1, samples=200_000, events="rows", epsilon=0.2)
    assert r.verdict == "violation"
    assert re.search(r"S = output in \{(\d+)\.\.(\d+)\} ", r.claims[0].bound.witness())
    assert re.search(r"S = output in \{\d+\.\.\d+\} ", r.summary())


def test_summary_compresses_a_long_witness_set():
    r = audit_mechanism(Interleaved(), 0, 1, samples=200_000, events="rows", epsilon=0.2)
    assert r.verdict == "violation"
    full = r.claims[0].bound.witness()
    shown = re.search(r"S = output in \{((?:\d+, ){8})… and (\d+) more\}", full)  # the event lists many outputs
    listed = 8 + int(shown.group(2))
    text = r.summary()
    assert re.search(r"S = output in \{\d+, \d+, \d+, … and (\d+) more\}", text).group(1) == str(listed - 3)


# --- top-level exports -----------------------------------------------------------------------

def test_the_audit_package_exports_the_public_names():
    from dpaudit.engine.api import audit_mechanism as api_audit_mechanism
    from dpaudit.engine.estimate import audit_samples
    from dpaudit.mechanisms.base import Mechanism
    from dpaudit.neighbors import Dataset as NeighborsDataset
    from dpaudit.neighbors import Pair
    from dpaudit.testing import assert_private

    exported = {"audit_mechanism": api_audit_mechanism, "audit_samples": audit_samples,
                "assert_private": assert_private, "Dataset": NeighborsDataset, "Pair": Pair,
                "Mechanism": Mechanism, "Guarantee": Guarantee}
    for name, obj in exported.items():
        assert name in dpaudit.__all__ and getattr(dpaudit, name) is obj
