"""Checkpoints and resume after SIGKILL, the Dask backend, progress in logs, the bench."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dpaudit import audit_mechanism
from dpaudit.cli import main
from dpaudit.engine.api import RunContext
from dpaudit.runtime import execution
from dpaudit.runtime.execution import Execution
from tests.zoo import LaplaceOnCount

ROOT = Path(__file__).resolve().parents[1]
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
SLOW = ["run", "--mechanism", "tests.plugins.slow:slow", "--pair", "tests.plugins.user_mechanisms:pair",
        "--epsilon", "1.0", "--samples", "3000000", "--seed", "5", "--quiet"]
NUMBERS = ("delta", "epsilon_claim", "epsilon_lower", "verdict", "event")


# run --out draws no report.pdf here: these tests never read it (tests/clirun.py skip_report_pdf)
pytestmark = pytest.mark.usefixtures("no_report_pdf")


def records(folder):
    return [{k: r[k] for k in NUMBERS} for r in json.loads((folder / "results.json").read_text())["records"]]


@pytest.mark.slow  # two 3e6-sample runs of a slow sampler (~25 s)
def test_a_killed_run_resumes_to_exactly_the_uninterrupted_numbers(tmp_path):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    subprocess.run([sys.executable, "-m", "audit", *SLOW, "--out", str(whole)], cwd=ROOT, env=ENV, check=False,
                   capture_output=True, timeout=300)
    proc = subprocess.Popen([sys.executable, "-m", "audit", *SLOW, "--out", str(killed)], cwd=ROOT, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    checkpoint = killed / "checkpoint.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline:
        if checkpoint.exists() and len(checkpoint.read_text().splitlines()) >= 6:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    saved = len(checkpoint.read_text().splitlines())
    assert not (killed / "results.json").exists() and 6 <= saved < 20  # killed mid-way
    moved = tmp_path / "moved" / "killed"  # the folder moves, and the resume runs from elsewhere
    moved.parent.mkdir()
    killed.rename(moved)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-m", "audit", "run", "--resume", str(moved),
                           "--allow-plugin", "tests.plugins"], cwd=elsewhere, env=ENV, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not killed.exists() and not (elsewhere / "results.json").exists()
    killed, checkpoint = moved, moved / "checkpoint.jsonl"
    assert records(killed) == records(whole)
    lines = [json.loads(line) for line in checkpoint.read_text().splitlines()]
    chunks = [(r["side"], r["chunk"]) for r in lines]
    assert len(chunks) == len(set(chunks)) == 20  # every chunk counted once: none lost, none twice
    est = json.loads((killed / "results.json").read_text())["scenarios"][0]["estimate"]["bounds"][0]["counts"]
    whole_est = json.loads((whole / "results.json").read_text())["scenarios"][0]["estimate"]["bounds"][0]["counts"]
    assert est == whole_est


def test_a_torn_or_edited_checkpoint_line_is_recounted(tmp_path):
    out = tmp_path / "run"
    args = ["run", "--mechanism", "tests.plugins.user_mechanisms:correct", "--pair",
            "tests.plugins.user_mechanisms:pair", "--epsilon", "1", "--samples", "2000000", "--quiet"]
    assert main([*args, "--out", str(out)]) == 0
    first = records(out)
    lines = (out / "checkpoint.jsonl").read_text().splitlines()
    edited = json.loads(lines[0])
    edited["counts"] = [10**9] * len(edited["counts"])  # impossible counts
    (out / "checkpoint.jsonl").write_text("\n".join([json.dumps(edited), *lines[1:-1], lines[-1][:7]]) + "\n")
    assert main(["run", "--resume", str(out), "--allow-plugin", "tests.plugins"]) == 0
    assert records(out) == first


def test_resume_without_a_run_exits_2(tmp_path, capsys):
    assert main(["run", "--resume", str(tmp_path)]) == 2
    assert "no resumable run" in capsys.readouterr().err


def test_progress_lines_in_a_log(capsys):
    """A figure shown mid-run must be as valid as the final one: without looks, no bound is shown
    before the end (the bound of the chunks so far, shown at every line, is an uncorrected look:
    its maximum over a run overstated a true epsilon of 1 as 1.415); a sequential run shows the
    bound of each finished look, which spends its share of alpha."""
    audit_mechanism(LaplaceOnCount(1.0), 0, 1, samples=2_000_000, seed=0,
                    context=RunContext(execution=Execution(progress="log", log_every=0.0)))
    err = capsys.readouterr().err
    assert "[dpaudit] laplace-count:" in err and "samples" in err and "eps_lower pending" in err
    assert "current eps_lower" not in err
    result = audit_mechanism(LaplaceOnCount(1.0), 0, 1, samples=4_000_000, seed=0, epsilon=1.0, sequential=True,
                             context=RunContext(execution=Execution(progress="log", log_every=0.0)))
    err = capsys.readouterr().err
    shown = [float(line.split("current eps_lower ")[1].split()[0].rstrip(",")) for line in err.splitlines()
             if "current eps_lower" in line]
    assert shown and max(shown) <= 1.0  # each look's bound holds at its share of alpha
    assert result.estimates[0].epsilon_lower <= 1.0


@pytest.fixture(scope="module")
def dask_client():
    pytest.importorskip("distributed")
    from dpaudit.runtime.execution import connect_dask
    client = connect_dask(None, 2)
    yield client
    client.close()


def _malloc_trim_threshold():
    return os.environ.get("MALLOC_TRIM_THRESHOLD_")


@pytest.mark.slow  # starts a Dask cluster
def test_the_local_clusters_workers_keep_glibcs_adaptive_mmap_threshold(dask_client):
    """distributed's default MALLOC_TRIM_THRESHOLD_ pins glibc's mmap threshold (every chunk's arrays
    page-faulted anew, ~30 % of a worker); the cluster dpaudit starts leaves it out, and the other
    variables of distributed's default (one BLAS thread per worker) stay."""
    import dask  # optional dependency, installed with distributed

    assert "MALLOC_TRIM_THRESHOLD_" in dask.config.get("distributed.nanny.pre-spawn-environ")  # the default has it
    assert set(dask_client.run(_malloc_trim_threshold).values()) == {None}
    assert set(dask_client.run(os.environ.get, "OMP_NUM_THREADS").values()) == {"1"}


