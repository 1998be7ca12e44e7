"""``list`` and ``list --json`` describe the one-run designs from their registered summaries
(``DesignEntry.summary``) and build none (issue 45: ``list --json`` calibrated σ, composed the
accountants and imported torch to print names and descriptions).

The summaries are written beside the builders, so they can drift from what a builder makes: each is
held equal to the summary read off its built design (skipped for a design whose extra is not
installed, as the suite leaves it out), and the listing's order to the built suite's, with every
extra and with the extras taken away."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys

import pytest

from dpaudit import catalog
from dpaudit.catalog.designs import suite
from dpaudit.catalog.designs.entry import DesignSummary
from dpaudit.catalog.onerun import all_designs
from dpaudit.cli import listing


def _built() -> dict[str, DesignSummary]:
    """The suite's designs on this install, built once per process (as ``run --suite onerun`` builds them)."""
    return {d.name: DesignSummary.of(d) for d in all_designs()}


@pytest.mark.parametrize("entry", suite.ENTRIES, ids=lambda e: e.name)
def test_each_registered_summary_is_what_its_built_design_reports(entry):
    missing = [m for m in entry.needs if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{entry.name} needs {', '.join(missing)} (not installed): the suite leaves it out")
    assert entry.summary == _built()[entry.name]


def test_the_listing_gives_the_built_suite_s_designs_in_its_order():
    built = [DesignSummary.of(d) for d in catalog.onerun_suite("onerun")]
    assert built and listing.onerun_summaries("onerun") == built
    assert listing.onerun_summaries("default") == [DesignSummary.of(d) for d in catalog.onerun_suite("default")]
    assert listing.onerun_summaries("errata") == []


@pytest.mark.parametrize("absent", [("opacus",), ("dp_accounting",), ("opacus", "dp_accounting")])
def test_without_an_extra_the_listing_leaves_out_what_the_suite_leaves_out(monkeypatch, absent):
    """The designs needing a missing extra are left out of the listing as of the built suite, the rest
    kept in the suite's order (the built summaries are this install's, filtered as the suite filters)."""
    order = listing.onerun_summaries("onerun")
    needs = {e.name: e.needs for e in suite.ENTRIES}
    monkeypatch.setattr(suite, "_available", lambda module: module not in absent)
    kept = [s for s in order if not set(needs[s.name]) & set(absent)]
    assert listing.onerun_summaries("onerun") == kept
    assert len(kept) < len(order)
    assert [e.name for e in suite.entries()] == [e.name for e in suite.ENTRIES if not set(e.needs) & set(absent)]


def test_the_summaries_tell_a_wrong_one_apart():
    """The comparison can fail: a summary one field off is not the built design's."""
    entry = next(e for e in suite.entries() if e.name == "dppg-whitebox")
    built = DesignSummary.of(entry.build())
    assert entry.summary == built
    assert dataclasses.replace(entry.summary, m=entry.summary.m + 1) != built
    assert dataclasses.replace(entry.summary, description=entry.summary.description + " ") != built


_FRESH = """
import dataclasses, sys
from dpaudit.catalog.designs import dpsgd, suite

def refuse(*args, **kwargs):
    raise AssertionError("a one-run design was built")

suite.ENTRIES = tuple(dataclasses.replace(e, build=refuse) for e in suite.ENTRIES)
from dpaudit.cli import main
assert main(["list"]) == 0 and main(["list", "--json"]) == 0
print({"torch": "torch" in sys.modules, "calibrated": dpsgd.noise_for_epsilon.cache_info().currsize})
"""


def test_listing_builds_no_design_calibrates_nothing_and_imports_no_torch():
    """In a fresh process (torch is imported by other tests in this one): ``list`` then ``list --json``
    with every design's builder refusing, no σ calibrated, torch never imported."""
    done = subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    *listed, last = done.stdout.strip().splitlines()
    assert last == "{'torch': False, 'calibrated': 0}"
    document = json.loads("\n".join(listed[listed.index("{"):]))
    assert {s["name"] for s in document["suites"]["onerun"]} == set(suite.design_names())


def test_a_plugin_family_s_designs_are_built_and_listed_in_the_suite_s_order(monkeypatch):
    """A plugin family's ``onerun`` is its own builder (no registered summary): the listing builds it,
    as the suite does, between the built-in families' designs and the designs no family files."""
    fixture = catalog.onerun_suite("default")[0]  # a cheap built design, renamed into the plugin's family
    toy = dataclasses.replace(fixture, name="toy-one-run", family="toy-plugin", description="a plugin's design")
    plugin = catalog.Family(name="toy-plugin", about="a plugin with a one-run design", onerun=lambda: [toy])
    monkeypatch.setattr(catalog, "families", lambda: (*catalog.BUILTIN, plugin))
    built = [DesignSummary.of(d) for d in catalog.onerun_suite("onerun")]
    listed = listing.onerun_summaries("onerun")
    assert listed == built and DesignSummary.of(toy) in listed
    assert [s.name for s in listed][-1] == "toy-one-run"  # no built-in design is filed under no family
