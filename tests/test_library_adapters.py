"""dpaudit.adapters.from_factory: a library object that cannot be pickled (a lock, a ctypes
pointer) is built once in each worker process from a picklable factory, and a batch hook draws
many outputs per call; then the same with OpenDP itself when it is installed."""

import os
import random
import threading
from functools import partial

import numpy as np
import pytest

from dpaudit import InputError, audit_mechanism
from dpaudit.adapters import LibraryMechanism, from_factory, per_call
from dpaudit.adapters.shipping import shippable


class Library:
    """A stand-in for a native library's mechanism: the lock makes it unpicklable, like OpenDP's
    ctypes pointers; every release draws operating-system entropy, like OpenDP."""

    def __init__(self, shift: float) -> None:
        self.shift = shift
        self.lock = threading.Lock()
        self.batches: list[int] = []

    def __call__(self, data):
        return float(np.sum(data)) + self.shift + random.SystemRandom().gauss(0.0, 1.0)

    def many(self, data, n):
        self.batches.append(n)
        return float(np.sum(data)) + self.shift + np.random.default_rng().normal(size=n)


def build(shift: float = 0.0) -> Library:
    return Library(shift)


def release_with_origin(library, data):
    """The release, where it ran (process id) and which object made it (its id in that process)."""
    return [library(data), os.getpid(), id(library)]


def many(library, data, n):
    return library.many(data, n)


def test_the_stand_in_is_as_unpicklable_as_an_opendp_measurement():
    assert "lock" in shippable(build())
    with pytest.raises(InputError, match=r"^fn = .*cannot be sent to worker processes.*from_factory"):
        per_call(build(), n_jobs=2)  # was a PicklingError inside joblib at the first large draw
    assert per_call(build(), n_jobs=1).n_jobs == 1  # in process it needs no pickling


@pytest.mark.slow  # starts a process pool
def test_two_workers_each_build_the_object_once_and_draw_fresh_noise():
    mech = from_factory(partial(build, 5.0), release=release_with_origin, n_jobs=2, block=100)
    assert mech.name == "build" and mech.seeded is False and shippable(mech) == ""
    out = mech.sample(np.array([1.0, 2.0]), 1005, np.random.default_rng(0))
    assert out.shape == (1005, 3)
    values, pids, objects = out[:, 0], out[:, 1].astype(int), out[:, 2].astype(int)
    assert os.getpid() not in set(pids)  # the blocks ran in worker processes
    for pid in set(pids):  # one object per process, reused by all its blocks
        assert len(set(objects[pids == pid])) == 1
    assert len(np.unique(values)) == len(values)  # no repeated stream across workers
    assert abs(values.mean() - 8.0) < 0.2  # sum 3 + shift 5, unit noise: 0.2 is 6 standard errors


def test_in_process_the_factory_runs_once_and_the_batch_hook_replaces_the_loop():
    mech = from_factory(partial(build, 0.0), batch=many, block=400, name="fake")
    out = mech.sample(np.array([0.0]), 1000, np.random.default_rng(0))
    again = mech.sample(np.array([0.0]), 10, np.random.default_rng(0))
    assert out.shape == (1000,) and again.shape == (10,)
    assert mech.library() is mech.library() and mech.library().batches == [400, 400, 200, 10]
    assert from_factory(partial(build, 0.0)).library() is not mech.library()  # each adapter its own object


def bad_batch(library, data, n):
    return np.zeros(n - 1)


def test_a_batch_hook_returning_the_wrong_count_is_the_mechanism_failing():
    with pytest.raises(ValueError, match="returned 9 outputs for a batch of 10"):
        from_factory(build, batch=bad_batch).sample(np.array([0.0]), 10, np.random.default_rng(0))


@pytest.mark.parametrize("kwargs, field", [
    ({"factory": 3}, "factory"),
    ({"factory": partial(build, threading.Lock())}, "factory"),  # the factory itself must travel
    ({"release": 3}, "release"),
    ({"batch": partial(many, threading.Lock())}, "batch"),
    ({"name": ""}, "name"),
    ({"n_jobs": 0}, "n_jobs"),
    ({"block": 0}, "block"),
])
def test_from_factory_validates_its_arguments(kwargs, field):
    with pytest.raises(InputError, match=f"^{field} = "):
        from_factory(**{"factory": build, **kwargs})


def test_an_audit_of_a_factory_mechanism_holds_when_true_and_refutes_when_false():
    """Gaussian noise of σ = 1 with sensitivity 1 at δ = 1e-3: the audit's bound must stay under the
    true ε(δ) ≈ 3.14 when a claim ε = 4 holds, and exceed a false claim ε = 0.5 (confidence 0.95 each)."""
    mech = from_factory(partial(build, 0.0), batch=many)
    pair = np.array([0.0]), np.array([0.0, 1.0])
    holds = audit_mechanism(mech, *pair, samples=50_000, epsilon=4.0, delta=1e-3, events="threshold")
    fails = audit_mechanism(mech, *pair, samples=50_000, epsilon=0.5, delta=1e-3, events="threshold")
    assert isinstance(mech, LibraryMechanism) and holds.seeded is False
    assert holds.epsilon_lower < 4.0 and fails.epsilon_lower > 0.5
    assert "Not reproducible: unseeded mechanism" in holds.summary()



def _opendp():
    try:
        import opendp.prelude as dp
    except ImportError:
        pytest.skip("opendp is not installed (pip install 'dpaudit[opendp]')")
    return dp


@pytest.mark.slow  # starts a process pool and draws OpenDP's exact Laplace
def test_opendp_laplace_through_the_factory_adapter_on_two_workers():
    _opendp()
    from examples.opendp_laplace import laplace_sum, laplace_sum_batched, mechanism, release_many

    assert "ctypes" in shippable(laplace_sum(1.0))  # what per_call(n_jobs=2) used to trip on
    out = from_factory(partial(laplace_sum, 1.0), n_jobs=2, block=500).sample([0.0, 1.0], 1200, None)
    assert out.shape == (1200,) and len(np.unique(out)) > 1100 and abs(out.mean() - 1.0) < 0.25
    assert release_many(laplace_sum_batched(1.0), [1.0], 7).shape == (7,)
    pair = np.array([0.0]), np.array([0.0, 1.0])
    claim = laplace_sum(1.0).map(1)
    holds = audit_mechanism(mechanism(1.0, True, 1), *pair, samples=50_000, epsilon=claim, events="threshold")
    fails = audit_mechanism(mechanism(0.5, True, 1), *pair, samples=50_000, epsilon=claim, events="threshold")
    assert holds.epsilon_lower < claim < fails.epsilon_lower  # scale 1/2 has ε = 2


def test_the_readme_shows_the_factory_adapter_with_opendp():
    import inspect
    import re
    from pathlib import Path

    from examples.opendp_laplace import laplace_sum

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = text[text.index("### Library objects that cannot be pickled (OpenDP)"):]
    section = section[:section.index("\n### ", 1)]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    compile(code, "README.md", "exec")
    # the README's factory builds what the example's does (the example is what the OpenDP test runs)
    body = [line.strip() for line in inspect.getsource(laplace_sum).split('"""')[-1].splitlines() if line.strip()]
    assert body and all(line in code for line in body)
    assert "from_factory(partial(laplace_sum, 1.0)" in code and "n_jobs=2" in code
