"""The papers' canary designs of the training mechanisms: canaries, relation, scorer, rule and claims.

Each is a :class:`dpaudit.onerun.design.CanaryDesign` (the engine's abstraction) that names its
catalog family (``family``); :mod:`dpaudit.catalog.onerun` files them by that name.

* :mod:`.dpsgd` — the DP-SGD reward model (white-box gradient canaries, black-box input
  canaries, faulty twins, the strongest rejected accountant curve of the DP-SGD family);
* :mod:`.policy` — DP-PG one pass, user-level (canary users on dedicated coordinates, twins);
* :mod:`.alignment` — Algorithm 1, objective-perturbed MLE (random-direction canaries, d < m);
* :mod:`.mle_dedicated` — Algorithm 1 with canary comparisons on dedicated coordinates (d ≥ m);
* :mod:`.covariance` — Algorithm 2, the Gaussian covariance release (rare vectors, zero-out);
* :mod:`.opacus_sgd` — Opacus's DP-SGD (PyTorch, the ``opacus`` extra), white-box input canaries;
* :mod:`.suite` — every design of ``run --suite onerun`` that this install can build.
"""
