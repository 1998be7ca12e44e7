"""Valid outputs at the ends of their types are audited (issue 29): uint64 near 2^64 (an
IndexError before), floats near ±1.7e308 and subnormals ("Too many bins for data range" in the
histogram display before), 3,000-wide integer rows (never finished before: hashed to one key);
and inputs too large to hold are refused where they enter, with the estimate (exit 2).

Each mechanism with a leak is caught (ε_lower > 0 with a known true ε above it), and the same
family without a leak is not (ε_lower = 0 or below the true ε): fixed seeds, confidence 0.95."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from dpaudit.cli import main
from dpaudit.core import InputError
from dpaudit.engine.api import audit_mechanism
from dpaudit.engine.statistics import Identity, RowCodec, keys, row_hash
from dpaudit.engine.views.base import statistic_histogram

TOP = np.uint64(2**64 - 10)


@dataclass(frozen=True)
class NearTop:
    """uint64 outputs 2^64 − 10 + U{0..k}: k = 2 on D, ``k_prime`` on D′ (3: a value D never gives,
    ε = ∞; 2: the same law, ε = 0)."""

    k_prime: int
    name: str = "near-top"

    def sample(self, data, size, rng):
        return TOP + rng.integers(0, (self.k_prime if data else 2) + 1, size).astype(np.uint64)


def test_uint64_outputs_near_2_64_are_audited():
    leaky = audit_mechanism(NearTop(3), 0, 1, samples=20_000, seed=0).estimates[0]
    assert leaky.epsilon_lower > 2.0  # a value never seen under D: the largest bound 20,000 samples give
    assert "18446744073709551609" in leaky.witness()  # the value itself, not its int64 wrap (-7)
    same = audit_mechanism(NearTop(2), 0, 1, samples=20_000, seed=0).estimates[0]
    assert same.epsilon_lower == 0.0


def test_row_codec_refuses_values_past_int64_and_keys_still_tell_them_apart():
    x = np.array([2**64 - 1, 2**64 - 2, 5], dtype=np.uint64)
    assert RowCodec.fit(x) is None
    assert len(np.unique(keys(x))) == 3
    small = np.array([1, 2, 3], dtype=np.uint64)
    codec = RowCodec.fit(small)
    assert codec is not None and codec(np.array([2, 2**63 + 2], dtype=np.uint64)).tolist()[1] == -1


@dataclass(frozen=True)
class Extreme:
    """Outputs −``top``, ``top`` and 0 with probabilities (0.3, 0.3 + ``shift``·data, 0.4 −
    ``shift``·data); ``top`` 1.7e308 or a subnormal.  True ε = log(0.4 / 0.3) at shift 0.1."""

    shift: float
    top: float = 1.7e308
    name: str = "extreme"

    def sample(self, data, size, rng):
        p = [0.3, 0.3 + self.shift * data, 0.4 - self.shift * data]
        return rng.choice([-self.top, self.top, 0.0], size=size, p=p)


@pytest.mark.parametrize("top", [1.7e308, 1e-321])
def test_floats_at_the_ends_and_subnormals_are_audited(top):
    true = float(np.log(0.4 / 0.3))
    leaky = audit_mechanism(Extreme(0.1, top), 0, 1, samples=40_000, seed=1).estimates[0]
    assert 0.0 < leaky.epsilon_lower <= true
    same = audit_mechanism(Extreme(0.0, top), 0, 1, samples=40_000, seed=1).estimates[0]
    assert same.epsilon_lower == 0.0


@pytest.mark.parametrize("values", [[-1.7e308, 1.7e308, 0.0, 1.0], [5e-324, 1e-323, 2e-323, 0.0], [1.7e308] * 3])
def test_the_histogram_display_has_finite_increasing_edges(values):
    x = np.array(values * 50)
    shown = statistic_histogram(x, x[::-1].copy(), Identity(), 40)
    edges = np.array(shown["edges"])
    assert np.all(np.isfinite(edges)) and np.all(np.diff(edges) > 0)
    assert sum(shown["D"]) <= len(x) and sum(shown["D"]) > 0


@dataclass(frozen=True)
class Wide:
    """3,000-wide 0/1 rows; the first coordinate is 1 with probability 0.5, or 0.5 + ``shift`` on D′."""

    shift: float
    name: str = "wide"

    def sample(self, data, size, rng):
        out = rng.integers(0, 2, (size, 3000))
        out[:, 0] = rng.random(size) < 0.5 + self.shift * data
        return out


@pytest.mark.slow  # 3000-wide rows: 2 x 20,000 outputs of 24 kB
def test_3000_wide_rows_are_audited():
    same = audit_mechanism(Wide(0.0), 0, 1, samples=20_000, seed=0).estimates[0]
    assert same.epsilon_lower == 0.0
    assert same.event.statistic is None or same.event.statistic.name == "fisher-diagonal"


def test_the_row_hash_is_fixed_and_tells_rows_apart():
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 2, (5000, 3000))
    h = row_hash(rows)
    assert h.shape == (5000, 2) and np.array_equal(h, row_hash(rows.copy()))
    assert len(np.unique(keys(rows))) == len(np.unique(rows, axis=0))
    flipped = rows.copy()
    flipped[:, 2999] ^= 1  # one coordinate apart: every key differs
    assert not np.any(np.all(row_hash(flipped) == h, axis=1))


def test_the_diagonal_fisher_direction_finds_a_shifted_coordinate():
    from dpaudit.engine.statistics import fit_statistics
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4000, 300))
    y = rng.normal(size=(4000, 300))
    y[:, 7] += 1.0
    [stat] = fit_statistics(x, y, rng)
    assert stat.name == "fisher-diagonal" and int(np.argmax(np.abs(stat.weights))) == 7


# --- inputs refused where they enter, with the estimate -------------------------------------------

def test_a_query_search_too_wide_is_refused_with_its_size(capsys):
    code = main(["run", "--mechanism", "noisy-max", "--param", "epsilon=1", "--search", "queries:100000", "--quiet"])
    assert code == 2 and "74.5 GiB" in capsys.readouterr().err
    from dpaudit.engine.search import QueryVectors
    assert QueryVectors(4096).dim == 4096


def test_a_sweep_too_large_is_refused_with_its_size(capsys):
    assert main(["sweep", "kl-mab", "--n", "100000000"]) == 2
    assert "100000000 records" in capsys.readouterr().err


def test_the_votes_generator_refuses_more_scores_than_it_can_hold(tmp_path, capsys):
    from dpaudit.neighbors.synthetic import votes
    for counts in ([1e9, 5], [1_000_000_000, 5]):
        with pytest.raises(InputError, match=r"14\.9 GiB"):
            votes(counts)
    with pytest.raises(InputError, match="whole numbers"):
        votes([1.5, 2])
    assert len(votes([2.0, 1])) == 3  # integral floats (TOML 2.0) are whole numbers of votes
    config = tmp_path / "votes.toml"
    config.write_text('[run]\nsamples = 1000\n[[scenario]]\nname = "em"\nmechanism = "exponential-mechanism"\n'
                      'params = { epsilon = 1.0 }\n[scenario.data]\ngenerator = "votes"\n'
                      'args = { counts = [1e9, 5] }\n[scenario.neighbour]\nadd = { score = [1.0, -1.0] }\n')
    assert main(["run", str(config), "--quiet"]) == 2
    assert "GiB" in capsys.readouterr().err


@pytest.mark.parametrize("samples", ["9223372036854775807", "4611686018427387905"])
def test_cli_budgets_past_the_counters_exit_2_at_once(samples, tmp_path, capsys):
    config = tmp_path / "big.toml"
    config.write_text(f'[run]\nsamples = {samples}\n[[scenario]]\nname = "laplace"\nmechanism = "laplace"\n'
                      'params = {{ epsilon = 1.0 }}\n[scenario.data]\ncolumns = {{ value = [0.2] }}\n'
                      '[scenario.neighbour]\nadd = {{ value = 1.0 }}\n'.replace("{{", "{").replace("}}", "}"))
    assert main(["run", str(config), "--quiet"]) == 2
    assert "counters hold at most" in capsys.readouterr().err


def test_the_keys_of_no_rows_are_no_keys():
    """An event of no vector rows (a pooled candidate that matched nothing) is described, not a crash."""
    from dpaudit.engine.statistics import keys

    for width in (3, 20):
        assert keys(np.zeros((0, width), dtype=np.int64)).shape == (0,)
