"""What a one-run audit that passed could have caught: the smallest GDP leak it refutes with probability 0.9.

A pass says nothing of power by itself.  For a claim that holds in a one-run result, this module
answers under a stated model, **GDP canaries at this m and this rule**: each of the game's m canaries
is in with probability ½ (the game's own secret), an included canary scores N(μ, 1) and an excluded
one N(0, 1), independently (the μ-GDP canary of Dong, Roth, Su 2022, §2.3, as in Steinke, Nasr,
Jagielski 2023, §6 and Mahloujifar et al. 2025, §5).  The audit refutes the claim when any of the
result's tests (the same (m, k₊, k₋, α), so a grid's Bonferroni levels and a split's held-out part
are kept) rejects it: Steinke's bound at the claim's δ above its ε for an (ε, δ) claim (capped by
:func:`~dpaudit.onerun.steinke.prior_guard` when the caller drew the secret), the f-DP recursion for a
curve claim.  Both rejections are monotone in the right count v, so each test rejects exactly when
v ≥ v*(test), found once by bisection.

- ``mu``: the smallest μ whose power P[refuted] ≥ :data:`POWER`.  The power is simulated with a fixed
  seed (:data:`SEED`, :data:`DRAWS` games, the same draws at every μ, so it is monotone in μ and a
  bisection finds it); past :data:`SIM_MAX` canaries, by the quantile model below.  None when even
  μ = :data:`~dpaudit.onerun.planner.MU_MAX` is not refuted that often.
- ``epsilon``: that μ read as ε at ``delta`` (the claim's δ; a curve claim's: the result's first δ),
  via μ-GDP's profile (Dong et al., Cor. 2.13): the size of that leak in the claim's own terms.
- ``canaries_for_twice``: the smallest m (canaries, all runs together) at which GDP canaries at
  **twice the claim's μ** (the largest μ whose GDP mechanism satisfies the claim,
  :func:`~dpaudit.onerun.claimrule.claim_mu`: the μ is doubled, not ε) are refuted with probability
  ≥ 0.9, each test keeping its guess fractions k₊/m, k₋/m and its level.  A projection over many m,
  so it uses the **quantile model**: with f₊ = k₊/m the "in" guesses are the canaries above the
  (1 − f₊)-quantile t₊ of the score mixture, each right with probability π₊ = ½·Φ̄(t₊ − μ)/f₊
  (symmetrically π₋ below the f₋-quantile), and V ~ Bin(r, (k₊π₊ + k₋π₋)/r) (exact in the mean;
  it ignores the quantile's own fluctuation, O(1/√m)).  The power is then ≥ 0.9 exactly when the
  test rejects at the 10 % quantile of V, one evaluation per m; the largest power over the tests
  stands for the audit's (a lower bound of P[any rejects]).  None past :data:`MAX_CANARIES` or when
  the claim's μ is 0.

Cost (CPU, m = 1000, measured on a shared machine): 0.1–0.6 s per holding claim; 1.5 s for a DP-SGD
accountant profile whose twice-μ leak no m up to :data:`MAX_CANARIES` catches (the scan runs to the end).  The model
is Gaussian canaries: a mechanism whose canaries are harder to score (a weaker scorer, a skewed
score distribution) needs more; the audit's own guessing rule is kept as it was.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, stats

from dpaudit.core import Guarantee
from dpaudit.onerun.curves import CurveClaim, gdp_epsilon
from dpaudit.onerun.fdp import rejects_claim
from dpaudit.onerun.rules import Test
from dpaudit.onerun.steinke import p_value

__all__ = ["DRAWS", "MAX_CANARIES", "POWER", "SEED", "OneRunDetectable", "contradiction", "for_check", "power",
           "unrefutable"]

POWER = 0.9            # the probability of refutation a leak must reach to count as detectable
SEED = 20231127        # the simulation's fixed seed: the same answer for the same record
DRAWS = 1000           # simulated games per μ (a power of 0.9 to ±0.95 % s.e.)
SIM_MAX = 20_000       # games of more canaries than this are evaluated by the quantile model
MAX_CANARIES = 2 * 10**5  # canaries_for_twice past this is reported as None
MU_TOL = 0.002         # bisection tolerance of mu
SCAN_START, SCAN_STEP = 16, 1.5  # canaries_for_twice's upward scan
Rejects = Callable[[Test], bool]


@dataclass(frozen=True)
class OneRunDetectable:
    """The smallest GDP leak this audit refutes with probability ≥ :data:`POWER` under :attr:`model`,
    read as ε at :attr:`delta`, and the canaries that refute a leak of twice the claim's μ as often."""

    mu: float | None
    epsilon: float | None
    delta: float
    canaries_for_twice: int | None
    model: str

    def to_dict(self) -> dict[str, Any]:
        """The ``detectable`` key of a holding one-run claim: ``epsilon`` ("inf" when no μ up to the
        planner's largest is refuted, ``mu`` null then; or at δ = 0), ``mu``, ``delta``,
        ``canaries_for_twice`` (null past :data:`MAX_CANARIES` or for a claim of μ = 0) and ``model``."""
        eps = "inf" if self.epsilon is None or math.isinf(self.epsilon) else self.epsilon
        return {"epsilon": eps, "mu": self.mu, "delta": self.delta,
                "canaries_for_twice": self.canaries_for_twice, "model": self.model}

    def words(self) -> str:
        """The summary's phrase."""
        head = ("could have caught: no GDP leak up to the planner's largest mu, 9 times in 10" if self.mu is None
                else f"could have caught: GDP canaries at mu >= {self.mu:.3g} (eps >= {self.epsilon:.3g} at "
                     f"delta={self.delta:.3g}), 9 times in 10")
        if self.canaries_for_twice is not None:
            return head + f"; twice the claim's mu needs m = {self.canaries_for_twice}"
        return head + f"; twice the claim's mu: not caught up to m = {MAX_CANARIES}"


