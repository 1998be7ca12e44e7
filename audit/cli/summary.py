"""``summary``: re-print a saved run's table and footer (the file is checked, not trusted).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dpaudit.catalog import SEQUENTIAL_SUITES
from dpaudit.cli.common import EXIT_FAIL, resume_command
from dpaudit.cli.expectations import exit_status
from dpaudit.engine.verdicts import outcome, run_as_expected
from dpaudit.reports.text import errata_note, footer, incomplete_note, settings_words, summary_table
from dpaudit.results.document import dumps
from dpaudit.results.saved import load_results
from dpaudit.runs.rundir import RUN_FILE


def summary_command(args: argparse.Namespace) -> int:
    """The saved run's table and footer (as ``run`` printed them); exits as the run did
    (:func:`dpaudit.cli.expectations.exit_status`): a partial file (an interrupted run) says so and
    never exits 0 — 1 if what was checked already holds a finding, else 130, as the interrupted
    ``run`` itself.  ``--json``: one document with the run's settings, its records (each with its
    outcome) and the exit status, on stdout alone."""
    payload = load_results(args.results)
    records = payload["records"]
    complete = payload.get("complete", True)
    code = exit_status(records, complete)
    note = None if complete else incomplete_note(
        done=len(payload["scenarios"]), planned=payload.get("scenarios_planned"),
        unchecked=payload.get("expectations_unchecked"), exact=payload.get("expectations_unchecked_exact", True),
        status=code, resume=_resumable(Path(args.results)))
    if getattr(args, "json", False):
        doc = {"schema": payload.get("schema"), "results": str(args.results), "complete": complete,
               "as_expected": run_as_expected(records), "exit_status": code, "partial_note": note,
               "scenarios": len(payload["scenarios"]), "scenarios_planned": payload.get("scenarios_planned"),
               "expectations_unchecked": payload.get("expectations_unchecked"),
               "samples": payload.get("samples"), "confidence": payload.get("confidence"),
               "seed": payload.get("seed"), "seconds": payload.get("seconds"),
               "records": [{**r, "outcome": outcome(r)} for r in records]}
        sys.stdout.write(dumps(doc))
    else:
        sys.stdout.write(summary_table(records, witness=args.witness, wide=getattr(args, "wide", False)))
        one_run = sum(sc.get("kind") == "one-run" for sc in payload["scenarios"])
        settings = settings_words(payload.get("samples"), payload.get("confidence"), payload.get("seed"),
                                  len(payload["scenarios"]) - one_run, one_run)
        sys.stdout.write(footer(records, len(payload["scenarios"]), settings, float(payload.get("seconds") or 0),
                                code != EXIT_FAIL, complete))
        if payload.get("suite") in SEQUENTIAL_SUITES:
            sys.stdout.write(errata_note(records))
        if note:
            sys.stdout.write(note)
    if note:
        print(f"warning: {args.results}: {note}", end="", file=sys.stderr)
    return code


def _resumable(results: Path) -> str | None:
    """The command resuming the run whose results file (or folder) is ``results``, when its folder
    holds the run (its run.json); else None."""
    folder = results if results.is_dir() else results.parent
    return resume_command(folder) if (folder / RUN_FILE).is_file() else None
