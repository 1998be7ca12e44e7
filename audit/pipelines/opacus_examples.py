"""Small Opacus pipelines of the kind a user has, for the built-in pipeline suite, the tests and the docs.

The dp-sgd family's Bradley–Terry reward model (:func:`dpaudit.mechanisms.dpsgd.preference_data`:
comparisons on the first ``features`` coordinates, the rest zero, reserved for gradient canaries),
made private by Opacus's own ``PrivacyEngine.make_private``, and a plain training loop.  Nothing here
is Opacus re-implemented: these are the user's side of :func:`dpaudit.pipelines.opacus.attach`.

:data:`CHEAP` is the setting the pipeline suite and the slow tests audit: N = 1000 records, q = 0.05,
T = :data:`EPOCHS` · 1/q = 200 steps and σ = :data:`SIGMA_2` = 1.673, the noise multiplier whose PRV
accountant ε is 2.01 at δ = 1e-5 (:func:`dpaudit.catalog.designs.dpsgd.noise_for_epsilon` (2, 0.05, 200)).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from dpaudit.mechanisms.dpsgd import preference_data

__all__ = ["CHEAP", "EPOCHS", "SIGMA_2", "reward_pipeline", "spare_bias_pipeline", "trainer"]

SIGMA_2 = 1.673
CHEAP: dict[str, Any] = {"n": 1000, "features": 16, "spare": 1000, "noise_multiplier": SIGMA_2, "sample_rate": 0.05}
EPOCHS = 10  # 10 epochs of 1/q = 20 steps: T = 200


def _private(module: Any, data: Any, *, sample_rate: float, n: int, lr: float, noise_multiplier: float, clip: float,
             poisson: bool) -> tuple[Any, Any, Any, Any]:
    """What ``make_private`` returns for ``module`` over ``data`` (batches of round(q·n), SGD at ``lr``)."""
    import torch  # optional dependency (the opacus extra)
    from opacus import PrivacyEngine  # optional dependency
    from torch.utils.data import DataLoader  # optional dependency

    optimizer = torch.optim.SGD(module.parameters(), lr=lr)
    loader = DataLoader(data, batch_size=max(1, round(sample_rate * n)), shuffle=not poisson)
    engine = PrivacyEngine()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus's notes on secure RNG
        model, optimizer, loader = engine.make_private(module=module, optimizer=optimizer, data_loader=loader,
                                                       noise_multiplier=noise_multiplier, max_grad_norm=clip,
                                                       poisson_sampling=poisson)
    return engine, model, optimizer, loader


def reward_pipeline(*, n: int = 2000, features: int = 16, spare: int = 1000, noise_multiplier: float = 0.656,
                    sample_rate: float = 0.02, clip: float = 1.0, poisson: bool = True, bias: bool = False,
                    data_seed: int = 12345, lr: float = 0.5) -> tuple[Any, Any, Any, Any]:
    """(engine, model, optimizer, loader) from ``make_private``: a logistic reward model (float64)
    ``Linear(features + spare, 1)``, whose ``spare`` last weights no record's gradient touches."""
    import torch  # optional dependency (the opacus extra)
    from torch.utils.data import TensorDataset  # optional dependency

    rows = preference_data(n, features, features + spare, np.random.default_rng(data_seed))
    data = TensorDataset(torch.tensor(rows[:, :-2]), torch.tensor(rows[:, -2]))
    module = torch.nn.Linear(features + spare, 1, bias=bias).double()
    torch.nn.init.zeros_(module.weight)
    return _private(module, data, sample_rate=sample_rate, n=n, lr=lr, noise_multiplier=noise_multiplier, clip=clip,
                    poisson=poisson)


def trainer(epochs: int) -> Any:
    """The user's loop: ``epochs`` passes over the loader, one optimizer step per batch."""
    import torch  # optional dependency (the opacus extra)

    def train(model: Any, optimizer: Any, data_loader: Any) -> None:
        loss_fn = torch.nn.BCEWithLogitsLoss()
        for _ in range(epochs):
            for x, y in data_loader:
                optimizer.zero_grad()
                loss_fn(model(x).squeeze(1), y).backward()
                optimizer.step()

    return train


def spare_bias_pipeline(*, n: int = 1000, features: int = 16, spare: int = 1000, noise_multiplier: float = 1.673,
                        sample_rate: float = 0.05, clip: float = 1.0, data_seed: int = 12345,
                        lr: float = 0.5) -> tuple[Any, Any, Any, Any]:
    """(engine, model, optimizer, loader) from ``make_private`` (Poisson sampling): the same reward model
    on the ``features`` comparison coordinates, as the first output of ``Linear(features, 1 + spare)``
    with a bias.  The other ``spare`` outputs never reach the loss, so every real record's per-sample
    gradient is zero on their weights and bias coordinates: ``head.bias[1:]`` holds one spare coordinate
    per gradient canary (the isolation premise), the parameter fault (e) misses."""
    import torch  # optional dependency (the opacus extra)
    from torch.utils.data import TensorDataset  # optional dependency

    class SpareHead(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.head = torch.nn.Linear(features, 1 + spare).double()

        def forward(self, x: Any) -> Any:
            return self.head(x)[:, :1]  # the logit; outputs 1.. are the canaries' spare bias coordinates

    rows = preference_data(n, features, features, np.random.default_rng(data_seed))
    data = TensorDataset(torch.tensor(rows[:, :-2]), torch.tensor(rows[:, -2]))
    module = SpareHead()
    torch.nn.init.zeros_(module.head.weight)
    torch.nn.init.zeros_(module.head.bias)
    return _private(module, data, sample_rate=sample_rate, n=n, lr=lr, noise_multiplier=noise_multiplier, clip=clip,
                    poisson=True)
