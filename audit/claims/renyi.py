"""Rényi-DP and zero-concentrated-DP claims, and the (ε, δ) profile each implies.

A mechanism is (α, τ)-RDP when D_α(M(D) ‖ M(D′)) ≤ τ for every neighbouring pair (Mironov 2017,
Def. 4), and ρ-zCDP when it is (α, αρ)-RDP for every α > 1 (Bun & Steinke 2016, Def. 1.1).  An
audit cannot measure a divergence of every order from a few events, so a claim of either kind is
audited through the (ε, δ) curve it implies: its points (ε(δ_k), δ_k) share one claim id and are
tested like any curve claim (Bonferroni over the K points).

The conversion (:func:`delta_from_rdp`) is Canonne, Kamath & Steinke (2020), *The Discrete Gaussian
for Differential Privacy*, Proposition 12 (also Asoodeh et al. 2021, eq. (20) of
arXiv:2001.05990): (α, τ)-RDP implies (ε, δ)-DP with

    δ = exp((α − 1)(τ − ε)) / α · (1 − 1/α)^{α − 1},

minimised over the claim's orders (a curve) or over every α > 1 (zCDP, τ = αρ, minimised in
closed-interval search on log(α − 1)), and, at any one order, the KL bound δ ≤ √(1 − e^{−τ})
(Pinsker-type, via the order-1 limit, used as dp-accounting does for α ≤ 1.01 only).  It is never
looser than the classical ε = τ + log(1/δ)/(α − 1) (Mironov 2017, Prop. 3).  dp-accounting's
``rdp_privacy_accountant.compute_epsilon`` applies the same proposition on a finite list of orders;
the tests hold the two against each other.

``conversion="gaussian"`` reads ρ-zCDP as the Gaussian mechanism with μ = √(2ρ), whose exact curve
is δ_Gauss(ε; μ) (Balle & Wang 2018, Thm. 8): tighter, but valid only for a mechanism that *is* that
Gaussian; a general zCDP claim must keep the default ``"cks2020"``.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dpaudit.core import Guarantee, InputError, Relation, check_text, is_real, require
from dpaudit.mechanisms.curves import gauss_delta, smallest_epsilon

# The δs at which a Rényi claim's curve is tested by default: from where a modest budget refutes a
# leak (δ = 0.1) down to the δ a report quotes (1e-6); each extra point costs a Bonferroni share.
DEFAULT_DELTAS: tuple[float, ...] = (0.1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6)
CONVERSIONS: dict[str, str] = {
    "cks2020": "Canonne, Kamath & Steinke 2020, Prop. 12 (RDP -> (eps, delta)), optimised over the orders",
    "gaussian": "exact Gaussian curve with mu = sqrt(2 rho) (Balle & Wang 2018, Thm. 8): "
                "valid only for a Gaussian mechanism",
}
RENYI_KINDS = ("zcdp", "rdp")
_MAX_LOG_ORDER = math.log(1e6)


def _log_delta_at_order(alpha: float, tau: float, epsilon: float) -> float:
    """log δ of CKS 2020 Prop. 12 at one order α > 1 with divergence τ, and the KL bound."""
    kl = -math.inf if tau <= 0 else 0.5 * math.log(-math.expm1(-tau))
    if alpha <= 1.0:
        return kl
    cks = (alpha - 1) * (tau - epsilon) + (alpha - 1) * math.log1p(-1 / alpha) - math.log(alpha)
    return min(kl, cks) if alpha <= 1.01 else cks


def delta_from_rdp(orders: Sequence[float], taus: Sequence[float], epsilon: float) -> float:
    """The smallest δ that (α_i, τ_i)-RDP for every i implies at ``epsilon`` (CKS 2020, Prop. 12)."""
    best = min(_log_delta_at_order(float(a), float(t), epsilon) for a, t in zip(orders, taus, strict=True))
    return float(min(1.0, math.exp(best))) if best > -745 else 0.0


def delta_from_zcdp(rho: float, epsilon: float) -> float:
    """The smallest δ that ρ-zCDP implies at ``epsilon`` by CKS 2020 Prop. 12, minimised over every
    order α > 1 (bounded search on log(α − 1); the objective is convex in α, unimodal in it)."""
    if rho == 0:
        return 0.0
    def log_delta(u: float) -> float:
        alpha = 1.0 + math.exp(u)
        return _log_delta_at_order(alpha, alpha * rho, epsilon)
    # The unconstrained optimum α* ≈ (ε + ρ)/(2ρ) sits inside the bracket for every claim of interest.
    # scipy.optimize on first use: loading a results file (which re-checks records) needs it only for a Rényi claim
    minimize_scalar = importlib.import_module("scipy.optimize").minimize_scalar
    found = minimize_scalar(log_delta, bounds=(math.log(1e-3), _MAX_LOG_ORDER), method="bounded",
                            options={"xatol": 1e-10})
    best = min(float(found.fun), log_delta(math.log(1e-3)), 0.5 * math.log(-math.expm1(-1.001 * rho)))
    return float(min(1.0, math.exp(best))) if best > -745 else 0.0


def _positive(field_name: str, value: Any) -> float:
    require(is_real(value) and math.isfinite(value) and value > 0, field_name, value, "must be a finite number > 0")
    return float(value)


def _check_deltas(deltas: Sequence[float]) -> tuple[float, ...]:
    out = tuple(deltas)
    require(len(out) > 0, "deltas", deltas, "must hold at least one delta")
    for i, d in enumerate(out):
        require(is_real(d) and 0 < d < 1, f"deltas[{i}]", d, "must be a number in (0, 1)")
    return tuple(float(d) for d in out)


def tradeoff_fnr(fpr: np.ndarray | float, delta_of: Any, epsilons: np.ndarray) -> np.ndarray:
    """The smallest FNR a mechanism with privacy profile δ(ε) allows at each FPR: the supremum over ε
    of max(0, 1 − δ(ε) − e^ε α, e^{−ε}(1 − δ(ε) − α)) (Dong, Roth & Su 2022, Prop. 2.12), here over
    the grid ``epsilons`` (a lower envelope of the true curve, so never stricter than the claim)."""
    a = np.atleast_1d(np.asarray(fpr, dtype=float))[:, None]
    e = np.asarray(epsilons, dtype=float)[None, :]
    d = np.array([delta_of(float(x)) for x in e[0]])[None, :]
    curve = np.maximum.reduce([np.zeros_like(a * e), 1 - d - np.exp(e) * a, np.exp(-e) * (1 - d - a)])
    return curve.max(axis=1)


@dataclass(frozen=True, kw_only=True)
class _RenyiClaim:
    """What ZCDP and RDP share: their relation, source, id, the δs of their curve and the points."""

    relation: str = Relation.ADD_REMOVE.value
    source: str = ""
    claim_id: str = ""
    deltas: tuple[float, ...] = DEFAULT_DELTAS

    def _check_common(self) -> None:
        require(self.relation in {r.value for r in Relation}, "relation", self.relation,
                f"must be one of {', '.join(r.value for r in Relation)}")
        object.__setattr__(self, "relation", str(Relation(self.relation).value))
        object.__setattr__(self, "deltas", _check_deltas(self.deltas))
        if self.claim_id:
            check_text("claim_id", self.claim_id)

    def delta_at(self, epsilon: float) -> float:  # pragma: no cover - each kind defines it
        raise NotImplementedError

    def epsilon_at(self, delta: float) -> float:
        """The smallest ε ≥ 0 with :meth:`delta_at` (ε) ≤ δ: the claim's implied ε at ``delta``."""
        require(is_real(delta) and 0 < delta < 1, "delta", delta, "must be a number in (0, 1)")
        found = smallest_epsilon(self.delta_at, float(delta), xtol=1e-10, cap=1e4)
        # Brent's root is within xtol of the curve's: rounded up, the point is never stricter than the claim.
        return found if found == 0.0 or math.isinf(found) else found + 2e-10

    def tradeoff(self, fpr: np.ndarray | float) -> np.ndarray:
        """The trade-off curve β(α) the claim implies (:func:`tradeoff_fnr` over an ε grid)."""
        top = max(1.0, 2 * self.epsilon_at(min(self.deltas)))
        return tradeoff_fnr(fpr, self.delta_at, np.linspace(0.0, top, 400))

    def guarantees(self, deltas: Sequence[float] | None = None) -> tuple[Guarantee, ...]:
        """The claim's (ε(δ), δ) points at ``deltas`` (default: the claim's own), one curve: one claim id,
        each point carrying this claim in ``stated_as`` for tables, JSON and the re-checker."""
        points = self.deltas if deltas is None else _check_deltas(deltas)
        return tuple(Guarantee(epsilon=self.epsilon_at(d), delta=d, relation=self.relation, source=self.source,
                               claim_id=self.claim_id or self.default_id, stated_as=self) for d in points)

    @property
    def default_id(self) -> str:  # pragma: no cover - each kind defines it
        raise NotImplementedError

    def implies(self) -> str:
        """``implies eps(1e-06) <= 2.419``: the implied ε at the claim's smallest δ."""
        d = min(self.deltas)
        return f"implies eps({d:g}) <= {self.epsilon_at(d):.4g}"


