"""Canary designs for the DP-SGD reward model (:mod:`dpaudit.mechanisms.dpsgd`).

White box (Nasr et al., USENIX Security 2023, §4; Steinke et al., NeurIPS 2023, §6): canary j is
a *gradient canary* on its own coordinate e_{d₀+j} (no preference example has weight there), so
coordinate d₀+j of step t's noisy sum is ``U_tj = C·b_tj + σC·Z`` with ``b_tj ~ Bernoulli(q)``
when j is in the data and ``b_tj = 0`` when not.  With ``x = U_tj / C`` the per-step likelihood
ratio of "in" against "out" is ``1 − q + q·exp((2x − 1)/(2σ²))`` and the score is the sum over
steps of its logarithm: the Neyman–Pearson statistic of the composed subsampled Gaussian, so the
canaries see the accountant's own curve, which is why the audit can come close to it.  The
canary carries a raw gradient of norm 4C: clipping must cut it to C.

Black box: canary j is an *input canary*, a preference record whose only feature is a private
coordinate d₀+j (x = a·e_{d₀+j}, y = 1); the score is θ_T's coordinate d₀+j.

Claims: the accountant's (ε, δ) at δ = 1e-5 and its whole curve (the PLD privacy profile, read
as its lower envelope on a grid).  :func:`family_rejection` gives the strongest rejected DP-SGD
curve at the same q and T (σ varied), read as ε at δ — valid against that family only.

Known limit, fixed-size batches where the accountant assumes Poisson.  Drawn afresh at every step
(B of N without replacement), an isolated canary's coordinate has exactly the Poisson law: it is
in step t with probability B/N, independently across steps, and nothing else touches its
coordinate.  What the accountant misses is the displacement (the canary's batch holds one other
record fewer), which moves the *shared* coordinates and is the same for every canary, so no
isolated-canary game can see it: its refutation rate is ≤ α by construction.  Drawn epoch by epoch
(a shuffled loader, ``bug="shuffle-batches"``), every record is in exactly one batch per epoch;
that is leakier (q = 0.05, T = 20, σ = 0.3, k₊ = k₋ = 200: 385–394 right of 400 against 333–337
for Poisson, seeds 0–2, :func:`shuffle_score`), but the Poisson accountant's own curve is then
already weak (ε = 33.6 at 10⁻⁵) and was not rejected; at σ = 1.19, q = 0.02, T = 500 (ε ≈ 2) the
shuffled run is refuted in 0 of 5 runs (Steinke 0.21–0.75).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import optimize, special

from dpaudit.catalog.designs.entry import DesignEntry, DesignSummary
from dpaudit.core import Guarantee, require
from dpaudit.mechanisms.dpsgd import (
    BUGS,
    DPSGD,
    DPSGDOutput,
    accountant_deltas,
    accountant_epsilon,
    optimistic_epsilon,
    preference_data,
)
from dpaudit.onerun.curves import CurveClaim
from dpaudit.onerun.design import CanaryDesign
from dpaudit.onerun.family import FamilyRejection, strongest_rejected
from dpaudit.onerun.isolated import IsolatedBound, IsolatedCanaries, plan_threshold, point_rejects
from dpaudit.onerun.result import OneRunResult
from dpaudit.onerun.rules import Fixed

__all__ = ["CANARY_NORM", "DESIGNS", "EPS_GRID", "HALVED_M", "HALVED_RULE", "RULE", "AccountantProfile",
           "PlannedIsolation", "accountant_curve", "blackbox_design", "family_rejection", "isolated_family_rejection",
           "noise_for_epsilon", "planned_threshold", "shuffle_score", "whitebox_design", "whitebox_score"]

# The catalog family whose claims these designs check (dpaudit.catalog files each design by it).
FAMILY = "dp-sgd"

CANARY_NORM = 4.0
# The profile's ε grid: fine where DP-SGD curves bend, up to ε = 40.
EPS_GRID = tuple(float(e) for e in np.concatenate([np.linspace(0.0, 4.0, 81)[:-1], np.linspace(4.0, 40.0, 145)]))
# Fixed before any audited run, from a planning simulation of the white-box scores at ε = 8
# (seeds 100–104, none of which an audit or test uses): k₊ = k₋ = 50 maximised both the median
# Steinke bound (2.17) and the family reading (3.51) over k ∈ {5 … 300}.
RULE = Fixed(k_plus=50, k_minus=50)
# The noise-halved twin (claims of sigma = 1.19, eps ~ 2; noise sigma/2) must be refuted through its curve
# with probability >= 0.99 in `run --suite onerun` (issue 41, item 12).  Its power, from the per-canary
# law of the module docstring (x_t = B_t + 0.595 Z_t, B_t ~ Bernoulli(0.02) when in, scored with the
# claimed sigma; pools of 1e5 canary scores per side, 4,000 games per cell; seeds 1-3 of a planning
# stream no audit uses): at m = 1000, k+ = k- = 50 (the ε = 8 design's rule) only 0.926 (so `run --suite
# onerun` exited 1 in about 1 run of 13, and was seen to in 2 of 6); 100: 0.974; at m = 2000, 100: 0.995,
# 200: 0.999 (s.e. 0.0005).  The twin is audited at m = 2000 with k+ = k- = 200, fixed before any audited run.
HALVED_M, HALVED_RULE = 2000, Fixed(k_plus=200, k_minus=200)
PLANNING_SEED = 20_261_127  # the independent-canary threshold's planning stream; no audited run uses it


@functools.lru_cache(maxsize=64)
def noise_for_epsilon(epsilon: float, sampling_probability: float, steps: int, delta: float = 1e-5) -> float:
    """The noise multiplier whose accountant ε(δ) is ``epsilon`` (rounded up to 1e-3: ε ≤ target)."""
    require(0.05 <= epsilon <= 40, "epsilon", epsilon, "must be in [0.05, 40]")

    def gap(s: float) -> float:
        return accountant_epsilon(s, sampling_probability, steps, delta, discretisation=1e-3) - epsilon

    sigma = optimize.brentq(gap, 0.2, 50.0, xtol=1e-4)
    return float(np.ceil(sigma * 1000) / 1000)


class _OnFirstRead:
    """A field of a frozen dataclass whose value is computed the first time it is read
    (``compute(instance)``) and then kept in the instance: the design names its claims and its planned
    threshold at once (``list``, ``plan`` and the catalog read only names, sizes and descriptions) and
    pays for the accountant's profile or the planning simulation only when a run bounds against them.
    A value given to the constructor (``dataclasses.replace``, unpickling) is kept as given; the
    field's empty default means "not computed yet"."""

    def __init__(self, compute: Callable[[Any], Any], empty: Any) -> None:
        self._compute, self._empty = compute, empty

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self._empty
        if self._name not in obj.__dict__:
            obj.__dict__[self._name] = self._compute(obj)
        return obj.__dict__[self._name]

    def __set__(self, obj: Any, value: Any) -> None:
        if value != self._empty:
            obj.__dict__[self._name] = value


