"""Progress of long runs, with injected clocks (no wall-clock assertion): bars and lines are
labelled by scenario, a run of several scenarios has an overall line, the projected end counts to
where the sequential rule is expected to stop, and an end on another day carries its date."""

import time
from types import SimpleNamespace

import numpy as np
import pytest

from dpaudit import audit_mechanism
from dpaudit.engine.api import RunContext
from dpaudit.engine.expected_stop import expected_look
from dpaudit.mechanisms.classic import on_grid
from dpaudit.runtime.execution import Execution
from dpaudit.runtime.progress import Progress, projected_end

NOON = time.mktime((2026, 11, 24, 12, 0, 0, 0, 0, -1))  # local noon, wherever the test runs


class Clock:
    def __init__(self, start=100.0):
        self.now = start

    def __call__(self):
        return self.now


def test_an_end_on_another_day_carries_its_date():
    assert projected_end(36_000, 10.0, now=NOON) == ", projected end in 60.0 min (at 13:00:00)"
    assert projected_end(1_728_000, 10.0, now=NOON) == ", projected end in 2.0 days (at 2026-11-26 12:00:00)"
    assert projected_end(180_000, 10.0, now=NOON) == ", projected end in 5.0 h (at 17:00:00)"
    evening = NOON + 11 * 3600  # 23:00: two hours later is tomorrow
    assert projected_end(72_000, 10.0, now=evening) == ", projected end in 2.0 h (at 2026-11-25 01:00:00)"


def lines(capsys):
    return [line for line in capsys.readouterr().err.splitlines() if line]


def test_a_log_line_names_the_scenario_and_counts_to_the_expected_stop(capsys):
    clock = Clock()
    progress = Progress("log", 100_000, "align-covariance-swap", every=0, position=(1, 3), clock=clock,
                        wall=lambda: NOON)
    assert lines(capsys) == ["[dpaudit] scenarios: 1 of 3 done, now align-covariance-swap (2 of 3)"]
    clock.now += 10
    progress.update(1000, 1000, lambda: None)  # 100 samples/s: the budget ends in 990 s = 16.5 min
    assert lines(capsys) == ["[dpaudit] align-covariance-swap: 1000/100000 samples, 100/s, eps_lower pending, "
                             "projected end in 16.5 min (at 12:16:30)"]
    progress.expect(3000, "look 1 of 4")
    progress.update(0, 1000, lambda: 0.5)
    assert lines(capsys) == ["[dpaudit] align-covariance-swap: 1000/100000 samples, 100/s, current eps_lower 0.5, "
                             "projected end in 20 s (at 12:00:20), expected stop at look 1 of 4 (3000 samples; "
                             "the whole budget: 16.5 min)"]
    clock.now += 40
    progress.update(4000, 5000, lambda: 0.5)  # past the expected stop: the rule went on, the budget's end
    assert lines(capsys)[0].endswith("100/s, current eps_lower 0.5, projected end in 15.8 min (at 12:15:50)")
    progress.close()


@pytest.mark.parametrize("position", [None, (0, 1)])
def test_a_single_scenario_has_no_overall_line(capsys, position):
    progress = Progress("log", 10, "one", every=0, position=position, clock=Clock(), wall=lambda: NOON)
    progress.close()
    assert lines(capsys) == []


def test_the_bar_counts_to_the_expected_stop_and_back_to_the_budget():
    progress = Progress("bar", 1000, "scenario-a", every=0, position=(2, 5), clock=Clock())
    assert progress.overall.n == 2 and progress.overall.total == 5 and progress.bar.desc.startswith("scenario-a")
    progress.expect(250, "look 1 of 4")
    assert progress.bar.total == 250 and "expected stop: look 1 of 4" in progress.bar.desc
    progress.update(300, 300, lambda: None)
    assert progress.bar.total == 1000
    progress.close()


EVENT = SimpleNamespace(favours="D", test="joint")
LOOKS = [(1000, 0.125), (2000, 0.125), (4000, 0.25), (8000, 0.5)]


def test_the_expected_look_is_the_first_whose_projected_bound_exceeds_the_target():
    counts = np.array([[300], [100]])  # frequencies 0.3 and 0.1 in 1000: log 3 ≈ 1.10 in the limit
    looks = [expected_look([EVENT], [0.0], [0.95], counts, 1000, LOOKS, {0: t}) for t in (0.5, 0.8, 0.9, 0.95)]
    assert looks == sorted(looks) and looks[0] == 0 and looks[-1] == 3 and len(set(looks)) > 2
    assert expected_look([EVENT], [0.0], [0.95], counts, 1000, LOOKS, {0: 0.5}, after=2) == 2
    # out of reach (log 3 < 1.5): the rule gives up at the next look
    assert expected_look([EVENT], [0.0], [0.95], counts, 1000, LOOKS, {0: 1.5}, after=1) == 1


class Leaky:
    """Laplace of scale 1/3 claiming ε = 1: true ε = 3, refuted at the first look (seed 0)."""

    name = "leaky-laplace"

    def sample(self, data, size, rng):
        return on_grid(float(np.sum(data)) + rng.laplace(0.0, 1 / 3, size))


def test_a_sequential_audit_announces_the_look_it_then_stops_at(capsys):
    execution = Execution(progress="log", log_every=0, label="leaky-scenario", position=(0, 2))
    result = audit_mechanism(Leaky(), np.array([0.0]), np.array([0.0, 1.0]), samples=3_000_000, epsilon=1.0,
                             sequential=True, context=RunContext(execution=execution))
    err = lines(capsys)
    assert err[0] == "[dpaudit] scenarios: 0 of 2 done, now leaky-scenario (1 of 2)"
    announced = [line for line in err if "expected stop" in line]
    assert announced and all(line.startswith("[dpaudit] leaky-scenario: ") for line in err[1:])
    # 3e6 samples: 10 estimation chunks, four looks; the first announced stop is where it stopped
    assert "expected stop at look 1 of 4 (" in announced[0]
    stop = int(announced[0].split("expected stop at look 1 of 4 (")[1].split(" ")[0])
    assert stop == 2 * result.estimate.samples < 6_000_000 / 2  # what it drew, both sides: not the budget
    assert "look 1 of 4" in result.estimate.sequential and "violation certified" in result.estimate.sequential
