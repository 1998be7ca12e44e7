"""The independent-canary test: one run as m independent trials of a one-record mechanism.

Premise (:data:`PREMISE`).  Each canary's score is a function of its own inclusion bit and of
noise independent of every other canary's (Steinke, Nasr, Jagielski, NeurIPS 2023, §6: white-box
gradient canaries on dedicated coordinates; Nasr et al., USENIX Security 2023, §4).  Then, given
the secret S, the scores of the n₁ included canaries are i.i.d. draws of the score under "in" and
those of the n₀ excluded ones i.i.d. draws under "out", and each canary's score, with the other
canaries' bits fixed, is a post-processing of the mechanism on a pair of neighbours: it meets
every claim the mechanism meets.  This is not true of a training run in general (a model's fit of
one canary moves the others'), so the test runs only when the premise is declared: by a design,
whose construction is checked (:class:`IsolatedCanaries`), or by a caller, explicitly
(:func:`declare`), and the record says which.

The test (the classical hypothesis-testing reading of DP, Kairouz, Oh, Viswanath, ICML 2015,
Thm 2.1; Dong, Roth, Su, JRSS-B 2022, Def. 2.3 for f-DP).  A threshold t fixed before any score is
seen gives the test "in iff score > t" with TPR = P_in[score > t] and FPR = P_out[score > t].  With
tp of n₁ and fp of n₀ above t, the one-sided Clopper–Pearson bounds TPR ≥ TPR_lo and FPR ≤ FPR_hi,
each at level α/2, hold together with probability ≥ 1 − α, and on that event:

* (ε, δ)-DP gives TPR ≤ e^ε·FPR + δ and (the other direction of add-remove) 1 − FPR ≤
  e^ε·(1 − TPR) + δ, so ε ≥ max(log((TPR_lo − δ)/FPR_hi), log((1 − FPR_hi − δ)/(1 − TPR_lo)));
* an f-DP claim gives 1 − TPR ≥ f(FPR) and FPR ≥ f(1 − TPR) (f decreasing, so the bounds are the
  conservative ends); the claim is rejected when either fails at (FPR_hi, 1 − TPR_lo);
* μ-GDP, f(x) = Φ(Φ⁻¹(1 − x) − μ), gives μ ≥ Φ⁻¹(TPR) − Φ⁻¹(FPR) (both inequalities coincide, f
  being symmetric): μ_lower = Φ⁻¹(TPR_lo) − Φ⁻¹(FPR_hi), valid against GDP claims only.

Every statement uses the same two bounds, so all of them together hold at confidence 1 − α (no
charge for the two tails, the δs or the claims).  The threshold is fixed in advance (a design's is
planned from its claims), so there is no selection to pay for.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special, stats

from dpaudit.core import Guarantee, InputError, check_real_array, require
from dpaudit.engine.bounds import clopper_pearson, epsilon_from_bounds
from dpaudit.onerun.curves import CurveClaim, gdp_epsilon
from dpaudit.onerun.game import CanaryGame

__all__ = ["DECLARERS", "PREMISE", "IsolatedBound", "IsolatedCanaries", "IsolatedClaimCheck", "PilotCheck", "declare",
           "dependence_pilot", "isolated_bound", "plan_threshold",
           "point_rejects", "premise_pilot"]

PREMISE = ("isolated canaries: each canary's score is a function of its own inclusion bit and of noise independent "
           "of every other canary's, so the m canaries are m independent trials of one one-record mechanism")
DECLARERS = ("design", "caller")
MU_VALIDITY = "valid against GDP-family claims only, under the isolated-canary premise"


@dataclass(frozen=True)
class IsolatedCanaries:
    """A design's declaration of the premise: why it holds (``reason``), the output coordinate each
    canary alone occupies (``coordinates``, one per canary: the construction check refuses two
    canaries on one coordinate) and the threshold planned from the claims before any run."""

    reason: str
    coordinates: tuple[int, ...]
    threshold: float
    threshold_source: str

    def __post_init__(self) -> None:
        require(isinstance(self.reason, str) and self.reason.strip() != "", "isolated_canaries.reason", self.reason,
                "must say why each canary's score depends on its own bit only")
        require(math.isfinite(self.threshold), "isolated_canaries.threshold", self.threshold, "must be finite")
        coords = np.asarray(self.coordinates, dtype=np.int64)
        values, counts = np.unique(coords, return_counts=True)
        if np.any(counts > 1):
            shared = int(values[np.argmax(counts > 1)])
            who = np.flatnonzero(coords == shared)[:4].tolist()
            raise InputError(f"isolated_canaries = <canaries {who} on coordinate {shared}> is invalid: isolated "
                             "canaries need one coordinate each (canaries sharing one see each other's bits, which "
                             "voids the independent-canary test)")

    @property
    def check(self) -> str:
        return f"construction: {len(self.coordinates)} canaries on pairwise distinct coordinates"


@dataclass(frozen=True)
class IsolatedClaimCheck:
    """One claim under the premise: ``rejected`` None when it does not apply to the game."""

    claim_id: str | None
    claim_type: str
    rejected: bool | None
    epsilon_lower: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"claim_id": self.claim_id, "claim_type": self.claim_type, "rejected": self.rejected,
                "epsilon_lower": self.epsilon_lower}


@dataclass(frozen=True)
class IsolatedBound:
    """The independent-canary test of one run (module docstring): counts above the threshold, the
    two Clopper–Pearson bounds, the (ε, δ) lower bounds and the GDP μ, each under :data:`PREMISE`."""

    declared_by: str
    reason: str
    check: str
    threshold: float
    threshold_source: str
    n_in: int
    n_out: int
    tp: int
    fp: int
    alpha: float
    tpr_lower: float
    fpr_upper: float
    deltas: tuple[float, ...]
    epsilon_lowers: tuple[float, ...]  # the (ε, δ) lower bound at each δ of deltas
    gdp_mu_lower: float
    claims: tuple[IsolatedClaimCheck, ...] = ()
    premise: str = PREMISE

    @property
    def epsilon_lower(self) -> tuple[float, ...]:
        """Deprecated (for one release): :attr:`epsilon_lowers` (:func:`deprecated_epsilon_lower`)."""
        return deprecated_epsilon_lower(self.epsilon_lowers, "IsolatedBound")

    @property
    def gdp_epsilon_read(self) -> float | None:
        """μ_lower read as ε at the first δ (a GDP-family statement, never an (ε, δ) bound); None at
        δ = 0, where every μ > 0 reads as ε = ∞."""
        return gdp_epsilon(self.gdp_mu_lower, self.deltas[0]) if 0 < self.deltas[0] < 1 else None

    @property
    def rejected(self) -> bool:
        return any(bool(c.rejected) for c in self.claims)

    def epsilon_at(self, delta: float) -> float:
        """The (ε, δ) lower bound of this test's two bounds at ``delta`` (a claim's own δ; a saved
        record's claim is re-checked with it)."""
        return _epsilon(self.tpr_lower, self.fpr_upper, delta)

    def to_dict(self) -> dict[str, Any]:
        return {"premise": self.premise, "declared_by": self.declared_by, "reason": self.reason, "check": self.check,
                "threshold": self.threshold, "threshold_source": self.threshold_source,
                "n_in": self.n_in, "n_out": self.n_out, "tp": self.tp, "fp": self.fp, "alpha": self.alpha,
                "tpr_lower": self.tpr_lower, "fpr_upper": self.fpr_upper,
                "bounds": [{"delta": d, "epsilon_lower": e, "validity": f"under the premise ({PREMISE.split(':')[0]})",
                            "method": "two one-sided Clopper-Pearson bounds at alpha/2, threshold fixed in advance"}
                           for d, e in zip(self.deltas, self.epsilon_lowers, strict=True)],
                "gdp_mu_lower": {"mu": self.gdp_mu_lower, "epsilon_read": self.gdp_epsilon_read,
                                 "delta": self.deltas[0], "validity": MU_VALIDITY},
                "claims": [c.to_dict() for c in self.claims]}

    def summary(self) -> str:
        eps = ", ".join(f"eps_lower={e:.4g} at delta={d:.3g}" for d, e in zip(self.deltas, self.epsilon_lowers,
                                                                            strict=True))
        read = self.gdp_epsilon_read
        return (f"isolated canaries (declared by the {self.declared_by}): {self.tp}/{self.n_in} in and "
                f"{self.fp}/{self.n_out} out above {self.threshold:.4g}: {eps}; GDP mu >= {self.gdp_mu_lower:.4g} "
                + (f"(read as eps {read:.4g} at delta={self.deltas[0]:.3g}, GDP claims only)" if read is not None
                   else "(GDP claims only)"))