def critical_v(test: Test, rejects: Rejects) -> int:
    """The smallest right count at which ``test`` rejects (r + 1: none does); rejection is monotone in v."""
    if not rejects(Test(test.m, test.k_plus, test.k_minus, test.r, test.alpha)):
        return test.r + 1
    lo, hi = -1, test.r  # rejects at hi, not at lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if rejects(Test(test.m, test.k_plus, test.k_minus, mid, test.alpha)):
            hi = mid
        else:
            lo = mid
    return hi


def _ones_below(scores: np.ndarray, secret: np.ndarray, m: int) -> np.ndarray:
    """Per simulated game (rows), the included canaries among the i lowest of its first m, i = 0..m."""
    s, b = scores[:, :m], secret[:, :m]
    ones = np.cumsum(np.take_along_axis(b, np.argsort(s, axis=1), axis=1), axis=1, dtype=np.int64)
    return np.concatenate([np.zeros((s.shape[0], 1), dtype=np.int64), ones], axis=1)


def _simulated_power(tests: tuple[Test, ...], crit: list[int]) -> Callable[[float], float]:
    m = max(t.m for t in tests)
    rng = np.random.default_rng(SEED)
    secret = rng.integers(0, 2, size=(DRAWS, m), dtype=np.int8)
    noise = rng.standard_normal((DRAWS, m))

    def power_at(mu: float) -> float:
        scores = noise + mu * secret
        hit = np.zeros(DRAWS, dtype=bool)
        ones: dict[int, np.ndarray] = {}  # one sort per part size (a grid's pairs share one)
        for t, c in zip(tests, crit, strict=True):
            if c > t.r:
                continue
            if t.m not in ones:
                ones[t.m] = _ones_below(scores, secret, t.m)
            o = ones[t.m]
            hit |= o[:, t.m] - o[:, t.m - t.k_plus] + t.k_minus - o[:, t.k_minus] >= c
        return float(hit.mean())

    return power_at


def _rate(k_plus: int, k_minus: int, m: int, mu: float) -> float:
    """The quantile model's probability that a guess is right (module docstring)."""
    norm = stats.norm
    total = 0.0
    if k_plus:
        f = k_plus / m
        t = optimize.brentq(lambda x: 0.5 * (norm.sf(x - mu) + norm.sf(x)) - f, -40.0, 40.0 + mu)
        total += k_plus * min(1.0, 0.5 * norm.sf(t - mu) / f)
    if k_minus:
        f = k_minus / m
        t = optimize.brentq(lambda x: 0.5 * (norm.cdf(x - mu) + norm.cdf(x)) - f, -40.0, 40.0 + mu)
        total += k_minus * min(1.0, 0.5 * norm.cdf(t) / f)
    return total / (k_plus + k_minus)


