"""A built-in suite exits 0 on a correct install with probability ≥ 0.99 (issue 41, item 12).

The unit tests derive each suite's failure probability from its own expectation list and its
confidence (:data:`dpaudit.catalog.SUITE_CONFIDENCE`), by the union bound of the catalog's comment:
a claim expected to hold costs 1 − c (a tight one attains it), an expected refutation from samples
costs at most :data:`~dpaudit.catalog.ERRATUM_MISS` at its budget, a white-box or premise expectation
nothing.  The slow statistical test runs the default suite's tightest claim (a Laplace pair at
exactly its ε) over seeds at the suite's confidence, with twins: a 10 % leak is still refuted at
that confidence and the suite's budget.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from dpaudit import audit_mechanism, catalog
from dpaudit.cli.expectations import planned_claims
from dpaudit.core import Guarantee
from dpaudit.mechanisms.classic import Laplace
from tests.clirun import in_process

DETERMINISTIC = ("exact-violation", "not-applicable")  # decided by the white box or the premise: no sampling


# run --out draws no report.pdf here: these tests never read it (tests/clirun.py skip_report_pdf)
pytestmark = pytest.mark.usefixtures("no_report_pdf")


def expectations(name: str) -> tuple[int, int]:
    """(claims expected to hold, claims expected refuted from samples) of built-in suite ``name``:
    every scenario's planned claims and every one-run design's claims, each with its expectation."""
    hold = refute = 0
    kinds = []
    for sc in catalog.suite(name):
        ids = planned_claims(sc.expected, sc.claims)
        assert ids is not None, f"{sc.name}: its claims are known only once it runs; the derivation needs them"
        kinds += [sc.expected.get(cid, "pass") for cid in ids]
    for design in catalog.onerun_suite(name):
        kinds += [design.expected.get(c.claim_id, "pass") for c in design.claims]
    for kind in kinds:
        assert kind in ("pass", "violation", *DETERMINISTIC), kind
        hold += kind == "pass"
        refute += kind == "violation"
    return hold, refute


def failure_bound(name: str, confidence: float) -> float:
    """The union bound of the suite's chance of exit 1 on a correct install at ``confidence``."""
    hold, refute = expectations(name)
    return hold * (1 - confidence) + refute * catalog.ERRATUM_MISS


def multi_run_suites() -> list[str]:
    have_libraries = all(importlib.util.find_spec(m) for m in ("opendp", "diffprivlib", "pydp"))
    return [n for n in catalog.SUITES if n != "onerun" and (n != "libraries" or have_libraries)]


@pytest.mark.parametrize("name", multi_run_suites())
def test_every_suite_fails_a_correct_install_at_most_1_in_100_runs(name):
    confidence = catalog.SUITE_CONFIDENCE[name]
    assert failure_bound(name, confidence) <= catalog.SUITE_FAILURE
    # the twin: the audits' default 0.95 does not meet it (the bug of issue 41: 1 of 60 seeds of classic)
    assert failure_bound(name, 0.95) > catalog.SUITE_FAILURE


def test_the_derivation_counts_what_the_comment_states():
    """The catalog comment's table, from the suites themselves: a new claim in a suite moves it."""
    assert expectations("default") == (62, 22)
    assert expectations("full") == (69, 22)
    assert expectations("errata") == (11, 17)


def test_run_of_a_suite_takes_its_confidence_and_the_flag_overrides_it(tmp_path):
    """What ``run --suite default`` records as its confidence: the suite's; ``--confidence`` wins."""
    for flags, want in (((), catalog.SUITE_CONFIDENCE["default"]), (("--confidence", "0.95"), 0.95)):
        out = tmp_path / str(want)
        done = in_process("run", "--family", "classic", "--samples", "2000", "--quiet", "--out", out, *flags)
        assert done.returncode in (0, 1), done.stderr
        assert json.loads((out / "results.json").read_text())["confidence"] == want


SEEDS = 100


@pytest.mark.slow
def test_the_tightest_default_claim_holds_over_seeds_at_the_suite_confidence_and_a_leak_is_caught():
    """classic/laplace (ε = 1 attained by threshold events) at the default suite's confidence 0.9999 and
    budget: no false refutation in 100 seeds (each ≤ 1e-4: P[any] ≤ 1 %; at 0.95, 1 of 60 seeds of the
    classic family was one).  Twins at the same confidence and budget: a Laplace calibrated for ε = 1.1
    claimed as ε = 1 (a 10 % leak) is refuted in each of 10 seeds, and the margins are those of a tight
    claim (ε_lower within 0.03 of ε = 1 in the median seed: the confidence did not make the audit blind)."""
    sc = next(s for s in catalog.suite("default", ["classic"]) if s.name == "laplace")
    confidence = catalog.SUITE_CONFIDENCE["default"]
    samples = round(1e6 * sc.samples_factor)
    lowers = []
    for seed in range(1, SEEDS + 1):
        r = audit_mechanism(sc.mechanism, sc.pair.d, sc.pair.d_prime, samples=samples, seed=seed,
                            expected=sc.expected, relation=sc.pair.relation, confidence=confidence)
        assert r.as_expected, seed
        lowers.append(r.claims[0].epsilon_lower)
    assert sorted(lowers)[SEEDS // 2] > 0.97
    claim = [Guarantee(epsilon=1.0, delta=0.0, relation=sc.pair.relation, source="test", claim_id="leak")]
    for seed in range(1, 11):
        r = audit_mechanism(Laplace(1.1), sc.pair.d, sc.pair.d_prime, samples=samples, seed=seed, claims=claim,
                            relation=sc.pair.relation, confidence=confidence)
        assert r.claims[0].verdict == "violation", seed


def test_the_help_states_each_suites_confidence():
    """`run --help` names the confidence each suite runs at, from the catalog (a change moves both)."""
    done = in_process("run", "--help")
    text = " ".join(done.stdout.split())
    stated = {"default": "default and full", "full": "default and full", "errata": "errata", "libraries": "libraries"}
    for name, confidence in catalog.SUITE_CONFIDENCE.items():
        assert f"{stated[name]} {confidence:g}" in text, name


@pytest.mark.parametrize(("scenario", "suite"), [("align-alg2-zero-out", "errata"), ("laplace", "full")])
def test_plan_plans_a_suites_scenario_at_its_suites_confidence_unless_told(monkeypatch, scenario, suite):
    """`plan NAME` says what the run as its suite runs it needs: at the suite's confidence (the planner
    itself is replaced by a recorder: the confidence it is asked for is what is under test)."""
    from dpaudit.cli import plan as cli_plan

    asked: list[float] = []

    def recorder(scenario, *, confidence, **kw):
        asked.append(confidence)
        raise SystemExit(0)

    monkeypatch.setattr(cli_plan.budget_plan, "plan", recorder)
    in_process("plan", scenario)
    in_process("plan", scenario, "--confidence", "0.9")
    assert asked == [catalog.SUITE_CONFIDENCE[suite], 0.9]

