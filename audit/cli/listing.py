"""``list``: the catalog (one line per mechanism), one mechanism in detail, the sample configs.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

from dpaudit import catalog
from dpaudit.catalog import SUITES
from dpaudit.catalog.designs import suite as designs_suite
from dpaudit.catalog.designs.entry import DesignSummary
from dpaudit.cli.common import EXIT_OK
from dpaudit.cli.parser import PIPELINE_SUITES, UsageError, program_name
from dpaudit.core import InputError, did_you_mean
from dpaudit.results.document import dumps

LIST_SCHEMA_VERSION = 1

SHIPPED_CONFIGS = Path(__file__).resolve().parents[1] / "configs"  # package data (configs/ in a checkout links here)


def list_command(args: argparse.Namespace) -> int:
    """``list`` (everything, with each mechanism's parameters), ``list NAME`` or ``list --configs``."""
    if getattr(args, "json", False) and args.configs:
        raise UsageError("list --json describes the catalog or one mechanism: drop --configs")
    if args.mechanism:
        known = catalog.mechanisms()
        if args.mechanism not in known:
            raise UsageError(f"list: {args.mechanism!r} is not a built-in mechanism"
                             f"{did_you_mean(args.mechanism, known)}; `{program_name()} list` shows them all, and the "
                             f"suites' scenarios and one-run designs by name (for one of those, "
                             f"`{program_name()} plan {args.mechanism}` describes it and what its claims take)")
        text = (dumps(mechanism_document(known[args.mechanism])) if getattr(args, "json", False)
                else _mechanism_details(known[args.mechanism]))
    elif getattr(args, "json", False):
        text = dumps(catalog_document())
    elif args.configs:
        text = _list_configs()
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


def _list_all(width: int = 100) -> str:
    """One line per mechanism (name, family, what it is), one per family, then the suites and the sweeps."""
    prog = program_name()
    out = [f"Built-in mechanisms ({prog} list NAME: its parameters and claims):"]
    entries = [(entry, family.name) for family in catalog.families() for entry in family.mechanisms]
    name_w = max(len(e.name) for e, _ in entries)
    family_w = max(len(f) for _, f in entries)
    for entry, family_name in entries:
        head = f"  {entry.name:{name_w}}  {family_name:{family_w}}  "
        out.append(head + textwrap.shorten(entry.about, width=max(20, width - len(head)), placeholder=" …"))
    out.append("Families (a third-party one joins through the dpaudit.families entry point):")
    for family in catalog.families():
        out.append("  " + textwrap.shorten(f"[{family.name}] {family.about}", width=width - 2, placeholder=" …"))
    # one-run designs are counted by their registered names (none is built); the onerun suite is named, not
    # counted; the libraries suite needs the libraries extra to be built: named, with the extra
    sizes = ", ".join("onerun" if suite == "onerun" else "libraries" if suite == "libraries"
                      else f"{suite} ({len(catalog.suite(suite))}"
                      + (f"+{n} one-run" if (n := len(catalog.onerun_names(suite))) else "") + ")" for suite in SUITES)
    # the pipeline suites train a real library (their extra; `run --help` says what they hold): named, not built
    sizes += "".join(f", {suite}" for suite in PIPELINE_SUITES)
    out.append(f"Suites (run --suite NAME): {sizes}")
    out.append(f"Sweeps ({prog} sweep NAME): {', '.join(catalog.sweeps())}")
    out.append(f"Sample configs: {prog} list --configs; as JSON: {prog} list [NAME] --json")
    return "\n".join(out) + "\n"


def _mechanism_entry(entry: catalog.MechanismEntry) -> dict[str, Any]:
    """One mechanism as ``list --json`` describes it: parameters, the registry's claims, canaries."""
    params = [{"name": p.name, "type": p.type or None, "default": p.default, "meaning": p.meaning or None}
              for p in entry.parameter_table()]
    claims = [{"id": c.id, "status": c.status, "document": c.document, "where": c.where,
               "relations": list(c.relations), "statement": c.statement}
              for c in catalog.mechanism_claims(entry.name)]
    return {"name": entry.name, "about": entry.about, "parameters": params, "claims": claims,
            "canaries": entry.canaries or None}


def mechanism_document(entry: catalog.MechanismEntry) -> dict[str, Any]:
    """``list NAME --json`` (schema ``schemas/list.schema.json``, kind ``mechanism``): the mechanism
    as ``list --json`` gives it, with its family."""
    family = next(f.name for f in catalog.families() if entry in f.mechanisms)
    return {"schema": LIST_SCHEMA_VERSION, "kind": "mechanism", "family": family, "mechanism": _mechanism_entry(entry)}


def catalog_document() -> dict[str, Any]:
    """``list --json`` (schema ``schemas/list.schema.json``): every family, mechanism (parameters,
    registry claims), suite scenario and sweep.  The one-run suite's designs are described by their
    registered summaries: none is built (building one calibrates noise and composes accountants)."""
    families = [{"name": family.name, "about": family.about,
                 "mechanisms": [_mechanism_entry(entry) for entry in family.mechanisms]}
                for family in catalog.families()]
    suites = {suite: [{"name": sc.name, "about": sc.about, "pair": sc.pair.description,
                       "relation": sc.pair.relation, "expected": dict(sc.expected)} for sc in catalog.suite(suite)]
              + [_onerun_entry(summary) for summary in onerun_summaries(suite)] for suite in SUITES
              if suite != "libraries" or libraries_installed()}
    return {"schema": LIST_SCHEMA_VERSION, "families": families, "suites": suites, "sweeps": list(catalog.sweeps())}


def libraries_installed() -> bool:
    """Whether the libraries suite can be built here (its extra is installed): ``list --json`` lists
    its scenarios then, and leaves the suite out otherwise."""
    try:
        catalog.suite("libraries")
    except InputError:
        return False
    return True


def onerun_summaries(suite: str) -> list[DesignSummary]:
    """What ``list --json`` says of the one-run designs of suite ``suite``, in
    :func:`dpaudit.catalog.onerun_suite`'s order.  For ``onerun``: a built-in family's designs are the
    registry's entries filed under its name (their summaries, registered beside their builders, so none
    is built), a plugin family's are built (``Family.onerun``), and the designs no family files come
    last; the other suites' (the default suite's small fixtures: cheap) are built."""
    if suite != "onerun":
        return [DesignSummary.of(design) for design in catalog.onerun_suite(suite)]
    out = [summary for family in catalog.families()
           for summary in (designs_suite.summaries(family.name) if family in catalog.BUILTIN
                           else [DesignSummary.of(design) for design in family.onerun()])]
    return out + designs_suite.summaries(None)


def _onerun_entry(summary: DesignSummary) -> dict[str, Any]:
    """A one-run (canary) scenario as ``list --json`` gives a suite's scenarios, with ``kind``
    ``one-run`` and its canaries: the neighbours are the canaries' inclusions, not a pair."""
    pair = summary.neighbours or f"{summary.m} canaries, each in or out ({summary.relation})"
    return {"name": summary.name, "about": summary.description, "pair": pair, "relation": summary.relation,
            "expected": dict(summary.expected), "kind": "one-run", "canaries": summary.m}


def _mechanism_details(entry: catalog.MechanismEntry) -> str:
    family = next(f.name for f in catalog.families() if entry in f.mechanisms)
    out = [f"{entry.name}  [family {family}]", _wrap(entry.about, 2), "", "Parameters (name, type, default, meaning):"]
    out += _parameter_lines(entry, 2)
    example = " ".join(f"--param {p.name}=..." for p in entry.parameter_table() if p.default == "required")
    run = f"{program_name()} run --mechanism {entry.name} {example} --pair pkg.module:pair".replace("  ", " ")
    out += ["", f"Run: {run}"]
    if entry.canaries:
        out += ["", f"Canary design (one-run audit, {program_name()} run --suite onerun):", _wrap(entry.canaries, 2)]
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
    out = [f"Sample configs shipped with dpaudit ({SHIPPED_CONFIGS}); run one with `{program_name()} run PATH`:"]
    for path in sorted(SHIPPED_CONFIGS.glob("*.toml")):
        first = path.read_text(encoding="utf-8").splitlines()[:1]
        about = first[0].lstrip("# ") if first and first[0].startswith("#") else ""
        out.append(f"  {path.name:16s} {about}")
        out.append(f"  {'':16s} {path}")
    data = sorted(p.name for p in (SHIPPED_CONFIGS / "data").glob("*") if p.is_file())
    if data:
        out.append(f"  data files (relative to the configs' folder): {', '.join('data/' + d for d in data)}")
    return "\n".join(out) + "\n"