def _dask_setting(key):
    import dask  # optional dependency, installed with distributed
    return dask.config.get(key)


@pytest.mark.slow  # starts a Dask cluster
def test_the_local_clusters_housekeeping_is_off_on_its_workers_and_scheduler(dask_client):
    """The profiler (the GIL every 10 ms), work stealing and the fast monitors take CPU from the
    other worker on a machine with one worker per core: the cluster dpaudit starts runs without
    them (the defaults have them on), on every worker and on the scheduler."""
    import dask  # optional dependency, installed with distributed

    assert dask.config.get("distributed.worker.profile.enabled") is True  # outside the cluster: the default
    assert set(dask_client.run(_dask_setting, "distributed.worker.profile.enabled").values()) == {False}
    assert set(dask_client.run(_dask_setting, "distributed.worker.memory.monitor-interval").values()) == {"1s"}
    assert "stealing" not in dask_client.cluster.scheduler.extensions


@pytest.mark.slow  # starts a Dask cluster
def test_dask_local_cluster_gives_the_numbers_of_one_local_job(dask_client):
    mech = LaplaceOnCount(0.5)
    local = audit_mechanism(mech, 0, 1, samples=1_500_000, seed=3)
    remote = audit_mechanism(mech, 0, 1, samples=1_500_000, seed=3,
                             context=RunContext(execution=Execution(backend="dask")))
    assert [b.to_dict() for b in local.estimates] == [b.to_dict() for b in remote.estimates]


def test_dask_workers_that_cannot_import_fail_fast():
    pytest.importorskip("distributed")
    from dpaudit.mechanisms.base import InputError
    from dpaudit.runtime.execution import connect_dask
    with pytest.raises(InputError, match="no_such_module_for_dpaudit"):
        connect_dask(None, 1, modules=("no_such_module_for_dpaudit",))


def _chunk_sum(data, size, seed, chunk):
    """A chunk's result from its own seed: what the Dask map must hand back in order."""
    return int(np.random.default_rng([seed, chunk]).integers(0, 1000, size).sum()) + int(data[chunk % len(data)])