def deprecated_epsilon_lower(epsilon_lowers: tuple[float, ...], owner: str) -> tuple[float, ...]:
    """``epsilon_lowers``, the tuple (one bound per δ) that ``epsilon_lower`` used to be on the
    one-run result types (``owner``: :class:`IsolatedBound`, :class:`~dpaudit.onerun.result.OneRunResult`),
    with the warning that the old name is deprecated for one release: ``epsilon_lower`` is one float on
    every other result type.  The warning points at the caller of the property."""
    warnings.warn(f"{owner}.epsilon_lower (a tuple, one bound per delta) is deprecated and will mean "
                  "one float as on every other result type: use epsilon_lowers", DeprecationWarning,
                  stacklevel=3)
    return epsilon_lowers


def _epsilon(tpr_lo: float, fpr_hi: float, delta: float) -> float:
    """max of the two tails' log((p_lo − δ)/q_hi), floored at 0."""
    tails = epsilon_from_bounds(np.array([tpr_lo, 1.0 - fpr_hi]), np.array([fpr_hi, 1.0 - tpr_lo]), delta)
    return float(max(0.0, np.max(tails)))


def _mu(tpr_lo: float, fpr_hi: float) -> float:
    return float(max(0.0, special.ndtri(tpr_lo) - special.ndtri(fpr_hi))) if tpr_lo > 0 and fpr_hi < 1 else 0.0