def _profile_deltas(claim: AccountantProfile) -> tuple[float, ...]:
    noise_multiplier, sampling_probability, steps, discretisation = claim.accountant
    deltas = accountant_deltas(noise_multiplier, sampling_probability, steps, EPS_GRID, discretisation=discretisation)
    require(bool(np.all(np.isfinite(deltas))), "CurveClaim.deltas", claim.source, "must be in [0, 1]")
    return tuple(float(x) for x in deltas)


class AccountantProfile(CurveClaim):
    """:func:`accountant_curve`'s claim: a ``profile`` curve claim on :data:`EPS_GRID` whose δs (225
    hockey-stick divergences of the composed PLD, ~2 s of CPU) are computed when first read.  Equal
    field by field to the eager claim it replaces (same ε grid, δs, id and source)."""

    deltas = _OnFirstRead(_profile_deltas, ())

    accountant: tuple[float, float, int, float]  # (σ, q, T, discretisation), set by accountant_curve

    def __post_init__(self) -> None:
        if "deltas" in self.__dict__:  # given (a replace() of a computed claim): checked as any profile's
            super().__post_init__()

    def __getstate__(self) -> dict[str, Any]:
        # computed before the claim travels (to a worker), which would otherwise compute it again
        return {**self.__dict__, "deltas": self.deltas}


