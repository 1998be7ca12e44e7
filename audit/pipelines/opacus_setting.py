"""What Opacus's ``PrivacyEngine.make_private`` set up, read from the objects it returned.

Every object is checked where it enters (the project's rule: nothing a user supplies is trusted):
the model must be a :class:`opacus.GradSampleModule` (per-sample gradients), the optimizer a
:class:`opacus.optimizers.DPOptimizer` over the model's parameters with the engine's accountant hook
attached, the data loader the one the engine made (a :class:`opacus.data_loader.DPDataLoader`, or,
with ``poisson_sampling=False``, a shuffled loader over the engine's dataset).  The claimed setting
(σ, C, q, the normalisation) is read before any training, so the scorer and the rule are fixed in
advance.

The claims come from the library itself, after the run: its accountant's ε at the user's δ, and the
whole curve built with dp-accounting (the PLD of the Poisson-subsampled Gaussian, add-remove) from the
noise multiplier, sample rate and step count the accountant recorded (Opacus's ``accountant.history``).
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Any

from dpaudit.catalog.designs.dpsgd import accountant_curve
from dpaudit.core import Guarantee, InputError, require
from dpaudit.onerun.curves import CurveClaim

__all__ = ["EngineSetting", "accountant_claims", "accountant_steps", "planned_claims", "read_setting"]


@dataclass(frozen=True)
class EngineSetting:
    """The claimed DP-SGD setting: noise multiplier σ, clipping norm C, the sample rate q the
    accountant is told, the optimizer's normalisation (``expected_batch_size`` × accumulated
    iterations under ``loss_reduction="mean"``, 1 under ``"sum"``), whether the loader samples
    Poisson batches, the batch size of a fixed-size loader, and the accountant's name."""

    noise_multiplier: float
    clip: float
    sample_rate: float
    normalisation: float
    poisson: bool
    batch_size: int | None
    accountant: str
    dataset_size: int


def _opacus() -> Any:
    try:
        import opacus  # optional dependency (the opacus extra)
    except ImportError as exc:  # pragma: no cover - the extra is installed wherever this runs
        raise InputError(f"opacus = <missing> is invalid: install the opacus extra ({exc})") from None
    return opacus


def _check_types(engine: Any, model: Any, optimizer: Any, data_loader: Any) -> None:
    opacus = _opacus()
    from opacus.grad_sample import AbstractGradSampleModule  # optional dependency
    from opacus.optimizers import DPOptimizer  # optional dependency
    from torch.utils.data import DataLoader  # optional dependency

    require(isinstance(engine, opacus.PrivacyEngine), "engine", type(engine).__name__,
            "must be the opacus.PrivacyEngine whose make_private made the model, optimizer and data loader")
    require(isinstance(model, AbstractGradSampleModule), "model", type(model).__name__,
            "must be the model make_private returned (an opacus GradSampleModule), not the module you passed in")
    require(isinstance(optimizer, DPOptimizer), "optimizer", type(optimizer).__name__,
            "must be the optimizer make_private returned (an opacus DPOptimizer)")
    require(isinstance(data_loader, DataLoader), "data_loader", type(data_loader).__name__,
            "must be the data loader make_private returned (a torch DataLoader)")
    for p in model.parameters():  # canaries are written into and read from the parameters' own tensors
        require(p.device.type != "meta", "model", f"<parameter on {p.device}>",
                "must have its parameters on a real device: gradient canaries are written into and read from them")
    own = {id(p) for p in model.parameters()}
    require(all(id(p) in own for p in optimizer.params), "optimizer", "<parameters>",
            "must optimise the parameters of the given model (make_private's model and optimizer go together)")
    require(getattr(optimizer, "step_hook", None) is not None, "optimizer", "<no step hook>",
            "has no accountant hook: it was not made by PrivacyEngine.make_private (its steps would not be "
            "accounted)")
    require(engine.dataset is not None and data_loader.dataset is engine.dataset, "data_loader",
            "<dataset>", "must be over the dataset the engine was made private for (engine.dataset)")