def point_rejects(claim: CurveClaim, tpr_lower: float, fpr_upper: float) -> bool:
    """Whether the test's conservative point violates the claimed trade-off curve f in either
    direction: 1 − TPR_lo < f(FPR_hi) or FPR_hi < f(1 − TPR_lo) (module docstring)."""
    return bool(1.0 - tpr_lower < float(claim.tradeoff(fpr_upper))
                or fpr_upper < float(claim.tradeoff(1.0 - tpr_lower)))


def _claim(claim: Any, tpr_lo: float, fpr_hi: float, relation: str | None) -> IsolatedClaimCheck:
    cid = getattr(claim, "claim_id", "") or None
    if isinstance(claim, CurveClaim):
        if not claim.applicable:
            return IsolatedClaimCheck(cid, "curve", None)
        return IsolatedClaimCheck(cid, "curve", point_rejects(claim, tpr_lo, fpr_hi))
    require(isinstance(claim, Guarantee), "claims", claim,
            "each claim must be a dpaudit.core.Guarantee or a CurveClaim")
    if not claim.applicable or (relation is not None and claim.relation != relation):
        return IsolatedClaimCheck(cid, "epsilon-delta", None)
    eps = _epsilon(tpr_lo, fpr_hi, claim.delta)
    return IsolatedClaimCheck(cid, "epsilon-delta", eps > claim.epsilon, eps)


