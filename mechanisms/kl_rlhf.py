"""KL-regularized RLHF with the Bradley–Terry MLE (KL paper, §4.3, eq. (11)).

Records are comparisons (z_i, y_i) with z_i = φ(x_i, a¹_i) − φ(x_i, a²_i), ‖z_i‖ ≤ 2, and
y_i = 1 iff a¹ ≻ a².  With the standard logistic s (the paper's σ(x) = 1/(1 + e^x) is a typo: its
likelihood in §4.3 and gradient in Appendix D use s),

    θ_MLE(D) = argmax_θ Σ_i [y_i log s(θᵀz_i) + (1 − y_i) log s(−θᵀz_i)]   (over ℝ^d, by Newton),
    Σ_D = λI + Σ_i z_i z_iᵀ,   u(a) = θ_MLEᵀ φ_a − β0 ‖φ_a‖_{Σ_D⁻¹},   π̃ ∝ π0 exp(u/η).

The MLE exists iff the data are not (quasi-)completely separated; otherwise the mechanism is
undefined and its claims are ``not-applicable`` with the reason (no silent clipping).

Claims (B = the smallest admissible bound on ‖θ_MLE‖ over the pair — for a swap pair also over
the intermediate D ∪ {z′} of the group-privacy chain — unless given;
λ_min = λ_min(Σ_D); m = λ_min − λ; γ_B = 1/(2 + e^{2B} + e^{−2B})):

* ``kl-rlhf/thm3-label``  Theorem 3 / Cor. 3, label DP: ε0′ = (2 + 2e^{2B})/(η m)   (VIOLATED, ×3.2–4)
* ``kl-rlhf/thm3-label-approx`` its approximate part for a user λ0 > λ                (VIOLATED)
* ``kl-rlhf/cor3-label``  Corollary 3 for a user k1, when λ_min ≥ λ + n/(k1 d):
  ε0′ = (2 + 2e^{2B}) k1 d/(nη)                                                      (VIOLATED)
* ``kl-rlhf/thm4-addremove`` Theorem 4, add/remove:
  ε0 = ((1 + e^{2B})√λ_min/m + 2β0/(λ_min − 1))/(η√λ_min)                          (VIOLATED)
* ``kl-rlhf/thm4-addremove-approx`` its approximate part for a user λ0 > λ: √λ_min → √λ0 in the
  leading factor, δ = |A| e^ε exp((β0/η)(min_a ‖φ_a‖_{Σ_D⁻¹} − λ0^{−1/2}))            (VIOLATED)
* ``kl-rlhf/prop1-swap``  swap neighbours, Proposition 1 part 1 on Theorem 4: 2ε0       (VIOLATED)
* ``kl-rlhf/prop1-swap-corrected``  swap, Proposition 1 part 1 on the corrected
  add/remove bound: 2ε_add/rm (the chain D → D ∪ {z′} → D′)                           (VALID)
* ``kl-rlhf/thm3-label-corrected`` dpaudit's: (2/(η γ_B)) min(1, 2/√m)/√m       (VALID, tight)
* ``kl-rlhf/thm4-addremove-corrected`` dpaudit's:
  (2(1 + e^{2B}) min(1, 2/√m)/√m + β0/√λ_min ((1 − p_D)^{−1/2} − 1))/η,
  p_D = min(4/λ_min, 4/(4 + λ))                                                       (VALID, tight)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.optimize import linprog
from scipy.special import expit, log_expit

from dpaudit.core import Guarantee, InputError, Relation, check_nonnegative, check_positive, require
from dpaudit.mechanisms.base import per_dataset
from dpaudit.mechanisms.kl_policy import FeaturePolicy, elliptical_norms
from dpaudit.neighbors.dataset import Dataset


class MLEUndefined(InputError):
    """The Bradley–Terry MLE does not exist on this dataset (separation)."""


def separation(z: np.ndarray, y: np.ndarray) -> str | None:
    """Why no unique MLE exists, or None.

    The MLE exists and is unique iff Σ z zᵀ ≻ 0 and no θ ≠ 0 has (2y_i − 1)θᵀz_i ≥ 0 for
    all i (no complete or quasi-complete separation).  Given full rank, such a θ makes Σ_i (2y_i − 1)θᵀz_i > 0, so an LP
    over the box ‖θ‖_∞ ≤ 1 decides it.
    """
    if len(z) == 0:
        return "the dataset is empty"
    if np.linalg.matrix_rank(z) < z.shape[1]:
        return f"the comparisons span only {np.linalg.matrix_rank(z)} of {z.shape[1]} dimensions"
    signed = (2 * y - 1)[:, None] * z
    res = linprog(-signed.sum(axis=0), A_ub=-signed, b_ub=np.zeros(len(z)), bounds=[(-1, 1)] * z.shape[1],
                  method="highs")
    if res.status == 0 and -res.fun > 1e-9 * max(1.0, np.abs(signed).sum()):
        kind = "complete" if np.all(signed @ res.x > 1e-12) else "quasi-complete"
        return f"the labels are {kind}ly separated (theta = {np.round(res.x, 6).tolist()})"
    return None


def bradley_terry_mle(z: np.ndarray, y: np.ndarray, tol: float = 1e-13, max_iter: int = 100) -> np.ndarray:
    """θ_MLE by damped Newton steps to machine precision; raises :class:`MLEUndefined` on separation."""
    why = separation(z, y)
    if why is not None:
        raise MLEUndefined(f"the Bradley-Terry MLE does not exist: {why}")
    theta = np.zeros(z.shape[1])
    signed = (2 * y - 1)[:, None] * z

    def nll(t):
        return -float(log_expit(signed @ t).sum())

    for _ in range(max_iter):
        s = expit(z @ theta)
        grad = z.T @ (s - y)
        if np.linalg.norm(grad) <= tol * max(1.0, len(z)):
            return theta
        hess = (z * (s * (1 - s))[:, None]).T @ z
        step = np.linalg.solve(hess, grad)
        t, f0 = 1.0, nll(theta)
        while nll(theta - t * step) > f0 - 1e-4 * t * float(grad @ step) and t > 1e-12:
            t *= 0.5
        theta = theta - t * step
    if np.linalg.norm(z.T @ (expit(z @ theta) - y)) > 1e-8 * max(1.0, len(z)):
        raise MLEUndefined("Newton's method did not converge for the Bradley-Terry MLE")
    return theta


# The claims KLRLHF states, by relation: (relation, claim id, kind, source, the parameter it needs
# or None); the source is formatted with lambda0 and k1.
_IDS: tuple[tuple[Relation, str, str, str, str | None], ...] = (
    (Relation.LABEL_FLIP, "kl-rlhf/thm3-label", "printed", "KL paper, Theorem 3 / Corollary 3 (label DP, pure)", None),
    (Relation.LABEL_FLIP, "kl-rlhf/thm3-label-approx", "printed",
     "KL paper, Theorem 3, approximate part (lambda0 = {lambda0:g})", "lambda0"),
    (Relation.LABEL_FLIP, "kl-rlhf/cor3-label", "printed", "KL paper, Corollary 3 (label DP, pure, k1 = {k1:g})", "k1"),
    (Relation.LABEL_FLIP, "kl-rlhf/thm3-label-corrected", "corrected",
     "dpaudit's corrected label bound (Theorem 3 repaired)", None),
    (Relation.ADD_REMOVE, "kl-rlhf/thm4-addremove", "printed", "KL paper, Theorem 4 (add/remove, pure)", None),
    (Relation.ADD_REMOVE, "kl-rlhf/thm4-addremove-approx", "printed",
     "KL paper, Theorem 4, approximate part (lambda0 = {lambda0:g})", "lambda0"),
    (Relation.ADD_REMOVE, "kl-rlhf/thm4-addremove-corrected", "corrected",
     "dpaudit's corrected add/remove bound (Theorem 4 repaired)", None),
    (Relation.SWAP, "kl-rlhf/prop1-swap", "printed", "KL paper, Proposition 1 part 1 applied to Theorem 4 (2 eps0)",
     None),
    (Relation.SWAP, "kl-rlhf/prop1-swap-corrected", "corrected",
     "KL paper, Proposition 1 part 1 applied to dpaudit's corrected add/remove bound (2 eps_add/rm)", None),
)


@dataclass(frozen=True)
class KLRLHF(FeaturePolicy):
    """Eq. (11) on comparisons with columns ``z`` (n, d) and ``label`` (n,) in {0, 1}.

    ``features`` are the query context's action features φ_a (‖φ_a‖ ≤ 1).  ``bound_b`` is
    the B of Theorems 3–4; None takes the smallest admissible value for the audited pair,
    max(‖θ_MLE(D)‖, ‖θ_MLE(D′)‖) (the proofs need both MLEs in the ball ‖θ‖ ≤ B).  ``lambda0`` (> λ)
    states the approximate parts
    of Theorem 3 (label flips) and Theorem 4 (add/remove); ``k1`` (> 0) states Corollary 3.
    """

    features: tuple[tuple[float, ...], ...]
    ridge: float
    beta0: float
    eta: float
    pi0: tuple[float, ...] | None = None
    bound_b: float | None = None
    lambda0: float | None = None
    k1: float | None = None
    name: ClassVar[str] = "kl-rlhf"

    def __post_init__(self) -> None:
        self._check_features_and_ridge()
        if self.bound_b is not None:
            check_nonnegative("bound_b (B)", self.bound_b)
        if self.lambda0 is not None:
            require(isinstance(self.lambda0, (int, float)) and self.lambda0 > self.ridge, "lambda0",
                    self.lambda0, f"must be > lambda = {self.ridge}")
        if self.k1 is not None:
            check_positive("k1", self.k1)
        self._check_pi0()

    def comparisons(self, data: Dataset) -> tuple[np.ndarray, np.ndarray]:
        require(isinstance(data, Dataset), "kl-rlhf data", type(data).__name__, "must be a neighbors.Dataset")
        z = self.feature_column(data, "z", 2.0)
        y = data["label"]
        require(bool(np.isin(y, (0, 1)).all()), "column 'label'", np.unique(y).tolist(), "labels must be 0 or 1")
        return z, y.astype(float)

    @per_dataset
    def fit(self, data: Dataset) -> tuple[np.ndarray, np.ndarray]:
        """(θ_MLE(D), Σ_D), computed once per dataset."""
        z, y = self.comparisons(data)
        theta = bradley_terry_mle(z, y)
        return theta, self.ridge * np.eye(z.shape[1]) + z.T @ z


    # --- the paper's claims ------------------------------------------------------------
    def smallest_b(self, data: Dataset, data_prime: Dataset) -> float:
        return max(float(np.linalg.norm(self.fit(data)[0])), float(np.linalg.norm(self.fit(data_prime)[0])))

    def _chain_b(self, data: Dataset, data_prime: Dataset) -> float:
        """‖θ_MLE‖ on L = D ∪ (D′ \\ D), the intermediate dataset of the swap chain D → L → D′.

        Adding records never creates separation, so the MLE on L exists whenever it does on D."""
        z, y = self.comparisons(data)
        z2, y2 = self.comparisons(data_prime)
        left: dict[tuple[tuple[float, ...], float], int] = {}
        for row in zip(map(tuple, z.tolist()), y.tolist(), strict=True):
            left[row] = left.get(row, 0) + 1
        extra = []
        for i, row in enumerate(zip(map(tuple, z2.tolist()), y2.tolist(), strict=True)):
            if left.get(row, 0) > 0:
                left[row] -= 1
            else:
                extra.append(i)
        if not extra:
            return 0.0
        theta = bradley_terry_mle(np.concatenate([z, z2[extra]]), np.concatenate([y, y2[extra]]))
        return float(np.linalg.norm(theta))

    def pair_guarantees(self, data: Dataset, data_prime: Dataset, relation: Relation | str) -> list[Guarantee]:
        """The claims on D with B = the smallest admissible value for (D, D′) unless ``bound_b`` is set.

        Swap claims (Proposition 1 part 1: group privacy over the chain D → D ∪ {z′} → D′) take B
        over the chain's three datasets and are evaluated on D and on D′, keeping the smaller ε
        (the relation is symmetric, so each covers the pair)."""
        try:
            b = self.bound_b if self.bound_b is not None else self.smallest_b(data, data_prime)
            if relation == Relation.SWAP and self.bound_b is None:
                b = max(b, self._chain_b(data, data_prime))
        except MLEUndefined as exc:
            return self._not_applicable(relation, str(exc))
        on_d = self._claims(data, relation, b)
        if relation != Relation.SWAP:
            return on_d
        on_d_prime = self._claims(data_prime, relation, b)
        out = []
        for g, h in zip(on_d, on_d_prime, strict=True):
            if h.applicable and (not g.applicable or h.epsilon < g.epsilon):
                g = Guarantee(epsilon=h.epsilon, delta=h.delta, relation=h.relation, source=h.source,
                              claim_id=h.claim_id, kind=h.kind, note=h.note + "; evaluated on D' (the stricter)")
            out.append(g)
        return out

    def guarantees(self, data: Dataset, relation: Relation | str) -> list[Guarantee]:
        """The claims on D; B = ``bound_b``, or ‖θ_MLE(D)‖ when unset (a pair needs pair_guarantees)."""
        try:
            b = self.bound_b if self.bound_b is not None else float(np.linalg.norm(self.fit(data)[0]))
        except MLEUndefined as exc:
            return self._not_applicable(relation, str(exc))
        return self._claims(data, relation, b)

    def _ids(self, relation: Relation | str) -> list[tuple[str, str, str]]:
        """(claim id, kind, source) of the claims stated under ``relation``, in :data:`_IDS`' order;
        a claim that needs ``lambda0`` or ``k1`` only when it is set."""
        params = {"lambda0": self.lambda0, "k1": self.k1}
        return [(cid, kind, source.format(**params)) for rel, cid, kind, source, needs in _IDS
                if relation == rel and (needs is None or params[needs] is not None)]

    def _not_applicable(self, relation: Relation | str, why: str, only: str | None = None) -> list[Guarantee]:
        return [Guarantee.not_applicable(why, relation=relation, source=src, claim_id=cid, kind=kind)
                for cid, kind, src in self._ids(relation) if only is None or cid == only]

    def _claims(self, data: Dataset, relation: Relation | str, b: float) -> list[Guarantee]:
        z, _ = self.comparisons(data)
        _, sigma = self.fit(data)
        lam_min = float(np.linalg.eigvalsh(sigma)[0])
        m = lam_min - self.ridge
        n, d = len(z), sigma.shape[0]
        eta, beta0, ids = self.eta, self.beta0, self._ids(relation)
        if m <= 0 or (relation in (Relation.ADD_REMOVE, Relation.SWAP) and lam_min <= 1):
            floor = "lambda" if relation == Relation.LABEL_FLIP else "max(1, lambda)"
            return self._not_applicable(relation, f"lambda_min(Sigma_D) = {lam_min:.6g}: the bound needs "
                                        f"lambda_min > {floor}")
        lev = min(1.0, 2 / math.sqrt(m)) / math.sqrt(m)
        gamma_b = 1 / (2 + math.exp(2 * b) + math.exp(-2 * b))
        thm4_bracket = (1 + math.exp(2 * b)) * math.sqrt(lam_min) / m + 2 * beta0 / (lam_min - 1)
        p_d = min(4 / lam_min, 4 / (4 + self.ridge))
        add_rm = (2 * (1 + math.exp(2 * b)) * lev + beta0 / math.sqrt(lam_min) * (1 / math.sqrt(1 - p_d) - 1)) / eta
        values: dict[str, tuple[float, float]] = {
            "kl-rlhf/thm3-label": ((2 + 2 * math.exp(2 * b)) / (eta * m), 0.0),
            "kl-rlhf/thm3-label-corrected": (2 / (eta * gamma_b) * lev, 0.0),
            "kl-rlhf/thm4-addremove": (thm4_bracket / (eta * math.sqrt(lam_min)), 0.0),
            "kl-rlhf/thm4-addremove-corrected": (add_rm, 0.0),
            "kl-rlhf/prop1-swap": (2 * thm4_bracket / (eta * math.sqrt(lam_min)), 0.0),
            "kl-rlhf/prop1-swap-corrected": (2 * add_rm, 0.0),
        }
        if self.lambda0 is not None:
            lambda0 = self.lambda0  # a local keeps the None check's narrowing inside approx
            gamma_min = float(elliptical_norms(self.phi, sigma).min())

            def approx(eps: float) -> tuple[float, float]:
                log_delta = math.log(len(self.features)) + eps + beta0 / eta * (gamma_min - 1 / math.sqrt(lambda0))
                return eps, 1.0 if log_delta >= 0 else math.exp(log_delta)

            values["kl-rlhf/thm3-label-approx"] = approx(
                (2 + 2 * math.exp(2 * b)) * math.sqrt(lam_min) / (eta * math.sqrt(lambda0) * m))
            values["kl-rlhf/thm4-addremove-approx"] = approx(thm4_bracket / (eta * math.sqrt(lambda0)))
        out = []
        note = f"B = {b:.6g}"
        for cid, kind, src in ids:
            if cid == "kl-rlhf/cor3-label" and self.k1 is not None:  # _ids names it only with k1 set
                need = self.ridge + n / (self.k1 * d)
                if lam_min < need * (1 - 1e-12):
                    out += self._not_applicable(relation, f"lambda_min(Sigma_D) = {lam_min:.6g}: Corollary 3 needs "
                                                f"lambda_min >= lambda + n/(k1 d) = {need:.6g}", only=cid)
                    continue
                values[cid] = ((2 + 2 * math.exp(2 * b)) * self.k1 * d / (n * eta), 0.0)
            out.append(Guarantee(epsilon=values[cid][0], delta=values[cid][1], relation=relation, source=src,
                                 claim_id=cid, kind=kind, note=note))
        return out
