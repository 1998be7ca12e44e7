"""A real DP training library audited in one run: Opacus's DP-SGD (PyTorch) on a logistic
reward model, white-box input canaries (optional extra ``dpaudit[opacus]``).

The model is ``torch.nn.Linear(d, 1, bias=False)`` with the logistic (Bradley–Terry) loss; the
library's :class:`opacus.GradSampleModule` computes per-example gradients and its
:class:`opacus.optimizers.DPOptimizer` clips them to C and adds N(0, σ²C²) to their sum; batches
are Poisson-sampled at rate q here (the accountant's assumption), so the run is what the PLD
accountant of :mod:`dpaudit.mechanisms.dpsgd` describes.

Canary j is an *input* canary: a preference record whose only feature is a dedicated coordinate,
x = a·e_{d₀+j}, label 0.  Its logistic gradient s(θᵀx)·x lies on that coordinate, pointing to
+e_{d₀+j}; with a = 4 its norm is ≥ C while θ_j ≥ −log 3 / a, so clipping makes it exactly C·e_{d₀+j} in the early
steps (later it can shrink, which only weakens the audit).  The white-box auditor reads the
noisy gradient sums the optimizer applied (p.grad × expected batch size after each step) and
scores with the Poisson-subsampled log-likelihood ratio, as for the numpy model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.catalog.designs.dpsgd import RULE, accountant_curve, whitebox_score
from dpaudit.core import Guarantee, require
from dpaudit.mechanisms.dpsgd import DPSGDOutput, accountant_epsilon, preference_data
from dpaudit.onerun.design import CanaryDesign

__all__ = ["OpacusDPSGD", "opacus_design", "opacus_epsilon"]

# The catalog family whose claims these designs check (dpaudit.catalog files each design by it).
FAMILY = "dp-sgd"

CANARY_AMPLITUDE = 4.0


def opacus_epsilon(noise_multiplier: float, sampling_probability: float, steps: int, delta: float,
                   accountant: str = "prv") -> float:
    """The library's own ε for the same (σ, q, T) (its PRV or RDP accountant)."""
    from opacus.accountants import create_accountant  # optional dependency (the opacus extra)

    acc = create_accountant(accountant)
    acc.history = [(noise_multiplier, sampling_probability, steps)]
    return float(acc.get_epsilon(delta=delta))


@dataclass(frozen=True)
class OpacusDPSGD:
    """DP-SGD through Opacus: rows ``[x (d), y, kind]`` as in :mod:`dpaudit.mechanisms.dpsgd`
    (only kind 0 here: canaries are ordinary records)."""

    noise_multiplier: float
    sampling_probability: float
    steps: int
    clip: float = 1.0
    learning_rate: float = 0.5

    def run(self, dataset: np.ndarray, rng: np.random.Generator) -> DPSGDOutput:
        import torch  # optional dependency (the opacus extra)
        from opacus import GradSampleModule  # optional dependency
        from opacus.optimizers import DPOptimizer  # optional dependency

        data = np.asarray(dataset, dtype=float)
        require(data.ndim == 2 and data.shape[1] >= 3, "dataset", np.shape(data), "must be rows [x, y, kind]")
        x = torch.tensor(data[:, :-2], dtype=torch.float64)
        y = torch.tensor(data[:, -2], dtype=torch.float64)
        n, d = x.shape
        expected = self.sampling_probability * n
        gen = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
        model = GradSampleModule(torch.nn.Linear(d, 1, bias=False).double(), loss_reduction="mean")
        torch.nn.init.zeros_(model._module.weight)
        opt = DPOptimizer(torch.optim.SGD(model.parameters(), lr=self.learning_rate), loss_reduction="mean",
                          noise_multiplier=self.noise_multiplier, max_grad_norm=self.clip,
                          expected_batch_size=max(1, round(expected)), generator=gen)
        loss_fn = torch.nn.BCEWithLogitsLoss(reduction="mean")
        updates = np.empty((self.steps, d))
        for t in range(self.steps):
            idx = np.flatnonzero(rng.random(n) < self.sampling_probability)
            opt.zero_grad()
            if idx.size:
                loss_fn(model(x[idx]).squeeze(1), y[idx]).backward()  # x needs no grad: Opacus warns, harmless
            else:  # an empty Poisson batch: Opacus needs per-sample gradients, give zero ones
                model._module.weight.grad_sample = torch.zeros((0, 1, d), dtype=torch.float64)
            opt.step()
            updates[t] = model._module.weight.grad.detach().numpy()[0] * opt.expected_batch_size
        return DPSGDOutput(updates=updates, theta=model._module.weight.detach().numpy()[0].copy())


def opacus_design(*, m: int = 1000, noise_multiplier: float = 0.656, sampling_probability: float = 0.02,
                  steps: int = 500, n_base: int = 2000, features: int = 16, delta: float = 1e-5,
                  data_seed: int = 12345) -> CanaryDesign:
    """m white-box input canaries against Opacus's DP-SGD; claims: our PLD accountant's (ε, δ)
    and curve at the same (σ, q, T)."""
    mech = OpacusDPSGD(noise_multiplier, float(sampling_probability), steps)
    dim = features + m
    base = preference_data(n_base, features, dim, np.random.default_rng(data_seed))
    canaries = np.zeros((m, dim + 2))
    canaries[np.arange(m), features + np.arange(m)] = CANARY_AMPLITUDE
    canaries[:, -2] = 0.0  # label 0: the gradient s(θᵀx)·x points along +e_{d₀+j}
    eps = accountant_epsilon(noise_multiplier, float(sampling_probability), steps, delta)
    claims: tuple[Any, ...] = (
        Guarantee(epsilon=eps, delta=delta, claim_id="opacus/pld-accountant",
                  source="dp-accounting PLD of the Poisson-subsampled Gaussian at Opacus's (sigma, q, T)"),
        accountant_curve(noise_multiplier, float(sampling_probability), steps, claim_id="opacus/pld-curve"))
    return CanaryDesign(name="opacus-whitebox", mechanism=mech, canaries=list(canaries),
                        scorer=whitebox_score(noise_multiplier, float(sampling_probability), 1.0, features),
                        claims=claims, rule=RULE, base=base, deltas=(delta,),
                        expected={"opacus/pld-accountant": "pass", "opacus/pld-curve": "pass"},
                        family=FAMILY,
                        description=f"Opacus DP-SGD, sigma={noise_multiplier}, q={sampling_probability}, T={steps}, "
                                    f"m={m} input canaries (white box)")