def power(tests: tuple[Test, ...], crit: list[int], mu: float) -> float:
    """The quantile model's power at μ: the largest over the tests of P[Bin(r, π) ≥ v*]."""
    return max(float(stats.binom.sf(c - 1, t.r, _rate(t.k_plus, t.k_minus, t.m, mu))) for t, c in zip(tests, crit,
                                                                                                        strict=True))


def smallest_mu(tests: tuple[Test, ...], rejects: Rejects, mu_max: float) -> float | None:
    """The smallest μ refuted with probability ≥ :data:`POWER` (bisection; None beyond ``mu_max``)."""
    crit = [critical_v(t, rejects) for t in tests]
    if all(c > t.r for t, c in zip(tests, crit, strict=True)):
        return None
    if max(t.m for t in tests) <= SIM_MAX:
        power_at = _simulated_power(tests, crit)
    else:
        def power_at(mu: float) -> float:
            return power(tests, crit, mu)
    if power_at(mu_max) < POWER:
        return None
    lo, hi = 0.0, mu_max
    while hi - lo > MU_TOL:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if power_at(mid) >= POWER else (mid, hi)
    return hi


def _scaled(tests: tuple[Test, ...], m_total: int, m_new: int) -> list[tuple[int, Test]]:
    """Each test at ``m_new`` total canaries with its guess fractions and level kept (with its index)."""
    out = []
    for i, t in enumerate(tests):
        mt = max(2, round(t.m * m_new / m_total))
        kp, km = round(t.k_plus * mt / t.m), round(t.k_minus * mt / t.m)
        if 0 < kp + km <= mt:
            out.append((i, Test(mt, kp, km, 0, t.alpha)))
    return out


def _caught_at(scaled: list[tuple[int, Test]], rates: list[float], rejects: Rejects) -> bool:
    """Whether some test rejects at the 10 % quantile of its right count (quantile model; ``rates``:
    each original test's π, which its guess fractions fix)."""
    for i, t in scaled:
        v10 = int(stats.binom.ppf(1.0 - POWER, t.r, rates[i]))
        if rejects(Test(t.m, t.k_plus, t.k_minus, min(max(v10, 0), t.r), t.alpha)):
            return True
    return False


def canaries_for(tests: tuple[Test, ...], rejects: Rejects, m_total: int, mu: float) -> int | None:
    """The smallest total m (to 3 %) whose scaled tests refute GDP canaries at μ with probability ≥ 0.9.

    Not monotone in m: Steinke's δ term grows as 2mδ, so a game too large can lose the power a
    smaller one has.  So m is scanned upward by :data:`SCAN_STEP` from :data:`SCAN_START` and the
    first step that catches is refined by bisection against the one before."""
    if mu <= 0:
        return None
    rates = [_rate(t.k_plus, t.k_minus, t.m, mu) for t in tests]

    def caught(m: float) -> bool:
        return _caught_at(_scaled(tests, m_total, max(2, round(m))), rates, rejects)

    lo, hi = float(SCAN_START), float(SCAN_START)
    while not caught(hi):
        lo, hi = hi, hi * SCAN_STEP
        if hi > MAX_CANARIES:
            return None
    while hi / lo > 1.03:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if caught(mid) else (mid, hi)
    return math.ceil(hi)


def _rejector(claim: Guarantee | CurveClaim, guard: Callable[[Test], float] | None) -> tuple[Rejects, float | None]:
    """The claim's rejection by one test, and its δ (None for a curve claim).  An (ε, δ) claim is
    rejected when Steinke's p-value at the claim is below the test's α (and, with a caller's secret,
    the guard is above the claim): the bound's own test, one evaluation instead of its search (the same
    answer wherever p grows with ε, as it does for every count the bound's module has met)."""
    if isinstance(claim, CurveClaim):
        return (lambda t: rejects_claim(claim, m=t.m, c_prime=t.r, c=t.v, tau=t.alpha)), None
    eps_c, delta = float(claim.epsilon), float(claim.delta)

    def at_claim(t: Test) -> bool:
        if t.v == 0 or (guard is not None and guard(t) <= eps_c):
            return False
        return bool(p_value(t.m, t.r, t.v, eps_c, delta)[0] < t.alpha)

    return at_claim, delta