def _planned(iso: PlannedIsolation) -> float:
    threshold = planned_threshold(*iso.planning)
    require(math.isfinite(threshold), "isolated_canaries.threshold", threshold, "must be finite")
    return threshold


class PlannedIsolation(IsolatedCanaries):
    """The white-box design's isolated-canary declaration, its threshold planned (:func:`planned_threshold`,
    ~0.8 s of simulation) when first read; its reason and coordinates are checked at once, as any declaration's."""

    threshold = _OnFirstRead(_planned, None)

    planning: tuple[float, float, int, int]  # (σ, q, T, m), set by _isolation

    def __post_init__(self) -> None:
        if "threshold" in self.__dict__:
            super().__post_init__()
        else:  # the declaration's own checks (reason, one coordinate per canary) with a stand-in threshold
            IsolatedCanaries(self.reason, self.coordinates, 0.0, self.threshold_source)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "threshold": self.threshold}  # planned before the declaration travels


@functools.lru_cache(maxsize=512)
def accountant_curve(noise_multiplier: float, sampling_probability: float, steps: int, *,
                     discretisation: float = 1e-4, claim_id: str = "dpsgd/curve") -> CurveClaim:
    """The accountant's privacy profile on :data:`EPS_GRID` as a curve claim (lower envelope;
    pessimistic δ, so a weaker claim than the true curve: a correct mechanism is not rejected
    more than α of the time); its δs are computed when first read (:class:`AccountantProfile`)."""
    claim = AccountantProfile(family="profile", epsilons=EPS_GRID, claim_id=claim_id,
                              source=f"PLD accountant, Poisson-subsampled Gaussian, sigma={noise_multiplier:.4g}, "
                                     f"q={sampling_probability:.4g}, T={steps}, add-remove")
    object.__setattr__(claim, "accountant", (noise_multiplier, sampling_probability, steps, discretisation))
    return claim


def whitebox_score(sigma: float, q: float, clip: float, offset: int, per_coordinate: int = 1) -> Any:
    """The scorer: Σ_t log(1 − q + q·exp((2x − 1)/(2σ²))), x = U_t[offset + j] / C, using the
    *claimed* σ, q and C (the auditor's knowledge); ``per_coordinate`` canaries share each
    coordinate (offset + j // per_coordinate) in the premise-breaking twin."""

    def score(output: DPSGDOutput, canaries: Sequence[Any]) -> np.ndarray:
        cols = offset + np.arange(len(canaries)) // per_coordinate
        x = output.updates[:, cols] / clip
        return np.log1p(q * np.expm1((2.0 * x - 1.0) / (2.0 * sigma ** 2))).sum(axis=0)

    return score


def shuffle_score(sigma: float, q: float, clip: float, offset: int) -> Any:
    """A scorer for a suspected shuffled loader (⌊1/q⌉ steps per epoch, each record in exactly
    one of them): Σ_epochs log( mean_{t in epoch} exp((2x_t − 1)/(2σ²)) ), the likelihood ratio
    of "in exactly one batch per epoch" against "in none".  Fixed in advance, like any scorer."""
    per_epoch = max(1, round(1.0 / q))

    def score(output: DPSGDOutput, canaries: Sequence[Any]) -> np.ndarray:
        cols = offset + np.arange(len(canaries))
        llr = (2.0 * output.updates[:, cols] / clip - 1.0) / (2.0 * sigma ** 2)
        epochs = llr.shape[0] // per_epoch
        blocks = llr[:epochs * per_epoch].reshape(epochs, per_epoch, -1)
        return (special.logsumexp(blocks, axis=1) - np.log(per_epoch)).sum(axis=0)

    return score


