"""``list``: the catalog (one line per mechanism), one mechanism in detail, the sample configs.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path

from dpaudit import catalog
from dpaudit.catalog import SUITES
from dpaudit.cli.common import EXIT_OK, UsageError

SHIPPED_CONFIGS = Path(__file__).resolve().parents[1] / "configs"  # package data (configs/ in a checkout links here)


def _list(args: argparse.Namespace) -> int:
    """``list`` (everything, with each mechanism's parameters), ``list NAME`` or ``list --configs``."""
    if args.configs:
        text = _list_configs()
    elif args.mechanism:
        known = catalog.mechanisms()
        if args.mechanism not in known:
            raise UsageError(f"list: {args.mechanism!r} is not a built-in mechanism"
                             f"{catalog.suggest(args.mechanism, list(known))}; `python -m audit list` shows them all")
        text = _mechanism_details(known[args.mechanism])
    else:
        text = _list_all()
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `list | head`: the reader has what it wanted
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silences the interpreter's final flush
    return EXIT_OK


def _wrap(text: str, indent: int, width: int = 100) -> str:
    return textwrap.fill(text, width=width, initial_indent=" " * indent, subsequent_indent=" " * indent)


def _parameter_lines(entry: catalog.MechanismEntry, indent: int) -> list[str]:
    table = entry.parameter_table()
    if not table:
        return [" " * indent + "(no parameters)"]
    rows = [(p.name, p.type or "-", p.default, p.meaning or "-") for p in table]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = []
    for name, kind, default, meaning in rows:
        head = " " * indent + f"{name:{widths[0]}}  {kind:{widths[1]}}  {default:{widths[2]}}  "
        width = max(100, len(head) + 40)
        lines.append(textwrap.fill(meaning, width=width, initial_indent=head, subsequent_indent=" " * len(head)))
    return lines


def _list_all() -> str:
    out = ["Built-in mechanisms (--mechanism NAME --param KEY=VALUE ...; `list NAME` for one in detail).",
           "Parameters: name, type, default, meaning."]
    for family in catalog.families():
        out.append(f"\n[{family.name}] {family.about}")
        for entry in family.mechanisms:
            out.append(f"  {entry.name}")
            out.append(_wrap(entry.about, 6))
            out += _parameter_lines(entry, 6)
    out.append(f"\nSweeps (python -m audit sweep NAME): {', '.join(catalog.sweeps())}")
    for suite in SUITES:
        out.append(f"\nSuite {suite!r} (python -m audit run --suite {suite}):")
        for sc in catalog.suite(suite):
            out.append(f"  {sc.name:18s} {sc.about}")
            out.append(f"  {'':18s} pair: {sc.pair.description} [{sc.pair.relation}]")
            out += [f"  {'':18s} expects {cid}: {verdict}" for cid, verdict in sc.expected.items()]
    out.append("\nSample configs: python -m audit list --configs")
    return "\n".join(out) + "\n"


def _mechanism_details(entry: catalog.MechanismEntry) -> str:
    family = next(f.name for f in catalog.families() if entry in f.mechanisms)
    out = [f"{entry.name}  [family {family}]", _wrap(entry.about, 2), "", "Parameters (name, type, default, meaning):"]
    out += _parameter_lines(entry, 2)
    example = " ".join(f"--param {p.name}=..." for p in entry.parameter_table() if p.default == "required")
    run = f"python -m audit run --mechanism {entry.name} {example} --pair pkg.module:pair".replace("  ", " ")
    out += ["", f"Run: {run}"]
    claims = catalog.mechanism_claims(entry.name)
    out += ["", f"Claims in the registry ({len(claims)}):" if claims else "Claims in the registry: none"]
    for c in claims:
        out.append(f"  {c.id}  [{c.status}]  {c.document}, {c.where}; relations: {', '.join(c.relations)}")
        out.append(_wrap(c.statement, 6))
        if c.premises:
            out.append(_wrap(f"premises: {'; '.join(c.premises)}", 6))
        if c.reason:
            out.append(_wrap(f"why {c.status}: {c.reason}", 6))
    return "\n".join(out) + "\n"


def _list_configs() -> str:
    out = [f"Sample configs shipped with dpaudit ({SHIPPED_CONFIGS}); run one with `python -m audit run PATH`:"]
    for path in sorted(SHIPPED_CONFIGS.glob("*.toml")):
        first = path.read_text(encoding="utf-8").splitlines()[:1]
        about = first[0].lstrip("# ").split(": python -m audit")[0] if first and first[0].startswith("#") else ""
        out.append(f"  {path.name:16s} {about}")
        out.append(f"  {'':16s} {path}")
    data = sorted(p.name for p in (SHIPPED_CONFIGS / "data").glob("*") if p.is_file())
    if data:
        out.append(f"  data files (relative to the configs' folder): {', '.join('data/' + d for d in data)}")
    return "\n".join(out) + "\n"
