"""A one-run claim that holds says what the audit could have caught (dpaudit.onerun.detectable).

Statistical facts used (fixed seeds; the games' secrets come from conftest's pinned stream):

* The stated ``mu`` is the smallest GDP canary leak refuted with probability ≥ 0.9 at this m and
  rule (simulated, 1000 games).  A Gaussian canary mechanism (``GaussianCanaries``, m = 1000) built
  to leak exactly that μ must be refuted in ≥ 85 % of 50 seeds (at a true power of 0.9,
  P[Bin(50, 0.9) ≥ 43] = 0.88), and one at half of it in fewer.  Measured while writing: a μ-GDP
  claim μ = 1 (planned Fixed(45, 45), stated μ = 1.95): 0.86 of 200 seeds at the stated μ (the
  simulation's own estimate with 4000 fresh games: 0.90–0.91), 0 of 200 at half; an (ε, δ) = (2,
  1e-5) claim (Fixed(25, 25), μ = 1.64): 0.865 and 0.005.
* ``canaries_for_twice`` is a projection (the quantile model): at the stated m, with the rule's
  guess fractions, GDP canaries at twice the claim's μ were refuted in 0.95 (m = 923) and 0.915
  (m = 7754) of 200 seeds.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpaudit.core import Guarantee
from dpaudit.onerun import Fixed, audit_one_run, gdp, one_run_bound
from dpaudit.onerun.claimrule import claim_mu
from dpaudit.onerun.detectable import POWER, OneRunDetectable
from dpaudit.onerun.fixtures import GaussianCanaries, coordinate_score, gaussian_scores

M = 1000
SEEDS = 50
CLAIMS = {"gdp": gdp(1.0, claim_id="g"), "eps-delta": Guarantee(epsilon=2.0, delta=1e-5, claim_id="e")}


def _holding(claim) -> tuple[object, OneRunDetectable]:
    """A result where ``claim`` holds (null scores) and its detectable."""
    rng = np.random.default_rng(0)
    secret = rng.integers(0, 2, M)
    res = one_run_bound(gaussian_scores(secret, 0.0, rng), secret, claims=(claim,), tiebreak=0)
    assert res.claims[0].verdict == "pass"
    (d,) = res.detectable
    assert isinstance(d, OneRunDetectable) and d.mu is not None
    return res, d


def _refuted(claim, mu: float) -> int:
    hits = 0
    for seed in range(SEEDS):
        res = audit_one_run(GaussianCanaries(mu, M), coordinate_score, m=M, claims=(claim,), seed=seed)
        hits += bool(res.claims[0].rejected)
    return hits


@pytest.mark.parametrize("name", list(CLAIMS))
def test_a_mechanism_leaking_the_stated_mu_is_refuted_and_half_of_it_less(name):
    claim = CLAIMS[name]
    _res, d = _holding(claim)
    at, half = _refuted(claim, d.mu), _refuted(claim, d.mu / 2)
    assert at >= 0.85 * SEEDS, (name, d.mu, at)
    assert half < at, (name, d.mu, half, at)


@pytest.mark.parametrize("name", list(CLAIMS))
def test_the_key_is_in_the_json_and_the_summary_with_its_model(name):
    res, d = _holding(CLAIMS[name])
    doc = json.loads(res.to_json())
    got = doc["claims"][0]["detectable"]
    assert set(got) == {"epsilon", "mu", "delta", "canaries_for_twice", "model"}
    assert got["mu"] == d.mu and got["epsilon"] == d.epsilon and got["delta"] == 1e-5
    assert d.epsilon > 0 and d.mu > claim_mu(CLAIMS[name])  # a leak past the claim, never below it
    assert isinstance(got["canaries_for_twice"], int) and got["canaries_for_twice"] >= 2
    assert "GDP canaries" in got["model"] and "mu doubled" in got["model"] and f"{POWER:g}" in got["model"]
    assert "could have caught: GDP canaries at mu >=" in res.summary()


def test_canaries_for_twice_refutes_twice_the_claims_mu():
    claim = CLAIMS["gdp"]
    res, d = _holding(claim)
    m2 = d.canaries_for_twice
    k = round(res.k_plus * m2 / M)
    rng = np.random.default_rng(7)
    secrets = rng.integers(0, 2, (SEEDS, m2))
    hits = sum(bool(one_run_bound(gaussian_scores(s, 2 * claim_mu(claim), rng), s, claims=(claim,), rule=Fixed(k, k),
                                  tiebreak=0).claims[0].rejected) for s in secrets)
    assert hits >= 0.85 * SEEDS, (m2, k, hits)


def test_a_violated_or_inapplicable_claim_has_none():
    rng = np.random.default_rng(1)
    secret = rng.integers(0, 2, M)
    off = Guarantee(epsilon=1.0, delta=1e-5, claim_id="x", applicable=False, note="premise broken")
    res = one_run_bound(gaussian_scores(secret, 4.0, rng), secret, claims=(CLAIMS["gdp"], off), tiebreak=0)
    assert [c.verdict for c in res.claims] == ["violation", "not-applicable"]
    assert res.detectable == (None, None)
    assert [c["detectable"] for c in res.to_dict()["claims"]] == [None, None]
    assert "could have caught" not in res.summary()
