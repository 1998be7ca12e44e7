"""``report``: rebuild the PDF from a saved run (no re-sampling).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dpaudit import reports
from dpaudit.cli.common import EXIT_INTERNAL, EXIT_OK, report_families
from dpaudit.cli.expectations import exit_status
from dpaudit.cli.parser import UsageError
from dpaudit.results.saved import load_results, load_sweep
from dpaudit.runtime.files import check_output


def report_command(args: argparse.Namespace) -> int:
    """The PDF of a saved run (exit 0 once written); a partial file (an interrupted run) still gets its
    PDF, marked INCOMPLETE, but exits as ``summary`` of it does (:func:`dpaudit.cli.expectations.exit_status`):
    never 0, 130, or 1 if what was checked already holds a finding."""
    payload = load_results(args.results[0])
    sweeps = [load_sweep(p) for p in args.results[1:]]
    target = Path(args.output)
    if not target.parent.is_dir():
        raise UsageError(f"report -o {target}: the folder {target.parent} does not exist")
    check_output(target, "report -o", folder=False)
    if any("family" not in sc for sc in payload["scenarios"] if sc.get("kind") != "one-run"):
        print(f"note: {args.results[0]} was written before results carried their family: its sections are "
              "named from this install's catalog", file=sys.stderr)
    try:  # the catalog's families only name the scenarios of a file written without them
        reports.write_pdf(payload, target, sweeps, families=report_families())
    except reports.ReportExtraMissing as exc:  # an environment failure: exit 3
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    complete = payload.get("complete", True)
    print(f"wrote {target}" + ("" if complete else " (PARTIAL results: the run was interrupted)"))
    # a complete file: its PDF was the job (0); a partial one never exits 0, as summary of it
    return EXIT_OK if complete else exit_status(payload["records"], complete)