def read_setting(*, engine: Any, model: Any, optimizer: Any, data_loader: Any) -> EngineSetting:
    """The claimed setting of a pipeline ``make_private`` returned, or an :class:`InputError` naming
    the object that was not made by the engine."""
    _check_types(engine, model, optimizer, data_loader)
    from opacus.data_loader import DPDataLoader  # optional dependency

    poisson = isinstance(data_loader, DPDataLoader)
    n = len(data_loader.dataset)
    require(n >= 1, "data_loader", "<empty dataset>", "must hold at least one record")
    # The rate the engine's accountant hook was given: the loader's own for Poisson batches, else
    # 1/len(loader), exactly as make_private computes it.
    q = float(data_loader.sample_rate) if poisson else 1.0 / len(data_loader)
    mean = getattr(optimizer, "loss_reduction", "mean") == "mean"
    norm = float(optimizer.expected_batch_size) if mean else 1.0  # one backward pass per step (checked)
    clip = optimizer.max_grad_norm
    require(isinstance(clip, (int, float)) and float(clip) > 0, "optimizer.max_grad_norm", clip,
            "must be one positive clipping norm (per-layer clipping is not audited here)")
    sigma = float(optimizer.noise_multiplier)
    require(sigma > 0, "optimizer.noise_multiplier", sigma, "must be > 0: without noise there is no DP claim to audit")
    return EngineSetting(noise_multiplier=sigma, clip=float(clip), sample_rate=q, normalisation=norm,
                         poisson=poisson, batch_size=None if poisson else int(data_loader.batch_size),
                         accountant=str(engine.accountant.mechanism()), dataset_size=n)


def accountant_claims(engine: Any, *, delta: float) -> tuple[Guarantee | CurveClaim, ...]:
    """The library's own claims about the run it just did: its accountant's ε at ``delta``
    (``engine.accountant.get_epsilon``), and, when the accountant recorded one constant (σ, q)
    for all T steps, the whole privacy profile of that composition built with dp-accounting (PLD,
    add-remove, pessimistic: a correct run is rejected at most α of the time)."""
    history = list(engine.accountant.history)
    require(len(history) >= 1, "train", "<no optimizer step>",
            "the training loop never stepped the optimizer: there is no run to audit")
    name = str(engine.accountant.mechanism())
    eps = _accountant_epsilon(engine.accountant, delta=delta)
    sigma, q, steps = (float(history[0][0]), float(history[0][1]), sum(int(h[2]) for h in history))
    claims: list[Guarantee | CurveClaim] = [
        Guarantee(epsilon=eps, delta=delta, claim_id=f"opacus/{name}-accountant",
                  source=f"Opacus's {name} accountant (engine.accountant.get_epsilon), sigma={sigma:.4g}, "
                         f"q={q:.4g}, T={steps}")]
    if all(float(h[0]) == sigma and float(h[1]) == q for h in history):
        claims.append(accountant_curve(round(sigma, 9), round(q, 12), steps, claim_id="opacus/pld-curve"))
    return tuple(claims)


def _accountant_epsilon(accountant: Any, *, delta: float) -> float:
    """``accountant.get_epsilon(delta=delta)``; for Opacus's own accountants, whose ε is a function
    of their class, their recorded history (σ, q, steps) and δ alone, computed once per such key
    (the PRV accountant's numerical domain costs ~0.7 CPU s; audits of many seeds of one setting
    record the same history).  Any other accountant (a user's subclass) is asked every time."""
    kind = type(accountant)
    if kind.__module__.startswith("opacus.accountants.") and kind.__name__ in _OWN:
        history = tuple((float(s), float(q), int(t)) for s, q, t in accountant.history)
        return _own_epsilon(kind.__module__, kind.__name__, history, float(delta))
    return float(accountant.get_epsilon(delta=delta))


_OWN = frozenset({"RDPAccountant", "PRVAccountant", "GaussianAccountant"})


@functools.lru_cache(maxsize=256)
def _own_epsilon(module: str, name: str, history: tuple[tuple[float, float, int], ...], delta: float) -> float:
    accountant = getattr(importlib.import_module(module), name)()
    accountant.history = list(history)
    return float(accountant.get_epsilon(delta=delta))


def planned_claims(setting: EngineSetting, *, steps: int, delta: float) -> tuple[Guarantee | CurveClaim, ...]:
    """The claims the engine's accountant will make after ``steps`` steps at the claimed σ and q
    (a fresh accountant of the engine's kind, told the same history), for planning before the run."""
    from opacus.accountants import create_accountant  # optional dependency (the opacus extra)

    require(isinstance(steps, int) and steps >= 1, "steps", steps, "must be an integer >= 1")
    acc = create_accountant(setting.accountant)
    acc.history = [(setting.noise_multiplier, setting.sample_rate, steps)]
    eps = _accountant_epsilon(acc, delta=delta)
    sigma, q = round(setting.noise_multiplier, 9), round(setting.sample_rate, 12)
    return (Guarantee(epsilon=eps, delta=delta, claim_id=f"opacus/{setting.accountant}-accountant",
                      source=f"Opacus's {setting.accountant} accountant at sigma={sigma:.4g}, q={q:.4g}, T={steps}"),
            accountant_curve(sigma, q, steps, claim_id="opacus/pld-curve"))


def accountant_steps(engine: Any) -> int:
    """How many steps the engine's accountant counted."""
    return sum(int(h[2]) for h in engine.accountant.history)