@pytest.mark.slow  # starts a Dask cluster
@pytest.mark.parametrize("task_seconds", [1e-9, 1e9])  # one chunk per task; every chunk the fair share allows
def test_dask_batches_keep_each_chunks_numbers_and_order(dask_client, monkeypatch, task_seconds):
    monkeypatch.setattr(execution, "TASK_SECONDS", task_seconds)
    data = np.arange(7)
    args = [(data, 1000 + c, 11, c) for c in range(40)]
    expected = [_chunk_sum(*a) for a in args]
    assert list(Execution(backend="dask", client=dask_client).map(_chunk_sum, args)) == expected
    with pytest.raises(ZeroDivisionError):  # a chunk's failure reaches the caller, never a silent gap
        list(Execution(backend="dask", client=dask_client).map(_chunk_sum, [(data, 10, 1, c) for c in range(3)]
                                                               + [([], 10, 1, 3)]))


@pytest.mark.slow  # starts a Dask cluster
def test_dask_batch_sizes_give_the_numbers_of_one_local_job(dask_client, monkeypatch):
    """Chunk seeds are their own: one chunk per task, or many, the audit's numbers are the local ones
    (several estimation chunks per side, so the batching does group chunks)."""
    mech = LaplaceOnCount(0.5)
    local = [b.to_dict() for b in audit_mechanism(mech, 0, 1, samples=3_000_000, seed=4).estimates]
    for task_seconds in (1e-9, 1e9):
        monkeypatch.setattr(execution, "TASK_SECONDS", task_seconds)
        remote = audit_mechanism(mech, 0, 1, samples=3_000_000, seed=4,
                                 context=RunContext(execution=Execution(backend="dask", client=dask_client)))
        assert [b.to_dict() for b in remote.estimates] == local


@pytest.mark.slow  # starts a Dask cluster
def test_cli_dask_backend_matches_jobs_1(tmp_path):
    pytest.importorskip("distributed")
    args = ["run", "--mechanism", "tests.plugins.user_mechanisms:correct", "--pair",
            "tests.plugins.user_mechanisms:pair", "--epsilon", "1", "--samples", "600000", "--quiet"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--backend", "dask", "--jobs", "2", "--out", str(tmp_path / "b")]) == 0
    assert records(tmp_path / "a") == records(tmp_path / "b")


@pytest.mark.slow  # the bench of two families: their throughput, tightness, benchmarks and suite run (~20 s)
def test_bench_writes_its_table_and_json(tmp_path, capsys):
    """The full (not --quick) bench, kept to the kl and alignment families (``--family``): what it
    checks — each row kind reaches the table and the JSON file, the extra benchmarks run, the
    suite's command is run, timed and read back — does not depend on how many families it covers
    (tests/test_bench.py runs every case's rows; tests/test_cli.py the whole default suite)."""
    assert main(["bench", "--samples", "20000", "--family", "kl", "--family", "alignment",
                 "--out", str(tmp_path / "bench.json")]) == 0
    report = json.loads((tmp_path / "bench.json").read_text())
    assert {r["family"] for r in report["throughput"]} == {"kl-bandit", "kl-linear", "kl-rlhf"}
    assert all(r["ratio_ours_to_plain"] > 0 for r in report["throughput"])
    assert [t["audit"] for t in report["tightness"]] == ["align alg2 swap, delta=1e-3"]
    assert report["tightness"][0]["samples_per_side"] == 10_000_000  # not --quick: the row's own budget
    assert report["align_mle"]["max_abs_difference"] < 1e-6  # batched Newton and scipy find the same minimisers
    assert "dp_pg_rounds" not in report  # the policy-optimization family's benchmark: not chosen
    suite = report["default_suite"]  # the real command, timed: every verdict as expected
    assert suite["command"] == "python -m dpaudit run --quiet --family kl --family alignment"
    assert suite["exit_code"] == 0 and suite["seconds"] > 0 and "every verdict as expected" in suite["summary"]
    out = capsys.readouterr().out
    assert "ours/plain" in out and "default suite (python -m dpaudit run --quiet --family kl" in out
    assert "Algorithm 1 private MLE" in out
