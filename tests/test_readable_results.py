"""Results people read: witness sets as intervals or the first rows and "… and N more", the
--witness flag, the samples sequential runs used, and progress that shows a bound only once
it means something."""

import re

import numpy as np
import pytest

from dpaudit import audit_mechanism
from dpaudit.cli import main
from dpaudit.engine.api import RunContext
from dpaudit.engine.statistics import keys
from dpaudit.engine.views import Event
from dpaudit.reports.text import footer, summary_table
from dpaudit.runtime.execution import Execution
from tests.zoo import LaplaceOnCount


def rows_event(values):
    return Event("D", "rows", members=np.sort(np.asarray(values)))


@pytest.mark.parametrize("members, text", [
    (range(17), "{0..16}"),
    ([0, 1], "{0, 1}"),
    ([-3, -2, -1, 0, 5, 7, 8, 9], "{-3..0, 5, 7..9}"),
    ([1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21], "{1, 3, 5, 7, 9, 11, 13, 15, … and 3 more}"),
    ([*range(10), 20, 22, 24, 26, 28, 30, 32, *range(40, 50)], "{0..9, 20, 22, 24, 26, 28, 30, 32, … and 10 more}"),
])
def test_integer_witness_sets_read_as_runs(members, text):
    assert rows_event(list(members)).describe() == f"output in {text} (more likely under D than D')"


def test_vector_witness_sets_show_the_first_rows_and_how_many_more():
    event = Event("D'", "rows", members=np.sort(keys(np.arange(40).reshape(20, 2))))
    described = event.describe()
    assert described.startswith("output in {[") and described.endswith(", … and 17 more} (more likely under D' than D)")
    assert described.count("[") == 3
    small = Event("D", "rows", members=np.sort(keys(np.array([[1, 2], [3, 4]]))))
    assert re.fullmatch(r"output in \{\[\d, \d\], \[\d, \d\]\} \(more likely under D than D'\)", small.describe())


def test_run_witness_prints_each_rows_witness_under_it(capsys):
    args = ["run", "--mechanism", "tests.plugins.user_mechanisms:correct", "--pair",
            "tests.plugins.user_mechanisms:pair", "--epsilon", "1", "--samples", "20000", "--quiet"]
    assert main(args) == 0
    plain = capsys.readouterr().out
    assert main([*args, "--witness"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "witness:" not in plain
    row = next(i for i, line in enumerate(lines) if line.startswith("  user/claim"))  # under its scenario's line
    assert lines[row - 1].startswith("user-noisy-count")
    witness = " ".join(line.strip() for line in lines[row + 1:] if line.startswith("      "))
    assert witness.startswith("witness: S = output")
    assert "under D" in witness and "Clopper-Pearson" in witness


def test_sequential_runs_show_the_samples_they_used(capsys):
    args = ["run", "--mechanism", "tests.plugins.user_mechanisms:leaky", "--pair",
            "tests.plugins.user_mechanisms:pair", "--epsilon", "0.5", "--samples", "2e6", "--quiet", "--sequential"]
    assert main(args) == 1
    out = capsys.readouterr().out
    header, _, scenario, row = out.splitlines()[:4]
    assert scenario.startswith("user-noisy-count-leaky")
    assert header.split()[-1] == "samples"
    used = int(row.split()[-1])
    assert used < 2_000_000
    assert f"sequential: 1 of 1 scenarios stopped early, {used} samples per side used in all" in out


def test_without_sequential_runs_there_is_no_samples_column():
    record = {"scenario": "s", "mechanism": "m", "pair": "p", "claim_id": None, "delta": 0.0, "epsilon_claim": None,
              "epsilon_lower": 0.5, "epsilon_exact": None, "finding": "no claim checked", "samples": 10,
              "sequential": None, "event": {"witness": "S = something"}}
    table = summary_table([record])
    assert "samples" not in table and "witness" not in table
    assert "    witness: S = something" in summary_table([record], witness=True)
    assert "sequential" not in footer([record], 1, "budget 10", 0.1, True)


def test_progress_shows_no_bound_before_one_chunk_per_side_or_the_first_look(capsys):
    def progress_lines(**kwargs):
        audit_mechanism(LaplaceOnCount(1.0), 0, 1, samples=2_000_000, seed=0,
                        context=RunContext(execution=Execution(progress="log", log_every=0.0)), **kwargs)
        return [line for line in capsys.readouterr().err.splitlines() if line.startswith("[dpaudit]")]

    def pending_then_current(lines):
        shown = ["current eps_lower" in line for line in lines]
        assert shown[-1] and shown == sorted(shown)  # once shown, always shown
        assert all("eps_lower pending" in line for line, on in zip(lines, shown, strict=True) if not on)
        return shown.index(True)

    selection = 4  # the selection split (2 chunks per side) is reported first, with no bound
    plain = progress_lines()
    # Without looks no bound is shown before the end: the bound of the chunks so far, shown at every
    # line, is an uncorrected look (its maximum over a run showed 1.415 for a true epsilon of 1).
    assert len(plain) > selection and all("eps_lower pending" in line for line in plain)
    sequential = progress_lines(sequential=True, epsilon=5.0)
    assert pending_then_current(sequential) == selection + 2  # the first look: one chunk per side
