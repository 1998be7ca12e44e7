"""dpaudit.adapters: a RandomState seeded from the audit's generator (diffprivlib-style), per-call
functions as vectorised unseeded mechanisms (OpenDP-style), and the README's examples of both,
extracted and run."""

import contextlib
import io
import random
import re
from pathlib import Path

import numpy as np
import pytest

from dpaudit import InputError, audit_mechanism
from dpaudit.adapters import PER_CALL_BLOCK, numpy_random_state, per_call
from dpaudit.cli import main
from dpaudit.mechanisms.classic import on_grid
from dpaudit.testing import check_mechanism

ROOT = Path(__file__).resolve().parents[1]


def test_numpy_random_state_is_a_seeded_random_state():
    a = numpy_random_state(np.random.default_rng(7))
    b = numpy_random_state(np.random.default_rng(7))
    c = numpy_random_state(np.random.default_rng(8))
    assert isinstance(a, np.random.RandomState)
    first = a.laplace(size=5)
    assert np.array_equal(first, b.laplace(size=5)) and not np.array_equal(first, c.laplace(size=5))
    with pytest.raises(InputError, match="rng"):
        numpy_random_state(np.random.RandomState(0))


def noisy_count(data):
    return float(np.sum(data)) + random.SystemRandom().gauss(0.0, 1.0)


def noisy_vector(data):
    system = random.SystemRandom()
    return [float(np.sum(data)) + system.gauss(0.0, 1.0), system.random()]


def test_per_call_vectorises_and_says_it_is_unseeded():
    mech = per_call(noisy_count, name="count")
    assert mech.name == "count" and mech.seeded is False
    out = mech.sample(np.array([1.0, 2.0]), 50, np.random.default_rng(0))
    assert out.shape == (50,) and abs(out.mean() - 3.0) < 1.5
    vectors = per_call(noisy_vector).sample(np.array([1.0]), 7, np.random.default_rng(0))
    assert vectors.shape == (7, 2) and per_call(noisy_vector).name == "noisy_vector"
    assert check_mechanism(mech, np.array([0.0]), np.array([0.0, 1.0]), samples=1000)[:3] == [
        "name", "sample-shape", "sample-dtype"]  # the seeded check is skipped: it declares seeded = False


@pytest.mark.slow  # starts a process pool
def test_per_call_fans_large_batches_out_to_processes():
    mech = per_call(noisy_count, name="count", n_jobs=2)
    out = mech.sample(np.array([0.0]), 2 * PER_CALL_BLOCK + 5, np.random.default_rng(0))
    assert out.shape == (2 * PER_CALL_BLOCK + 5,) and len(np.unique(out)) == len(out)  # no repeated stream


@pytest.mark.parametrize("kwargs, field", [({"fn": 3}, "fn"), ({"name": ""}, "name"), ({"n_jobs": 0}, "n_jobs")])
def test_per_call_validates_its_arguments(kwargs, field):
    with pytest.raises(InputError, match=f"^{field} = "):
        per_call(**{"fn": noisy_count, **kwargs})


def test_an_unseeded_mechanism_is_reported_not_reproducible(tmp_path, capsys):
    result = audit_mechanism(per_call(noisy_count, name="count"), np.array([0.0]), np.array([0.0, 1.0]),
                             samples=20_000)
    assert result.seeded is False and "seeded=False" in repr(result) and len(repr(result)) < 400
    assert "Not reproducible: unseeded mechanism" in result.summary()
    assert all(r["seeded"] is False for r in result.records()) and result.to_dict()["seeded"] is False
    seeded = audit_mechanism(_Seeded(), np.array([0.0]), np.array([0.0, 1.0]), samples=20_000)
    assert seeded.seeded and "reproducible" not in seeded.summary()
    assert main(["run", "--mechanism", "tests.test_adapters:UNSEEDED", "--pair", "tests.test_adapters:PAIR",
                 "--samples", "20000", "--quiet", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "NOT REPRODUCIBLE: UNSEEDED MECHANISM: count" in out
    assert "NOT REPRODUCIBLE" in (tmp_path / "summary.txt").read_text()


class _Seeded:
    name = "seeded-count"

    def sample(self, data, size, rng):
        return on_grid(float(np.sum(data)) + rng.normal(size=size))


UNSEEDED = per_call(noisy_count, name="count")
PAIR = (np.array([0.0]), np.array([0.0, 1.0]))


def readme_examples():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("### Mechanisms from other libraries"):]
    section = section[:section.index("\n### ", 1)]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def run_example(code):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    return out.getvalue()


def test_the_readme_has_a_diffprivlib_style_and_an_opendp_style_example():
    examples = readme_examples()
    assert len(examples) == 2
    assert "random_state" in examples[0] and "numpy_random_state" in examples[0]
    assert "per_call" in examples[1] and "SystemRandom" in examples[1]


def test_the_readme_diffprivlib_style_example_runs_and_is_reproducible():
    code = readme_examples()[0]
    first, again = run_example(code), run_example(code)
    # a double added to a double: the floating view of the default audit refutes the claim ε = 1 (true ε = ∞)
    finding, eps = first.split("\n")[0].rsplit(" ", 1)
    assert first == again and finding == "refuted (empirical)" and float(eps) > 5


def test_the_readme_opendp_style_example_runs_and_says_it_is_not_reproducible():
    printed = run_example(readme_examples()[1]).splitlines()
    assert printed[0] == "False False"
    assert "Not reproducible: unseeded mechanism" in printed[1]
