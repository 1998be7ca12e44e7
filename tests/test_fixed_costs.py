"""The per-run fixed costs of issue 45 removed without changing an answer: a result's exact
profile is computed once however often the growing results file asks for it; ``plan`` with a name
that is no scenario answers from the designs' registered names, building none; the registered
names are the built designs' names."""

import dataclasses
import math

import pytest

from dpaudit import audit_mechanism, catalog
from dpaudit.catalog.designs import suite
from dpaudit.engine import results as engine_results
from tests.clirun import in_process
from tests.test_api import Coin  # P[M(0)] = (0.8, 0.2), P[M(1)] = (0.4, 0.6): eps(0) = log 3


def test_the_exact_profile_is_computed_once_per_result(monkeypatch):
    calls = []
    real = engine_results.epsilon_for_delta

    def counted(p, q, delta):
        calls.append(delta)
        return real(p, q, delta)

    monkeypatch.setattr(engine_results, "epsilon_for_delta", counted)
    r = audit_mechanism(Coin(), 0, 1, samples=2_000, seed=0)
    calls.clear()  # the audit itself may ask for exact ε(δ)
    first = r.to_dict()["exact_profile"]
    assert len(calls) == len(engine_results.PROFILE_DELTAS)
    assert first[0] == {"delta": engine_results.PROFILE_DELTAS[0], "epsilon": pytest.approx(math.log(3))}
    first[0]["epsilon"] = "changed by a caller"  # a caller's edit does not reach the cached profile
    again = [r.to_dict()["exact_profile"] for _ in range(3)]
    assert len(calls) == len(engine_results.PROFILE_DELTAS)
    assert all(a == again[0] for a in again) and again[0][0]["epsilon"] == pytest.approx(math.log(3))


def _no_build(*args, **kwargs):
    raise AssertionError("a one-run design was built")


@pytest.mark.parametrize("name, hint", [
    # a design that needs no extra (the DP-SGD ones are left out of the names without the onerun extra)
    ("nosuch", ""), ("dppg-whitebx", " (did you mean 'dppg-whitebox'?)"),
    ("po-dp-pg-advantage-one-rum", " (did you mean 'po-dp-pg-advantage-one-run'?)")])
def test_a_typo_in_plan_builds_no_design(monkeypatch, name, hint):
    monkeypatch.setattr(catalog, "onerun_suite", _no_build)
    failing = tuple(dataclasses.replace(entry, build=_no_build) for entry in suite.ENTRIES)
    monkeypatch.setattr(suite, "ENTRIES", failing)
    done = in_process("plan", name)
    assert done.returncode == 2, done.stderr
    assert f"error: plan: scenario {name!r} is not in a built-in suite{hint}; see `" in done.stderr, done.stderr
    assert "building the one-run designs" not in done.stderr


def test_a_design_s_name_still_reaches_its_design(monkeypatch):
    """The name lookup lets a design's name through to the design's lookup (answering None here,
    so the command stops at the message before any pilot)."""
    from dpaudit.cli import plan

    asked = []
    monkeypatch.setattr(plan, "onerun_design", lambda name: asked.append(name))
    monkeypatch.setattr(plan, "_say", lambda text: None)
    done = in_process("plan", "dppg-whitebox-reward-convention")
    assert asked == ["dppg-whitebox-reward-convention"] and done.returncode == 2, done.stderr


@pytest.mark.slow
def test_the_registered_names_are_the_built_designs_names():
    """Building takes tens of CPU seconds (the DP-SGD designs' PLD compositions)."""
    assert suite.design_names() == [d.name for d in suite.onerun_designs()]
    assert sorted(catalog.onerun_names("onerun")) == sorted(d.name for d in catalog.onerun_suite("onerun"))
    assert catalog.onerun_names("default") == [d.name for d in catalog.onerun_suite("default")]
    assert catalog.onerun_names("errata") == [] == catalog.onerun_suite("errata")
