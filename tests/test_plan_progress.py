"""``plan`` speaks first: it says what it will run before its pilots, reports each pilot, and a
pilot budget past the planner's bounds stops after the first pilot with its projection, exit 2
(issue 37, item 14)."""

import functools
import math

import numpy as np
import pytest

from dpaudit.core import Guarantee, InputError
from dpaudit.onerun.design import CanaryDesign
from dpaudit.onerun.planner import MAX_PILOT_CANARIES, MAX_PILOT_SECONDS, PilotProgress, pilot_model
from dpaudit.onerun.rules import Fixed
from tests.clirun import in_process

M = 100


class CountedRR:
    """Randomized response at ε = 1 on each canary's bit, counting its training runs; past
    ``limit`` runs it fails (so a planner that ignores its budget stops at once instead of
    training a million times)."""

    name = "counted-rr"

    def __init__(self, limit: int = 50) -> None:
        self.runs, self.limit = 0, limit
        self.keep = math.exp(1.0) / (1.0 + math.exp(1.0))

    def run(self, dataset, rng):
        self.runs += 1
        if self.runs > self.limit:
            raise RuntimeError(f"trained {self.runs} times: the pilot budget was not enforced")
        bits = np.zeros(M)
        bits[list(dataset)] = 1.0
        return np.where(rng.random(M) >= self.keep, 1.0 - bits, bits)


def score(output, canaries):
    return np.asarray(output, dtype=float)[np.asarray(canaries, dtype=int)]


def tiny_design(limit: int = 50) -> CanaryDesign:
    return CanaryDesign(name="tiny-rr", mechanism=CountedRR(limit), canaries=list(range(M)), scorer=score,
                        claims=(Guarantee(epsilon=1.0, delta=1e-5, claim_id="tiny/claim"),), rule=Fixed(10, 10),
                        expected={"tiny/claim": "pass"})


@pytest.fixture
def design(monkeypatch):
    from dpaudit.cli import plan as cli_plan

    made = tiny_design()
    # a stand-in cached as the real one is (the verb asks its cache whether the designs are built), and
    # its name among the registered ones (the verb looks a name up before it builds any design)
    monkeypatch.setattr(cli_plan, "_designs", functools.lru_cache(maxsize=1)(lambda: (made,)))
    monkeypatch.setattr(cli_plan, "onerun_names", lambda: [made.name])
    return made


def test_plan_announces_its_pilots_before_they_run_and_reports_each(design):
    done = in_process("plan", "tiny-rr", "--pilots", "3")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    announce = next(i for i, line in enumerate(lines) if "3 pilot game(s), each one training run of 100 canaries"
                    in line)
    first = next(i for i, line in enumerate(lines) if "pilot 1 of 3 took" in line)
    assert announce < first and "projected end in" in lines[first]
    assert any("pilot 3 of 3 done after" in line for line in lines)
    assert design.mechanism.runs == 3 and done.stdout.startswith("canaries=")


def test_a_million_pilots_are_refused_after_the_first_with_their_projection(design):
    done = in_process("plan", "tiny-rr", "--pilots", "1000000")
    assert done.returncode == 2, done.stderr
    assert "--pilots 1000000 is invalid: 1000000 pilot games of tiny-rr are projected to take" in done.stderr
    assert f"to score {10**6 * M} canaries" in done.stderr
    assert f"{MAX_PILOT_CANARIES} canaries" in done.stderr and "pilots or fewer" in done.stderr  # the allowed count
    assert design.mechanism.runs == 1 and "Traceback" not in done.stderr


def test_the_api_projects_from_the_first_pilot_and_reports_each():
    """A fake clock: each pilot 'takes' 10 s, so 2,000 pilots project to 20,000 s > 4 h (refused
    after one pilot), and 3 pilots run with a report after each."""
    ticks = iter(range(0, 10**6, 10))
    design = tiny_design()
    with pytest.raises(InputError, match=r"pilots = 2000 is invalid: .* projected to take 5\.56 h \(2000 x 10 s, "
                                         r"the pace of the first 1\).*give 1440 pilots or fewer"):
        pilot_model(design, games=2000, clock=lambda: float(next(ticks)))
    assert design.mechanism.runs == 1 and MAX_PILOT_SECONDS == 4 * 3600
    heard: list[PilotProgress] = []
    ticks = iter(range(0, 10**6, 10))
    model, _, r = pilot_model(tiny_design(), games=3, report=heard.append, clock=lambda: float(next(ticks)))
    assert [(p.done, p.games, p.elapsed) for p in heard] == [(1, 3, 10.0), (2, 3, 20.0), (3, 3, 30.0)]
    assert heard[0].projected == 30.0 and r == 3 * 20 and model.kind == "gaussian"


def test_a_multi_run_plan_says_what_it_runs_before_its_pilot_audit(monkeypatch):
    from dpaudit.engine import plan as budget_plan

    seen = {}

    def stop(scenario, **kwargs):
        seen["execution"] = kwargs["execution"]
        raise InputError("stopped before the pilot (test)")

    monkeypatch.setattr(budget_plan, "plan", stop)
    done = in_process("plan", "svt-no-cutoff", "--jobs", "1")
    assert done.returncode == 2 and "stopped before the pilot" in done.stderr
    before = done.stderr.split("stopped before the pilot")[0]
    assert "plan svt-no-cutoff: a pilot audit of 15,000,000 samples per side" in before
    assert "a progress line every 5 s" in before
    assert seen["execution"].progress == "log" and "plan svt-no-cutoff" in seen["execution"].label
