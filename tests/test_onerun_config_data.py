"""One-run configs take the API's data: base data and canary rows from files
(:mod:`dpaudit.runs.onerun_data`), handed to the trainer as ``audit_one_run(canaries=..., base=...)``
takes them.

The acceptance test runs the README's own trainer and scorer (read from the README, not copied)
through a config and through the API on the same files and seed.  Both games draw their secret and
tie-break seed from the fixed stream ``tests/conftest.py`` pins, restarted before each path: the two
paths draw the same way (one secret of m bits, then one tie-break seed), so the games, and their
counts, are the same.  The README's trainer is 1.5-GDP per canary; no statistical claim is made here
beyond equality (with this stream the game refutes ε = 1 at δ = 1e-5, as a 1.5-GDP trainer should).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from dpaudit.core import Guarantee, InputError
from dpaudit.onerun import Fixed, audit_one_run, gdp
from dpaudit.runs.config import load
from dpaudit.runs.onerun import onerun_scenario
from tests.clirun import in_process
from tests.conftest import ENTROPY_SEED

ROOT = Path(__file__).resolve().parents[1]
M = 1000

CONFIG = """
[run]
seed = 0
confidence = 0.95

[[scenario]]
name = "my-model"
mechanism = "{module}:Training"
scorer = "{module}:score"
canaries = {canaries}
base = {base}
rule = {{ kind = "fixed", k_plus = 50, k_minus = 50 }}
deltas = [1e-5, 1e-6]
expected = {{ "my-model/eps-1" = "violation", "my-model/gdp" = "pass" }}
{extra}
[[scenario.claim]]
epsilon = 1.0
delta = 1e-5
id = "my-model/eps-1"

[[scenario.claim]]
gdp_mu = 1.5
id = "my-model/gdp"
"""


def readme_trainer() -> str:
    """The README's one-run Python example's ``Training`` class and ``score`` function, as printed."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^class Training:\n.*?^def score\(output, canaries\):\n(?:(?: {4}[^\n]*)?\n)+", text,
                      re.MULTILINE | re.DOTALL)
    assert found, "the README's one-run example has no class Training / def score"
    return found[0]


def pin_entropy(monkeypatch) -> None:
    """Restart conftest's fixed stream of the two fresh-entropy draws (secret, tie-break seed)."""
    stream = np.random.default_rng(ENTROPY_SEED)
    monkeypatch.setattr("dpaudit.onerun.game.fresh_secret", lambda size: stream.integers(0, 2, size=size,
                                                                                         dtype=np.int8))
    monkeypatch.setattr("dpaudit.onerun.bound.fresh_tiebreak", lambda: int(stream.integers(0, 2**63)))


