"""``sweep``: ε_claim(n), ε_exact(n), ε_lower(n) over dataset sizes.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from dpaudit import __version__
from dpaudit.cli.common import EXIT_OK
from dpaudit.results.document import SCHEMA_VERSION, dumps
from dpaudit.runs.invocation import typed_command
from dpaudit.runs.sweep import slopes, sweep
from dpaudit.runtime.files import check_output, write_atomic


def sweep_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    if args.out:  # before the sweep runs: an unwritable --out is the user's to fix, found at once
        check_output(args.out, "sweep --out", folder=True)
    records = sweep(args.family, args.n, samples=args.samples, seed=args.seed, confidence=args.confidence,
                    n_jobs=args.jobs)
    rows = [("n", "claim", "kind", "eps_claim", "eps_exact", "eps_lower", "verdict")]
    rows += [(str(r["n"]), r["claim_id"], r["claim_kind"], f"{r['epsilon_claim']:.4g}", f"{r['epsilon_exact']:.4g}",
              f"{r['epsilon_lower']:.4g}", r["verdict"]) for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    text = "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)
    fitted = slopes(records)
    text += "\n\nlog-log slopes against n (the paper's rate is -1):\n" + "\n".join(
        f"  {cid}: eps_claim {s['epsilon_claim']:+.3f}, eps_exact {s['epsilon_exact']:+.3f}"
        for cid, s in fitted.items())
    print(text)
    if args.out:
        write_atomic(args.out / "sweep.json", dumps({
            "schema": SCHEMA_VERSION, "dpaudit_version": __version__, "command": typed_command(argv),
            "family": args.family, "n": args.n, "samples": args.samples, "seed": args.seed,
            "confidence": args.confidence, "records": records, "slopes": fitted}))
    return EXIT_OK
