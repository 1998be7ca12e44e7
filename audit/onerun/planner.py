"""Planning a one-run audit: how many canaries (or runs of m canaries) a target ε_LB needs.

The plan assumes a model of the scores — isolated Gaussian canaries at separation μ (scores
``N(μ S_j, 1)``) or randomized response at ε — and evaluates Steinke et al.'s bound at the
*expected* counts of a symmetric rule k₊ = k₋ = k.  For the Gaussian model, the k highest of m
scores lie above the threshold t solving ``(m/2)(Φ̄(t − μ) + Φ̄(t)) = k`` and are right with
probability ``Φ̄(t − μ)/(Φ̄(t − μ) + Φ̄(t))`` (by symmetry, so are the k lowest).  The fraction
k/m is chosen here, before any game is played, so the resulting :class:`~dpaudit.onerun.rules.Fixed`
rule is fixed in advance.  Expected counts approximate the median run; the realised bound
scatters around it.

A target at or above the model mechanism's own ε at δ (μ-GDP's ε(δ), or randomized response's)
is unreachable at any m: a valid bound exceeds the true ε with probability ≤ α, so its median
cannot.  A curve claim (Mahloujifar, Melis, Chaudhuri, ICML 2025) is planned the same way: the
fewest canaries at which the f-DP test, fed the median counts, rejects it (:func:`plan_curve`);
a claim the model's own curve satisfies is never rejected more than α of the time.

The model of a real design is estimated (:func:`estimate_model`) from a pilot game with a known
secret: the area under the ROC curve of included vs excluded scores, ``A = Φ(μ/√2)`` for
equal-variance Gaussian scores, gives ``μ̂ = √2 Φ⁻¹(A)``.  It uses ranks only, as the guessing
rules do, so a monotone change of the scorer does not change it; its interval is the
Hanley–McNeil standard error of A (Radiology 1982) mapped through the same formula.  Scores that
are not Gaussian (e.g. DP-SGD's summed likelihood ratios) are summarised by the μ of equal AUC;
the plan then says how the pilot's own counts compare with the model's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from dpaudit.core import InputError, check_real_array, is_real, require
from dpaudit.onerun.curves import CurveClaim, approx_dp_tradeoff, gdp_binv, gdp_epsilon
from dpaudit.onerun.fdp import largest_rejected_mu, rejects_claim
from dpaudit.onerun.rules import Fixed
from dpaudit.onerun.steinke import epsilon_ceiling, epsilon_lower, epsilon_upper, p_value

__all__ = ["MAX_PILOT_CANARIES", "MAX_PILOT_SECONDS", "MAX_PLANNED_CANARIES", "MU_MAX", "RR_EPSILON_MAX",
           "ClaimPlan", "CurvePlan", "PilotProgress", "Plan", "ScoreModel", "best_fixed_rule", "check_model_parameter",
           "check_pilot_budget", "estimate_model", "expected_bound", "expected_counts", "gaussian_precision",
           "model_counts", "model_epsilon", "pilot_model", "plan_canaries", "plan_claim", "plan_curve"]

MODELS = ("gaussian", "rr")
# The models' parameter ranges.  Past μ = 20 Gaussian canaries are separated beyond what any game of
# ≤ 10^7 canaries can tell apart from μ = 20 (a wrong side has probability Φ(−10) ≈ 8e−24 per canary),
# and the model's own ε(δ) overflows a float near μ = 37; randomized response past ε = 60 keeps a
# canary's bit with probability 1 − e^−60 ≈ 1 − 9e−27, which a float cannot tell from 1.
MU_MAX = 20.0
RR_EPSILON_MAX = 60.0
MAX_PLANNED_CANARIES = 10**6  # the largest game the planner searches (its default max_canaries)


def check_model_parameter(kind: str, value: Any) -> float:
    """A model parameter inside its range (:data:`MU_MAX`, :data:`RR_EPSILON_MAX`), else an
    :class:`~dpaudit.core.InputError` naming it, its value and the range."""
    name, high = ("mu", MU_MAX) if kind == "gaussian" else ("rr_epsilon", RR_EPSILON_MAX)
    # compared as given (a Python int past 1e308 has no float, and math.isfinite would overflow on it)
    require(is_real(value) and not (isinstance(value, float) and math.isnan(value)) and 0 <= value <= high,
            name, value,
            f"must be a finite number in [0, {high:g}] (the {'Gaussian' if kind == 'gaussian' else 'RR'} score "
            "model's range)")
    return float(value)


@dataclass(frozen=True)
class ScoreModel:
    """The scores' law the plan assumes: ``gaussian`` (isolated canaries, scores N(μS, 1),
    exactly μ-GDP per canary) or ``rr`` (randomized response at ε, exactly (ε, 0)-DP per canary),
    with where the parameter came from and, when estimated, its 95 % interval."""

    kind: str
    parameter: float
    source: str = "given"
    interval: tuple[float, float] | None = None
    # (fraction k/m guessed each way, the μ of the pilot's own precision there): a check of the
    # Gaussian shape shown beside the plan, not used by it (in the tails it rests on few scores).
    by_fraction: tuple[tuple[float, float], ...] = ()

    def __post_init__(self) -> None:
        require(self.kind in MODELS, "model", self.kind, f"must be one of {', '.join(MODELS)}")
        check_model_parameter(self.kind, self.parameter)

    @property
    def mu(self) -> float | None:
        return float(self.parameter) if self.kind == "gaussian" else None

    @property
    def epsilon(self) -> float | None:
        return float(self.parameter) if self.kind == "rr" else None

    def describe(self) -> str:
        what = (f"Gaussian canary scores, separation mu = {self.parameter:.4g}" if self.kind == "gaussian" else
                f"randomized response per canary at eps = {self.parameter:.4g}")
        band = "" if self.interval is None else f" (95% interval {self.interval[0]:.3g} to {self.interval[1]:.3g})"
        table = ("" if not self.by_fraction else "; shape check, the mu of the pilot's own precision by fraction "
                 "guessed each way (equal for Gaussian scores; not used by the plan): "
                 + ", ".join(f"{f:g}: {mu:.3g}" for f, mu in self.by_fraction))
        return f"{what}{band}; {self.source}{table}"

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "parameter": "mu" if self.kind == "gaussian" else "epsilon",
                "value": self.parameter, "interval": list(self.interval) if self.interval else None,
                "by_fraction": [list(p) for p in self.by_fraction], "source": self.source}


def model_epsilon(model: ScoreModel, delta: float) -> float:
    """The model mechanism's own ε at δ: no valid bound's median exceeds it (∞ for μ-GDP at δ = 0)."""
    if model.parameter == 0:
        return 0.0
    if model.kind == "gaussian":
        if delta <= 0:
            return math.inf
        try:
            return gdp_epsilon(model.parameter, delta)
        except OverflowError:  # ε(δ) past ~355 (e^ε overflows while bracketing it): beyond every target
            return math.inf
    # RR at ε: δ(ε′) = max(0, p − e^{ε′}(1 − p)) with p = e^ε/(1 + e^ε), so 1 − p = 1/(1 + e^ε) and
    # ε′(δ) = log(p − δ) + ε + log1p(e^−ε): no division by a 1 − p that rounds to 0 at large ε.
    if delta <= 0:
        return float(model.parameter)
    eps = float(model.parameter)
    p = 1.0 / (1.0 + math.exp(-eps))
    return max(0.0, math.log(p - delta) + eps + math.log1p(math.exp(-eps))) if delta < p else 0.0


def estimate_model(scores: np.ndarray, secret: np.ndarray, *, source: str = "pilot game") -> ScoreModel:
    """The Gaussian model of equal AUC: ``μ̂ = √2 Φ⁻¹(A)`` (0 when A ≤ ½), with the 95 % interval
    of A's Hanley–McNeil standard error mapped through the same formula."""
    s = check_real_array("scores", scores).reshape(-1)
    require(bool(np.all(np.isfinite(s))), "scores", "<non-finite values>", "must all be finite")
    b = np.asarray(secret).reshape(-1)
    require(s.size == b.size and s.size >= 2, "scores", f"<{s.size} scores, {b.size} bits>",
            "must be one score per canary with its secret bit")
    require(b.dtype.kind in "biuf" and bool(np.all((b == 0) | (b == 1))), "secret", "<values>",
            "must be 0/1 (1 = canary included)")
    b = b.astype(bool)
    n1, n0 = int(b.sum()), int((~b).sum())
    require(n1 >= 1 and n0 >= 1, "secret", f"<{n1} included, {n0} excluded>",
            "a pilot needs included and excluded canaries")
    ranks = stats.rankdata(s)  # ties share their mean rank: they count one half, as in the AUC
    auc = float((ranks[b].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    se = math.sqrt(max(auc * (1 - auc) + (n1 - 1) * (q1 - auc * auc) + (n0 - 1) * (q2 - auc * auc), 0.0) / (n1 * n0))

    def mu_of(a: float) -> float:
        return float(math.sqrt(2.0) * special.ndtri(min(max(a, 0.5), 1.0 - 1e-12)))

    return ScoreModel("gaussian", mu_of(auc), f"{source}: AUC {auc:.4f} of {n1} included vs {n0} excluded scores",
                      (mu_of(auc - 1.96 * se), mu_of(auc + 1.96 * se)), _by_fraction(s, b))


PILOT_FRACTIONS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5)
MIN_TAIL = 50  # pilot scores a fraction's guesses must rest on, each way


def gaussian_precision(fraction: float, mu: float) -> float:
    """Expected precision of guessing the top (or bottom) ``fraction`` of N(μS, 1) scores."""
    t = optimize.brentq(lambda x: 0.5 * (special.ndtr(mu - x) + special.ndtr(-x)) - fraction, -50.0, 50.0 + mu)
    return float(special.ndtr(mu - t) / (2.0 * fraction))


def _by_fraction(s: np.ndarray, b: np.ndarray) -> tuple[tuple[float, float], ...]:
    """Where the pilot has ≥ MIN_TAIL scores each way, the μ whose Gaussian model has the pilot's
    own precision when that fraction is guessed: equal across fractions for Gaussian scores, so
    it shows how far non-Gaussian scores (e.g. summed likelihood ratios) are from the model.  A
    fraction the pilot guessed without error has no finite μ and is left out."""
    order = np.argsort(-s, kind="stable")
    out = []
    for f in PILOT_FRACTIONS:
        j = round(f * s.size)
        if j < MIN_TAIL:
            continue
        precision = 0.5 * (float(b[order[:j]].mean()) + float(1 - b[order[s.size - j:]].mean()))
        if precision >= 1.0:
            continue
        mu = 0.0 if precision <= 0.5 else float(
            optimize.brentq(lambda x, f=f, p=precision: gaussian_precision(f, x) - p, 0.0, 40.0))
        out.append((f, mu))
    return tuple(out)


def model_counts(m: int, k: int, model: ScoreModel) -> tuple[int, int]:
    """(r, v) of the median run of m canaries with k₊ = k₋ = k under ``model``."""
    if model.kind == "rr":
        return expected_counts(m, k, epsilon=model.parameter)
    return expected_counts(m, k, mu=model.parameter)


def _model_kwargs(model: ScoreModel | None, mu: float | None, epsilon: float | None) -> dict[str, float]:
    if model is not None:
        return {"mu": model.parameter} if model.kind == "gaussian" else {"epsilon": model.parameter}
    require((mu is None) != (epsilon is None), "mu/epsilon", (mu, epsilon), "give exactly one model parameter")
    return {"mu": float(mu)} if mu is not None else {"epsilon": float(epsilon)}  # type: ignore[arg-type]


def expected_counts(m: int, k: int, *, mu: float | None = None, epsilon: float | None = None) -> tuple[int, int]:
    """(r, v) expected for k₊ = k₋ = k under the Gaussian (``mu``) or RR (``epsilon``) model."""
    require(1 <= 2 * k <= m, "k", k, f"must satisfy 1 <= 2k <= m = {m}")
    require((mu is None) != (epsilon is None), "mu/epsilon", (mu, epsilon), "give exactly one model parameter")
    check_model_parameter("gaussian" if mu is not None else "rr", mu if mu is not None else epsilon)
    if epsilon is not None:
        # RR outputs are bits: N₁ ~ Bin(m, ½) canaries output 1, and an "in" guess beyond them
        # lands on a 0 output, right with probability 1 − p instead of p (so do "out" guesses).
        p = math.exp(epsilon) / (1 + math.exp(epsilon))
        n1 = np.arange(m + 1)
        beyond = float(np.sum(stats.binom.pmf(n1, m, 0.5) * np.maximum(k - n1, 0)))
        precision = p - (2 * p - 1) * beyond / k
    else:
        assert mu is not None
        def excess(t: float) -> float:
            return 0.5 * m * (special.ndtr(mu - t) + special.ndtr(-t)) - k
        t = optimize.brentq(excess, -50.0, 50.0 + mu)
        hi, lo = special.ndtr(mu - t), special.ndtr(-t)
        precision = hi / (hi + lo)
    # The median of Bin(2k, precision): the bound is monotone in v, so the bound at the median
    # count is the median bound (the ranked count is close to binomial).
    return 2 * k, int(stats.binom.median(2 * k, precision))


def best_fixed_rule(m: int, *, delta: float, confidence: float = 0.95, mu: float | None = None,
                    epsilon: float | None = None, objective: str = "steinke",
                    model: ScoreModel | None = None) -> tuple[Fixed, float]:
    """The fixed symmetric rule with the largest median bound under the model, and that bound.

    ``objective``: ``steinke`` (the (ε, δ) bound) or ``gdp-mu`` (the largest rejected GDP μ,
    returned as μ: a statement about GDP claims only).  A k whose Steinke bound is provably ≤ the
    best so far (:func:`~dpaudit.onerun.steinke.epsilon_upper`) is skipped unevaluated: the answer
    is the full scan's (the first k of the largest bound), at a fraction of its cost for large m."""
    require(objective in ("steinke", "gdp-mu"), "objective", objective, "must be 'steinke' or 'gdp-mu'")
    alpha = 1.0 - confidence
    best, best_k = -1.0, 1
    for k in np.unique(np.round(np.geomspace(1, m // 2, 32)).astype(int)):
        r, v = (model_counts(m, int(k), model) if model is not None else
                expected_counts(m, int(k), mu=mu, epsilon=epsilon))
        if objective == "steinke" and best > 0 and epsilon_upper(m, r, v, delta=delta, alpha=alpha) <= best:
            continue  # its bound is < epsilon_upper <= best: it cannot win, nor tie (the first best is kept)
        value = (epsilon_lower(m, r, v, delta=delta, alpha=alpha) if objective == "steinke" else
                 largest_rejected_mu(m=m, c_prime=r, c=v, tau=alpha))
        if value > best:
            best, best_k = value, int(k)
    return Fixed(best_k, best_k), best


@dataclass(frozen=True)
class Plan:
    """The smallest game reaching ``target``: ``runs`` runs of ``canaries_per_run`` canaries."""

    target: float
    canaries_per_run: int
    runs: int
    rule: Fixed
    expected_epsilon_lower: float
    ceiling: float  # the bound when every canary is guessed right: no game of this size beats it
    one_fewer: float | None = None  # the bound with one right guess fewer than the median: how fragile the plan is

    @property
    def m(self) -> int:
        return self.canaries_per_run * self.runs

    def describe(self) -> str:
        fewer = "" if self.one_fewer is None else f", one right guess fewer {self.one_fewer:.3g}"
        return (f"{self.runs} run(s) x {self.canaries_per_run} canaries (m = {self.m}), guess k+ = k- = "
                f"{self.rule.k_plus}: expected eps_lower {self.expected_epsilon_lower:.3g} >= target {self.target:.3g} "
                f"(ceiling at this m {self.ceiling:.3g}{fewer})")


def plan_canaries(target: float, *, delta: float = 1e-5, confidence: float = 0.95, mu: float | None = None,
                  epsilon: float | None = None, canaries_per_run: int | None = None,
                  max_canaries: int = MAX_PLANNED_CANARIES, model: ScoreModel | None = None) -> Plan | None:
    """The fewest canaries (``canaries_per_run`` None) or runs of ``canaries_per_run`` canaries
    whose expected ε_LB reaches ``target``; None when even ``max_canaries`` cannot, or at once
    when the target is at or above the model mechanism's own ε at δ (:func:`model_epsilon`).
    The model is ``mu`` (Gaussian), ``epsilon`` (RR) or a :class:`ScoreModel`."""
    require(isinstance(target, (int, float)) and target > 0 and math.isfinite(target), "target", target,
            "must be a finite number > 0")
    require(0.5 <= confidence < 1, "confidence", confidence, "must be in [0.5, 1)")
    require(isinstance(delta, (int, float)) and 0.0 <= delta < 1.0, "delta", delta, "must be in [0, 1)")
    _check_sizes(canaries_per_run, max_canaries)
    kwargs = _model_kwargs(model, mu, epsilon)
    mu, epsilon = kwargs.get("mu"), kwargs.get("epsilon")
    the_model = model or (ScoreModel("gaussian", mu) if mu is not None else ScoreModel("rr", epsilon))  # type: ignore[arg-type]
    if target >= model_epsilon(the_model, delta):
        return None
    alpha = 1.0 - confidence

    def value(total: int) -> tuple[Fixed, float]:
        return best_fixed_rule(total, delta=delta, confidence=confidence, model=the_model)

    def reaches(total: int) -> bool:
        # ε_LB > target iff p(ε, δ) < α on [0, target]; p is increasing in ε for every count we
        # have met, so one p-value per k decides (the final plan is checked with the bound itself).
        for k in np.unique(np.round(np.geomspace(1, total // 2, 32)).astype(int)):
            r, v = model_counts(total, int(k), the_model)
            if v >= 1 and p_value(total, r, v, target, delta)[0] < alpha:
                return True
        return False

    unit = canaries_per_run or 1
    hi = _smallest(reaches, unit, max_canaries)
    if hi is None:
        return None
    rule, got = value(hi)
    while got < target and hi < max_canaries:  # a p-value that is not monotone in ε: step up
        hi += max(unit, hi // 100 // unit * unit)
        rule, got = value(hi)
    if got < target:
        return None
    per = canaries_per_run or hi
    r, v = model_counts(hi, rule.k_plus, the_model)
    fewer = epsilon_lower(hi, r, v - 1, delta=delta, alpha=alpha) if v >= 1 else 0.0
    return Plan(target=target, canaries_per_run=per, runs=hi // per, rule=rule, expected_epsilon_lower=got,
                ceiling=epsilon_ceiling(hi, delta=delta, alpha=alpha), one_fewer=fewer)


def _check_sizes(canaries_per_run: int | None, max_canaries: int) -> None:
    """The game sizes a plan may search: ``max_canaries`` up to 10 × :data:`MAX_PLANNED_CANARIES`
    (the RR model's expected counts hold an array of m + 1 numbers), runs of at least 2 canaries
    and at most ``max_canaries``."""
    require(isinstance(max_canaries, int) and 2 <= max_canaries <= 10 * MAX_PLANNED_CANARIES, "max_canaries",
            max_canaries, f"must be an integer in [2, {10 * MAX_PLANNED_CANARIES}]")
    if canaries_per_run is not None:
        require(isinstance(canaries_per_run, int) and 2 <= canaries_per_run <= max_canaries, "canaries_per_run",
                canaries_per_run, f"must be an integer in [2, max_canaries = {max_canaries}]")


def _smallest(reaches: Callable[[int], bool], unit: int, max_canaries: int) -> int | None:
    """The smallest multiple of ``unit`` (≥ 2) at which ``reaches`` holds, to 1 % (or one unit),
    by doubling then bisection; None past ``max_canaries``."""
    lo, hi = 0, max(unit, 10 if unit == 1 else unit)
    while not reaches(hi):
        if hi >= max_canaries:
            return None
        lo, hi = hi, min(2 * hi, max(max_canaries // unit, 1) * unit)
    while hi - lo > max(unit, hi // 100):
        mid = (lo + hi) // (2 * unit) * unit
        if mid <= lo:
            break
        if reaches(mid):
            hi = mid
        else:
            lo = mid
    return hi


def expected_bound(m: int, k: int, model: ScoreModel, *, delta: float,
                   confidence: float = 0.95) -> tuple[int, int, float]:
    """(r, v, ε_LB) of the median run of m canaries under ``model`` with k₊ = k₋ = k."""
    r, v = model_counts(m, k, model)
    return r, v, epsilon_lower(m, r, v, delta=delta, alpha=1.0 - confidence)


def curve_violated(claim: CurveClaim, model: ScoreModel) -> bool:
    """Whether the model mechanism's own trade-off curve lies below the claimed one somewhere
    (only then can the median run reject the claim as m grows)."""
    x = np.concatenate([np.geomspace(1e-12, 1e-3, 200), np.linspace(1e-3, 1.0, 400)])
    own = (gdp_binv(1.0 - x, model.parameter) if model.kind == "gaussian" else
           approx_dp_tradeoff(x, model.parameter, 0.0))
    return bool(np.any(own < claim.tradeoff(x) - 1e-9))


@dataclass(frozen=True)
class CurvePlan:
    """The smallest game whose median run rejects the curve claim: ``runs`` runs of
    ``canaries_per_run`` canaries, with the rule and the median counts (c right of c′)."""

    claim_id: str
    canaries_per_run: int
    runs: int
    rule: Fixed
    c_prime: int
    c: int

    @property
    def m(self) -> int:
        return self.canaries_per_run * self.runs

    def describe(self) -> str:
        return (f"{self.runs} run(s) x {self.canaries_per_run} canaries (m = {self.m}), guess k+ = k- = "
                f"{self.rule.k_plus}: the median run ({self.c} right of {self.c_prime}) rejects the curve")


def _curve_rule(claim: CurveClaim, m: int, model: ScoreModel, alpha: float) -> tuple[Fixed, int, int] | None:
    """The smallest k of a geometric grid (k ≤ m/2, at most 5 000 guesses a side: beyond, a
    curve test costs seconds and has never been the best) whose median counts reject the claim."""
    for k in np.unique(np.round(np.geomspace(1, max(1, min(m // 2, 5_000)), 12)).astype(int)):
        r, v = model_counts(m, int(k), model)
        if v >= 1 and rejects_claim(claim, m=m, c_prime=r, c=v, tau=alpha):
            return Fixed(int(k), int(k)), r, v
    return None


def plan_curve(claim: CurveClaim, model: ScoreModel, *, confidence: float = 0.95, canaries_per_run: int | None = None,
               max_canaries: int = MAX_PLANNED_CANARIES) -> CurvePlan | None:
    """The fewest canaries (or runs of ``canaries_per_run``) whose median run, under ``model``,
    rejects ``claim`` by the f-DP test at level 1 − confidence; None when the model satisfies the
    claim (:func:`curve_violated`) or ``max_canaries`` do not suffice."""
    require(isinstance(claim, CurveClaim), "claim", claim, "must be a CurveClaim")
    require(0.5 <= confidence < 1, "confidence", confidence, "must be in [0.5, 1)")
    _check_sizes(canaries_per_run, max_canaries)
    if not curve_violated(claim, model):
        return None
    alpha = 1.0 - confidence
    unit = canaries_per_run or 1
    hi = _smallest(lambda total: _curve_rule(claim, total, model, alpha) is not None, unit, max_canaries)
    if hi is None:
        return None
    found = _curve_rule(claim, hi, model, alpha)
    assert found is not None  # hi always rejects: it is the doubling's or a bisection's rejecting end
    rule, r, v = found
    per = canaries_per_run or hi
    return CurvePlan(claim_id=claim.claim_id, canaries_per_run=per, runs=hi // per, rule=rule, c_prime=r, c=v)


# --- a design's claims ---------------------------------------------------------------------

PILOT_SEED = 2_654_435_769  # pilot games use PILOT_SEED + i: no audit, suite run or test uses these seeds
PILOT_GAMES = 4


@dataclass(frozen=True)
class ClaimPlan:
    """What one claim of a design needs for its expected verdict.  ``canaries`` is the total
    (None: unreachable under the model, or nothing to reach); ``runs`` the runs of the design's
    m; ``at_design`` what the median run at the design's m and rule gives (ε_LB, or "rejected")."""

    claim_id: str
    kind: str                 # "epsilon-delta" or "curve"
    expected: str             # the design's expected verdict, or "none declared"
    goal: str                 # what the verdict needs, in words
    canaries: int | None
    runs: int | None
    rule: Fixed | None
    at_design: str
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"claim_id": self.claim_id, "claim_type": self.kind, "expected": self.expected, "goal": self.goal,
                "canaries": self.canaries, "runs_of_design_m": self.runs,
                "rule": None if self.rule is None else self.rule.to_dict(), "at_design_m": self.at_design,
                "note": self.note or None}


MAX_PILOT_SECONDS = 4 * 3600.0  # the pilots a plan runs: at most 4 hours, projected from the first pilot
MAX_PILOT_CANARIES = 10**7      # and at most this many canaries scored in all (their scores are pooled)


@dataclass(frozen=True)
class PilotProgress:
    """Where the pilots stand: ``done`` of ``games`` played in ``elapsed`` seconds."""

    done: int
    games: int
    elapsed: float

    @property
    def projected(self) -> float:
        """Seconds all ``games`` take at the pace so far (pilots are alike: the same design, m, rule)."""
        return self.elapsed / max(self.done, 1) * self.games


def check_pilot_budget(design: Any, progress: PilotProgress, *, max_seconds: float = MAX_PILOT_SECONDS,
                       field: str = "pilots = ") -> None:
    """Refuse pilots past :data:`MAX_PILOT_CANARIES` canaries in all, or projected (from the
    pilots played so far) past ``max_seconds``, with the projection and the largest count allowed
    (``field`` names the count in the message: ``--pilots `` on the command line)."""
    first = progress.elapsed / max(progress.done, 1)
    canaries = progress.games * design.m
    if canaries <= MAX_PILOT_CANARIES and progress.projected <= max_seconds:
        return
    allowed = max(1, min(MAX_PILOT_CANARIES // design.m, int(max_seconds / max(first, 1e-9))))
    raise InputError(
        f"{field}{progress.games} is invalid: {progress.games} pilot games of {design.name} are projected to take "
        f"{_duration(progress.projected)} ({progress.games} x {first:.3g} s, the pace of the first "
        f"{progress.done}) and to score {canaries} canaries; a plan runs at most {_duration(max_seconds)} of "
        f"pilots and {MAX_PILOT_CANARIES} canaries: give {allowed} pilots or fewer")


def _duration(seconds: float) -> str:
    days = seconds / 86_400
    return (f"{seconds:.3g} s" if seconds < 120 else f"{seconds / 60:.3g} min" if seconds < 7200
            else f"{seconds / 3600:.3g} h" if seconds < 172_800 else f"{days:.3g} days" if days < 730
            else f"{days / 365.25:.3g} years")


def _pilot_secret(seed: int, design: Any) -> np.ndarray:
    """A pilot game's secret, Bernoulli(½) from the pilot's own seed (never one an audit uses)."""
    size = design.m * int(getattr(design, "runs", 1))
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,))).integers(0, 2, size=size, dtype=np.int8)


def pilot_model(design: Any, *, games: int = PILOT_GAMES, confidence: float = 0.95,
                report: Callable[[PilotProgress], None] | None = None, clock: Callable[[], float] = time.monotonic,
                field: str = "pilots = ") -> tuple[ScoreModel, int, int]:
    """The Gaussian model of ``games`` pooled pilot games of ``design`` on seeds PILOT_SEED + i, and
    the pilots' total right guesses and guesses under the design's own rule (to hold the model to).

    The first pilot is timed and the whole budget checked (:func:`check_pilot_budget`) before a
    second one starts; ``report`` hears after each pilot where they stand."""
    require(isinstance(games, int) and games >= 1, "pilots", games, "must be an integer >= 1")
    results = []
    start = clock()
    for i in range(games):
        # a pilot is no audit: its secret is drawn from the pilot's seed so that a plan is reproducible
        seed = PILOT_SEED + i
        results.append(design.audit(seed, confidence=confidence, secret=_pilot_secret(seed, design)))
        progress = PilotProgress(i + 1, games, clock() - start)
        if i == 0:
            check_pilot_budget(design, progress, field=field)
        if report is not None:
            report(progress)
    scores = np.concatenate([np.asarray(r.scores) for r in results])
    secret = np.concatenate([np.asarray(r.secret) for r in results])
    model = estimate_model(scores, secret, source=f"{games} pilot game(s) of the design on seeds "
                                                  f"{PILOT_SEED}..{PILOT_SEED + games - 1} (no audit uses them)")
    return model, sum(r.v for r in results), sum(r.r for r in results)


def plan_claim(claim: Any, design: Any, model: ScoreModel, *, confidence: float = 0.95,
               max_canaries: int = MAX_PLANNED_CANARIES) -> ClaimPlan:
    """The plan of one claim of ``design`` (see :class:`ClaimPlan`) under ``model``."""
    cid = getattr(claim, "claim_id", "") or "claim"
    expected = dict(design.expected).get(cid, "none declared")
    m, rule = design.m, design.rule
    k = rule.k_plus if isinstance(rule, Fixed) and rule.k_plus == rule.k_minus else None
    alpha = 1.0 - confidence
    if not getattr(claim, "applicable", True) or expected == "not-applicable":
        return ClaimPlan(cid, "curve" if isinstance(claim, CurveClaim) else "epsilon-delta", expected,
                         "nothing to plan: the claim is not applicable to this run", None, None, None, "-")
    if isinstance(claim, CurveClaim):
        r, v = model_counts(m, k, model) if k else (0, 0)
        rejected = bool(k and v >= 1 and rejects_claim(claim, m=m, c_prime=r, c=v, tau=alpha))
        at = (f"median run with the design's rule ({v} right of {r}): {'rejected' if rejected else 'not rejected'}"
              if k else "the design's rule is not a symmetric fixed rule: not evaluated")
        if expected != "violation":
            goal = ("not rejected (the curve test, median run)" if expected == "pass" else
                    "no expected verdict declared: shown for reference")
            warn = ("the model expects this curve rejected at the design's m: check the claim, or the model"
                    if expected == "pass" and rejected else "")
            return ClaimPlan(cid, "curve", expected, goal, None, None, None, at, warn)
        found = plan_curve(claim, model, confidence=confidence, max_canaries=max_canaries)
        runs = plan_curve(claim, model, confidence=confidence, canaries_per_run=m, max_canaries=max_canaries)
        note = "" if found else ("the model's own curve satisfies the claim: no m rejects it in the median run"
                                 if not curve_violated(claim, model) else f"not within {max_canaries:.0e} canaries")
        return ClaimPlan(cid, "curve", expected, "rejected by the curve test in the median run",
                         found.m if found else None, runs.runs if runs else None, found.rule if found else None, at,
                         note)
    eps, delta = float(claim.epsilon), float(claim.delta)
    at, got = "-", 0.0
    if k:
        r, v, got = expected_bound(m, k, model, delta=delta, confidence=confidence)
        at = f"median eps_lower {got:.3g} with the design's rule ({v} right of {r})"
    if expected != "violation":
        goal = (f"eps_lower <= {eps:.4g} at delta {delta:.3g}" if expected == "pass" else
                "no expected verdict declared: shown for reference")
        warn = ("the model expects this claim refuted at the design's m: check the claim, or the model"
                if expected == "pass" and k and got > eps else "")
        return ClaimPlan(cid, "epsilon-delta", expected, goal, None, None, None, at, warn)
    found_p = plan_canaries(eps, delta=delta, confidence=confidence, model=model, max_canaries=max_canaries)
    runs_p = plan_canaries(eps, delta=delta, confidence=confidence, model=model, canaries_per_run=m,
                           max_canaries=max_canaries)
    own = model_epsilon(model, delta)
    note = ((f"median eps_lower {found_p.expected_epsilon_lower:.3g} there; one right guess fewer gives "
             f"{found_p.one_fewer:.3g}") if found_p else
            (f"the model mechanism is itself ({own:.4g}, {delta:.3g})-DP: no valid bound's median exceeds that"
             if eps >= own else f"not within {max_canaries:.0e} canaries"))
    return ClaimPlan(cid, "epsilon-delta", expected, f"eps_lower > {eps:.4g} at delta {delta:.3g} (Steinke et al.)",
                     found_p.m if found_p else None, runs_p.runs if runs_p else None,
                     found_p.rule if found_p else None, at, note)
