"""A pipeline audit as a one-run scenario: its design, its records, and a results folder (issue 43, point 6).

A :class:`~dpaudit.pipelines.opacus.OpacusAudit` result becomes the same one-run record every canary
design writes (:class:`~dpaudit.catalog.onerun.OneRunScenario`): one flat record per claim in
``results.json``, the scenario's game (scores, secret bits, tie-break seed, the independent-canary test)
for the loader and re-checker (:func:`dpaudit.results.saved.load_results`), the run table
(:func:`dpaudit.reports.text.summary_table`) and the PDF's one-run page.  The pipeline is named in
the scenario's mechanism (:class:`PipelineSpec`: the library and its version, σ, q, T, C, the canary
kind and count, the fault) and its description; the secret is the audit's, drawn from fresh entropy.

    result = audit.run(train)
    print(save_results(audit, result, "out/", name="my-training"))   # results.json, summary.txt, report.pdf

:class:`PipelineDesign` is the design the built-in ``run --suite opacus`` plays
(:mod:`dpaudit.pipelines.opacus_suite`): each :meth:`~PipelineDesign.audit` attaches to a freshly made
pipeline and trains it once.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpaudit import catalog, reports
from dpaudit.catalog.onerun import OneRunScenario
from dpaudit.core import EXPECTATIONS, InputError, require
from dpaudit.onerun.design import CanaryDesign
from dpaudit.onerun.result import OneRunResult
from dpaudit.pipelines.opacus import OpacusAudit
from dpaudit.pipelines.opacus_plan import rule_for
from dpaudit.pipelines.opacus_setting import accountant_steps
from dpaudit.reports.text import footer as text_footer
from dpaudit.reports.text import settings_words, summary_table
from dpaudit.results.document import dumps, envelope, environment
from dpaudit.runs.config import RunSettings
from dpaudit.runtime.files import write_atomic

__all__ = ["PipelineDesign", "PipelineSpec", "design_of", "payload_of", "save_results", "scored_in_run", "spec_of",
           "table_of"]

COMMAND = ("python", "dpaudit.pipelines.opacus_record.save_results")  # no command line made this file
PIPELINE_PACKAGES = ("torch", "opacus")  # recorded beside a command-line run's versions


@dataclass(frozen=True)
class PipelineSpec:
    """The audited pipeline as a one-run scenario's mechanism: the library and its installed version,
    the claimed noise multiplier σ, sample rate q, steps T and clipping norm C, the accountant, the
    canaries (kind and count) and the fault wrapper, if any (its letter and parameters)."""

    library: str
    version: str
    noise_multiplier: float
    sample_rate: float
    steps: int
    clip: float
    accountant: str
    kind: str
    canaries: int
    fault: str | None = None

    @property
    def name(self) -> str:
        return f"{self.library}-{self.version}-dpsgd"

    def describe(self) -> str:
        fault = f"; fault ({self.fault})" if self.fault else "; the library's own pipeline (no fault)"
        return (f"{self.library} {self.version} make_private pipeline audited in one run: "
                f"sigma={self.noise_multiplier:g}, q={self.sample_rate:g}, T={self.steps}, C={self.clip:g}, "
                f"{self.accountant} accountant; {self.canaries} {self.kind} canaries{fault}")


def spec_of(audit: OpacusAudit, steps: int) -> PipelineSpec:
    """The description (mechanism) of the audited pipeline, after a run of ``steps`` steps."""
    s = audit.setting
    fault = "; ".join(f"{f.letter}: {f!r}" for f in audit.faults) or None
    return PipelineSpec(library="opacus", version=importlib.metadata.version("opacus"),
                        noise_multiplier=s.noise_multiplier, sample_rate=s.sample_rate, steps=steps, clip=s.clip,
                        accountant=s.accountant, kind=audit.kind, canaries=audit.m, fault=fault)


def scored_in_run(output: Any, canaries: Sequence[Any]) -> Any:
    """A pipeline design is scored inside :meth:`OpacusAudit.run` (its white-box or loss scorer, fixed by
    ``attach`` before any run); nothing calls the design's own scorer."""
    raise InputError("scorer = <pipeline design> is invalid: a pipeline audit scores its canaries itself "
                     "(OpacusAudit.run)")


@dataclass(frozen=True)
class PipelineDesign(CanaryDesign):
    """A one-run design of an Opacus pipeline: ``attached()`` makes the pipeline and attaches the audit
    (:func:`~dpaudit.pipelines.opacus.attach`), ``train`` is the loop :meth:`audit` runs once.  The
    claims are the engine accountant's, planned for :attr:`PipelineSpec.steps` steps; a run whose
    accountant reports other claims (another step count) is refused."""

    attached: Callable[[], OpacusAudit] | None = None
    train: Callable[[Any, Any, Any], Any] | None = None

    def audit(self, seed: int = 0, *, confidence: float = 0.95, secret: Any = None,
              tiebreak: int | str | None = None) -> OneRunResult:
        require(secret is None, "secret", "<array>", "must be None: a pipeline audit draws its secret from fresh "
                "entropy (a stored game is re-bounded from results.json, never replayed)")
        require(tiebreak is None, "tiebreak", tiebreak, "must be None: a pipeline audit draws its own")
        require(self.attached is not None and self.train is not None, "design", self.name,
                "has no pipeline to train: it records a finished audit (design_of) and cannot run one")
        assert self.attached is not None and self.train is not None
        audit = dataclasses.replace(self.attached(), confidence=confidence)
        result = audit.run(self.train, seed=seed)
        planned = {getattr(c, "claim_id", ""): c for c in self.claims}
        for check in result.claims:
            cid = getattr(check.claim, "claim_id", "")
            mine = planned.get(cid)
            same = mine is not None and getattr(mine, "epsilon", None) == getattr(check.claim, "epsilon", None)
            require(same, "train", f"<claim {cid}>", f"the engine's accountant reported a claim the design did not "
                    f"plan (planned for T = {getattr(self.mechanism, 'steps', '?')} steps)")
        return result

    def with_isolated(self, result: OneRunResult) -> OneRunResult:
        """The independent-canary test is attached by the run itself, where its premise is checked on every
        step; a game read back from results.json is bounded without it (the premise is not re-checkable)."""
        return result


