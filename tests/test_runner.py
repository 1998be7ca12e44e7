"""dpaudit.engine.runner.estimate: chunked Monte Carlo that does not depend on the worker count,
sequential looks, checkpoint reuse, and mechanisms that misbehave."""

import pytest

from dpaudit import InputError
from dpaudit.engine.runner import CHUNK, LOOKS, MechanismError, estimate
from dpaudit.mechanisms.classic import on_grid
from dpaudit.runtime.checkpoint import Checkpoint
from dpaudit.runtime.execution import Execution

LEVEL = [(0.0, 0.95)]


class Laplace:
    """q + Lap(1/ε) on an integer count (the pair is (0, 1)); counts its sample() calls in-process."""

    name = "runner-laplace"

    def __init__(self, epsilon=1.0):
        self.epsilon = epsilon
        self.calls = 0

    def sample(self, data, size, rng):
        self.calls += 1
        return on_grid(float(data) + rng.laplace(0.0, 1.0 / self.epsilon, size))


class Raises:
    name = "raises"

    def sample(self, data, size, rng):
        raise KeyError("no such column")


class ShapeBySide:
    """Scalars under D, 2-vectors under D': each side alone is well-formed."""

    name = "shape-by-side"

    def sample(self, data, size, rng):
        return rng.random(size) if data == 0 else rng.random((size, 2))


class TooShort:
    name = "too-short"

    def sample(self, data, size, rng):
        return rng.random(size - 1)


def numbers(est):
    return [b.to_dict() for b in est.bounds], [p.to_dict() for p in est.tradeoff], list(est.convergence)


def test_one_seed_gives_the_same_numbers_for_one_and_two_workers():
    samples = 3 * CHUNK + 1000  # several chunks per side in the estimation split
    one = estimate(Laplace(), 0, 1, samples=samples, levels=LEVEL, seed=11, execution=Execution(n_jobs=1))
    two = estimate(Laplace(), 0, 1, samples=samples, levels=LEVEL, seed=11, execution=Execution(n_jobs=2))
    assert len(one.convergence) >= 2  # more than one chunk was counted
    assert numbers(one) == numbers(two)
    assert one.samples == two.samples == samples
    other = estimate(Laplace(), 0, 1, samples=samples, levels=LEVEL, seed=12, execution=Execution(n_jobs=1))
    assert other.bounds[0].counts != one.bounds[0].counts  # the seed does matter


def test_every_level_gets_a_bound_at_its_own_delta_and_confidence():
    est = estimate(Laplace(), 0, 1, samples=200_000, levels=[(0.0, 0.95), (1e-3, 0.99)], seed=0)
    assert [(b.delta, b.confidence) for b in est.bounds] == [(0.0, 0.95), (1e-3, 0.99)]
    assert 0.9 <= est.bounds[0].epsilon_lower <= 1.0  # Laplace(1) at 2e5 samples, seed 0
    n_sel = est.selection_samples
    assert n_sel == int(200_000 * 0.2) and est.bounds[0].counts[1] == est.bounds[0].counts[3] == 200_000 - n_sel


def test_sequential_stops_at_the_first_look_that_certifies_a_violation():
    samples = 10 * CHUNK  # 8 estimation chunks: looks after 1, 2, 4 and 8
    est = estimate(Laplace(1.0), 0, 1, samples=samples, levels=LEVEL, seed=0, sequential=True, targets={0: 0.5})
    assert "look 1 of 4" in est.sequential and "stopped, violation certified" in est.sequential
    assert est.bounds[0].epsilon_lower > 0.5
    assert est.samples == est.selection_samples + CHUNK  # one chunk per side was counted
    assert est.bounds[0].confidence == pytest.approx(1 - 0.05 * 0.125)  # the first look's share of alpha


def test_sequential_stops_for_futility_and_without_targets_does_not_look():
    samples = 10 * CHUNK
    hopeless = estimate(Laplace(1.0), 0, 1, samples=samples, levels=LEVEL, seed=0, sequential=True,
                        targets={0: 3.0})
    assert "no claim can be reached" in hopeless.sequential and hopeless.samples < samples
    assert hopeless.bounds[0].epsilon_lower < 3.0
    plain = estimate(Laplace(1.0), 0, 1, samples=samples, levels=LEVEL, seed=0, sequential=True, targets={})
    assert plain.sequential is None and plain.samples == samples
    assert len(LOOKS) == 4


def test_a_checkpoint_is_reused_and_only_the_selection_split_is_redrawn(tmp_path):
    path = tmp_path / "checkpoint.jsonl"
    samples = 3 * CHUNK
    first_mech = Laplace()
    first = estimate(first_mech, 0, 1, samples=samples, levels=LEVEL, seed=4,
                     execution=Execution(checkpoint=Checkpoint(path)))
    lines = path.read_text().splitlines()
    estimation_chunks = -(-(samples - int(samples * 0.2)) // CHUNK)
    assert len(lines) == 2 * estimation_chunks  # one line per side and chunk
    # selection: one chunk per side; + 1: the one output runner.output_size draws to size a draw's parts
    assert first_mech.calls == 2 + 2 * estimation_chunks + 1

    again = Laplace()
    second = estimate(again, 0, 1, samples=samples, levels=LEVEL, seed=4,
                      execution=Execution(checkpoint=Checkpoint(path)))  # reloaded from the file
    assert again.calls == 2 + 1  # the estimation chunks came from the checkpoint (+ 1: the sizing output)
    assert numbers(second) == numbers(first)
    assert path.read_text().splitlines() == lines  # nothing recounted, nothing appended

    other = Laplace()
    estimate(other, 0, 1, samples=samples, levels=[(0.0, 0.99)], seed=4,
             execution=Execution(checkpoint=Checkpoint(path)))
    assert other.calls == 2 + 2 * estimation_chunks + 1  # another audit's counts are not reused


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_mechanism_that_raises_is_a_mechanism_error_naming_it(jobs):
    with pytest.raises(MechanismError, match="mechanism 'raises' raised KeyError while sampling"):
        estimate(Raises(), 0, 1, samples=1000, levels=LEVEL, seed=0, execution=Execution(n_jobs=jobs))


def test_outputs_of_different_shapes_under_d_and_d_prime_are_a_mechanism_error():
    with pytest.raises(MechanismError, match=r"shape \(\) but under D' \(2,\)"):
        estimate(ShapeBySide(), 0, 1, samples=1000, levels=LEVEL, seed=0)


def test_too_few_outputs_is_an_input_error_naming_the_mechanism():
    """A wrong-length batch is caught by the output check (InputError, exit 2 in the CLI)."""
    with pytest.raises(InputError, match="mechanism 'too-short' sample output length"):
        estimate(TooShort(), 0, 1, samples=1000, levels=LEVEL, seed=0)
    assert not issubclass(MechanismError, InputError)  # the two are reported apart