def for_check(claim: Guarantee | CurveClaim, tests: tuple[Test, ...], *, delta: float,
              guard: Callable[[Test], float] | None, mu_max: float, claim_mu: float) -> OneRunDetectable:
    """The :class:`OneRunDetectable` of a holding ``claim`` bounded by ``tests`` (``delta``: the result's
    first δ, used for a curve claim; ``guard``: the cap of a caller's secret; ``claim_mu``: the claim's μ)."""
    rejects, own_delta = _rejector(claim, guard)
    d = delta if own_delta is None else own_delta
    mu = smallest_mu(tests, rejects, mu_max)
    # μ-GDP with μ > 0 is (ε, 0)-DP for no finite ε: a pure claim's leak reads as ε = ∞
    eps = None if mu is None else (gdp_epsilon(mu, d) if d > 0 else math.inf)
    m_total = max(t.m for t in tests)
    twice = canaries_for(tests, rejects, m_total, 2.0 * claim_mu)
    model = (f"GDP canaries (in N(mu, 1), out N(0, 1), secret Bernoulli(1/2)) at m = {m_total} under this rule's "
             f"tests, refuted with probability {POWER:g} (simulated, seed {SEED}, {DRAWS} games); the canaries for "
             f"twice the claim's mu ({2.0 * claim_mu:.3g}: mu doubled) by the quantile model, guess fractions and "
             "levels kept")
    return OneRunDetectable(mu=mu, epsilon=eps, delta=d, canaries_for_twice=twice, model=model)


def unrefutable(claim: Guarantee | CurveClaim, tests: tuple[Test, ...], *,
                guard: Callable[[Test], float] | None = None) -> bool:
    """True when no test of the rule rejects ``claim`` even with every guess right (v = r): a pass
    is then no evidence at all — no outcome of this game could have refuted the claim (rejection is
    monotone in v, so v = r is the best case)."""
    rejects, _ = _rejector(claim, guard)
    return not any(rejects(Test(t.m, t.k_plus, t.k_minus, t.r, t.alpha)) for t in tests)


def contradiction(claim: Guarantee | CurveClaim, tests: tuple[Test, ...], *, guard: Callable[[Test], float] | None,
                  mu_max: float, claim_mu: float, mu: float | None,
                  canaries_for_twice: int | None) -> tuple[str, str] | None:
    """The key of a stored ``detectable`` (``"mu"``, ``"canaries_for_twice"``) that is not what
    :func:`for_check` gives for this claim and these tests, and why; None when both are.  Cheaper than
    recomputing it: ``mu`` is the bisection's upper end, so the (monotone, fixed-seed) power is
    ≥ :data:`POWER` at ``mu`` and below it at ``mu`` − :data:`MU_TOL` (two evaluations instead of about
    13); None means no count rejects or the power at ``mu_max`` is below :data:`POWER`.
    ``canaries_for_twice`` (quantile model) is recomputed."""
    rejects, _ = _rejector(claim, guard)
    crit = [critical_v(t, rejects) for t in tests]
    if all(c > t.r for t, c in zip(tests, crit, strict=True)):
        if mu is not None:
            return "mu", "no count of this game's tests refutes the claim, so no leak is refuted (mu must be null)"
    else:
        sim = max(t.m for t in tests) <= SIM_MAX
        power_at = _simulated_power(tests, crit) if sim else (lambda x: power(tests, crit, x))
        if mu is None:
            top = power_at(mu_max)
            if top >= POWER:
                return "mu", f"GDP canaries at mu = {mu_max:g} are refuted with probability {top:.3g} (not null)"
        else:
            at, below = power_at(float(mu)), power_at(max(0.0, float(mu) - MU_TOL))
            if at < POWER or below >= POWER:
                return "mu", (f"this game's tests refute GDP canaries at mu = {float(mu):.6g} with probability "
                              f"{at:.3g} and at mu - {MU_TOL:g} with {below:.3g}: mu is the smallest leak refuted "
                              f"with probability >= {POWER:g} (seed {SEED}, {DRAWS} games)")
    twice = canaries_for(tests, rejects, max(t.m for t in tests), 2.0 * claim_mu)
    if twice != canaries_for_twice:
        return "canaries_for_twice", f"this claim's twice-mu leak needs m = {twice} under these tests"
    return None
