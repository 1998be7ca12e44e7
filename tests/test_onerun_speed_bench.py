"""``dpaudit.onerun.bench``: its rows keep their old keys and its rules rows report what the rules give.

No time is asserted (speed lives in the bench's own output); only the rows' shape and that the
bounds beside the times are those of the rules the docstring names.
"""

from __future__ import annotations

import numpy as np

from dpaudit.onerun import bench
from dpaudit.onerun.bound import one_run_bound
from dpaudit.onerun.curves import gdp
from dpaudit.onerun.rules import Fixed


def test_bound_rows_keep_their_keys_and_rules_rows_follow() -> None:
    rows = bench.bench(rule_ms=(2000,))
    bound = [r for r in rows if r["kind"] == "bound"]
    assert [(r["m"], r["r"], r["v"]) for r in bound] == [tuple(c) for c in bench.CASES]
    assert all({"epsilon_lower", "steinke_cpu_s", "gdp_mu", "fdp_cpu_s"} <= set(r) for r in bound)
    (rules,) = [r for r in rows if r["kind"] == "rules"]
    assert rules["m"] == 2000 and rules["planned_over_fixed"] == rules["planned_cpu_s"] / rules["fixed_cpu_s"]
    rng = np.random.default_rng(np.random.SeedSequence(45, spawn_key=(2000,)))
    secret = rng.integers(0, 2, 2000)
    scores = secret + rng.standard_normal(2000)
    claim = gdp(1.0, claim_id="bench-gdp")
    fixed = one_run_bound(scores, secret, rule=Fixed(200, 200), claims=(claim,), tiebreak=0)
    planned = one_run_bound(scores, secret, claims=(claim,), tiebreak=0)
    assert rules["fixed_epsilon_lower"] == fixed.epsilon_lowers[0] and rules["fixed_gdp_mu"] == fixed.gdp_mu_lower
    assert rules["planned_epsilon_lower"] == planned.epsilon_lowers[0]
    assert rules["planned_k"] == planned.tests[0].k_plus != 200
