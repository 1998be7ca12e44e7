"""Statistical tests as registered objects (issue #42, item 1): the built-in tests' bounds through the
registry equal the functions they were before, bit for bit, on a grid of counts; a toy test defined
here only, registered through the public interface, is used by the selection, the planner's bounds,
the ceiling and the detectable-leak model; unregistering it restores the old results exactly.

The toy test is deliberately optimistic (the pair's bound plus one nat): it is no valid test, and
exists to be seen winning the selection, never to audit with."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import dpaudit
from dpaudit import audit_samples
from dpaudit.core import InputError
from dpaudit.engine import bounds, jointratio, plan, stattests
from dpaudit.engine.detectable import for_claim
from dpaudit.results.schema import published

ALPHA = 0.025  # (1 - confidence) / 2 at confidence 0.95, the callers' convention


def _grid() -> tuple[np.ndarray, ...]:
    """Counts from none to all, small and large n, both sides (k1, n1, k2, n2) broadcast."""
    rows = []
    for n1, n2 in ((10, 10), (100, 300), (5_000, 5_000), (200_000, 150_000)):
        for f1 in (0.0, 0.001, 0.02, 0.3, 0.5, 0.97, 1.0):
            for f2 in (0.0, 0.001, 0.01, 0.3, 1.0):
                rows.append((round(f1 * n1), n1, round(f2 * n2), n2))
    return tuple(np.array(c, dtype=float) for c in zip(*rows, strict=True))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def _toy_bound(k_fav, n_fav, k_oth, n_oth, delta, alpha):
    """The Clopper-Pearson pair's bound plus one nat: optimistic on purpose (module docstring)."""
    return bounds.pair_epsilon(k_fav, n_fav, k_oth, n_oth, delta, alpha) + 1.0


TOY = stattests.StatTest(name="toy-optimistic", bound=_toy_bound, title="toy test", described="the toy test",
                         requires="nothing: a deliberately optimistic toy, never valid")


def test_the_built_in_tests_are_registered_in_order():
    assert stattests.names()[:2] == ("joint", "clopper-pearson")
    assert stattests.get("joint") is jointratio.JOINT and stattests.get("clopper-pearson") is bounds.PAIR
    assert dict(bounds.TESTS) == {t.name: t.bound for t in stattests.registered()}


@pytest.mark.parametrize("delta", [0.0, 1e-5, 0.01])
def test_the_registrys_bounds_equal_the_previous_functions_bit_for_bit(delta):
    k1, n1, k2, n2 = _grid()
    pair = bounds.epsilon_from_bounds(bounds.clopper_pearson_lower(k1, n1, ALPHA),
                                      bounds.clopper_pearson_upper(k2, n2, ALPHA), delta)
    joint = jointratio.epsilon_lower(k1, n1, k2, n2, delta, 2.0 * ALPHA)
    assert _same(stattests.get("clopper-pearson").bound(k1, n1, k2, n2, delta, ALPHA), pair)
    assert _same(stattests.get("joint").bound(k1, n1, k2, n2, delta, ALPHA), joint)
    assert np.isfinite(joint).any() and np.isinf(joint).any()  # the grid holds both kinds of counts
    # the selection's and the planner's forms: the old two-test rules written out
    score = jointratio.joint_score(k1, n1, k2, n2, delta, ALPHA)
    assert _same(bounds.both_tests(k1, n1, k2, n2, delta, ALPHA), np.maximum(score, pair))
    chosen = [bounds.better_test(*c, delta, ALPHA) for c in zip(k1, n1, k2, n2, strict=True)]
    assert chosen == ["joint" if j >= p else "clopper-pearson" for j, p in zip(joint, pair, strict=True)]
    assert set(chosen) == {"joint", "clopper-pearson"}


def test_the_ceiling_is_the_pairs_raised_to_the_joint_test_on_its_shortlist():
    p = np.array([0.02, 0.3, 0.5, 0.9])
    q = p * np.exp(-0.5)
    n, delta = 20_000, 0.0
    k_d, k_dp = p * n, q * n
    pair = bounds.pair_epsilon(k_d, n, k_dp, n, delta, ALPHA)
    expected = float(np.max(np.maximum(pair, bounds.joint_epsilon(k_d, n, k_dp, n, delta, ALPHA))))
    assert bounds.ceiling(p, q, n, delta, 0.95) == max(0.0, expected)
    assert bounds.ceiling(p, q, n, delta, 0.95, pair=True) == max(0.0, float(np.max(pair)))