def design_of(audit: OpacusAudit, result: OneRunResult, *, name: str,
              expected: Mapping[str, str] | None = None) -> PipelineDesign:
    """The design a finished ``audit`` played (its claims: those of ``result``, the engine's accountant's
    after the run); ``expected``: claim id → verdict (``pass``, ``violation``), none by default (a
    refuted claim is then a finding, exit status 1 under ``summary``)."""
    require(isinstance(audit, OpacusAudit), "audit", type(audit).__name__, "must be what attach returned")
    require(isinstance(result, OneRunResult) and result.m == audit.m, "result", type(result).__name__,
            f"must be what this audit's run returned (a OneRunResult of its {audit.m} canaries)")
    require(isinstance(name, str) and name.strip() != "" and name.isprintable() and len(name) <= 200, "name", name,
            "must be a printable scenario name of 1 to 200 characters")
    claims = tuple(c.claim for c in result.claims)
    ids = [getattr(c, "claim_id", "") for c in claims]
    for cid, verdict in dict(expected or {}).items():
        require(cid in ids, f"expected.{cid}", verdict, f"must name a claim of the result ({', '.join(ids)})")
        require(verdict in EXPECTATIONS and verdict != "exact-violation", f"expected.{cid}", verdict,
                "must be one of pass, violation, not-applicable")
    spec = spec_of(audit, accountant_steps(audit.engine))  # T of the run the engine's accountant counted
    return PipelineDesign(name=name, mechanism=spec, canaries=list(range(audit.m)), scorer=scored_in_run,
                          claims=claims, rule=rule_for(audit.m), deltas=tuple(result.deltas),
                          expected=dict(expected or {}), description=spec.describe(), family=None)


def payload_of(scenarios: Sequence[OneRunScenario], *, seed: int, confidence: float, seconds: float,
               started: float) -> dict[str, Any]:
    """The ``results.json`` document of finished pipeline scenarios (schema of a ``run``'s)."""
    settings = RunSettings(seed=seed, confidence=confidence)
    return envelope(list(scenarios), command=list(COMMAND), suite=None, settings=settings, started=started,  # type: ignore[arg-type]
                    seconds=seconds, complete=True, planned=len(scenarios), environment=environment(PIPELINE_PACKAGES),
                    documents=catalog.documents(), fingerprint=None, families=catalog.report_families())


def table_of(payload: dict[str, Any]) -> str:
    """The run table and its footer, as ``run`` prints them."""
    words = settings_words(payload["samples"], payload["confidence"], payload["seed"], 0, len(payload["scenarios"]))
    return summary_table(payload["records"]) + text_footer(payload["records"], len(payload["scenarios"]), words,
                                                           payload["seconds"], payload["as_expected"], True)


def save_results(audit: OpacusAudit, result: OneRunResult, out: str | Path, *, name: str = "opacus-pipeline",
                 expected: Mapping[str, str] | None = None, seconds: float = 0.0, overwrite: bool = False) -> str:
    """Write ``result`` of ``audit`` into the folder ``out`` as a one-scenario run: ``results.json``
    (one-run records, re-checked by ``summary`` and ``report``), ``summary.txt`` (the run table) and
    ``report.pdf`` (its one-run page; skipped without the ``report`` extra); return the table.
    ``seconds``: the run's time, as recorded (the caller measured it).  A folder that already holds a
    ``results.json`` is refused unless ``overwrite`` (as ``run --out`` refuses another run's folder)."""
    folder = Path(out)
    require(not folder.exists() or folder.is_dir(), "out", str(out), "must be a folder (or a path to create one)")
    require(overwrite or not (folder / "results.json").exists(), "out", str(out),
            "already holds a results.json: give another folder, or overwrite=True to replace it")
    require(isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds >= 0, "seconds", seconds,
            "must be a finite number of seconds >= 0")
    design = design_of(audit, result, name=name, expected=expected)
    scenario = OneRunScenario(design, result, float(seconds), design.mechanism.name, catalog.claims())
    payload = payload_of([scenario], seed=result.seed or 0, confidence=result.confidence, seconds=float(seconds),
                         started=time.time())
    folder.mkdir(parents=True, exist_ok=True)
    document = dumps(payload)
    payload = json.loads(document)  # what the file holds (as `run` hands its PDF writer)
    text = table_of(payload)
    write_atomic(folder / "results.json", document)
    write_atomic(folder / "summary.txt", text)
    try:
        reports.write_pdf(payload, folder / "report.pdf", families=catalog.report_families())
    except reports.ReportExtraMissing as exc:  # the results and the table are written all the same
        text += f"note: {folder / 'report.pdf'} skipped: {exc}\n"
    return text
