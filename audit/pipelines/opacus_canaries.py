"""Canaries that go through Opacus's own loader, sampler, clipping, normalisation and noise.

Both kinds are records of the training set: the game's included canaries are appended to the user's
dataset, and the library's own sampler (the :class:`~opacus.data_loader.DPDataLoader`'s Poisson
sampler, or the user's shuffled loader) decides in which batches they are.  The dataset records the
indices of every batch it serves (``__getitems__``, called once per batch, empty ones included), so
the optimizer knows which rows of its per-sample gradients are canaries.

* **Gradient canaries** (white box; Nasr et al., USENIX Security 2023, §4): before the library clips,
  the per-sample gradient row of a sampled canary is replaced by ``amplitude·C`` on the canary's own
  coordinate (zero elsewhere), so Opacus's own clipping (to C), normalisation and noise act on it.
  After each step the optimizer's noisy gradient at the canary coordinates, times the claimed
  normalisation, is recorded: under the claimed pipeline it is ``C·b_tj + σC·Z``.  The premise of
  isolated canaries (no real record's per-sample gradient touches a canary coordinate) is checked on
  every step's per-sample gradients, not assumed.
* **Input canaries** (black box): ordinary records; each canary's loss under the final model is its
  score (lower loss = "in").
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit.core import InputError, require

__all__ = ["CanaryCoordinates", "Injector", "PipelineOutput", "RecordingDataset", "canary_coordinates",
           "check_device"]


@dataclass(frozen=True)
class PipelineOutput:
    """What one audited training run leaves to the scorer: the white-box record ``updates`` (T × m:
    every step's noisy sum at each canary's coordinate, claimed normalisation undone) or the
    black-box ``losses`` (m: each canary's loss under the final model), and the step count."""

    updates: np.ndarray | None
    losses: np.ndarray | None
    steps: int
    isolated: bool = False


class RecordingDataset:
    """The user's dataset with the included canaries appended; records each batch's indices.

    Map-style (``__len__``/``__getitem__``), so torch's loaders and Opacus's Poisson sampler index
    it as they index the user's; ``__getitems__`` is what torch's fetcher calls once per batch."""

    def __init__(self, base: Any, extra: Sequence[Any]) -> None:
        self.base, self.extra = base, list(extra)
        self.n_base = len(base)
        self.batches: collections.deque[list[int]] = collections.deque()

    def __len__(self) -> int:
        return self.n_base + len(self.extra)

    def __getitem__(self, index: int) -> Any:
        return self.base[index] if index < self.n_base else self.extra[index - self.n_base]

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        self.batches.append([int(i) for i in indices])
        return [self[int(i)] for i in indices]


@dataclass(frozen=True)
class CanaryCoordinates:
    """Canary j's coordinate: parameter ``param[j]`` (index in the optimizer's parameter list), flat
    index ``flat[j]`` inside it."""

    param: tuple[int, ...]
    flat: tuple[int, ...]


def canary_coordinates(params: Sequence[Any], names: Sequence[str], m: int,
                       parameter: str | None) -> CanaryCoordinates:
    """The last m coordinates of ``parameter`` (a name of ``model.named_parameters()``, with or
    without GradSampleModule's ``_module.`` prefix), or of all trainable parameters in order."""
    sizes = [int(p.numel()) for p in params]
    if parameter is not None:
        wanted = [i for i, n in enumerate(names) if n == parameter or n == f"_module.{parameter}"]
        require(len(wanted) == 1, "parameter", parameter, f"must name one trainable parameter ({', '.join(names)})")
        k = wanted[0]
        require(m <= sizes[k], "canaries", m, f"gradient canaries need one coordinate each: {parameter} has {sizes[k]}")
        return CanaryCoordinates(param=(k,) * m, flat=tuple(range(sizes[k] - m, sizes[k])))
    require(m <= sum(sizes), "canaries", m, f"gradient canaries need one coordinate each: the model has {sum(sizes)}")
    owners = np.repeat(np.arange(len(sizes)), sizes)[-m:]
    offsets = np.concatenate([np.arange(s) for s in sizes])[-m:]
    return CanaryCoordinates(param=tuple(int(i) for i in owners), flat=tuple(int(i) for i in offsets))


def check_device(params: Sequence[Any]) -> None:
    """Canaries are written into and read from each parameter's own tensors: a parameter whose data
    cannot be read (the ``meta`` device) cannot carry them."""
    for p in params:
        require(p.device.type != "meta", "model", f"<parameter on {p.device}>",
                "must have its parameters on a real device: gradient canaries are written into and read from them")


@dataclass
class Injector:
    """The white-box canaries' hook on :meth:`DPOptimizer.pre_step` (installed on the optimizer
    instance; :meth:`remove` puts the library's own method back)."""

    optimizer: Any
    dataset: RecordingDataset
    included: Sequence[int]
    coordinates: CanaryCoordinates
    amplitude: float
    clip: float
    normalisation: float
    inject: bool = True
    rows: list[np.ndarray] = field(default_factory=list)
    isolated: bool = True
    original: Callable[..., Any] | None = None
    _groups: list[tuple[int, Any]] = field(default_factory=list)

    def install(self) -> None:
        self.original = self.optimizer.pre_step
        self.optimizer.pre_step = self.pre_step

    def remove(self) -> None:
        if "pre_step" in vars(self.optimizer):
            del self.optimizer.pre_step

    def _batch(self, size: int) -> list[int]:
        if not self.dataset.batches:
            raise InputError("train = <loop> is invalid: the optimizer stepped without a batch from the audited "
                             "data loader (iterate the data_loader train() is given, one step per batch)")
        batch = self.dataset.batches.popleft()
        if len(batch) != size:
            raise InputError(f"train = <loop> is invalid: a step's per-sample gradients hold {size} rows but its "
                             f"batch had {len(batch)} records (one optimizer step per batch of the audited loader, "
                             "no gradient accumulation or skipped batches)")
        return batch

    def pre_step(self, closure: Any = None) -> Any:
        import torch  # optional dependency (the opacus extra)

        params = self.optimizer.params
        grads = [p.grad_sample for p in params]
        if any(not isinstance(g, torch.Tensor) for g in grads):
            raise InputError("train = <loop> is invalid: per-sample gradients of several backward passes were "
                             "accumulated before a step; the audit needs one backward pass per step")
        batch = self._batch(int(grads[0].shape[0]))
        rows = [i for i, idx in enumerate(batch) if idx >= self.dataset.n_base]
        with torch.no_grad():
            self._check_isolation(grads, rows)
            if self.inject:
                self._write(grads, rows, [self.included[batch[i] - self.dataset.n_base] for i in rows])
        assert self.original is not None
        stepped = self.original(closure)
        if stepped:
            self._record(params)
        return stepped

    def _check_isolation(self, grads: Sequence[Any], canary_rows: Sequence[int]) -> None:
        if not self.isolated:
            return
        for k, flat in self._by_param():
            touched = grads[k].reshape(grads[k].shape[0], -1)[:, flat]
            touched[list(canary_rows)] = 0  # a copy (advanced indexing): the canaries' own rows are not data
            if bool(touched.any()):
                self.isolated = False
                return

    def _by_param(self) -> list[tuple[int, Any]]:
        """(parameter index, its canary coordinates as a tensor on the parameter's device)."""
        if not self._groups:
            import torch  # optional dependency (the opacus extra)

            params = self.optimizer.params
            for k in sorted(set(self.coordinates.param)):
                flat = [f for p, f in zip(self.coordinates.param, self.coordinates.flat, strict=True) if p == k]
                self._groups.append((k, torch.tensor(flat, device=params[k].device)))
        return self._groups

    def _write(self, grads: Sequence[Any], rows: Sequence[int], ids: Sequence[int]) -> None:
        for row, j in zip(rows, ids, strict=True):
            for g in grads:
                g[row] = 0
            k, f = self.coordinates.param[j], self.coordinates.flat[j]
            grads[k].view(grads[k].shape[0], -1)[row, f] = self.amplitude * self.clip

    def _record(self, params: Sequence[Any]) -> None:
        out = np.empty(len(self.coordinates.flat))
        for (k, flat), mask in zip(self._by_param(), self._masks(), strict=True):
            out[mask] = params[k].grad.detach().reshape(-1)[flat].to("cpu").double().numpy() * self.normalisation
        self.rows.append(out)

    def _masks(self) -> list[np.ndarray]:
        owners = np.asarray(self.coordinates.param)
        return [owners == k for k, _ in self._by_param()]
