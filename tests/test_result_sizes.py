"""``summary`` and ``report`` bound the sizes a results file may claim (issue 37, item 12).

Before: a results file with a 1 MB claim id was read as any other; ``report`` of it ran for more
than 400 s (a 10,000-character one ended in an internal error, exit 3).  Now names and ids are at
most MAX_NAME_CHARS characters, any other string MAX_TEXT_CHARS, a list MAX_ITEMS entries, a run
MAX_SCENARIOS scenarios and MAX_RECORDS records: past them the file is refused (exit 2) with the
limit in the message, before anything is formatted; ``run`` refuses a plan past them, so no run
writes a file they refuse.  The twin: a name at the limit is read and reported.
"""

from __future__ import annotations

import json

import pytest

from dpaudit.results.saved import MAX_ITEMS, MAX_NAME_CHARS, MAX_SCENARIOS, MAX_TEXT_CHARS
from tests.clirun import in_process
from tests.configs import RR, with_samples


def config(name: str) -> str:
    """The shared one-scenario config (tests/configs.py) named ``name``, at 5,000 samples per side, with
    a claim of its own epsilon."""
    return (with_samples(5000, RR.replace('name = "rr"', f'name = "{name}"'))
            + '[[scenario.claim]]\nepsilon = 1.0\nid = "user/claim"\n')


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The results.json of a small run (randomized response at its own epsilon: it holds)."""
    folder = tmp_path_factory.mktemp("sizes")
    (folder / "rr.toml").write_text(config("rr"))
    done = in_process("run", folder / "rr.toml", "--quiet", "--out", folder / "out")
    assert done.returncode == 0, done.stderr
    return json.loads((folder / "out" / "results.json").read_text())


def _with_claim_id(payload: dict, claim_id: str) -> dict:
    doc = json.loads(json.dumps(payload))
    for rec in doc["records"]:
        rec["claim_id"] = claim_id
    for sc in doc["scenarios"]:
        for claim in sc.get("claims", []):
            claim["claim_id"] = claim_id
    return doc


def _write(tmp_path, doc: dict):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_1mb_claim_id_is_refused_by_summary_and_report(tmp_path, saved):
    path = _write(tmp_path, _with_claim_id(saved, "x" * 2**20))
    for args in (("summary", path), ("summary", path, "--json"), ("report", path, "-o", tmp_path / "r.pdf")):
        done = in_process(*args)
        assert done.returncode == 2, (args, done.stdout[-500:], done.stderr[-2000:])
        assert "records[0].claim_id" in done.stderr
        assert f"is a string of {2**20} characters: at most {MAX_NAME_CHARS} are read" in done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr) < 1000  # the value is not echoed whole
    assert not (tmp_path / "r.pdf").exists()


def test_a_claim_id_at_the_limit_is_read_and_reported(tmp_path, saved):
    path = _write(tmp_path, _with_claim_id(saved, "x" * MAX_NAME_CHARS))
    assert in_process("summary", path).returncode == 0
    done = in_process("report", path, "-o", tmp_path / "r.pdf")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r.pdf").stat().st_size > 0


def test_a_long_pair_within_the_limits_is_reported(tmp_path, saved):
    """A pair description may be long (a searched pair of query vectors shows its vectors): it is
    read, and the PDF shows its first characters (before: a table cell taller than a page, exit 3)."""
    doc = json.loads(json.dumps(saved))
    for item in (*doc["records"], *doc["scenarios"]):
        item["pair"] = "z" * MAX_TEXT_CHARS
    path = _write(tmp_path, doc)
    assert in_process("summary", path).returncode == 0
    done = in_process("report", path, "-o", tmp_path / "r.pdf")
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_long_string_anywhere_in_a_scenario_is_refused(tmp_path, saved):
    doc = json.loads(json.dumps(saved))
    doc["scenarios"][0]["params"]["note"] = "y" * (MAX_TEXT_CHARS + 1)
    done = in_process("summary", _write(tmp_path, doc))
    assert done.returncode == 2 and "scenarios[0].params.note" in done.stderr
    assert f"at most {MAX_TEXT_CHARS} are read" in done.stderr


def test_too_many_scenarios_or_entries_are_refused(tmp_path, saved):
    doc = json.loads(json.dumps(saved))
    doc["scenarios"] = [{}] * (MAX_SCENARIOS + 1)
    done = in_process("summary", _write(tmp_path, doc))
    assert done.returncode == 2 and f"holds {MAX_SCENARIOS + 1} entries: at most {MAX_SCENARIOS}" in done.stderr
    doc = json.loads(json.dumps(saved))
    doc["scenarios"][0]["params"]["grid"] = [0] * (MAX_ITEMS + 1)
    done = in_process("summary", _write(tmp_path, doc))
    assert done.returncode == 2 and "scenarios[0].params.grid" in done.stderr
    assert f"at most {MAX_ITEMS} are read" in done.stderr


def test_run_refuses_a_name_no_summary_would_read(tmp_path):
    path = tmp_path / "long.toml"
    path.write_text(config("n" * (MAX_NAME_CHARS + 1)))
    done = in_process("run", path, "--quiet", "--out", tmp_path / "out")
    assert done.returncode == 2 and f"at most {MAX_NAME_CHARS} are allowed" in done.stderr
    assert "scenario 0 name" in done.stderr
    assert not (tmp_path / "out" / "results.json").exists()
