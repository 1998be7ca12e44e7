"""``summary``: re-print a saved run's table (the file is checked, not trusted).
"""

from __future__ import annotations

import argparse
import sys

from dpaudit.cli.common import EXIT_FAIL, EXIT_OK, EXIT_USAGE
from dpaudit.engine.results import run_as_expected
from dpaudit.reports.text import summary_table
from dpaudit.runs.saved import load_results


def _summary(args: argparse.Namespace) -> int:
    """The saved run's table; exits as the run did.  A partial file (an interrupted run) says so and
    never exits 0: 1 if what was checked already holds a finding, else 2 (not everything was checked)."""
    payload = load_results(args.results)
    sys.stdout.write(summary_table(payload["records"], witness=args.witness))
    ok = run_as_expected(payload["records"])
    if not payload.get("complete", True):
        note = (f"PARTIAL results: the run was interrupted after {len(payload['scenarios'])} of "
                f"{payload.get('scenarios_planned', '?')} scenarios; the others were not checked")
        print(note)
        print(f"error: {args.results}: {note}", file=sys.stderr)
        return EXIT_USAGE if ok else EXIT_FAIL
    return EXIT_OK if ok else EXIT_FAIL
