"""Audit the Opacus training a user already has, in one run (issue 43, point 1).

    model, optimizer, loader = engine.make_private(module=..., optimizer=..., data_loader=...,
                                                   noise_multiplier=..., max_grad_norm=...)
    audit = attach(engine=engine, model=model, optimizer=optimizer, data_loader=loader,
                   delta=1e-5, canaries=1000)
    result = audit.run(train)     # train(model, optimizer, data_loader): the user's own loop

:meth:`OpacusAudit.run` plays :class:`~dpaudit.onerun.game.CanaryGame` (the secret drawn by dpaudit
from fresh entropy): each training run restores the state ``attach`` saw, appends the included canaries
to the user's dataset, rebuilds the loader with the library's own class at the engine's sample rate
(a :class:`~opacus.data_loader.DPDataLoader`; a shuffled torch loader of the same batch size when
the engine was made with ``poisson_sampling=False``), installs the canaries' hook on the optimizer
(:mod:`.opacus_canaries`) and calls ``train``.  The claims are the engine's own, read after the run
(:func:`~dpaudit.pipelines.opacus_setting.accountant_claims`); the rule is fixed in advance
(:func:`~dpaudit.pipelines.opacus_plan.rule_for`: k₊ = k₋ = 5 % of the canaries, the white-box design's 50 at
m = 1000).  White-box scores are the Poisson
likelihood-ratio statistic at the claimed σ, q and C (:func:`~dpaudit.catalog.designs.dpsgd.whitebox_score`);
when every step's per-sample gradients left the canary coordinates untouched, the isolated-canary
test is attached with its threshold planned from the claim.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from dpaudit.catalog.designs.dpsgd import ISOLATION_REASON, planned_threshold, whitebox_score
from dpaudit.core import InputError, require
from dpaudit.onerun.bound import bound_record
from dpaudit.onerun.game import CanaryGame
from dpaudit.onerun.isolated import isolated_bound
from dpaudit.onerun.result import OneRunResult
from dpaudit.pipelines.opacus_canaries import (
    CanaryCoordinates,
    Injector,
    PipelineOutput,
    RecordingDataset,
    canary_coordinates,
    check_device,
)
from dpaudit.pipelines.opacus_faults import Fault
from dpaudit.pipelines.opacus_plan import FaultPlan, plan_faults, rule_for
from dpaudit.pipelines.opacus_setting import (
    EngineSetting,
    accountant_claims,
    accountant_steps,
    planned_claims,
    read_setting,
)

__all__ = ["KINDS", "OpacusAudit", "attach"]

KINDS = ("gradient", "input")


@dataclass(frozen=True)
class _Snapshot:
    model: dict[str, Any]
    optimizer: dict[str, Any]
    history: list[Any]


@dataclass
class _LastRun:
    """What the last training run left for the claims (never the secret)."""

    steps: list[int] = field(default_factory=list)
    isolated: list[bool] = field(default_factory=list)


@dataclass(frozen=True)
class OpacusAudit:
    """A one-run audit attached to one ``make_private`` pipeline; build it with :func:`attach`."""

    engine: Any
    model: Any
    optimizer: Any
    data_loader: Any
    setting: EngineSetting
    delta: float
    m: int
    kind: str
    coordinates: CanaryCoordinates | None
    input_canaries: tuple[Any, ...]
    loss: Callable[[Any, Any], Any] | None
    amplitude: float
    min_steps: int
    faults: tuple[Fault, ...]
    snapshot: _Snapshot
    confidence: float = 0.95

    def run(self, train: Callable[[Any, Any, Any], Any], *, seed: int = 0, runs: int = 1) -> OneRunResult:
        """Play the canary game: ``runs`` training runs of ``train(model, optimizer, data_loader)``
        (one for gradient canaries), each from the state ``attach`` saw; bound the scores against the
        engine's accountant.  ``seed`` seeds torch's and the loader's randomness only."""
        require(callable(train), "train", train,
                "must be the training loop, callable as train(model, optimizer, data_loader)")
        require(isinstance(runs, int) and not isinstance(runs, bool) and runs >= 1, "runs", runs,
                "must be an integer >= 1")
        last = _LastRun()
        game = CanaryGame(m=self.m, seed=seed, runs=runs)
        record = game.play(lambda ids, rng: self._train(train, list(ids), rng, last), self._scorer(),
                           list(range(self.m)))
        record.verify()
        claims = accountant_claims(self.engine, delta=self.delta)
        result = bound_record(record, rule=rule_for(self.m), deltas=(self.delta,), confidence=self.confidence,
                              claims=claims)
        result = dataclasses.replace(result, secret_source=record.secret_source)
        return self._with_isolated(result, claims, last)

    def plan(self, *, steps: int, faults: Sequence[Fault],
             echo: Callable[[str], Any] | None = print) -> tuple[FaultPlan, ...]:
        """How many gradient canaries (one run) catch each of ``faults`` with probability >= 0.9
        (:func:`~dpaudit.pipelines.opacus_plan.plan_faults`, at the claimed setting and ``steps``);
        each line is passed to ``echo`` (printed by default) before any training."""
        s = self.setting
        claims = planned_claims(s, steps=steps, delta=self.delta)
        plans = plan_faults(sigma=s.noise_multiplier, q=s.sample_rate, steps=steps, n=s.dataset_size,
                            claims=claims, faults=faults, delta=self.delta)
        if echo is not None:
            echo(f"plan: sigma={s.noise_multiplier:g}, q={s.sample_rate:g}, T={steps}, claim eps="
                 f"{claims[0].epsilon:.3g} at delta={self.delta:g} (Opacus's {s.accountant} accountant)")
            for p in plans:
                echo("  " + p.describe())
        return plans

    def _scorer(self) -> Callable[[PipelineOutput, Sequence[Any]], np.ndarray]:
        s = self.setting
        white = whitebox_score(s.noise_multiplier, s.sample_rate, s.clip, 0)

        def score(output: PipelineOutput, canaries: Sequence[Any]) -> np.ndarray:
            if output.losses is not None:
                return -output.losses
            assert output.updates is not None
            return np.asarray(white(output, canaries))

        return score

    def _with_isolated(self, result: OneRunResult, claims: Any, last: _LastRun) -> OneRunResult:
        s = self.setting
        if self.kind != "gradient" or not s.poisson or not all(last.isolated) or self.faults:
            return result
        assert result.scores is not None and result.secret is not None
        steps = last.steps[-1]
        threshold = planned_threshold(s.noise_multiplier, s.sample_rate, steps, self.m)
        bound = isolated_bound(result.scores, result.secret, threshold=threshold, declared_by="design",
                               reason=ISOLATION_REASON.replace("(checked on the arrays)",
                                                               "(checked on every step's per-sample gradients)"),
                               check="every step's per-sample gradients of the real records were zero at the canary "
                                     "coordinates",
                               threshold_source=f"planned from the claim (sigma={s.noise_multiplier:g}, "
                                                f"q={s.sample_rate:g}, T={steps}, m={self.m})",
                               deltas=(self.delta,), alpha=result.alpha, claims=claims, relation="add-remove")
        return dataclasses.replace(result, isolated=bound)

    def _restore(self, rng: np.random.Generator) -> Any:
        import torch  # optional dependency (the opacus extra)

        self.model.load_state_dict(self.snapshot.model)
        self.optimizer.original_optimizer.load_state_dict(self.snapshot.optimizer)
        self.optimizer.zero_grad()
        self.engine.accountant.history = copy.deepcopy(self.snapshot.history)
        torch.manual_seed(int(rng.integers(2 ** 62)))
        if getattr(self.optimizer, "generator", None) is not None:
            self.optimizer.generator.manual_seed(int(rng.integers(2 ** 62)))
        return torch.Generator().manual_seed(int(rng.integers(2 ** 62)))

    def _loader(self, dataset: RecordingDataset, generator: Any) -> Any:
        from opacus.data_loader import DPDataLoader  # optional dependency
        from torch.utils.data import DataLoader  # optional dependency

        user, s = self.data_loader, self.setting
        shuffled = any(f.shuffled for f in self.faults) or not s.poisson
        if shuffled:
            size = s.batch_size if s.batch_size is not None else max(1, round(s.sample_rate * s.dataset_size))
            # a map-style dataset (len and getitem) that is not a torch Dataset subclass: torch is optional here
            return DataLoader(cast(Any, dataset), batch_size=size, shuffle=True, generator=generator,
                              collate_fn=None if s.poisson else user.collate_fn)
        rate = min(1.0, s.sample_rate * float(np.prod([f.rate_factor for f in self.faults])))
        return DPDataLoader(dataset, sample_rate=rate, generator=generator)

    def _extra(self, ids: Sequence[int]) -> list[Any]:
        if self.kind == "input":
            return [self.input_canaries[j] for j in ids]
        filler = self.data_loader.dataset[0]  # its per-sample gradient is replaced before clipping
        return [filler for _ in ids]

    def _train(self, train: Callable[..., Any], ids: list[int], rng: np.random.Generator, last: _LastRun) -> Any:
        generator = self._restore(rng)
        seen = all(f.sees_canaries for f in self.faults)
        dataset = RecordingDataset(self.data_loader.dataset, self._extra(ids) if seen else [])
        loader = self._loader(dataset, generator)
        injector = Injector(self.optimizer, dataset, ids, self.coordinates or CanaryCoordinates((), ()),
                            self.amplitude, self.setting.clip, self.setting.normalisation,
                            inject=self.kind == "gradient" and seen)
        undo = [f.install(self.optimizer, self.model) for f in self.faults]
        injector.install()
        try:
            _call_train(train, self.model, self.optimizer, loader)
        finally:
            injector.remove()
            for u in reversed(undo):
                u()
        steps = accountant_steps(self.engine)
        require(steps >= 1, "train", "<loop>", "never stepped the optimizer: there is no run to audit")
        require(steps >= self.min_steps, "train", f"<{steps} steps>",
                f"too few steps for the claim: attach was told min_steps={self.min_steps}")
        last.steps.append(steps)
        last.isolated.append(injector.isolated and self.kind == "gradient")
        if self.kind == "input":
            return PipelineOutput(updates=None, losses=self._losses(), steps=steps)
        return PipelineOutput(updates=np.asarray(injector.rows), losses=None, steps=steps,
                              isolated=injector.isolated)

    def _losses(self) -> np.ndarray:
        import torch  # optional dependency (the opacus extra)
        from torch.utils.data import default_collate  # optional dependency

        assert self.loss is not None
        out = np.empty(self.m)
        self.model.eval()
        try:
            with torch.no_grad():
                for j, item in enumerate(self.input_canaries):
                    x, y = default_collate([item])
                    device = next(self.model.parameters()).device
                    value = self.loss(self.model(x.to(device)), y.to(device))
                    out[j] = float(torch.as_tensor(value).reshape(-1).double().mean().cpu())
        finally:
            self.model.train()
        require(bool(np.all(np.isfinite(out))), "loss", "<non-finite>", "must give a finite loss for every canary")
        return out


