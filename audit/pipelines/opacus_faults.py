"""Faults of a DP-SGD pipeline, as opt-in wrappers around Opacus's own objects (issue 43, point 2).

Each fault wraps one method of the live :class:`~opacus.optimizers.DPOptimizer` instance (or says
how the audited loader is built) and calls the library's own method for everything it does not
break; nothing of Opacus is re-implemented.  The accountant is never told: its hook still sees the
engine's σ and q, so the claims stay those of the correct pipeline.  They exist for the control
experiments that show the audit catches them; a user's pipeline that has one is audited as is.

* (a) :class:`ClipAboveNoise` — noise calibrated for a clipping norm smaller than the one applied;
* (b) :class:`PartialNoise` — the noise multiplier applied on part of the steps only;
* (c) :class:`Oversampled` — a realised sampling rate larger than the accounted one;
* (d) :class:`ShuffledBatches` — shuffled fixed-size batches accounted as Poisson sampling (what
  ``make_private(poisson_sampling=False)`` itself does);
* (e) :class:`NormMisses` — per-sample norms that miss some parameters (e.g. biases), so clipping does
  not bound the sensitivity;
* (f) :class:`RealisedNormalisation` — the noisy sum divided by the realised batch size instead of
  the expected one;
* the null control :class:`NeverSeen` — canaries that never reach the model (scores independent of
  the secret).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpaudit.core import require

__all__ = ["FAULTS", "ClipAboveNoise", "Fault", "NeverSeen", "NormMisses", "Oversampled", "PartialNoise",
           "RealisedNormalisation", "ShuffledBatches"]


class Fault:
    """A wrapper around the live optimizer; ``rate_factor``/``shuffled`` say how the loader is built,
    ``sees_canaries`` whether the canaries reach the model at all."""

    letter = ""
    rate_factor = 1.0
    shuffled = False
    sees_canaries = True

    def install(self, optimizer: Any, model: Any) -> Callable[[], None]:
        """Wrap the optimizer's methods; returns the function that puts the library's own back."""
        return lambda: None

    @staticmethod
    def _wrap(optimizer: Any, name: str, wrapper: Callable[..., Any]) -> Callable[[], None]:
        original = getattr(optimizer, name)
        setattr(optimizer, name, lambda *a, **k: wrapper(original, *a, **k))
        return lambda: delattr(optimizer, name)


@dataclass(frozen=True)
class ClipAboveNoise(Fault):
    """(a) Per-sample gradients clipped to ``factor``·C while the noise is σ·C (calibrated for C)."""

    factor: float = 2.0
    letter = "a"

    def __post_init__(self) -> None:
        require(self.factor > 1, "factor", self.factor, "must be > 1 (the applied norm is factor x the noise's)")

    def install(self, optimizer: Any, model: Any) -> Callable[[], None]:
        def clip(original: Callable[[], Any]) -> Any:
            claimed = optimizer.max_grad_norm
            optimizer.max_grad_norm = claimed * self.factor
            try:
                return original()
            finally:
                optimizer.max_grad_norm = claimed  # add_noise and the accountant see the claimed norm

        return self._wrap(optimizer, "clip_and_accumulate", clip)


@dataclass(frozen=True)
class PartialNoise(Fault):
    """(b) σ applied on a fraction ``noisy`` of the steps (evenly spread), ``factor``·σ on the rest;
    the accountant's hook, called after the noise, still reads σ."""

    noisy: float = 0.5
    factor: float = 0.0
    letter = "b"

    def __post_init__(self) -> None:
        require(0 <= self.noisy < 1, "noisy", self.noisy, "must be in [0, 1)")
        require(0 <= self.factor < 1, "factor", self.factor, "must be in [0, 1)")

    def install(self, optimizer: Any, model: Any) -> Callable[[], None]:
        count = [0]

        def noise(original: Callable[[], Any]) -> Any:
            t = count[0]
            count[0] += 1
            if math.floor((t + 1) * self.noisy) > math.floor(t * self.noisy):
                return original()
            claimed = optimizer.noise_multiplier
            optimizer.noise_multiplier = claimed * self.factor
            try:
                return original()
            finally:
                optimizer.noise_multiplier = claimed

        return self._wrap(optimizer, "add_noise", noise)


@dataclass(frozen=True)
class Oversampled(Fault):
    """(c) The loader samples each record with probability ``factor``·q; the accountant is told q."""

    factor: float = 2.0
    letter = "c"

    def __post_init__(self) -> None:
        require(self.factor > 1, "factor", self.factor, "must be > 1")

    @property
    def rate_factor(self) -> float:  # type: ignore[override]
        return self.factor


@dataclass(frozen=True)
class ShuffledBatches(Fault):
    """(d) Shuffled fixed-size batches of round(q·N) records (a torch loader with ``shuffle=True``),
    accounted as Poisson sampling at q."""

    letter = "d"
    shuffled = True


@dataclass(frozen=True)
class NormMisses(Fault):
    """(e) Each per-sample norm is computed without the parameters whose name ends with one of
    ``suffixes``: Opacus clips the other parameters with it, and the missed ones are scaled by the same
    factor, so their part of a gradient is not bounded by C."""

    suffixes: tuple[str, ...] = ("bias",)
    letter = "e"

    def install(self, optimizer: Any, model: Any) -> Callable[[], None]:
        import torch  # optional dependency (the opacus extra)

        missed = {id(p) for n, p in model.named_parameters() if n.endswith(self.suffixes)}
        require(bool(missed), "suffixes", self.suffixes, "must name parameters of the model (e.g. bias)")

        def clip(original: Callable[[], Any]) -> Any:
            hidden = [p for p in optimizer.params if id(p) in missed]
            kept = [p for p in optimizer.params if id(p) not in missed]
            norms = torch.stack([p.grad_sample.reshape(len(p.grad_sample), -1).norm(2, dim=-1) for p in kept],
                                dim=1).norm(2, dim=1)
            factor = (optimizer.max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
            for p in hidden:
                p.requires_grad_(False)  # Opacus's params property skips them: it clips the rest itself
            try:
                original()
            finally:
                for p in hidden:
                    p.requires_grad_(True)
            for p in hidden:  # the bug: the missed parameters scaled by a factor their own norm never entered
                p.summed_grad = torch.einsum("i,i...", factor.to(p.dtype), p.grad_sample)

        return self._wrap(optimizer, "clip_and_accumulate", clip)


@dataclass(frozen=True)
class RealisedNormalisation(Fault):
    """(f) The noisy sum divided by the realised batch size (the per-sample gradients' row count)
    instead of the expected one the optimizer was given."""

    letter = "f"

    def install(self, optimizer: Any, model: Any) -> Callable[[], None]:
        def scale(original: Callable[[], Any]) -> Any:
            expected = optimizer.expected_batch_size
            optimizer.expected_batch_size = max(1, int(optimizer.grad_samples[0].shape[0]))
            try:
                return original()
            finally:
                optimizer.expected_batch_size = expected

        return self._wrap(optimizer, "scale_grad", scale)


@dataclass(frozen=True)
class NeverSeen(Fault):
    """The null control: the loader holds no canary, so the scores are independent of the secret."""

    letter = "null"
    sees_canaries = False


FAULTS: dict[str, type[Fault]] = {"a": ClipAboveNoise, "b": PartialNoise, "c": Oversampled, "d": ShuffledBatches,
                                  "e": NormMisses, "f": RealisedNormalisation}
