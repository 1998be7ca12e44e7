"""Partial results.json rewrites are amortised (dpaudit.runtime.amortised): the first is always
made, and later ones only once the work since the last one is ``ratio`` times its cost, so n
rewrites of a growing document cost O(n) of the run, not O(n²)."""

from dpaudit.runtime.amortised import Amortised


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_first_write_is_made_and_the_next_waits_ratio_times_its_cost():
    clock = FakeClock()
    writes = Amortised(ratio=10.0, clock=clock)

    def write(cost: float):
        def run():
            clock.now += cost
        return run

    assert writes.maybe(write(1.0))          # t: 0 → 1, next due at 1 + 10
    clock.now = 10.9
    assert not writes.maybe(write(1.0))      # before it is due: not written, no cost
    assert clock.now == 10.9
    clock.now = 11.0
    assert writes.maybe(write(2.0))          # due: written, t → 13, next due at 13 + 20
    clock.now = 32.0
    assert not writes.maybe(write(2.0))
    clock.now = 33.0
    assert writes.maybe(write(0.0))


def test_growing_rewrites_cost_a_bounded_share_of_the_work():
    """A document that grows by one unit per scenario and costs its size to write: every rewrite
    would cost n²/2 units over n scenarios of 100 units each; amortised, at most 1/ratio of it."""
    clock = FakeClock()
    writes = Amortised(ratio=20.0, clock=clock)
    spent = made = 0.0
    for size in range(1, 2001):
        clock.now += 100.0               # the scenario's own work
        before = clock.now
        if writes.maybe(lambda s=size: setattr(clock, "now", clock.now + s)):
            made += 1
            spent += clock.now - before
    work = 2000 * 100.0
    assert spent <= work / 20 + 2000     # the rewrites: at most 1/ratio of the run (plus the last one's cost)
    assert spent < sum(range(1, 2001)) / 10   # against every-scenario rewrites: more than ten times less
    # and the file still follows the run: after a write at scenario n the next waits about
    # ratio·n/100 scenarios, so about (100/ratio)·ln(2000) ≈ 38 writes in all (every-scenario: 2000)
    assert 30 <= made <= 60
