"""``run --suite opacus``: the real Opacus pipeline and its faults, audited in one run each (issue 43).

Five one-run scenarios on the package's example pipelines (:mod:`dpaudit.pipelines.opacus_examples`,
the :data:`~dpaudit.pipelines.opacus_examples.CHEAP` setting: a logistic reward model of N = 1000
records made private by Opacus's own ``make_private``, σ = 1.673, q = 0.05, T = 200, C = 1, the PRV
accountant's ε = 2.01 at δ = 1e-5), gradient canaries through the library's own loader, clipping,
normalisation and noise, the claims those of the engine's accountant:

* ``opacus-pipeline``: the library's own pipeline, m = 1000; both claims expected to hold (with what
  they could have caught);
* ``opacus-fault-a-clip-4C`` (a), m = 250; ``opacus-fault-b-noise-on-a-tenth`` (b), m = 1000;
  ``opacus-fault-c-rate-3q`` (c), m = 1000; ``opacus-fault-e-norm-misses-bias`` (e) on the spare-bias
  model with the canaries on ``head.bias``, m = 250: the accountant's curve ``opacus/pld-curve``
  expected refuted; the accountant's (ε, δ) claim is shown with no expectation (its refutation at
  these budgets goes either way: 0.63 for (b), 0.93 for (c), 0.98 for (a) and (e)).

Budgets.  ``plan`` states the smallest m of its ladder with power ≥ 0.9 ((a) 250, (b) 500, (c) 500,
(e) 250; tests/test_pipeline_opacus_audit.py).  The suite must meet every expectation together with
probability ≥ 0.99, so each budget is one whose simulated power leaves a failure probability well
under 0.01 / 5: the plan's own pools (:func:`~dpaudit.pipelines.opacus_plan.simulate_scores`), rule
and claims, 4000 games per scenario (:func:`expectation_failures`, seed :data:`BUDGET_SEED`, a stream
no audit uses).  Measured, the curve refuted in (a) 4000, (b) 3996, (c) 4000 (at T = 198; at the
60 steps of a 10-epoch loop at 3q, only 3914) and (e) 4000 of 4000 games, and the correct pipeline's
curve rejected in 2 of 4000 (its (ε, δ) claim in 0).  Summed, the failure probabilities are 0.0015
(0.0066 with each count's 95 % Clopper–Pearson upper bound).  CPU: 1-5 CPU s per scenario on one
torch thread (:class:`BuiltinPipeline` sets it for its run), 18 CPU s for ``run --suite opacus --out
DIR`` with its PDF.
"""

from __future__ import annotations

import functools
import importlib.util
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpaudit.catalog.onerun import SuiteDesign
from dpaudit.core import InputError
from dpaudit.onerun.result import OneRunResult
from dpaudit.pipelines.opacus import OpacusAudit, attach
from dpaudit.pipelines.opacus_examples import CHEAP, EPOCHS, reward_pipeline, spare_bias_pipeline, trainer
from dpaudit.pipelines.opacus_faults import ClipAboveNoise, Fault, NormMisses, Oversampled, PartialNoise
from dpaudit.pipelines.opacus_plan import claim_power, rule_for
from dpaudit.pipelines.opacus_record import PipelineDesign, PipelineSpec, scored_in_run
from dpaudit.pipelines.opacus_setting import EngineSetting, planned_claims

__all__ = ["BUDGET_SEED", "DELTA", "SUITE", "BuiltinPipeline", "SuiteEntry", "available", "claimed_setting",
           "expectation_failures", "suite_designs"]

DELTA = 1e-5
CURVE, EPSILON = "opacus/pld-curve", "opacus/prv-accountant"
BUDGET_SEED = 20_261_203  # the budgets' simulation stream (claim_power); no audit uses it
# Opacus's notes on every run of these examples (secure RNG off, a full backward hook on inputs that need
# no gradient): true of every run, nothing the suite's reader can act on
QUIET = ("Secure RNG turned off", "Full backward hook")


@dataclass(frozen=True)
class BuiltinPipeline(PipelineDesign, SuiteDesign):
    """A pipeline design of the built-in suite: a claim it states no expectation for is shown with its
    verdict and is no finding (:class:`~dpaudit.catalog.onerun.SuiteDesign`).  Trained on one torch
    thread: on these small models torch's default pool (a thread per core) spins between tiny parallel
    regions (tests/slow_shared.py measured 15-18 CPU s per run against 1.5); the draws are the same."""

    def audit(self, seed: int = 0, *, confidence: float = 0.95, secret: Any = None,
              tiebreak: int | str | None = None) -> OneRunResult:
        import torch  # optional dependency (the opacus extra)

        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with warnings.catch_warnings():
                for note in QUIET:
                    warnings.filterwarnings("ignore", message=note)
                return super().audit(seed, confidence=confidence, secret=secret, tiebreak=tiebreak)
        finally:
            torch.set_num_threads(before)


