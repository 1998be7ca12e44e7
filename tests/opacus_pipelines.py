"""The user-side Opacus pipelines the pipeline tests attach to: the Bradley–Terry reward model of
the dp-sgd family (:func:`dpaudit.mechanisms.dpsgd.preference_data`: comparisons on the first
``features`` coordinates, the rest zero, reserved for canaries), made private by Opacus's own
``PrivacyEngine.make_private``, and the user's plain training loop."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np


def reward_pipeline(*, n: int = 2000, features: int = 16, spare: int = 1000, noise_multiplier: float = 0.656,
                    sample_rate: float = 0.02, clip: float = 1.0, poisson: bool = True, bias: bool = False,
                    data_seed: int = 12345, lr: float = 0.5) -> tuple[Any, Any, Any, Any]:
    """(engine, model, optimizer, loader) from ``make_private``: a logistic reward model (float64)."""
    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    from dpaudit.mechanisms.dpsgd import preference_data

    rows = preference_data(n, features, features + spare, np.random.default_rng(data_seed))
    data = TensorDataset(torch.tensor(rows[:, :-2]), torch.tensor(rows[:, -2]))
    module = torch.nn.Linear(features + spare, 1, bias=bias).double()
    torch.nn.init.zeros_(module.weight)
    optimizer = torch.optim.SGD(module.parameters(), lr=lr)
    loader = DataLoader(data, batch_size=max(1, round(sample_rate * n)), shuffle=not poisson)
    engine = PrivacyEngine()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, loader = engine.make_private(module=module, optimizer=optimizer, data_loader=loader,
                                                       noise_multiplier=noise_multiplier, max_grad_norm=clip,
                                                       poisson_sampling=poisson)
    return engine, model, optimizer, loader


def trainer(epochs: int) -> Any:
    """The user's loop: ``epochs`` passes over the loader, one optimizer step per batch."""
    import torch

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
    gradient is zero on their weights and bias coordinates: ``bias[1:]`` holds one spare coordinate per
    gradient canary (the isolation premise), the parameter fault (e) misses."""
    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    from dpaudit.mechanisms.dpsgd import preference_data

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
    optimizer = torch.optim.SGD(module.parameters(), lr=lr)
    loader = DataLoader(data, batch_size=max(1, round(sample_rate * n)))
    engine = PrivacyEngine()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, loader = engine.make_private(module=module, optimizer=optimizer, data_loader=loader,
                                                       noise_multiplier=noise_multiplier, max_grad_norm=clip,
                                                       poisson_sampling=True)
    return engine, model, optimizer, loader
