"""A ρ-zCDP claim audited from samples (issue 44): the Gaussian mechanism (Δ = 1, σ = 1: exactly
ρ = 0.5-zCDP) claiming ρ/4 = 0.125 is refuted at the budget ``plan`` states, on ≥ 8 of 10 seeds, and
claiming its true ρ passes on 10 of 10; validity: at its exact ρ over 100 seeds, refuted on at most
α + 3 s.e. = 0.05 + 3·√(0.05·0.95/100) ≈ 11.5 % of them.  Confidence 0.95, seeds 0..9 (0..99), the
pair (0, 0, 0) vs (0, 0, 1) under swap.  The command line's --rho and a config's rho key are checked
on the same mechanism (fast)."""

import json
import math

import numpy as np
import pytest

from dpaudit.catalog import Scenario
from dpaudit.engine.api import audit_mechanism
from dpaudit.engine.plan import plan
from dpaudit.mechanisms.zcdp import GaussianZCDP
from dpaudit.neighbors import Pair
from dpaudit.runtime.execution import Execution

D, D_PRIME = np.zeros(3), np.array([0.0, 0.0, 1.0])
UNDERSTATED = GaussianZCDP(sigma=1.0, claimed_rho=0.125)
TRUE = GaussianZCDP(sigma=1.0)


def test_the_mechanism_states_its_rho_as_a_curve():
    assert TRUE.rho == 0.5
    points = TRUE.guarantees(D, "swap")
    assert len(points) == 1 and points[0].rho == 0.5 and points[0].relation == "swap"
    assert UNDERSTATED.guarantees(D, "swap")[0].rho == 0.125 and TRUE.guarantees(D, "label-flip") == []


@pytest.mark.slow
def test_an_understated_rho_is_refuted_at_the_planned_budget_and_the_true_rho_passes():
    scenario = Scenario("gaussian-zcdp-understated", UNDERSTATED, Pair(D, D_PRIME, "one record 0 -> 1", "swap"))
    budget = plan(scenario, pilot=100_000, grid_pilot=200_000, samples=100_000,
                  execution=Execution(n_jobs=1)).samples_per_side
    assert budget is not None and budget < 100_000  # measured: 1675 per side
    understated = [audit_mechanism(UNDERSTATED, D, D_PRIME, samples=budget, seed=s, relation="swap")
                   for s in range(10)]
    assert sum(r.verdict == "violation" for r in understated) >= 8  # measured: 10 of 10
    assert all(c.claim.stated_as.rho == 0.125 for c in understated[0].claims)
    true = [audit_mechanism(TRUE, D, D_PRIME, samples=budget, seed=s, relation="swap") for s in range(10)]
    assert all(r.verdict == "pass" for r in true)


@pytest.mark.slow
def test_validity_the_exact_rho_is_refuted_on_at_most_alpha_plus_three_standard_errors():
    refuted = sum(audit_mechanism(TRUE, D, D_PRIME, samples=20_000, seed=s, relation="swap").verdict == "violation"
                  for s in range(100))
    assert refuted / 100 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 100)


def test_rho_on_the_command_line_and_in_a_config(cli, tmp_path):
    low = cli("run", "--mechanism", "tests.test_zcdp_audit:TRUE", "--pair", "tests.test_zcdp_audit:PAIR",
              "--relation", "swap", "--rho", "0.125", "--samples", "20000", "--quiet", "--json")
    assert low.returncode == 1, low.stdout + low.stderr
    records = json.loads(low.stdout)["records"]
    assert {r["stated_as"]["label"] for r in records} == {"rho = 0.125 zCDP"}
    assert any(r["verdict"] == "violation" for r in records)
    table = cli("run", "--mechanism", "tests.test_zcdp_audit:TRUE", "--pair", "tests.test_zcdp_audit:PAIR",
                "--relation", "swap", "--rho", "0.5", "--rdp", "2:1", "--samples", "20000", "--quiet")
    assert table.returncode == 0, table.stdout + table.stderr
    said = " ".join(table.stdout.split())  # the notes wrap at the table's width
    assert "rho = 0.5 zCDP: not refuted" in said and "implies eps(1e-06) <= 5.222" in said
    assert "(alpha = 2, eps = 1)-RDP: not refuted" in said
    for bad, word in ((("--rho", "-1"), "--rho"), (("--rdp", "2"), "ALPHA:EPS"), (("--rdp", "0.5:1"), "orders")):
        out = cli("run", "--mechanism", "tests.test_zcdp_audit:TRUE", "--pair", "tests.test_zcdp_audit:PAIR",
                  *bad, "--samples", "1000", "--quiet")
        assert out.returncode == 2 and word in out.stderr, out.stderr



def test_rho_and_rdp_claims_in_a_config(cli, tmp_path):
    """A Laplace mechanism (ε = 1, Δ = 1) is (1/2)ε²-zCDP (Bun & Steinke 2016, Prop. 1.4): ρ = 0.5 holds,
    and ρ = 0.02 is refuted; a claim table with two forms, or a delta beside rho, is refused (exit 2)."""
    head = ('[run]\nsamples = 50000\n[[scenario]]\nname = "laplace"\nmechanism = "laplace"\n'
            'params = { epsilon = 1.0, sensitivity = 1.0 }\n[scenario.data]\ncolumns = { value = [0.0] }\n'
            '[scenario.neighbour]\nadd = { value = 1.0 }\n')
    cases = {"holds": ('[[scenario.claim]]\nrho = 0.5\nid = "user/laplace-zcdp"\n', 0),
             "refuted": ('[[scenario.claim]]\nrho = 0.02\n[[scenario.claim]]\nrdp = [[2, 0.01], [8, 0.04]]\n', 1),
             "two forms": ('[[scenario.claim]]\nrho = 0.5\nepsilon = 1.0\n', 2),
             "delta": ('[[scenario.claim]]\nrho = 0.5\ndelta = 1e-5\n', 2),
             "bad rdp": ('[[scenario.claim]]\nrdp = [2, 0.5]\n', 2)}
    for name, (claims, code) in cases.items():
        config = tmp_path / f"{name.replace(' ', '-')}.toml"
        config.write_text(head + claims, encoding="utf-8")
        out = cli("run", config, "--quiet", "--json")
        assert out.returncode == code, (name, out.stdout[-400:], out.stderr[-400:])
        if code == 2:
            assert "scenario[0].claim[0]" in out.stderr, out.stderr
        else:
            kinds = {r["stated_as"]["kind"] for r in json.loads(out.stdout)["records"]}
            assert kinds == ({"zcdp"} if code == 0 else {"zcdp", "rdp"})


PAIR = Pair(D, D_PRIME, "one record 0 -> 1", "swap")
