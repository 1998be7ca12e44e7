"""The f-DP recursion's early stop (:func:`dpaudit.onerun.fdp.rejects`) gives the full recursion's answer.

``rejects`` stops once every curve is decided (r + h past c′/m, which never decreases) or frozen
(a step that leaves r unchanged leaves every later step unchanged).  Here it is held, bit for bit,
against the full c-step recursion of Mahloujifar, Melis, Chaudhuri (ICML 2025, Alg. 2) written out
below, on random counts and on batches of GDP, (ε, δ) and profile curves, including the finest
nested grid around the largest rejected μ (where a curve sits at the threshold), and through
``largest_rejected_mu`` and ``epsilon_lower_curve``.  No time is measured.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from dpaudit.onerun import fdp
from dpaudit.onerun.curves import approx_dp, approx_dp_tradeoff, gdp, gdp_binv, profile


def full_recursion(binv: Callable[[np.ndarray], np.ndarray], n: int, *, m: int, c_prime: int, c: int,
                   tau: float, k: int = 2) -> np.ndarray:
    """Algorithm 2, every one of the c steps (the reference)."""
    r = np.full(n, tau * c / m)
    h = np.full(n, tau * (c_prime - c) / m)
    for i in range(c - 1, -1, -1):
        h_new = np.maximum(h, (k - 1) * binv(r))
        r = np.minimum(1.0, r + i / (c_prime - i) * (h_new - h))
        h = h_new
    return np.asarray(r + h > c_prime / m)


def random_counts(rng: np.random.Generator) -> tuple[int, int, int, float]:
    m = int(rng.integers(2, 4000))
    c_prime = int(rng.integers(1, m + 1))
    precision = rng.uniform(0.3, 1.0)
    c = int(min(c_prime, max(0, round(precision * c_prime))))
    return m, c_prime, c, float(rng.choice([0.05, 0.01, 0.001, 0.2]))


@pytest.mark.parametrize("seed", range(40))
def test_gdp_batches_equal_the_full_recursion(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, c_prime, c, tau = random_counts(rng)
    mus = np.concatenate([np.linspace(0.0, 50.0, 49), rng.uniform(0.0, 6.0, 30)])
    fast = fdp.rejects(lambda r: gdp_binv(r, mus), mus.size, m=m, c_prime=c_prime, c=c, tau=tau)
    slow = full_recursion(lambda r: gdp_binv(r, mus), mus.size, m=m, c_prime=c_prime, c=c, tau=tau)
    assert np.array_equal(fast, slow), (m, c_prime, c, tau)


@pytest.mark.parametrize("seed", range(25))
def test_approx_dp_and_profile_curves_equal_the_full_recursion(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    m, c_prime, c, tau = random_counts(rng)
    eps = rng.uniform(0.0, 12.0, 40)
    delta = float(rng.choice([0.0, 1e-5, 1e-2]))

    def binv(r: np.ndarray) -> np.ndarray:
        return approx_dp_tradeoff(1.0 - r, eps, delta)

    assert np.array_equal(fdp.rejects(binv, eps.size, m=m, c_prime=c_prime, c=c, tau=tau),
                          full_recursion(binv, eps.size, m=m, c_prime=c_prime, c=c, tau=tau))
    claims = [gdp(float(rng.uniform(0, 4))), approx_dp(float(rng.uniform(0, 8)), 1e-5),
              profile(sorted(rng.uniform(0, 8, 5)), sorted(rng.uniform(0, 0.1, 5))[::-1])]
    for claim in claims:
        got = fdp.rejects_claim(claim, m=m, c_prime=c_prime, c=c, tau=tau)
        want = full_recursion(lambda r, cl=claim: cl.inverse_blowup(r), 1, m=m, c_prime=c_prime, c=c, tau=tau)
        assert got == bool(want[0]), (claim, m, c_prime, c, tau)


@pytest.mark.parametrize("seed", range(12))
def test_largest_rejected_mu_and_curve_epsilon_equal_the_full_recursion(seed: int,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The nested grids' last levels hold curves at the threshold: the hardest case for an early stop."""
    rng = np.random.default_rng(2000 + seed)
    m, c_prime, c, tau = random_counts(rng)
    c = max(c, 1)
    fast = (fdp.largest_rejected_mu.__wrapped__(m=m, c_prime=c_prime, c=c, tau=tau),
            fdp.epsilon_lower_curve(m=m, c_prime=c_prime, c=c, tau=tau, delta=1e-5))
    monkeypatch.setattr(fdp, "rejects", full_recursion)
    slow = (fdp.largest_rejected_mu.__wrapped__(m=m, c_prime=c_prime, c=c, tau=tau),
            fdp.epsilon_lower_curve(m=m, c_prime=c_prime, c=c, tau=tau, delta=1e-5))
    assert fast == slow, (m, c_prime, c, tau)


def test_the_reference_is_not_vacuous() -> None:
    """The cases above meet both answers, and the early stop does stop early (else nothing is tested)."""
    calls = []
    mus = np.linspace(0.0, 5.0, 49)

    def counted(r: np.ndarray) -> np.ndarray:
        calls.append(1)
        return gdp_binv(r, mus)

    got = fdp.rejects(counted, mus.size, m=10_000, c_prime=2000, c=1500, tau=0.05)
    assert got.any() and not got.all()
    assert len(calls) < 1500
    assert np.array_equal(got, full_recursion(lambda r: gdp_binv(r, mus), mus.size, m=10_000, c_prime=2000, c=1500,
                                              tau=0.05))