def _call_train(train: Callable[..., Any], model: Any, optimizer: Any, loader: Any) -> None:
    """The user's loop; an exception it raises is bad input (exit 2) naming it."""
    try:
        train(model, optimizer, loader)
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"train = {getattr(train, '__qualname__', train)!r} is invalid: it raised "
                         f"{type(exc).__name__}: {exc}") from None


def attach(*, engine: Any, model: Any, optimizer: Any, data_loader: Any, delta: float, canaries: int = 1000,
           kind: str = "gradient", parameter: str | None = None, input_canaries: Sequence[Any] | None = None,
           loss: Callable[[Any, Any], Any] | None = None, amplitude: float = 4.0, min_steps: int = 1,
           faults: Sequence[Fault] = (), confidence: float = 0.95) -> OpacusAudit:
    """Attach a one-run audit to what ``PrivacyEngine.make_private`` (or ``make_private_with_epsilon``)
    returned.  ``kind``: ``"gradient"`` (white box: one coordinate of ``parameter``, or of the last
    trainable coordinates, per canary, raw norm ``amplitude``·C) or ``"input"`` (``input_canaries``:
    ``canaries`` dataset items, scored by ``loss(model(x), y)`` under the final model).
    ``min_steps``: fewer optimizer steps than this in a run is bad input.  ``faults``: opt-in wrappers
    of :mod:`dpaudit.pipelines.opacus_faults` (the control experiments)."""
    setting = read_setting(engine=engine, model=model, optimizer=optimizer, data_loader=data_loader)
    require(0 < delta < 1, "delta", delta, "must be in (0, 1)")
    require(kind in KINDS, "kind", kind, f"must be one of {', '.join(KINDS)}")
    require(isinstance(canaries, int) and not isinstance(canaries, bool) and canaries >= 2, "canaries", canaries,
            "must be an integer >= 2")
    require(canaries <= setting.dataset_size, "canaries", canaries,
            f"must be at most the dataset's size ({setting.dataset_size} records): more canaries than data would "
            "make the audited run another training")
    require(isinstance(min_steps, int) and min_steps >= 1, "min_steps", min_steps, "must be an integer >= 1")
    require(amplitude >= 1, "amplitude", amplitude, "must be >= 1 (the raw canary norm in units of C)")
    for f in faults:
        require(isinstance(f, Fault), "faults", f, "must be faults of dpaudit.pipelines.opacus_faults")
    params = list(optimizer.params)
    check_device(params)
    coords = None
    if kind == "gradient":
        names = _param_names(model, params)
        coords = canary_coordinates(params, names, canaries, parameter)
    else:
        _check_input_canaries(input_canaries, loss, canaries, data_loader.dataset)
    snapshot = _Snapshot(model=copy.deepcopy(model.state_dict()),
                         optimizer=copy.deepcopy(optimizer.original_optimizer.state_dict()),
                         history=copy.deepcopy(list(engine.accountant.history)))
    return OpacusAudit(engine=engine, model=model, optimizer=optimizer, data_loader=data_loader, setting=setting,
                       delta=float(delta), m=canaries, kind=kind, coordinates=coords,
                       input_canaries=tuple(input_canaries or ()), loss=loss, amplitude=float(amplitude),
                       min_steps=min_steps, faults=tuple(faults), snapshot=snapshot, confidence=confidence)


def _param_names(model: Any, params: Sequence[Any]) -> list[str]:
    by_id = {id(p): n for n, p in model.named_parameters()}
    return [by_id.get(id(p), f"<parameter {i}>") for i, p in enumerate(params)]


def _check_input_canaries(items: Sequence[Any] | None, loss: Any, m: int, dataset: Any) -> None:
    require(items is not None and len(items) == m, "input_canaries", None if items is None else f"<{len(items)}>",
            f"input canaries need {m} dataset items (x, y), one per canary")
    require(callable(loss), "loss", loss, "input canaries are scored by loss(model(x), y): give the loss")
    assert items is not None
    reference = dataset[0]
    shapes = [tuple(getattr(t, "shape", ())) for t in reference]
    for j, item in enumerate(items):
        got = [tuple(getattr(t, "shape", ())) for t in item] if isinstance(item, (tuple, list)) else None
        require(got == shapes, f"input_canaries[{j}]", f"<shapes {got}>",
                f"must have the shapes of the dataset's items ({shapes})")