@dataclass(frozen=True)
class SuiteEntry:
    """One scenario of the suite: its name, the fault (None: the library's own pipeline), the canaries,
    the example pipeline and the parameter the canaries sit on (None: the model's last coordinates)."""

    name: str
    fault: Fault | None
    m: int
    pipeline: Callable[..., tuple[Any, Any, Any, Any]] = reward_pipeline
    parameter: str | None = None
    epochs: int = EPOCHS

    @property
    def steps(self) -> int:
        """T of the loop: ``epochs`` passes of the loader, whose length is ⌊1/q'⌋ at the rate q' it
        samples (Opacus's ``DPDataLoader``): 10 · 20 = 200 at q; under (c) at 3q, 33 · 6 = 198 (the
        accountant counts them at q)."""
        rate = float(CHEAP["sample_rate"]) * (1.0 if self.fault is None else self.fault.rate_factor)
        return self.epochs * int(1.0 / min(1.0, rate))


SUITE = (
    SuiteEntry("opacus-pipeline", None, 1000),
    SuiteEntry("opacus-fault-a-clip-4C", ClipAboveNoise(4.0), 250),
    SuiteEntry("opacus-fault-b-noise-on-a-tenth", PartialNoise(0.1, 0.0), 1000),
    # the loop of 10 epochs would make 60 steps at 3q: 33 epochs make it the others' 198 (at T = 60 the curve is
    # refuted in 3914 of 4000 games only, a failure probability of 0.02)
    SuiteEntry("opacus-fault-c-rate-3q", Oversampled(3.0), 1000, epochs=33),
    SuiteEntry("opacus-fault-e-norm-misses-bias", NormMisses(), 250, spare_bias_pipeline, "head.bias"),
)


def available() -> bool:
    """Whether torch and opacus (the ``opacus`` extra) are installed."""
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "opacus"))


def _attached(entry: SuiteEntry) -> OpacusAudit:
    """The entry's pipeline, freshly made by ``make_private``, with the audit attached."""
    engine, model, optimizer, loader = entry.pipeline(**CHEAP)
    return attach(engine=engine, model=model, optimizer=optimizer, data_loader=loader, delta=DELTA, canaries=entry.m,
                  parameter=entry.parameter, faults=() if entry.fault is None else (entry.fault,))


def claimed_setting() -> EngineSetting:
    """The claimed setting of :data:`CHEAP` as ``make_private`` sets it (read again from the engine on
    every run: :meth:`PipelineDesign.audit` refuses claims it did not plan)."""
    n, q = int(CHEAP["n"]), float(CHEAP["sample_rate"])
    return EngineSetting(noise_multiplier=float(CHEAP["noise_multiplier"]), clip=1.0, sample_rate=q,
                         normalisation=q * n, poisson=True, batch_size=None, accountant="prv", dataset_size=n)


def _design(entry: SuiteEntry) -> BuiltinPipeline:
    import opacus  # optional dependency (the opacus extra)

    s = claimed_setting()
    fault = None if entry.fault is None else f"{entry.fault.letter}: {entry.fault!r}"
    spec = PipelineSpec(library="opacus", version=opacus.__version__, noise_multiplier=s.noise_multiplier,
                        sample_rate=s.sample_rate, steps=entry.steps, clip=s.clip, accountant=s.accountant,
                        kind="gradient", canaries=entry.m, fault=fault)
    expected = {EPSILON: "pass", CURVE: "pass"} if entry.fault is None else {CURVE: "violation"}
    return BuiltinPipeline(name=entry.name, mechanism=spec, canaries=list(range(entry.m)), scorer=scored_in_run,
                           claims=planned_claims(s, steps=entry.steps, delta=DELTA), rule=rule_for(entry.m),
                           deltas=(DELTA,), expected=expected, description=spec.describe(),
                           attached=functools.partial(_attached, entry), train=trainer(entry.epochs))


def suite_designs() -> list[PipelineDesign]:
    """The suite's designs, unplayed (each :meth:`~PipelineDesign.audit` trains once); an
    :class:`InputError` when the ``opacus`` extra is not installed."""
    if not available():
        raise InputError("suite = 'opacus' is invalid here: it trains with Opacus, which needs the opacus extra "
                         "(pip install torch==2.13.0 first, its CPU build, then pip install 'dpaudit[opacus]')")
    return [_design(e) for e in SUITE]


def expectation_failures(entry: SuiteEntry, *, games: int, seed: int = BUDGET_SEED) -> int:
    """In how many of ``games`` simulated games at the entry's m an expectation fails (a fault's curve
    not rejected; for the correct pipeline at most this many: the games that reject its (ε, δ) claim
    plus those that reject its curve), from :func:`~dpaudit.pipelines.opacus_plan.claim_power` (the
    plan's pools, rule and claims)."""
    s = claimed_setting()
    hits = claim_power(entry.fault, sigma=s.noise_multiplier, q=s.sample_rate, steps=entry.steps, n=s.dataset_size,
                       m=entry.m, claims=planned_claims(s, steps=entry.steps, delta=DELTA), games=games, seed=seed,
                       delta=DELTA)
    if entry.fault is None:  # either claim rejected fails it; bounded by the sum of the two counts
        return min(games, hits[0] + hits[1])
    return games - hits[1]  # the curve is planned second (planned_claims)