def isolated_bound(scores: Any, secret: Any, *, threshold: float, declared_by: str, reason: str, check: str,
                   threshold_source: str, deltas: Sequence[float] = (1e-5,), alpha: float = 0.05,
                   claims: Sequence[Any] = (), relation: str | None = None) -> IsolatedBound:
    """The test of the module docstring on one game's scores and secret (callers: a design's
    :meth:`~dpaudit.onerun.design.CanaryDesign.audit`, or :func:`declare`)."""
    require(declared_by in DECLARERS, "declared_by", declared_by, f"must be one of {DECLARERS}")
    require(isinstance(alpha, float) and 0.0 < alpha < 0.5, "alpha", alpha, "must be a float in (0, 0.5)")
    s = check_real_array("scores", scores).reshape(-1)
    b = np.asarray(secret).reshape(-1)
    require(b.size == s.size and bool(np.all((b == 0) | (b == 1))), "secret", f"<{b.size} values>",
            f"must hold one 0/1 bit per score ({s.size})")
    n_in, n_out = int(b.sum()), int(b.size - b.sum())
    require(n_in >= 1 and n_out >= 1, "secret", f"<{n_in} in, {n_out} out>", "needs canaries both in and out")
    tp, fp = int(np.sum(s[b == 1] > threshold)), int(np.sum(s[b == 0] > threshold))
    tpr_lo = float(clopper_pearson(tp, n_in, alpha / 2)[0])
    fpr_hi = float(clopper_pearson(fp, n_out, alpha / 2)[1])
    ds = tuple(float(d) for d in deltas)
    return IsolatedBound(declared_by=declared_by, reason=reason, check=check, threshold=float(threshold),
                         threshold_source=threshold_source, n_in=n_in, n_out=n_out, tp=tp, fp=fp, alpha=alpha,
                         tpr_lower=tpr_lo, fpr_upper=fpr_hi, deltas=ds,
                         epsilon_lowers=tuple(_epsilon(tpr_lo, fpr_hi, d) for d in ds),
                         gdp_mu_lower=_mu(tpr_lo, fpr_hi),
                         claims=tuple(_claim(c, tpr_lo, fpr_hi, relation) for c in claims))


def declare(result: Any, *, threshold: float, isolated_canaries: bool = False, reason: str = "",
            claims: Sequence[Any] = ()) -> Any:
    """A caller's own game (a :class:`~dpaudit.onerun.result.OneRunResult` holding its scores and
    secret) with the independent-canary test attached, only when the caller declares the premise:
    ``isolated_canaries=True`` and a ``reason``.  The threshold must have been fixed before the scores
    were seen (nothing here can check that; the record says the caller chose it)."""
    require(isolated_canaries is True, "isolated_canaries", isolated_canaries,
            "must be True: the independent-canary test applies only when you declare that each canary's score "
            "depends on its own inclusion bit and independent noise only (it is never assumed of a training run)")
    require(isinstance(threshold, (int, float)) and not isinstance(threshold, bool) and math.isfinite(threshold),
            "threshold", threshold, "must be a finite number fixed before the scores were seen")
    require(getattr(result, "scores", None) is not None and getattr(result, "secret", None) is not None, "result",
            type(result).__name__, "must hold the game's scores and secret")
    bound = isolated_bound(result.scores, result.secret, threshold=float(threshold), declared_by="caller",
                           reason=reason or "declared by the caller", check="none: declared by the caller",
                           threshold_source="the caller's, fixed in advance (not checkable)",
                           deltas=result.deltas, alpha=result.alpha, claims=claims, relation=result.relation)
    return dataclasses.replace(result, isolated=bound)