def _samples() -> tuple[np.ndarray, np.ndarray]:
    """Randomized response at ε = 1, 20,000 answers per side (seed 3)."""
    rng = np.random.default_rng(3)
    keep = np.exp(1.0) / (1 + np.exp(1.0))
    return (rng.random(20_000) < keep).astype(int), (rng.random(20_000) >= keep).astype(int)


def test_a_toy_test_registered_publicly_wins_the_selection_and_unregistering_restores_the_results():
    x, y = _samples()
    before = audit_samples(x, y, deltas=(0.0, 1e-3)).to_dict()
    with stattests.registering(TOY):
        assert stattests.names()[-1] == "toy-optimistic"
        est = audit_samples(x, y, deltas=(0.0, 1e-3))
        for b in est.bounds:
            k1, n1, k2, n2 = b.counts if b.event.favours == "D" else (*b.counts[2:], *b.counts[:2])
            assert b.test == "toy-optimistic"
            assert b.epsilon_lower == max(0.0, float(_toy_bound(k1, n1, k2, n2, b.delta, ALPHA)))
            assert "epsilon_lower from the toy test" in b.witness()
    assert stattests.names() == ("joint", "clopper-pearson")
    assert audit_samples(x, y, deltas=(0.0, 1e-3)).to_dict() == before


def test_a_toy_test_reaches_the_planner_the_ceiling_and_the_detectable_leak_model():
    p, q = np.array([0.02, 0.3, 0.7]), np.array([0.01, 0.15, 0.5])
    cands = plan.Candidates(p, q, "toy events")
    old_bounds, old_ceiling = cands.bounds(10_000, 0.0, 0.95), bounds.ceiling(p, q, 10_000, 0.0, 0.95)
    est = audit_samples(*_samples())
    with stattests.registering(TOY):
        toy = _toy_bound(p * 10_000, 10_000, q * 10_000, 10_000, 0.0, ALPHA)
        assert _same(cands.bounds(10_000, 0.0, 0.95), np.maximum(old_bounds, toy))
        assert bounds.ceiling(p, q, 10_000, 0.0, 0.95) > old_ceiling
        record = dataclasses.replace(est.bounds[0], test="toy-optimistic")
        found = for_claim(record, 2.0, 20_000)
        assert found is not None and "toy-optimistic test" in found.model
    assert _same(cands.bounds(10_000, 0.0, 0.95), old_bounds)
    assert bounds.ceiling(p, q, 10_000, 0.0, 0.95) == old_ceiling
    assert for_claim(record, 2.0, 20_000) is None  # an unknown test's record has no model


def test_registration_checks_its_input_and_names_the_field():
    with pytest.raises(InputError, match="is registered already"):
        stattests.register(stattests.StatTest(name="joint", bound=_toy_bound, title="t", described="t",
                                              requires="t"))
    with pytest.raises(InputError, match="spends"):
        stattests.register(stattests.StatTest(name="greedy", bound=_toy_bound, title="t", described="t",
                                              requires="t", spends=3.0))
    with pytest.raises(InputError, match="bound"):
        stattests.register(stattests.StatTest(name="broken", bound=None, title="t", described="t",  # type: ignore[arg-type]
                                              requires="t"))
    with pytest.raises(InputError, match="not a registered statistical test; registered: joint, clopper-pearson"):
        stattests.get("nonesuch")
    assert stattests.names() == ("joint", "clopper-pearson")


def test_the_public_facade_exports_the_interface():
    assert dpaudit.StatTest is stattests.StatTest


def _enums(node: object) -> list[list[str]]:
    if isinstance(node, dict):
        found = [node["enum"]] if "clopper-pearson" in node.get("enum", ()) else []
        return found + [e for v in node.values() for e in _enums(v)]
    if isinstance(node, list):
        return [e for v in node for e in _enums(v)]
    return []


@pytest.mark.parametrize("schema", ["run", "summary"])
def test_the_schemas_test_enum_is_the_registrys_names(schema):
    """The results schemas take a bound's ``test`` from the registry (dpaudit.results.schema): the
    built-in names, and a test registered in this process too, so its results file validates."""
    assert [sorted(e) for e in _enums(published(schema))] == [sorted(stattests.names())]
    toy = dataclasses.replace(stattests.get("clopper-pearson"), name="toy-schema-test")
    with stattests.registering(toy):
        assert [sorted(e) for e in _enums(published(schema))] == [sorted(stattests.names())]
        assert "toy-schema-test" in stattests.names()
    assert "toy-schema-test" not in _enums(published(schema))[0]