def project(tmp_path: Path, monkeypatch, *, canaries: str = '{ file = "data/canaries.npy" }',
            base: str = '{ file = "data/base.npy" }', extra: str = "", module: str = "readme_training") -> Path:
    """A folder with the README's trainer as a module, the canary and base files, and the config."""
    (tmp_path / f"{module}.py").write_text(f"import numpy as np\n\nM = {M}\n\n\n{readme_trainer()}",
                                           encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    (tmp_path / "data").mkdir(exist_ok=True)
    np.save(tmp_path / "data" / "canaries.npy", np.arange(M))
    np.save(tmp_path / "data" / "base.npy", np.full(100, -1))
    path = tmp_path / "onerun.toml"
    path.write_text(CONFIG.format(module=module, canaries=canaries, base=base, extra=extra), encoding="utf-8")
    return path


def test_a_config_with_files_gives_the_api_examples_counts_for_the_same_seed(tmp_path, monkeypatch):
    path = project(tmp_path, monkeypatch)
    pin_entropy(monkeypatch)
    cli = in_process("run", path, "--allow-plugin", "readme_training", "--quiet", "--json")
    assert cli.returncode == 0, cli.stderr
    scenario, = json.loads(cli.stdout)["scenarios"]

    pin_entropy(monkeypatch)
    namespace: dict = {"np": np, "M": M}
    exec(readme_trainer(), namespace)  # the README's trainer, run as its Python example runs it
    api = audit_one_run(namespace["Training"](), namespace["score"],
                        canaries=np.load(tmp_path / "data" / "canaries.npy"),
                        base=np.load(tmp_path / "data" / "base.npy"),
                        rule=Fixed(k_plus=50, k_minus=50), deltas=(1e-5, 1e-6), confidence=0.95, seed=0,
                        claims=[Guarantee(epsilon=1.0, delta=1e-5, claim_id="my-model/eps-1"),
                                gdp(1.5, claim_id="my-model/gdp")])

    assert (scenario["m"], scenario["r"], scenario["v"]) == (api.m, api.r, api.v) == (M, 100, api.v)
    assert api.v > 50  # the trainer leaks: far more right guesses than a coin (a sanity check of the game)
    assert scenario["secret_sha256"] == api.secret_sha256 and scenario["tiebreak"] == str(api.tiebreak)
    assert [b["epsilon_lower"] for b in scenario["bounds"]] == list(api.epsilon_lowers)
    assert [c["verdict"] for c in scenario["claims"]] == [c.verdict for c in api.claims] == ["violation", "pass"]


def test_the_trainer_gets_the_base_and_the_included_canary_rows(tmp_path, monkeypatch):
    path = project(tmp_path, monkeypatch)
    design, = load(path, ["readme_training"]).onerun
    assert design.m == M and isinstance(design.base, np.ndarray) and design.base.tolist() == [-1] * 100
    assert np.asarray(design.canaries).tolist() == list(range(M))


def test_runs_of_their_own_canaries_need_m(tmp_path, monkeypatch):
    with pytest.raises(InputError, match=r"^config: scenario\[0\]\.canaries\.m = None is invalid: is required with "
                                         r"runs = 2"):
        load(project(tmp_path, monkeypatch, extra="runs = 2"), ["readme_training"])
    design, = load(project(tmp_path, monkeypatch, canaries='{ file = "data/canaries.npy", m = 500 }',
                           extra="runs = 2"), ["readme_training"]).onerun
    assert (design.m, design.runs, len(design.canaries)) == (500, 2, 1000)
    with pytest.raises(InputError, match=r"^config: scenario\[0\]\.canaries\.file = '<1000 rows>' is invalid: must "
                                         r"hold m = 300 canaries \(reused by every run\) or runs x m = 600$"):
        load(project(tmp_path, monkeypatch, canaries='{ file = "data/canaries.npy", m = 300 }', extra="runs = 2"),
             ["readme_training"])


def _refusal(tmp_path: Path, monkeypatch, **fields: str) -> str:
    with pytest.raises(InputError) as caught:
        load(project(tmp_path, monkeypatch, **fields), ["readme_training"])
    return str(caught.value)


def test_float_canaries_for_an_integer_base_are_refused_not_cut(tmp_path, monkeypatch):
    path = project(tmp_path, monkeypatch)
    np.save(tmp_path / "data" / "halves.npy", np.arange(M) + 0.5)
    path.write_text(path.read_text().replace("data/canaries.npy", "data/halves.npy"))
    with pytest.raises(InputError, match=r"^config: scenario\[0\]\.canaries = '<float64 rows>' is invalid: the base "
                                         r"data is int64: the canary rows change when cast to it"):
        load(path, ["readme_training"])


def test_canary_rows_of_another_shape_than_the_base_are_refused(tmp_path, monkeypatch):
    path = project(tmp_path, monkeypatch)
    np.save(tmp_path / "data" / "pairs.npy", np.zeros((M, 2), dtype=np.int64))
    path.write_text(path.read_text().replace("data/canaries.npy", "data/pairs.npy"))
    with pytest.raises(InputError, match=r"^config: scenario\[0\]\.canaries = '<rows of shape \(2,\)>' is invalid: "
                                         r"each canary row must have the base data's row shape \(\)"):
        load(path, ["readme_training"])


def test_data_files_are_checked_where_they_enter(tmp_path, monkeypatch):
    assert _refusal(tmp_path, monkeypatch, base='{ file = "data/nothere.npy" }') == \
        "config: scenario[0].base.file = 'data/nothere.npy' is invalid: does not exist"
    assert _refusal(tmp_path, monkeypatch, base='{ file = "data/base.txt" }') == \
        "config: scenario[0].base.file = 'data/base.txt' is invalid: must be an .npy, .npz or .csv file"
    assert "config: scenario[0].base.fiel = 'x' is invalid: unknown key (did you mean 'file'?)" in \
        _refusal(tmp_path, monkeypatch, base='{ fiel = "x" }')
    (tmp_path / "data" / "text.npy").parent.mkdir(exist_ok=True)
    np.save(tmp_path / "data" / "text.npy", np.array(["a", "b", "c"]))
    assert _refusal(tmp_path, monkeypatch, base='{ file = "data/text.npy" }') == \
        "config: scenario[0].base.file = '<(3,) array of <U1>' is invalid: must hold real numbers (booleans, " \
        "integers or floats), one row per record"
    np.save(tmp_path / "data" / "nan.npy", np.array([1.0, np.nan]))
    assert "holds 1 NaN or infinite values" in _refusal(tmp_path, monkeypatch, base='{ file = "data/nan.npy" }')
    (tmp_path / "data" / "fake.npy").write_bytes(b"PK\x03\x04 not an array")
    assert "is not an .npy array" in _refusal(tmp_path, monkeypatch, base='{ file = "data/fake.npy" }')
    assert "reaches outside the config's folder" in _refusal(tmp_path, monkeypatch, base='{ file = "../base.npy" }')


def test_npz_and_csv_files_give_the_same_rows(tmp_path, monkeypatch):
    path = project(tmp_path, monkeypatch)
    np.savez(tmp_path / "data" / "both.npz", canaries=np.arange(M), base=np.full(100, -1))
    (tmp_path / "data" / "canaries.csv").write_text("id\n" + "".join(f"{j}\n" for j in range(M)))
    text = path.read_text()
    path.write_text(text.replace('canaries = { file = "data/canaries.npy" }',
                                 'canaries = { file = "data/canaries.csv" }')
                    .replace('base = { file = "data/base.npy" }', 'base = { file = "data/both.npz", key = "base" }'))
    design, = load(path, ["readme_training"]).onerun
    assert np.asarray(design.canaries).tolist() == list(range(M)) and design.base.tolist() == [-1] * 100
    path.write_text(text.replace('base = { file = "data/base.npy" }', 'base = { file = "data/both.npz" }'))
    with pytest.raises(InputError, match=r"^config: scenario\[0\]\.base\.key = None is invalid: is required: both\.npz "
                                         r"holds 2 arrays \(canaries, base\)$"):
        load(path, ["readme_training"])


def test_runs_of_their_own_canary_rows_give_the_api_counts(tmp_path, monkeypatch):
    path = project(tmp_path, monkeypatch, canaries='{ file = "data/canaries.npy", m = 500 }', extra="runs = 2")
    design, = load(path, ["readme_training"]).onerun
    pin_entropy(monkeypatch)
    config = onerun_scenario(design, seed=3, confidence=0.95, registry={}).result
    pin_entropy(monkeypatch)
    namespace: dict = {"np": np, "M": M}
    exec(readme_trainer(), namespace)
    api = audit_one_run(namespace["Training"](), namespace["score"], canaries=np.arange(M), m=500, runs=2,
                        base=np.full(100, -1), rule=Fixed(k_plus=50, k_minus=50), deltas=(1e-5, 1e-6), seed=3,
                        claims=[Guarantee(epsilon=1.0, delta=1e-5, claim_id="my-model/eps-1"),
                                gdp(1.5, claim_id="my-model/gdp")])
    assert (config.m, config.runs, config.canaries_per_run) == (api.m, api.runs, api.canaries_per_run) == (M, 2, 500)
    assert (config.r, config.v, config.secret_sha256, config.tiebreak) == (api.r, api.v, api.secret_sha256,
                                                                           api.tiebreak)


def test_user_level_rows_are_users(tmp_path, monkeypatch):
    said = _refusal(tmp_path, monkeypatch, extra='relation = "user-level"')
    assert said.startswith("config: scenario[0].canaries.file = '<(1000,) array>' is invalid: user-level: each row "
                           "is one canary user"), said
    path = project(tmp_path, monkeypatch, extra='relation = "user-level"')
    np.save(tmp_path / "data" / "canaries.npy", np.arange(2 * M).reshape(M, 2, 1))
    np.save(tmp_path / "data" / "base.npy", np.full((10, 2, 1), -1))
    design, = load(path, ["readme_training"]).onerun
    assert design.m == M and design.relation == "user-level" and design.base.shape == (10, 2, 1)