@dataclass(frozen=True)
class ZCDP(_RenyiClaim):
    """A ρ-zCDP claim (Bun & Steinke 2016, Def. 1.1): D_α(M(D) ‖ M(D′)) ≤ ρα for every α > 1.

    ``conversion`` is ``"cks2020"`` (valid for any ρ-zCDP mechanism) or ``"gaussian"`` (the exact
    Gaussian curve, valid only where the mechanism is the Gaussian with μ = √(2ρ))."""

    rho: float
    conversion: str = field(default="cks2020", kw_only=True)
    kind: ClassVar[str] = "zcdp"

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _positive("rho", self.rho))
        require(self.conversion in CONVERSIONS, "conversion", self.conversion,
                f"must be one of {', '.join(CONVERSIONS)}")
        self._check_common()

    @property
    def default_id(self) -> str:
        return f"user/zcdp-rho-{self.rho:g}"

    def delta_at(self, epsilon: float) -> float:
        """The δ the claim implies at ``epsilon`` by its conversion."""
        if self.conversion == "gaussian":
            return gauss_delta(epsilon, math.sqrt(2 * self.rho))
        return delta_from_zcdp(self.rho, epsilon)

    def rdp_at(self, alpha: float) -> float:
        """τ(α) = αρ: the Rényi divergence bound of order α the claim states."""
        return float(alpha) * self.rho

    def label(self) -> str:
        """``rho = 0.125 zCDP``."""
        return f"rho = {self.rho:g} zCDP"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "zcdp", "rho": self.rho, "conversion": self.conversion, "deltas": list(self.deltas),
                "label": self.label()}


