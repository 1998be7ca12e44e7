"""The pessimistic KL-regularized multi-armed bandit policy (KL paper, §4.1).

    π̃(a; D) ∝ π0(a) exp(u(a; D)/η),   u(a; D) = r̄(a; D) − β0 / √N(a; D),      (eq. 8)

with u = −∞ (probability 0) for arms with no data and π̃ = π0 on an empty log (a convention: the
paper leaves it undefined).
The mechanism outputs one action.  Its claims, all evaluated on the base dataset D:

* ``kl-mab/thm1-pure``  Theorem 1, eq. (9): ε0(D) = (4R/(N_min−1) + β0/(N_min−1)^{3/2})/η,
  when N_min = min_a N(a; D) > 1 (VALID, ≥ 2× slack: ε⋆(D)/ε0(D) < 1/2, see :meth:`epsilon_star`);
* ``kl-mab/thm1-swap``  Proposition 1 part 1 on eq. (9): 2ε0(D) under swap (VALID: group privacy of size 2);
* ``kl-mab/thm1-approx`` Theorem 1's approximate part for a user N0, as printed (VIOLATED: eq. (12) uses one
  maximiser in numerator and denominator);
* ``kl-mab/cor1``        Corollary 1 for a user k, as printed (VIOLATED, and its δ lacks 1/η);
* ``kl-mab/thm1-approx-corrected`` dpaudit's corrected approximate statement (VALID).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.special import expit, logsumexp

from dpaudit.core import Guarantee, InputError, Relation, check_nonnegative, check_positive, require
from dpaudit.mechanisms.kl_policy import KLPolicy, require_count
from dpaudit.neighbors.dataset import Dataset

THM1 = "KL paper, Theorem 1, eq. (9)"


@dataclass(frozen=True)
class KLBandit(KLPolicy):
    """The policy of eq. (8) over ``n_actions`` arms, on a log with columns ``action``, ``reward``.

    ``n0`` (the N0 of Theorem 1's approximate part and of the corrected statement) and ``k``
    (of Corollary 1) are the user's free parameters; their claims are stated only when set.
    """

    n_actions: int
    eta: float
    beta0: float
    reward_range: float = 1.0
    pi0: tuple[float, ...] | None = None
    n0: float | None = None
    k: float | None = None
    name: ClassVar[str] = "kl-bandit"

    def __post_init__(self) -> None:
        require_count("n_actions", self.n_actions, 2)
        check_positive("eta", self.eta)
        check_nonnegative("beta0", self.beta0)
        check_positive("reward_range (R)", self.reward_range)
        self._check_pi0()
        if self.n0 is not None:
            require(isinstance(self.n0, (int, float)) and math.isfinite(self.n0) and self.n0 >= 1, "n0",
                    self.n0, "must be a finite number >= 1")
        if self.k is not None:
            check_positive("k", self.k)

    # --- the mechanism ------------------------------------------------------------------
    def _n_outputs(self) -> int:
        return self.n_actions

    def counts(self, data: Dataset) -> tuple[np.ndarray, np.ndarray]:
        """N(a; D) and S(a; D) = Σ_{i: a_i = a} r_i, after validating the log."""
        require(isinstance(data, Dataset), "kl-bandit data", type(data).__name__, "must be a neighbors.Dataset")
        actions, rewards = data["action"], data["reward"]
        require(actions.ndim == 1 and actions.dtype.kind in "iu", "column 'action'", actions.dtype.name,
                "must be a vector of integers")
        if len(actions) and (actions.min() < 0 or actions.max() >= self.n_actions):
            raise InputError(f"column 'action' has value "
                             f"{int(actions.max() if actions.max() >= self.n_actions else actions.min())}: "
                             f"actions must lie in [0, {self.n_actions})")
        if len(rewards) and (rewards.min() < 0 or rewards.max() > self.reward_range):
            raise InputError(f"column 'reward' has values in [{rewards.min()}, {rewards.max()}]: "
                             f"rewards must lie in [0, R] = [0, {self.reward_range}]")
        n = np.bincount(actions, minlength=self.n_actions).astype(float)
        s = np.bincount(actions, weights=rewards.astype(float), minlength=self.n_actions)
        return n, s

    def utility(self, data: Dataset) -> np.ndarray:
        """u(a; D) = r̄(a; D) − β0 N(a; D)^{-1/2}; −∞ for arms with no data.

        An empty log has u ≡ 0, i.e. π̃ = π0 (a convention: the paper leaves the empty log undefined).
        """
        n, s = self.counts(data)
        if len(data) == 0:
            return np.zeros(self.n_actions)
        u = np.full(self.n_actions, -np.inf)
        seen = n > 0
        u[seen] = s[seen] / n[seen] - self.beta0 / np.sqrt(n[seen])
        return u

    # --- the paper's claims ------------------------------------------------------------
    def epsilon0(self, data: Dataset) -> float | None:
        """eq. (9), or None when min_a N(a; D) ≤ 1."""
        n_min = float(self.counts(data)[0].min())
        if n_min <= 1:
            return None
        return (4 * self.reward_range / (n_min - 1) + self.beta0 / (n_min - 1) ** 1.5) / self.eta

    def epsilon_star(self, data: Dataset) -> float | None:
        """Exact supremum of the pair loss over neighbours, rewards and π0:
        ε⋆(D) = (R/N_min + β0(1/√(N_min − 1) − 1/√N_min))/η, attained by removing the reward-R
        point of the least-covered arm with rewards {R, 0, …, 0}, π0 on another arm."""
        n_min = float(self.counts(data)[0].min())
        if n_min <= 1:
            return None
        return (self.reward_range / n_min
                + self.beta0 * (1 / math.sqrt(n_min - 1) - 1 / math.sqrt(n_min))) / self.eta

    def guarantees(self, data: Dataset, relation: Relation | str) -> list[Guarantee]:
        n = self.counts(data)[0]
        eps0 = self.epsilon0(data)
        why = (f"min_a N(a;D) = {int(n.min())} <= 1: eq. (9) requires min_a N(a;D) > 1")
        if relation == Relation.SWAP:
            src = "KL paper, Proposition 1 part 1 applied to Theorem 1, eq. (9)"
            if eps0 is None:
                return [Guarantee.not_applicable(why, relation="swap", source=src, claim_id="kl-mab/thm1-swap")]
            return [Guarantee(epsilon=2 * eps0, delta=0.0, relation="swap", source=src, claim_id="kl-mab/thm1-swap")]
        if relation != Relation.ADD_REMOVE:
            return []
        out = [Guarantee.not_applicable(why, source=THM1, claim_id="kl-mab/thm1-pure") if eps0 is None
               else Guarantee(epsilon=eps0, delta=0.0, relation="add-remove", source=THM1, claim_id="kl-mab/thm1-pure")]
        if self.n0 is not None:
            out.append(self._approx_printed(n, self.n0, "kl-mab/thm1-approx",
                                            f"KL paper, Theorem 1, approximate part (N0 = {self.n0:g})"))
            out.append(self._approx_corrected(data, n, self.n0))
        if self.k is not None:
            out.append(self._corollary1(n, self.k))
        return out

    def _approx_printed(self, n: np.ndarray, n0: float, claim_id: str, source: str) -> Guarantee:
        """ε = (4R/N0 + β0/N0^{3/2})/η, δ = |A| e^ε exp(β0/η (N_max^{-1/2} − N0^{-1/2}))."""
        n_max = float(n.max())
        if n_max <= 0:
            return Guarantee.not_applicable("the log is empty: max_a N(a;D) = 0", source=source, claim_id=claim_id)
        eps = (4 * self.reward_range / n0 + self.beta0 / n0 ** 1.5) / self.eta
        log_delta = (math.log(self.n_actions) + eps
                     + self.beta0 / self.eta * (1 / math.sqrt(n_max) - 1 / math.sqrt(n0)))
        return Guarantee(epsilon=eps, delta=_delta(log_delta), relation="add-remove", source=source, claim_id=claim_id,
                         note="printed delta >= 1 (vacuous)" if log_delta >= 0 else "")

    def _corollary1(self, n: np.ndarray, k: float) -> Guarantee:
        """Corollary 1 as printed (its δ lacks 1/η on 4kR/N_max: Theorem 1 gives 4kR/(η N_max))."""
        R, b, eta = self.reward_range, self.beta0, self.eta
        source = f"KL paper, Corollary 1 as printed (k = {k:g})"
        n_max = float(n.max())
        if n_max <= 0:
            return Guarantee.not_applicable("the log is empty: max_a N(a;D) = 0", source=source, claim_id="kl-mab/cor1")
        eps = (4 * k * R + k ** 1.5 * b / math.sqrt(n_max)) / (eta * n_max)
        log_delta = (math.log(self.n_actions) - b / eta * (math.sqrt(k) - 1) / math.sqrt(n_max)
                     + 4 * k * R / n_max + b / eta * k ** 1.5 / n_max ** 1.5)
        return Guarantee(epsilon=eps, delta=_delta(log_delta), relation="add-remove", source=source,
                         claim_id="kl-mab/cor1")

    def _approx_corrected(self, data: Dataset, n: np.ndarray, n0: float) -> Guarantee:
        """dpaudit's corrected approximate statement of Theorem 1, for N0 ≥ 1:

        ε_c = (R/(N0+1) + β0(N0^{-1/2} − (N0+1)^{-1/2}))/η,
        δ_c = max_{b: N(b;D) ≤ N0} w_b / (w_b + Σ_{a≠b} π0(a) e^{u(a;D)/η}),
        w_b = π0(b) exp((R − β0/√(N(b;D)+1))/η).

        A neighbour changes one arm b: if N(b; D) ≥ N0 + 1 the pair loss is at most |Δu_b|/η ≤ ε_c;
        otherwise δ_pair(ε) ≤ |π̃(b; D) − π̃(b; D′)|, and both are at most the ratio above, since
        b's weight under D or any neighbour is at most w_b and the other weights do not change.
        """
        n0, R, b0, eta = float(n0), self.reward_range, self.beta0, self.eta
        eps = (R / (n0 + 1) + b0 * (1 / math.sqrt(n0) - 1 / math.sqrt(n0 + 1))) / eta
        logits = self.log_pi0() + self.utility(data) / eta
        delta = 0.0
        for arm in np.flatnonzero(n <= n0):
            log_w = self.log_pi0()[arm] + (R - b0 / math.sqrt(n[arm] + 1)) / eta
            rest = logsumexp(np.delete(logits, arm))
            delta = max(delta, float(expit(log_w - rest)) if np.isfinite(rest) else 1.0)
        return Guarantee(epsilon=eps, delta=min(delta, 1.0), relation="add-remove",
                         source=f"dpaudit's corrected approximate statement of Theorem 1 (N0 = {n0:g})",
                         claim_id="kl-mab/thm1-approx-corrected", kind="corrected")


def _delta(log_delta: float) -> float:
    return 1.0 if log_delta >= 0 else math.exp(log_delta)