@functools.lru_cache(maxsize=32)
def planned_threshold(noise_multiplier: float, sampling_probability: float, steps: int, m: int, *,
                      samples: int = 40_000) -> float:
    """The independent-canary test's threshold, planned from the claim alone (never from an audited
    run): single canaries' white-box scores simulated under the claimed σ, q and T (x_t = B_t + σZ_t,
    B_t ~ Bernoulli(q) when in, 0 when out: the per-coordinate law of the module docstring), then
    :func:`~dpaudit.onerun.isolated.plan_threshold` at m canaries (95 % confidence)."""
    rng = np.random.default_rng(PLANNING_SEED)
    sigma, q = noise_multiplier, sampling_probability

    def simulate(included: bool) -> np.ndarray:
        out = []
        for start in range(0, samples, 4000):  # chunks: steps x 4000 floats at a time
            x = sigma * rng.standard_normal((steps, min(4000, samples - start)))
            if included:
                x += rng.random(x.shape) < q
            out.append(np.log1p(q * np.expm1((2.0 * x - 1.0) / (2.0 * sigma ** 2))).sum(axis=0))
        return np.concatenate(out)

    return plan_threshold(simulate(True), simulate(False), m=m)


ISOLATION_REASON = ("gradient canary j is the only record with weight on coordinate d0+j (checked on the arrays); "
                    "Poisson sampling includes each record independently at every step and the Gaussian noise is "
                    "independent per coordinate, so canary j's score (coordinate d0+j only) is a function of its "
                    "own bit, its own sampling draws and its coordinate's noise")


def _isolation(canaries: np.ndarray, base: np.ndarray, planning: tuple[float, float, int, int],
               source: str) -> IsolatedCanaries:
    """The declaration, from the arrays themselves: each canary's one coordinate (refused when two
    canaries share one: :class:`~dpaudit.onerun.isolated.IsolatedCanaries`), none touched by a base record;
    its threshold is :func:`planned_threshold` of ``planning`` (σ, q, T, m), planned when first read."""
    nonzero = canaries[:, :-2] != 0
    require(bool(np.all(nonzero.sum(axis=1) == 1)), "canaries", "<gradient canaries>",
            "isolated canaries need exactly one nonzero coordinate each")
    coords = np.argmax(nonzero, axis=1)
    require(not bool(np.any(base[:, :-2][:, np.unique(coords)] != 0)), "base", "<preference records>",
            "must have no weight on a canary's coordinate")
    iso = PlannedIsolation(reason=ISOLATION_REASON, coordinates=tuple(int(c) for c in coords),
                           threshold=None, threshold_source=source)  # type: ignore[arg-type]  # planned when read
    object.__setattr__(iso, "planning", planning)
    return iso


def _claims(mech: DPSGD, delta: float) -> tuple[Guarantee | CurveClaim, ...]:
    g = mech.guarantees(delta)[0]
    curve = accountant_curve(mech.noise_multiplier, mech.sampling_probability, mech.steps)
    return (g, curve)


# What each variant must give (measured on seeds 0–4 at m = 1000, claims of σ = 1.19 for the twins):
# noise × 0.5 is refuted through the curve (its (ε, δ) bound stays near 2); unclipped canaries
# through both.  The shuffled loader is not listed: isolated canaries cannot refute it (module
# docstring), and a verdict expected to be "pass" on a broken mechanism would be no check.
_EXPECTED: dict[str, dict[str, str]] = {
    "none": {"dpsgd/accountant": "pass", "dpsgd/curve": "pass"},
    "noise-halved": {"dpsgd/curve": "violation"},
    "no-clip-canaries": {"dpsgd/accountant": "violation", "dpsgd/curve": "violation"},
}


