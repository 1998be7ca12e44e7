"""Audit Opacus's DP-SGD in one training run (needs ``pip install dpaudit[opacus]``).

A logistic reward model on 2000 Bradley–Terry comparisons plus m = 1000 input canaries, each
included with probability ½; Opacus clips per-example gradients to C = 1 and adds
N(0, σ²C²) with σ = 0.656, Poisson rate q = 0.02, T = 500 steps.  The white-box auditor reads
the noisy gradient the optimizer applied at each step and scores each canary by the
Poisson-subsampled likelihood ratio.  Printed: Opacus's own ε next to dp-accounting's PLD ε
for the same (σ, q, T), the one-run (ε, δ) lower bound, the verdicts, and the strongest
rejected DP-SGD accountant curve (read as ε; valid against that family only).

    python examples/opacus_onerun.py [seed]
"""

from __future__ import annotations

import sys
import warnings

import opacus
import torch

from dpaudit.catalog.designs.dpsgd import family_rejection
from dpaudit.catalog.designs.opacus_sgd import opacus_design, opacus_epsilon


def main(seed: int = 0) -> None:
    warnings.filterwarnings("ignore", message="Full backward hook")  # Opacus on an input without grad
    design = opacus_design()
    mech = design.mechanism
    sigma, q, steps = mech.noise_multiplier, mech.sampling_probability, mech.steps
    print(f"opacus {opacus.__version__}, torch {torch.__version__}: sigma={sigma}, q={q}, T={steps}")
    print(f"  epsilon at delta=1e-5: opacus PRV {opacus_epsilon(sigma, q, steps, 1e-5):.4f}, "
          f"opacus RDP {opacus_epsilon(sigma, q, steps, 1e-5, 'rdp'):.4f}, "
          f"dp-accounting PLD {design.claims[0].epsilon:.4f}")
    result = design.audit(seed)
    print(" ", result.summary())
    fam = family_rejection(result, mech)
    print(f"  strongest rejected DP-SGD curve: sigma={fam.parameter}, read as eps={fam.epsilon:.3f} "
          f"at delta=1e-5 ({fam.validity})")
    print("  as expected:", design.as_expected(result))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
