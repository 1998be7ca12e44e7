"""``run --json`` owns stdout (issue 37, item 7): what the user's code prints goes to stderr.

Before: a mechanism's or training loop's prints ("epoch 0 loss ...") landed on stdout before the
JSON document, which then did not parse.  Now the Python stream and descriptor 1 are stderr while
the run executes, so prints at import, in the run's own process, in its joblib workers and in a
one-run training function all reach stderr, and stdout holds the document alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.clirun import in_process

ROOT = Path(__file__).resolve().parents[1]

# A rounded Laplace count (eps <= 1 on the pair) that prints through Python and writes to descriptor 1
# directly; it sleeps 0.25 s per chunk so that the run hands its chunks to worker processes.
PLUGIN = '''
import os, time
import numpy as np

print("loading printing_plugin")


class Prints:
    name = "prints"

    def sample(self, data, size, rng):
        print(f"epoch 0 loss 0.5 pid {os.getpid()}")
        os.write(1, b"raw fd 1 write\\n")
        time.sleep(0.25)
        return np.rint(float(np.sum(data)) + rng.laplace(0.0, 1.0, size)).astype(np.int64)


class Training:
    name = "prints-training"

    def __init__(self, m):
        self.m = m

    def run(self, dataset, rng):
        print("epoch 0 loss 0.5 (training)")
        bits = np.zeros(self.m)
        bits[list(dataset)] = 1.0
        return np.where(rng.random(self.m) < 0.73, bits, 1 - bits)


def score(output, canaries):
    print("scoring")
    return np.asarray(output, dtype=float)


prints = Prints()
pair = (np.array([0.0, 1.0]), np.array([0.0, 1.0, 1.0]))
'''

CONFIG = '''
[[scenario]]
name = "printing-training"
mechanism = "printing_plugin:Training"
params = { m = 200 }
scorer = "printing_plugin:score"
canaries = 200
rule = { kind = "fixed", k_plus = 50, k_minus = 50 }

[[scenario.claim]]
epsilon = 4.0
delta = 1e-5
id = "user/claim"
'''
# ε = 4: above the largest bound of 100 guesses on 200 canaries (3.49), so the honest verdict is "pass"
# whatever the fresh secret and tie-break draw (at ε = 1 the RR training, ε ≈ 0.995, was refuted in
# 4.3 % of games once ties are broken at random)


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "printing_plugin.py").write_text(PLUGIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "audit", "run", *args, "--json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def test_prints_of_a_multi_run_mechanism_and_its_workers_go_to_stderr(tmp_path):
    done = _run(tmp_path, "--mechanism", "printing_plugin:prints", "--pair", "printing_plugin:pair",
                "--samples", "2000000", "--epsilon", "1", "--jobs", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout)  # the document alone
    assert document["records"][0]["finding"] == "holds at this budget"
    assert "loading printing_plugin" in done.stderr and "raw fd 1 write" in done.stderr
    pids = {line.rsplit(" ", 1)[1] for line in done.stderr.splitlines() if line.startswith("epoch 0 loss")}
    assert len(pids) >= 2  # worker processes printed too (the chunks ran in a pool), all to stderr


def test_prints_of_a_one_run_training_and_its_scorer_go_to_stderr(tmp_path):
    (tmp_path / "onerun.toml").write_text(CONFIG)
    done = _run(tmp_path, "onerun.toml", "--allow-plugin", "printing_plugin")
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout)
    assert document["records"][0]["kind"] == "one-run"
    assert "epoch 0 loss 0.5 (training)" in done.stderr and "scoring" in done.stderr



def test_resume_keeps_this_command_lines_json(tmp_path, monkeypatch):
    """``--json`` is how the result is shown, not the run's identity: ``run --resume DIR --json`` prints
    the document (before: the saved command line's table, since run.json never holds --json)."""
    out = tmp_path / "out"
    # the run to resume is made in this process (its stdout is not what is checked; ~1.8 CPU s of a new
    # interpreter and its supervisor saved), from the plugin's folder; the resume is the command line's
    (tmp_path / "printing_plugin.py").write_text(PLUGIN)
    monkeypatch.chdir(tmp_path)
    try:
        first = in_process("run", "--mechanism", "printing_plugin:prints", "--pair", "printing_plugin:pair",
                           "--samples", "2000", "--quiet", "--out", out)
    finally:
        sys.modules.pop("printing_plugin", None)  # another test's folder holds its own printing_plugin.py
    assert first.returncode == 0, first.stderr[-3000:]
    resumed = _run(tmp_path, "--resume", str(out), "--allow-plugin", "printing_plugin")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads(resumed.stdout)["complete"] is True