def whitebox_design(*, m: int = 1000, epsilon: float = 8.0, delta: float = 1e-5, sampling_probability: float = 0.02,
                    steps: int = 500, n_base: int = 2000, features: int = 16, clip: float = 1.0,
                    noise_multiplier: float | None = None, bug: str = "none", scorer: str = "poisson",
                    data_seed: int = 12345, canaries_per_coordinate: int = 1,
                    declare_isolated: bool = True, rule: Fixed = RULE) -> CanaryDesign:
    """m isolated gradient canaries against DP-SGD calibrated (by the accountant) to ``epsilon``
    at ``delta``, or run at ``noise_multiplier`` when given.  ``bug`` makes a faulty twin that
    keeps the correct claims (expected: a violation).

    The design declares isolated canaries (the independent-canary test,
    :mod:`dpaudit.onerun.isolated`) for Poisson batches and the Poisson scorer when
    ``declare_isolated``.  ``canaries_per_coordinate`` > 1 is the premise-breaking twin (that many
    canaries on each coordinate): its declaration is refused (an InputError), and built with
    ``declare_isolated=False`` it is what the dependence pilot must flag.  ``rule``: the guessing rule,
    fixed in advance (:data:`RULE`; the suite's noise-halved twin: :data:`HALVED_RULE`)."""
    require(isinstance(m, int) and m >= 2, "m", m, "must be an integer >= 2")
    require(isinstance(canaries_per_coordinate, int) and canaries_per_coordinate >= 1, "canaries_per_coordinate",
            canaries_per_coordinate, "must be an integer >= 1")
    require(bug in BUGS, "bug", bug, f"must be one of {', '.join(BUGS)}")
    require(scorer in ("poisson", "shuffle"), "scorer", scorer, "must be poisson or shuffle")
    sigma = noise_for_epsilon(epsilon, sampling_probability, steps, delta) if noise_multiplier is None \
        else float(noise_multiplier)
    mech = DPSGD(noise_multiplier=sigma, sampling_probability=float(sampling_probability), steps=steps, clip=clip,
                 bug=bug)
    k = canaries_per_coordinate
    dim = features + -(-m // k)
    base = preference_data(n_base, features, dim, np.random.default_rng(data_seed))
    canaries = np.zeros((m, dim + 2))
    canaries[np.arange(m), features + np.arange(m) // k] = CANARY_NORM * clip
    canaries[:, -1] = 1.0  # kind: gradient canary
    claims = _claims(mech, delta)
    isolation = None
    if declare_isolated and scorer == "poisson" and bug != "shuffle-batches":
        isolation = _isolation(canaries, base, (sigma, float(sampling_probability), steps, m),
                               f"planned from the claim (sigma={sigma:g}, q={sampling_probability:g}, T={steps}, "
                               f"m={m}; planning seed {PLANNING_SEED})")
    return CanaryDesign(
        name=f"dpsgd-whitebox{'' if bug == 'none' else '-' + bug}", mechanism=mech, canaries=list(canaries),
        scorer=whitebox_score(sigma, float(sampling_probability), clip, features, k) if scorer == "poisson"
        else shuffle_score(sigma, float(sampling_probability), clip, features),
        claims=claims, rule=rule, isolated_canaries=isolation,
        base=base, deltas=(delta,), expected=_EXPECTED.get(bug, {}),
        family=FAMILY,
        description=f"DP-SGD reward model, sigma={sigma}, q={sampling_probability}, T={steps}, m={m} gradient "
                    f"canaries (white box), bug={bug}")


def blackbox_design(*, m: int = 1000, epsilon: float = 8.0, delta: float = 1e-5, sampling_probability: float = 0.02,
                    steps: int = 500, n_base: int = 2000, features: int = 16, clip: float = 1.0,
                    amplitude: float = 1.0, data_seed: int = 12345) -> CanaryDesign:
    """m input canaries with private features; score = the last iterate's canary coordinate."""
    sigma = noise_for_epsilon(epsilon, sampling_probability, steps, delta)
    mech = DPSGD(noise_multiplier=sigma, sampling_probability=float(sampling_probability), steps=steps, clip=clip,
                 keep_updates=False)
    dim = features + m
    base = preference_data(n_base, features, dim, np.random.default_rng(data_seed))
    canaries = np.zeros((m, dim + 2))
    canaries[np.arange(m), features + np.arange(m)] = amplitude
    canaries[:, -2] = 1.0  # label: preferred

    def score(output: DPSGDOutput, cans: Sequence[Any]) -> np.ndarray:
        return output.theta[features + np.arange(len(cans))]

    claims = _claims(mech, delta)
    return CanaryDesign(name="dpsgd-blackbox", mechanism=mech, canaries=list(canaries), scorer=score, claims=claims,
                        rule=RULE, base=base, deltas=(delta,), expected={c.claim_id: "pass" for c in claims},
                        family=FAMILY,
                        description=f"DP-SGD reward model, sigma={sigma}, m={m} input canaries (black box)")


def family_rejection(result: OneRunResult, mech: DPSGD, *, delta: float = 1e-5, lower: float = 0.3,
                     upper: float = 20.0) -> FamilyRejection:
    """The strongest DP-SGD accountant curve (same q and T, σ varied) the run rejects, read as ε
    at ``delta`` (valid against that family only).  Curves use a coarser PLD discretisation
    (1e-3, still pessimistic, hence still weaker claims than the true curves); the reading uses
    the optimistic PLD, a lower estimate of the member's ε, so it is never overstated."""
    q, t = mech.sampling_probability, mech.steps

    def curve(s: float) -> CurveClaim:
        return accountant_curve(round(s, 6), q, t, discretisation=1e-3, claim_id="dpsgd/family")

    return strongest_rejected(result.tests, curve, lower=lower, upper=upper, delta=delta,
                              read=lambda s: optimistic_epsilon(round(s, 6), q, t, delta),
                              family=f"DP-SGD accountant curves (q={q:g}, T={t}, sigma varied)")


def isolated_family_rejection(bound: IsolatedBound, mech: DPSGD, *, delta: float = 1e-5, lower: float = 0.3,
                              upper: float = 20.0) -> FamilyRejection:
    """:func:`family_rejection` through the independent-canary test instead of the f-DP recursion:
    the strongest DP-SGD accountant curve (same q and T, σ varied) that the test's point (FPR_hi,
    1 − TPR_lo) lies below, read as ε at ``delta`` — valid against that family only, and only under
    the isolated-canary premise the bound carries."""
    q, t = mech.sampling_probability, mech.steps

    def curve(s: float) -> CurveClaim:
        return accountant_curve(round(s, 6), q, t, discretisation=1e-3, claim_id="dpsgd/family")

    return strongest_rejected((), curve, lower=lower, upper=upper, delta=delta,
                              read=lambda s: optimistic_epsilon(round(s, 6), q, t, delta),
                              family=f"DP-SGD accountant curves (q={q:g}, T={t}, sigma varied)",
                              rejects=lambda c: point_rejects(c, bound.tpr_lower, bound.fpr_upper),
                              method="independent-canary test (two Clopper-Pearson bounds), bisection over an "
                                     "ordered family; under the isolated-canary premise")


# The suite's DP-SGD designs (their claims need dp-accounting's PLD: the onerun extra).  Their summaries
# name sigma = 0.656, noise_for_epsilon(8.0, 0.02, 500): what building calibrates (held equal by a test).
_NEEDS = ("dp_accounting",)
_PASS = (("dpsgd/accountant", "pass"), ("dpsgd/curve", "pass"))


def _whitebox(name: str, sigma: float, m: int, bug: str, expected: tuple[tuple[str, str], ...]) -> DesignSummary:
    return DesignSummary(name, FAMILY, f"DP-SGD reward model, sigma={sigma}, q=0.02, T=500, m={m} gradient canaries "
                                       f"(white box), bug={bug}", m, expected)


DESIGNS = (
    DesignEntry(_whitebox("dpsgd-whitebox", 0.656, 1000, "none", _PASS),
                functools.partial(whitebox_design, epsilon=8.0), _NEEDS),
    DesignEntry(DesignSummary("dpsgd-blackbox", FAMILY, "DP-SGD reward model, sigma=0.656, m=1000 input canaries "
                                                        "(black box)", 1000, _PASS),
                functools.partial(blackbox_design, epsilon=8.0), _NEEDS),
    # at m = 2000 and k+ = k- = 200: refuted with probability 0.999, not 0.93 (HALVED_RULE)
    DesignEntry(_whitebox("dpsgd-whitebox-noise-halved", 1.19, HALVED_M, "noise-halved",
                          tuple(_EXPECTED["noise-halved"].items())),
                functools.partial(whitebox_design, noise_multiplier=1.19, bug="noise-halved", m=HALVED_M,
                                  rule=HALVED_RULE), _NEEDS),
    DesignEntry(_whitebox("dpsgd-whitebox-no-clip-canaries", 1.19, 1000, "no-clip-canaries",
                          tuple(_EXPECTED["no-clip-canaries"].items())),
                functools.partial(whitebox_design, noise_multiplier=1.19, bug="no-clip-canaries"), _NEEDS),
)
