"""``summary``: re-print a saved run's table and footer (the file is checked, not trusted).
"""

from __future__ import annotations

import argparse
import sys

from dpaudit.catalog import SEQUENTIAL_SUITES
from dpaudit.cli.common import EXIT_FAIL, EXIT_OK, EXIT_USAGE
from dpaudit.engine.results import dumps, outcome, run_as_expected
from dpaudit.reports.text import errata_note, footer, settings_words, summary_table
from dpaudit.runs.saved import load_results


def _summary(args: argparse.Namespace) -> int:
    """The saved run's table and footer (as ``run`` printed them); exits as the run did.  A partial
    file (an interrupted run) says so and never exits 0: 1 if what was checked already holds a
    finding, else 2 (not everything was checked).  ``--json``: one document with the run's
    settings, its records (each with its outcome) and the exit status, on stdout alone."""
    payload = load_results(args.results)
    records = payload["records"]
    ok = run_as_expected(records)
    complete = payload.get("complete", True)
    note = None if complete else (f"PARTIAL results: the run was interrupted after {len(payload['scenarios'])} of "
                                  f"{payload.get('scenarios_planned', '?')} scenarios; the others were not checked")
    code = (EXIT_OK if ok else EXIT_FAIL) if complete else (EXIT_USAGE if ok else EXIT_FAIL)
    if getattr(args, "json", False):
        doc = {"schema": payload.get("schema"), "results": str(args.results), "complete": complete,
               "as_expected": ok, "exit_status": code, "partial_note": note,
               "scenarios": len(payload["scenarios"]), "scenarios_planned": payload.get("scenarios_planned"),
               "samples": payload.get("samples"), "confidence": payload.get("confidence"),
               "seed": payload.get("seed"), "seconds": payload.get("seconds"),
               "records": [{**r, "outcome": outcome(r)} for r in records]}
        sys.stdout.write(dumps(doc))
    else:
        sys.stdout.write(summary_table(records, witness=args.witness, wide=getattr(args, "wide", False)))
        one_run = sum(sc.get("kind") == "one-run" for sc in payload["scenarios"])
        settings = settings_words(payload.get("samples"), payload.get("confidence"), payload.get("seed"),
                                  len(payload["scenarios"]) - one_run, one_run)
        sys.stdout.write(footer(records, len(payload["scenarios"]), settings, float(payload.get("seconds") or 0), ok))
        if payload.get("suite") in SEQUENTIAL_SUITES:
            sys.stdout.write(errata_note(records))
        if note:
            print(note)
    if note:
        print(f"error: {args.results}: {note}", file=sys.stderr)
    return code