def plan_threshold(scores_in: np.ndarray, scores_out: np.ndarray, *, m: int, alpha: float = 0.05,
                   points: int = 400) -> float:
    """The threshold with the largest median GDP μ_lower at m/2 canaries a side, from scores
    simulated under the claim (never the audited run's): median counts at each candidate (the
    out-scores' upper quantiles, down to 1/(50 m)), their Clopper–Pearson pair, Φ⁻¹ difference."""
    n = max(1, m // 2)
    tail = np.geomspace(1.0 / (50.0 * m), 0.5, points)
    candidates = np.quantile(scores_out, 1.0 - tail)
    tpr = (np.asarray(scores_in)[None, :] > candidates[:, None]).mean(axis=1)
    fpr = (np.asarray(scores_out)[None, :] > candidates[:, None]).mean(axis=1)
    lo = clopper_pearson(stats.binom.median(n, tpr), n, alpha / 2)[0]
    hi = clopper_pearson(stats.binom.median(n, fpr), n, alpha / 2)[1]
    with np.errstate(divide="ignore"):
        mu = special.ndtri(lo) - special.ndtri(hi)
    return float(candidates[int(np.argmax(mu))])


@dataclass(frozen=True)
class PilotCheck:
    """The dependence pilot's verdict: ``z`` the standardised statistic, ``p`` its two-sided p-value,
    ``flagged`` when p < ``level``."""

    runs: int
    m: int
    z: float
    p: float
    level: float

    @property
    def flagged(self) -> bool:
        return self.p < self.level

    def describe(self) -> str:
        verdict = "FLAGGED: scores depend on neighbours' bits" if self.flagged else "no dependence found"
        return (f"pilot: {self.runs} run(s) x {self.m} canaries, residual on neighbours' bits z = {self.z:.3g}, "
                f"p = {self.p:.3g} (level {self.level:g}): {verdict}")


def dependence_pilot(scores: Any, secrets: Any, *, level: float = 0.01) -> PilotCheck:
    """Do scores depend on the bits of the canaries beside them (in the design's order, where a
    design that put two canaries on one coordinate or slot would put them)?  Pilot runs (rows)
    whose scores are standardised within (run, own bit); under the premise each residual e_j is
    independent of its neighbours' centred bits c_j = Σ_{k=j±1} (S_k − ½), so
    z = Σ e_j c_j / √(Σ c_j²) is approximately N(0, 1) (a sum of independent mean-0 unit-variance
    terms given S).  A test of this dependence only, not of every violation of the premise."""
    s = np.atleast_2d(check_real_array("scores", scores))
    b = np.atleast_2d(np.asarray(secrets, dtype=float))
    require(s.shape == b.shape and s.shape[1] >= 4, "secrets", f"<shape {b.shape}>",
            f"must match the scores' shape {s.shape} (runs x m, m >= 4)")
    e = np.zeros_like(s)
    for bit in (0.0, 1.0):
        mask = b == bit
        count = np.maximum(mask.sum(axis=1, keepdims=True), 2)
        mean = np.where(mask, s, 0.0).sum(axis=1, keepdims=True) / count
        var = np.where(mask, (s - mean) ** 2, 0.0).sum(axis=1, keepdims=True) / (count - 1)
        e = np.where(mask, (s - mean) / np.sqrt(np.maximum(var, 1e-300)), e)
    c = np.zeros_like(b)
    c[:, 1:] += b[:, :-1] - 0.5
    c[:, :-1] += b[:, 1:] - 0.5
    z = float((e * c).sum() / math.sqrt(float((c * c).sum())))
    return PilotCheck(runs=s.shape[0], m=s.shape[1], z=z, p=float(2 * stats.norm.sf(abs(z))), level=level)


def premise_pilot(design: Any, *, seeds: Sequence[int], level: float = 0.01) -> PilotCheck:
    """:func:`dependence_pilot` of pilot games of ``design`` (its mechanism, scorer, canaries and
    base; one training run per seed, each with a fresh secret).  Use seeds no audited run uses: a
    pilot is a check of the design, not part of an audit."""
    require(len(seeds) >= 1, "seeds", seeds, "must hold at least one pilot seed")
    games = [CanaryGame(m=design.m, seed=int(s), relation=design.relation).play(
        design.mechanism, design.scorer, list(design.canaries), design.base) for s in seeds]
    return dependence_pilot(np.stack([g.scores for g in games]), np.stack([g.secret for g in games]), level=level)
