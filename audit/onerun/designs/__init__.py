"""Canary designs of the training mechanisms: canaries, relation, scorer, rule and claims.

* :mod:`.base` — :class:`CanaryDesign`;
* :mod:`.dpsgd` — the DP-SGD reward model (white-box gradient canaries, black-box input
  canaries, faulty twins, the strongest rejected accountant curve of the DP-SGD family);
* :mod:`.policy` — DP-PG one pass, user-level (canary users on dedicated coordinates, twins);
* :mod:`.alignment` — Algorithm 1, objective-perturbed MLE (random-direction canaries, d < m);
* :mod:`.mle_dedicated` — Algorithm 1 with canary comparisons on dedicated coordinates (d ≥ m);
* :mod:`.covariance` — Algorithm 2, the Gaussian covariance release (rare vectors, zero-out);
* :mod:`.opacus_sgd` — Opacus's DP-SGD (PyTorch, the ``opacus`` extra), white-box input canaries.
"""

from __future__ import annotations

from dpaudit.onerun.designs.base import CanaryDesign, refuted

__all__ = ["CanaryDesign", "refuted"]
