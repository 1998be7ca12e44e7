"""The ``results.json`` document: its envelope around the records the results write themselves.

A record's fields are written by the object that holds them (:meth:`dpaudit.engine.results.AuditResult.records`
and ``to_dict``, :meth:`dpaudit.onerun.result.OneRunResult.to_dict`, a one-run scenario's
:meth:`dpaudit.catalog.onerun.OneRunScenario.to_dict`); this module puts them in one document of schema
:data:`SCHEMA_VERSION` (:mod:`dpaudit.results.schema`), with the run's settings, and writes it as strict JSON.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import joblib
import numpy as np
import scipy

from dpaudit import __version__
from dpaudit.core import Document
from dpaudit.engine.results import AuditResult
from dpaudit.engine.verdicts import run_as_expected

__all__ = ["SCHEMA_VERSION", "Families", "dumps", "envelope", "environment", "family_entry"]

SCHEMA_VERSION = 2  # 2: records carry the combined finding, the claim's registry status and source
Families = Sequence[tuple[str, str, Collection[str], Collection[str]]]


def family_entry(mechanism: str, records: Sequence[Mapping[str, Any]], families: Families) -> dict[str, str] | None:
    """A scenario's ``family`` key: the first of ``families`` (name, about, claim ids, mechanism names)
    whose registry holds one of its records' claims or whose catalog lists its mechanism; None when no
    family knows it (a user's own).  Written with the results so that a report reads only the file, and
    groups a file the same way on any install."""
    ids = {r["claim_id"] for r in records if r.get("claim_id")}
    for name, about, claims, mechanisms in families:
        if ids & set(claims) or mechanism in mechanisms:
            return {"name": name, "about": about}
    return None


def envelope(results: Sequence[AuditResult], *, command: Sequence[str], suite: str | None, settings: Any,
             started: float, seconds: float, complete: bool, planned: int, environment: Mapping[str, str],
             documents: Mapping[str, Document] | None = None, fingerprint: str | None = None,
             families: Families = ()) -> dict[str, Any]:
    """The ``results.json`` payload of a run (schema :data:`SCHEMA_VERSION`): the run's settings
    (``samples``, ``seed``, ``confidence``, ``jobs``, ``backend``), one flat record per claim and
    one full result per scenario; ``complete`` is False while the run is still going.  ``documents``
    (key → :class:`~dpaudit.core.Document`) gives the full reference of every source the records cite;
    ``fingerprint`` is the run's identity (:mod:`dpaudit.runs.rundir`), tying the file to its folder's checkpoint;
    ``families`` (see :func:`family_entry`) give each scenario its ``family``."""
    per_result = [r.records() for r in results]
    records = [rec for recs in per_result for rec in recs]
    cited = sorted({r["claim_document"] for r in records if r.get("claim_document")})
    known = documents or {}
    return {"schema": SCHEMA_VERSION, "dpaudit_version": __version__, "command": list(command), "suite": suite,
            "seed": settings.seed, "samples": settings.samples, "confidence": settings.confidence,
            "jobs": settings.jobs, "backend": settings.backend,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)), "seconds": seconds,
            "complete": complete, "scenarios_planned": planned, "fingerprint": fingerprint,
            "as_expected": run_as_expected(records),
            "environment": dict(environment), "records": records,
            "scenarios": [{**r.to_dict(), "family": family_entry(r.mechanism, recs, families)}
                          for r, recs in zip(results, per_result, strict=True)],
            "documents": {key: known[key].reference for key in cited if key in known}}


def environment(packages: Sequence[str] = ()) -> dict[str, str]:
    """The versions and platform a results file records (Python, numpy, scipy, joblib, machine), and
    those of ``packages`` where installed (a pipeline audit's torch and opacus)."""
    out = {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
           "joblib": joblib.__version__, "machine": platform.machine(), "system": platform.system()}
    for package in packages:
        try:
            out[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def dumps(payload: Any) -> str:
    """Strict JSON (no NaN or Infinity tokens)."""
    return json.dumps(payload, indent=2, allow_nan=False) + "\n"