@dataclass(frozen=True)
class RDP(_RenyiClaim):
    """An (α, τ)-RDP claim (Mironov 2017, Def. 4) at one order, or a curve of orders: D_{α_i} ≤ τ_i for
    every i.  The implied (ε, δ) is CKS 2020 Prop. 12 minimised over the stated orders."""

    orders: tuple[float, ...]  # one order may be given as a number: RDP(2.0, 0.5)
    epsilons: tuple[float, ...]
    kind: ClassVar[str] = "rdp"
    conversion: ClassVar[str] = "cks2020"  # CKS 2020 Prop. 12, the one conversion of an RDP curve

    def __post_init__(self) -> None:
        given: Any = (self.orders, self.epsilons)
        orders = (given[0],) if is_real(given[0]) else tuple(given[0])
        taus = (given[1],) if is_real(given[1]) else tuple(given[1])
        require(len(orders) > 0, "orders", self.orders, "must hold at least one order > 1")
        require(len(orders) == len(taus), "epsilons", self.epsilons,
                f"must hold one Renyi epsilon per order ({len(orders)} orders)")
        for i, a in enumerate(orders):
            require(is_real(a) and math.isfinite(a) and a > 1, f"orders[{i}]", a, "must be a finite number > 1")
        for i, t in enumerate(taus):
            require(is_real(t) and math.isfinite(t) and t >= 0, f"epsilons[{i}]", t, "must be a finite number >= 0")
        object.__setattr__(self, "orders", tuple(float(a) for a in orders))
        object.__setattr__(self, "epsilons", tuple(float(t) for t in taus))
        self._check_common()

    @property
    def default_id(self) -> str:
        head = ",".join(f"{a:g}:{t:g}" for a, t in zip(self.orders[:3], self.epsilons[:3], strict=True))
        return f"user/rdp-{head}" + ("…" if len(self.orders) > 3 else "")

    def delta_at(self, epsilon: float) -> float:
        """The δ the claim implies at ``epsilon`` (CKS 2020 Prop. 12 over the orders)."""
        return delta_from_rdp(self.orders, self.epsilons, epsilon)

    def label(self) -> str:
        """``(alpha = 2, eps = 0.5)-RDP`` or ``RDP curve over 5 orders``."""
        if len(self.orders) == 1:
            return f"(alpha = {self.orders[0]:g}, eps = {self.epsilons[0]:g})-RDP"
        return f"RDP curve over {len(self.orders)} orders (alpha {min(self.orders):g}..{max(self.orders):g})"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "rdp", "orders": list(self.orders), "epsilons": list(self.epsilons),
                "conversion": self.conversion, "deltas": list(self.deltas), "label": self.label()}


RenyiClaim = ZCDP | RDP


def from_dict(value: Any, *, field_name: str = "stated_as") -> RenyiClaim:
    """A claim from its :meth:`to_dict` form (a results file's ``stated_as``), validated."""
    if not isinstance(value, dict) or value.get("kind") not in RENYI_KINDS:
        raise InputError(f"{field_name} = {value!r:.120} is invalid: must be a table with kind 'zcdp' or 'rdp'")
    try:
        deltas = tuple(value.get("deltas") or DEFAULT_DELTAS)
        if value["kind"] == "zcdp":
            return ZCDP(rho=value["rho"], conversion=value.get("conversion", "cks2020"), deltas=deltas)
        return RDP(orders=tuple(value["orders"]), epsilons=tuple(value["epsilons"]), deltas=deltas)
    except (KeyError, TypeError) as exc:
        raise InputError(f"{field_name} = {value!r:.120} is invalid: {exc}") from None


def expand(claims: Sequence[Any]) -> list[Guarantee]:
    """``claims`` with every ZCDP/RDP replaced by its curve points (:meth:`guarantees`); Guarantees
    and anything else pass through for the caller to check."""
    out: list[Guarantee] = []
    for c in claims:
        if isinstance(c, (ZCDP, RDP)):
            out.extend(c.guarantees())
        else:
            out.append(c)
    return out
