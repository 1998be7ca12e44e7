"""Hostile input (issue #14): never a false finding from our own plumbing.

One case per reproduced failure — run isolation, checkpoint integrity, output types, exit
codes (a crash is 2 or 3, never 1, never a traceback), configs as data, safe files, resource
limits — and a property-based fuzz of the config and results loaders (``hypothesis``): no
exception escapes ``main``, and invalid input never exits 0 or 1.
"""

import contextlib
import copy
import http.server
import io
import json
import math
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpaudit.cli import main
from dpaudit.cli import run as cli_run
from dpaudit.core import InputError
from dpaudit.runs.config import load
from dpaudit.runtime.checkpoint import _checksum
from dpaudit.runtime.files import FolderLock, append_line, write_atomic
from dpaudit.runtime.progress import Progress
from tests.configs import RR

ROOT = Path(__file__).resolve().parents[1]
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
PAIR = ["--pair", "tests.plugins.user_mechanisms:pair"]
ALLOW = ["--allow-plugin", "tests.plugins"]  # a resumed run imports its plugin only when allowed
CORRECT = ["--mechanism", "tests.plugins.user_mechanisms:correct", *PAIR, "--epsilon", "1"]
LEAKY = ["--mechanism", "tests.plugins.user_mechanisms:leaky", *PAIR, "--epsilon", "1"]
NUMBERS = ("delta", "epsilon_claim", "epsilon_lower", "verdict", "event")



def run_cli(*args, cwd=ROOT, env=None, timeout=300, preexec_fn=None):
    return subprocess.run([sys.executable, "-m", "audit", *args], cwd=cwd, capture_output=True, text=True,
                          env={**ENV, **(env or {})}, timeout=timeout, preexec_fn=preexec_fn)


def records(folder):
    return [{k: r[k] for k in NUMBERS} for r in json.loads((folder / "results.json").read_text())["records"]]


def lines(folder):
    return [json.loads(line) for line in (folder / "checkpoint.jsonl").read_text().splitlines() if line.strip()]


def chunks_once(folder):
    found = [(tuple(r["key"]), r["side"], r["chunk"]) for r in lines(folder)]
    return len(found) == len(set(found))


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished run of a correct ε = 1 mechanism (1e6 samples: 4 estimation chunks per side)."""
    out = tmp_path_factory.mktemp("finished") / "run"
    assert main(["run", *CORRECT, "--samples", "1000000", "--quiet", "--out", str(out)]) == 0
    return out


@pytest.fixture
def copy_of(finished, tmp_path):
    target = tmp_path / "run"
    shutil.copytree(finished, target, ignore=shutil.ignore_patterns(".lock"))
    return target


# --- 1. run isolation ------------------------------------------------------------------------

def test_a_new_run_never_reuses_another_runs_counts(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", *LEAKY, "--samples", "400000", "--quiet", "--out", str(out)]) == 1
    assert main(["run", *CORRECT, "--samples", "400000", "--quiet", "--out", str(out)]) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert main(["run", *CORRECT, "--samples", "400000", "--quiet", "--out", str(out), "--overwrite"]) == 0
    (rec,) = json.loads((out / "results.json").read_text())["records"]
    assert rec["verdict"] == "pass" and rec["mechanism"] == "user-noisy-count"
    fingerprint = json.loads((out / "run.json").read_text())["fingerprint"]
    assert {line["run"] for line in lines(out)} == {fingerprint} and chunks_once(out)


def test_concurrent_runs_into_one_folder_are_locked_out(tmp_path, capsys):
    out = tmp_path / "busy"
    out.mkdir()
    with FolderLock(out):
        assert main(["run", *CORRECT, "--samples", "1000", "--quiet", "--out", str(out)]) == 2
    assert "in use by another dpaudit run" in capsys.readouterr().err
    assert main(["run", *CORRECT, "--samples", "1000", "--quiet", "--out", str(out)]) == 0


# --- 2. output type stability ----------------------------------------------------------------

def test_rows_that_turn_into_floats_in_later_chunks_keep_the_true_verdict(tmp_path):
    """Randomized response with ε = ln 2 whose full chunks under D' come back as float64 rows: the
    old counting saw a violation (4.75 here); the rows convert losslessly and the claim 0.7 holds."""
    out = tmp_path / "drift"
    assert main(["run", "--mechanism", "tests.plugins.hostile:drift", *PAIR, "--epsilon", "0.7",
                 "--samples", "1000000", "--quiet", "--out", str(out)]) == 0
    (rec,) = json.loads((out / "results.json").read_text())["records"]
    assert rec["verdict"] == "pass" and 0.6 < rec["epsilon_lower"] <= math.log(2) + 0.01


def test_a_lossy_type_change_stops_the_run_naming_the_chunk(capsys):
    assert main(["run", "--mechanism", "tests.plugins.hostile:drift_lossy", *PAIR, "--epsilon", "0.7",
                 "--samples", "1000000", "--jobs", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "chunk 0 of the estimation split under D," in err and "one type" in err


# --- 3. resume resumes exactly its folder ----------------------------------------------------

@pytest.mark.slow  # subprocesses and waits of several seconds
def test_resume_after_moving_the_folder_from_another_directory(tmp_path):
    first = tmp_path / "first"
    done = run_cli("run", *CORRECT, "--samples", "1000000", "--quiet", "--out", str(first))
    assert done.returncode == 0, done.stderr
    expected = records(first)
    checkpoint = first / "checkpoint.jsonl"
    checkpoint.write_text("".join(line + "\n" for line in checkpoint.read_text().splitlines()[:3]))
    for name in ("results.json", "summary.txt", "report.pdf"):
        (first / name).unlink()
    moved = tmp_path / "moved" / "here"
    moved.parent.mkdir()
    shutil.move(str(first), str(moved))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    resumed = run_cli("run", "--resume", str(moved), *ALLOW, "--quiet", cwd=elsewhere)
    assert resumed.returncode == 0, resumed.stderr
    assert records(moved) == expected and chunks_once(moved) and len(lines(moved)) == 8
    assert not first.exists() and not (elsewhere / "results.json").exists()


@pytest.mark.parametrize("extra,named", [
    (["--samples", "300000"], "samples"), (["--seed", "3"], "seed"), (["--epsilon", "2"], "epsilon"),
    (["--mechanism", "tests.plugins.user_mechanisms:leaky"], "mechanism"), (["--confidence", "0.99"], "confidence"),
])
def test_a_flag_that_would_change_the_run_is_refused_on_resume(copy_of, extra, named, capsys):
    before = (copy_of / "checkpoint.jsonl").read_text()
    assert main(["run", "--resume", str(copy_of), *ALLOW, *extra]) == 2
    err = capsys.readouterr().err
    assert f"--{named} would change the run" in err and named in err.split("(", 1)[1]
    assert (copy_of / "checkpoint.jsonl").read_text() == before


def test_runtime_flags_may_change_on_resume(copy_of, finished):
    assert main(["run", "--resume", str(copy_of), *ALLOW, "--jobs", "2", "--quiet"]) == 0
    assert records(copy_of) == records(finished)


def test_a_config_that_would_change_the_run_is_refused_on_resume(tmp_path, capsys):
    (tmp_path / "a.toml").write_text(RR)
    (tmp_path / "b.toml").write_text(RR.replace("epsilon = 1.0", "epsilon = 2.0"))
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "a.toml").write_text(RR)
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "a.toml"), "--samples", "20000", "--quiet", "--out", str(out)]) == 0
    assert main(["run", str(tmp_path / "b.toml"), "--resume", str(out)]) == 2
    assert "CONFIG would change the run" in capsys.readouterr().err
    assert main(["run", str(copy / "a.toml"), "--resume", str(out), "--quiet"]) == 0  # same content elsewhere


@pytest.mark.parametrize("args,message", [
    (["--overwrite"], "cannot be combined with --resume"),
    (["--out", "/tmp/dpaudit-somewhere-else"], "drop --out"),
])
def test_resume_takes_no_other_destination(copy_of, args, message, capsys):
    assert main(["run", "--resume", str(copy_of), *ALLOW, *args]) == 2
    assert message in capsys.readouterr().err


# --- 4. checkpoint integrity -----------------------------------------------------------------

def _swap_chunk_ids(rows):
    rows[0]["chunk"], rows[1]["chunk"] = rows[1]["chunk"], rows[0]["chunk"]
    return rows


def _plausible_counts(rows):
    rows[2]["counts"] = [max(0, c - 1000) for c in rows[2]["counts"]]
    return rows


def _duplicate_disagreeing(rows):
    twin = dict(rows[3], counts=[c + 1 for c in rows[3]["counts"]])
    twin["check"] = _checksum(rows[3]["run"], twin)  # a valid line, but a second, different count for one chunk
    return [*rows, twin]


def _duplicate_identical(rows):
    return [*rows, rows[0]]


def _chunk_id_reused(rows):
    rows[1] = dict(rows[1], chunk=rows[0]["chunk"])  # the old false violation: one chunk counted twice
    return rows


@pytest.mark.parametrize("edit", [_swap_chunk_ids, _plausible_counts, _duplicate_disagreeing, _duplicate_identical,
                                  _chunk_id_reused])
def test_an_edited_checkpoint_never_counts_a_chunk_twice(copy_of, finished, edit):
    rows = edit(lines(copy_of))
    (copy_of / "checkpoint.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (copy_of / "results.json").unlink()
    assert main(["run", "--resume", str(copy_of), *ALLOW, "--quiet"]) == 0
    assert records(copy_of) == records(finished)  # the true verdict: a pass, the same numbers
    assert chunks_once(copy_of) and len(lines(copy_of)) == 8


def test_lines_of_another_run_are_refused(copy_of, tmp_path, capsys):
    other = tmp_path / "other"
    assert main(["run", *CORRECT, "--samples", "1000000", "--seed", "9", "--quiet", "--out", str(other)]) == 0
    with open(copy_of / "checkpoint.jsonl", "a") as fh:
        fh.write((other / "checkpoint.jsonl").read_text().splitlines()[0] + "\n")
    assert main(["run", "--resume", str(copy_of), *ALLOW]) == 2
    assert "belong to another run" in capsys.readouterr().err


def test_an_edited_seed_in_run_json_is_refused(copy_of, capsys):
    saved = json.loads((copy_of / "run.json").read_text())
    saved["argv"] += ["--seed", "5"]
    (copy_of / "run.json").write_text(json.dumps(saved))
    assert main(["run", "--resume", str(copy_of), *ALLOW]) == 2
    assert "seed: 0 -> 5" in capsys.readouterr().err
    saved["identity"]["seed"] = 5  # identity edited too: no longer matches its fingerprint
    (copy_of / "run.json").write_text(json.dumps(saved))
    assert main(["run", "--resume", str(copy_of), *ALLOW]) == 2
    assert "does not match its fingerprint" in capsys.readouterr().err


# --- 5. crash is exit 2 or 3, never 1, never a traceback ------------------------------------

def _npy_renamed(tmp):
    np.save(tmp / "x.npy", np.arange(3))
    shutil.copy(tmp / "x.npy", tmp / "bad.npz")


def _truncated(tmp):
    np.savez(tmp / "whole.npz", x=np.arange(100.0))
    raw = (tmp / "whole.npz").read_bytes()
    (tmp / "bad.npz").write_bytes(raw[: len(raw) // 2])


@pytest.mark.parametrize("make,message", [(_npy_renamed, ".npy array"), (_truncated, "BadZipFile")],
                         ids=["npy-renamed-npz", "truncated-zip"])
def test_unreadable_npz_data_exits_2(tmp_path, make, message, capsys):
    np.savez(tmp_path / "good.npz", x=np.array([1.0, 2.0]))
    make(tmp_path)
    assert main(["run", "--mechanism", "laplace", "--param", "epsilon=1", "--data", str(tmp_path / "good.npz"),
                 "--data-prime", str(tmp_path / "bad.npz"), "--samples", "1000", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and "bad.npz" in err


CONFIG_CASES = {
    "utf-16": (RR.encode("utf-16"), "UTF-16"),
    "binary": (bytes(range(256)), "binary"),
    "latin-1": (RR.replace("rr", "r\xe9").encode("latin-1"), "not UTF-8"),
    "ragged": (RR.replace("columns = { bit = [0] }", "columns = { bit = [[0, 1], [2]] }").encode(), "rectangular"),
    "nested": (RR.replace("columns = { bit = [0] }", "columns = { bit = " + "[" * 40 + "0" + "]" * 40 + " }").encode(),
               "nested more than"),
    "deeply-nested": (RR.replace("columns = { bit = [0] }", "columns = { bit = " + "[" * 5000 + "0" + "]" * 5000
                                 + " }").encode(), "nested too deeply"),
    "string-column": (RR.replace("columns = { bit = [0] }", 'columns = { bit = ["a"] }').encode(), "numbers"),
    "typo-in-expected": (RR.replace('name = "rr"', 'name = "rr"\nexpected = { "classic/rrr" = "pass" }').encode(),
                         "scenario 'rr': expected['classic/rrr']"),
}


@pytest.mark.parametrize("case", CONFIG_CASES)
def test_hostile_config_files_exit_2_naming_the_problem(tmp_path, case, capsys):
    content, message = CONFIG_CASES[case]
    (tmp_path / "c.toml").write_bytes(content)
    assert main(["run", str(tmp_path / "c.toml"), "--samples", "1000", "--quiet"]) == 2
    assert message in capsys.readouterr().err


def test_csv_duplicate_headers_are_refused_and_a_bom_is_not_a_name(tmp_path):
    (tmp_path / "dup.csv").write_text("bit,bit\n0,1\n")
    with pytest.raises(InputError, match="column 'bit' twice"):
        load(_write(tmp_path, RR.replace("columns = { bit = [0] }", 'file = "dup.csv"')))
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbfbit\n0\n")
    (sc,) = load(_write(tmp_path, RR.replace("columns = { bit = [0] }", 'file = "bom.csv"'))).scenarios
    assert list(sc.pair.d.columns) == ["bit"]
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf" + RR.encode())
    assert load(tmp_path / "bom.toml").scenarios[0].name == "rr"


def _write(folder, text, name="c.toml"):
    (folder / name).write_text(text)
    return folder / name


def _unwritable(tmp_path):
    if os.geteuid() == 0:  # root writes anywhere a mode allows; sysfs refuses even root
        return "/sys/dpaudit-out"
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    return str(locked / "out")


@pytest.mark.parametrize("out,message", [
    (lambda t: str(t / ("x" * 300)), "a name longer than 255 bytes"),
    (lambda t: (t / "file").write_text("") or str(t / "file"), "exists and is not a folder"),
    (lambda t: (t / "file").write_text("") or str(t / "file" / "sub"), "cannot create the folder"),
    (_unwritable, "--out"),
], ids=["over-long", "existing-file", "under-a-file", "unwritable"])
def test_a_bad_out_folder_exits_2(tmp_path, out, message, capsys):
    assert main(["run", *CORRECT, "--samples", "1000", "--quiet", "--out", out(tmp_path)]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("address,message", [("nonsense", "scheduler = 'nonsense' is invalid"),
                                             ("tcp://host", "give host and port"),
                                             ("tcp://127.0.0.1:1", "cannot connect")])
def test_a_bad_scheduler_address_exits_2(address, message, capsys):
    pytest.importorskip("distributed")
    assert main(["run", *CORRECT, "--samples", "1000", "--quiet", "--backend", "dask", "--scheduler", address]) == 2
    assert message in capsys.readouterr().err


def test_report_into_a_missing_folder_exits_2(finished, tmp_path, capsys):
    assert main(["report", str(finished / "results.json"), "-o", str(tmp_path / "nowhere" / "r.pdf")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_a_non_string_mechanism_name_exits_2(capsys):
    assert main(["run", "--mechanism", "tests.plugins.hostile:numbered", *PAIR, "--samples", "1000"]) == 2
    assert "name must be a non-empty string" in capsys.readouterr().err


def test_dollars_in_names_are_text_in_the_pdf(tmp_path):
    config = RR.replace('name = "rr"', 'name = "a $5 $x^2$ scenario"').replace(
        'mechanism = "randomized-response"\nparams = { epsilon = 1.0 }', 'mechanism = "tests.plugins.hostile:dollars"')
    config = config.replace("bit", "x").replace("[[scenario]]", "[[scenario]]", 1)
    config += "[[scenario.claim]]\nepsilon = 1.0\n"
    path = _write(tmp_path, config)
    out = tmp_path / "out"
    assert main(["run", str(path), "--allow-plugin", "tests.plugins.hostile", "--samples", "20000", "--quiet",
                 "--out", str(out)]) == 0
    assert json.loads((out / "results.json").read_text())["records"][0]["mechanism"] == "price $5 and $x^2$ {cost}"
    pypdf = pytest.importorskip("pypdf")
    text = " ".join(page.extract_text() for page in pypdf.PdfReader(out / "report.pdf").pages)
    assert "price $5 and $x^2$ {cost}" in text and "a $5 $x^2$ scenario" in text


def _file_limit():
    resource.setrlimit(resource.RLIMIT_FSIZE, (12_000, 12_000))


def test_a_full_disk_is_an_environment_failure_exit_3_with_a_log(tmp_path):
    """RLIMIT_FSIZE stands in for a full disk: the first results.json write fails."""
    out = tmp_path / "out"
    # No bytecode: under the limit, a module compiled afresh would leave a truncated .pyc in the
    # checkout that breaks every later import of it ("marshal data too short").
    proc = run_cli("run", *CORRECT, "--samples", "1000000", "--quiet", "--out", str(out), preexec_fn=_file_limit,
                   env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 3, proc.stderr
    assert "environment failure" in proc.stderr and "results.json" in proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" in (out / "error.log").read_text()


def _bug_of_ours():
    """A function whose code lies in dpaudit's own package (dpaudit.runtime.blame tells a user's code from
    ours by the file a frame runs in): a bug of ours, as a test defines one."""
    namespace = {}
    source = "def broken(records, **options):\n    raise ZeroDivisionError('a bug of ours')\n"
    package = Path(cli_run.__file__).resolve().parents[1]  # the installed dpaudit's folder (audit/ when editable)
    exec(compile(source, str(package / "summary_bug.py"), "exec"), namespace)
    return namespace["broken"]


def test_an_internal_error_is_exit_3_with_the_traceback_in_a_log(monkeypatch, capsys):
    monkeypatch.setattr(cli_run, "summary_table", _bug_of_ours())
    assert main(["run", *CORRECT, "--samples", "1000", "--quiet"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: internal error: ZeroDivisionError: a bug of ours") and len(err.splitlines()) == 1
    log = err.split("traceback in ")[1].split(";")[0]
    assert "ZeroDivisionError" in Path(log).read_text()
    os.unlink(log)


def test_the_same_error_raised_in_a_users_code_is_exit_2_naming_the_file(monkeypatch, capsys):
    def broken(records, **options):  # this test file is not dpaudit's: a user's code
        raise ZeroDivisionError("a bug of the user's")

    monkeypatch.setattr(cli_run, "summary_table", broken)
    assert main(["run", *CORRECT, "--samples", "1000", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: your code raised ZeroDivisionError") and "test_hostile.py:" in err
    assert "please report" not in err and len(err.splitlines()) == 1


# --- 6. exit 0 only when something was checked and as expected -------------------------------

@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sys_exit_inside_a_mechanism_is_a_named_failure_not_a_pass(jobs):
    proc = run_cli("run", "--mechanism", "tests.plugins.hostile:exits", *PAIR, "--epsilon", "1", "--samples", "600000",
                   "--jobs", jobs, "--quiet")
    assert proc.returncode == 2 and "mechanism 'exits' called sys.exit(0)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_keyboard_interrupt_raised_by_a_mechanism_is_its_failure(capsys):
    assert main(["run", "--mechanism", "tests.plugins.hostile:interrupts", *PAIR, "--samples", "1000"]) == 2
    assert "mechanism 'interrupts' raised KeyboardInterrupt" in capsys.readouterr().err


@pytest.mark.slow  # subprocesses and waits of several seconds
def test_a_user_interrupt_is_still_an_interrupt(tmp_path):
    """The user's Ctrl-C is not the mechanism's failure (exit 2): it ends the run with a partial
    result, exit 130, in whatever phase it lands (tests/test_interrupt.py signals each phase)."""
    proc = subprocess.Popen([sys.executable, "-m", "audit", "run", "--mechanism", "tests.plugins.slow:slow", *PAIR,
                             "--samples", "20000000"], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    # The first progress line says the audit is under way (on a loaded machine the interpreter's
    # start alone can take seconds): the Ctrl-C then reaches the run, not the start-up.
    assert proc.stderr.readline().startswith("[dpaudit] slow-laplace:")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "INCOMPLETE run: interrupted after 1 of 1 scenarios" in out
    assert "raised KeyboardInterrupt" not in err


@pytest.mark.parametrize("mechanism,code", [(CORRECT, 130), (LEAKY, 1)], ids=["nothing-found-yet", "a-finding"])
def test_summary_of_an_interrupted_run_says_partial_and_never_exits_0(tmp_path, mechanism, code, capsys):
    out = tmp_path / "out"
    main(["run", *mechanism, "--samples", "200000", "--quiet", "--out", str(out)])
    payload = json.loads((out / "results.json").read_text())
    payload.update(complete=False, scenarios_planned=3)
    (out / "partial.json").write_text(json.dumps(payload))
    capsys.readouterr()
    assert main(["summary", str(out / "partial.json")]) == code
    captured = capsys.readouterr()
    assert "INCOMPLETE run" in captured.out and "1 of 3 scenarios" in captured.out


# --- 7. configs are data; files are written safely -------------------------------------------

def test_a_config_cannot_import_a_module_the_command_line_did_not_allow(tmp_path, capsys):
    config = RR.replace('mechanism = "randomized-response"\nparams = { epsilon = 1.0 }',
                        'mechanism = "tests.plugins.marks_on_import:mechanism"').replace("bit", "x")
    path = _write(tmp_path, config + "[[scenario.claim]]\nepsilon = 1.0\n")
    sys.modules.pop("tests.plugins.marks_on_import", None)
    for allowed in ([], ["--allow-plugin", "tests.plugins.marks"], ["--allow-plugin", "tests.plugins.user_mechanisms"]):
        assert main(["run", str(path), "--samples", "2000", "--quiet", *allowed]) == 2
        assert "--allow-plugin tests.plugins.marks_on_import" in capsys.readouterr().err
        assert "tests.plugins.marks_on_import" not in sys.modules  # refused before any import
    assert main(["run", str(path), "--samples", "2000", "--quiet", "--allow-plugin", "tests.plugins"]) == 0
    assert "tests.plugins.marks_on_import" in sys.modules


def test_a_plugin_that_exits_on_import_is_an_input_error(tmp_path, capsys):
    path = _write(tmp_path, RR.replace('mechanism = "randomized-response"\nparams = { epsilon = 1.0 }',
                                       'mechanism = "tests.plugins.exits_on_import:x"'))
    assert main(["run", str(path), "--quiet", "--allow-plugin", "tests.plugins.exits_on_import"]) == 2
    assert "cannot be loaded (SystemExit" in capsys.readouterr().err


def test_the_pdf_never_writes_through_a_link(finished, tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "linked.pdf").symlink_to(victim)
    assert main(["report", str(finished / "results.json"), "-o", str(tmp_path / "linked.pdf")]) == 2
    assert "symbolic link" in capsys.readouterr().err
    (tmp_path / ".r.pdf.tmp").symlink_to(victim)  # the old fixed temporary name
    assert main(["report", str(finished / "results.json"), "-o", str(tmp_path / "r.pdf")]) == 0
    assert victim.read_text() == "precious" and (tmp_path / "r.pdf").read_bytes().startswith(b"%PDF")


def test_writes_and_appends_refuse_links(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "a.json").symlink_to(victim)
    with pytest.raises(InputError, match="symbolic link"):
        write_atomic(tmp_path / "a.json", "{}")
    (tmp_path / "c.jsonl").symlink_to(victim)
    with pytest.raises(InputError, match="symbolic link"):
        append_line(tmp_path / "c.jsonl", "{}\n")
    assert victim.read_text() == "precious"


def test_a_checkpoint_replaced_by_a_link_is_refused(copy_of, tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (copy_of / "checkpoint.jsonl").unlink()
    (copy_of / "checkpoint.jsonl").symlink_to(victim)
    assert main(["run", "--resume", str(copy_of), *ALLOW]) == 2
    assert "symbolic link" in capsys.readouterr().err and victim.read_text() == "precious"


# --- 8. resource limits ----------------------------------------------------------------------

def test_a_budget_beyond_memory_exits_2_at_once_with_the_estimate(tmp_path, capsys, monkeypatch):
    # The selection split is capped (dpaudit.engine.streaming), so any budget fits in a few hundred MB: a machine
    # with 50 MB free is what makes this one too large.
    monkeypatch.setattr("dpaudit.engine.memory.available_memory", lambda: 50 * 2**20)
    assert main(["run", *CORRECT, "--samples", "1000000000000", "--quiet", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    # "at once": refused before the run starts (no run.json), not after a time (no clock in a test)
    assert "needs about" in err and "MB of memory" in err and "50 MB is available" in err
    assert not (tmp_path / "o" / "run.json").exists()


def _children(pid):
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found[int(entry)] = command
    return found


def test_jobs_are_capped_at_the_chunks_to_run(tmp_path):
    """--jobs 64 on a job of two estimation chunks (one per side) starts at most 2 worker processes."""
    pids = tmp_path / "pids"
    pids.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "audit", "run", "--mechanism", "tests.plugins.hostile:records_pid",
                             *PAIR, "--epsilon", "1", "--samples", "300000", "--jobs", "64", "--quiet"], cwd=ROOT,
                            env={**ENV, "DPAUDIT_PID_DIR": str(pids)}, stdout=subprocess.DEVNULL)
    workers = set()
    while proc.poll() is None:
        workers |= {p for p, command in _children(proc.pid).items() if "LokyProcess" in command}
        time.sleep(0.005)
    assert proc.returncode == 0
    drawn_in = {int(p.name) for p in pids.iterdir()} - {proc.pid}
    assert len(workers) <= 2 and len(drawn_in) <= 2


# --- 9. a port that is not Dask's -------------------------------------------------------------

@pytest.mark.slow  # subprocesses and waits of several seconds
def test_a_plain_http_port_as_scheduler_exits_2_within_30_s(capsys):
    pytest.importorskip("distributed")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        code = main(["run", *CORRECT, "--samples", "1000", "--quiet", "--backend", "dask", "--scheduler",
                     f"tcp://127.0.0.1:{server.server_address[1]}"])
    finally:
        server.shutdown()
        server.server_close()
    assert code == 2
    assert "Dask" in capsys.readouterr().err


@pytest.mark.slow  # a scheduler and a worker in subprocesses, killed mid-run (~30 s)
def test_losing_the_dask_scheduler_is_never_a_finding(tmp_path):
    pytest.importorskip("distributed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, **ENV}
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", str(port), "--dashboard-address", ":0"], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", f"tcp://127.0.0.1:{port}",
                               "--nthreads", "1", "--no-dashboard"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        time.sleep(6)
        args = ["run", "--mechanism", "tests.plugins.slow:slow", *PAIR, "--epsilon", "1", "--samples", "6000000",
                "--quiet"]
        run = subprocess.Popen([sys.executable, "-m", "audit", *args, "--backend", "dask", "--scheduler",
                                f"tcp://127.0.0.1:{port}", "--out", str(tmp_path / "dask")], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        checkpoint = tmp_path / "dask" / "checkpoint.jsonl"
        deadline = time.time() + 90
        while time.time() < deadline and not (checkpoint.exists() and len(checkpoint.read_text().splitlines()) >= 2):
            time.sleep(0.05)
        scheduler.kill()
        _, err = run.communicate(timeout=240)
    finally:
        scheduler.kill()
        worker.kill()
        scheduler.wait()
        worker.wait()
    assert run.returncode in (0, 3), err
    assert "Traceback" not in err, err  # distributed's reconnect errors are muted: one line of ours
    if run.returncode == 3:
        assert len(err.strip().splitlines()) == 1, err
        assert err.startswith("error: environment failure: ") and "lost the Dask scheduler" in err
    else:  # the run finished elsewhere: then with exactly the numbers of a local run
        assert main([*args, "--out", str(tmp_path / "local")]) == 0
        assert records(tmp_path / "dask") == records(tmp_path / "local")


# --- 10. smaller ones -------------------------------------------------------------------------

def _results(finished):
    return json.loads((finished / "results.json").read_text())


@pytest.mark.parametrize("edit,message", [
    (lambda p: json.dumps(p).replace('"seconds": ', '"seconds": NaN, "x": ', 1), "NaN"),
    (lambda p: json.dumps({**p, "confidence": 1.5}), "confidence"),
    (lambda p: json.dumps(p).replace('"D": [', '"D": [-', 1), "counts"),
    (lambda p: json.dumps(p)[:-1] + ', "seed": 3}', "duplicate key"),
    (lambda p: json.dumps({**p, "as_expected": not p["as_expected"]}), "as_expected"),
], ids=["nan", "confidence-out-of-range", "negative-count", "duplicate-key", "inconsistent-as-expected"])
def test_the_results_loader_refuses_what_it_cannot_read_faithfully(finished, tmp_path, edit, message, capsys):
    (tmp_path / "r.json").write_text(edit(_results(finished)))
    assert main(["summary", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_progress_lines_come_on_time_even_while_a_chunk_is_running(capsys):
    progress = Progress("log", 100, "slow-chunks", every=0.2)
    time.sleep(0.7)  # no chunk finished: the timer still reports
    progress.close()
    err = capsys.readouterr().err
    assert err.count("[dpaudit] slow-chunks: 0/100 samples") >= 2


@pytest.mark.slow  # chunks of 3 s each: the first line must not wait for them (~15 s)
def test_a_progress_line_comes_while_a_slow_chunk_is_still_running(tmp_path):
    """In a log, the timer thread prints while the first chunk is still drawing: the line says no
    sample is done yet.  (No clock is read here: the chunk blocks until the process is killed.)"""
    proc = subprocess.Popen([sys.executable, "-m", "audit", "run", "--mechanism", "tests.plugins.hostile:stalled",
                             *PAIR, "--samples", "100000"], cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(proc.stderr.readline()), daemon=True)
    reader.start()
    reader.join(timeout=600)  # a guard against a silent log, far beyond the 5 s interval
    proc.kill()
    proc.communicate()
    assert lines and lines[0].startswith("[dpaudit] ") and " 0/" in lines[0], lines


# --- fuzz: the config and results loaders ----------------------------------------------------

FUZZ_FAST, FUZZ_SLOW = 100, 2000
BASE_CONFIG = {
    "run": {"samples": 5000, "seed": 1, "confidence": 0.9, "deltas": [0.0], "events": "auto", "sequential": False},
    "scenario": [{"name": "rr", "mechanism": "randomized-response", "params": {"epsilon": 1.0},
                  "expected": {"user/claim": "pass"}, "samples_factor": 1.0,
                  "data": {"columns": {"bit": [0]}}, "neighbour": {"add": {"bit": 1}},
                  "claim": [{"epsilon": 1.0, "delta": 0.0, "id": "user/claim"}]}],
}
REQUIRED = {("scenario",), ("scenario", 0), ("scenario", 0, "name"), ("scenario", 0, "mechanism"),
            ("scenario", 0, "data"), ("scenario", 0, "neighbour"), ("scenario", 0, "data", "columns"),
            ("scenario", 0, "neighbour", "add"), ("scenario", 0, "claim", 0, "epsilon"),
            ("scenario", 0, "neighbour", "add", "bit"), ("scenario", 0, "params", "epsilon")}


def toml(value, top=False):
    """A minimal TOML writer: every table inline, every key quoted."""
    if top:
        return "".join(f"{json.dumps(k)} = {toml(v)}\n" for k, v in value.items())
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if value != value else ("inf" if value == math.inf else "-inf" if value == -math.inf
                                            else repr(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml(v)}" for k, v in value.items()) + "}"


def paths_of(doc, prefix=()):
    out = [prefix] if prefix else []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else []
    for key, value in items:
        out += paths_of(value, (*prefix, key))
    return out


def node(doc, path):
    for key in path:
        doc = doc[key]
    return doc


scalars = st.one_of(st.integers(-10**6, 10**19), st.floats(), st.text(max_size=12), st.booleans())
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6).map("x_".__add__), inner, max_size=3)),
    max_leaves=10)
unknown_tables = st.dictionaries(st.text(max_size=6).map("x_".__add__), values, min_size=1, max_size=3)


@st.composite
def mutated_configs(draw):
    """(TOML text, certainly invalid?) from the base config with one to three edits."""
    doc, invalid = copy.deepcopy(BASE_CONFIG), False
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths_of(doc)))
        parent, key = node(doc, path[:-1]), path[-1]
        op = draw(st.sampled_from(["replace", "table", "delete", "add"]))
        in_columns = "columns" in path
        if op == "replace":
            parent[key] = draw(values)
        elif op == "table":  # a table of unknown keys where something else belongs
            parent[key] = draw(unknown_tables)
            invalid = not in_columns
        elif op == "delete" and isinstance(parent, dict):
            del parent[key]
            invalid = path in REQUIRED
        elif op == "add" and isinstance(node(doc, path), dict):
            node(doc, path)[draw(st.text(max_size=6).map("x_".__add__))] = draw(values)
            invalid = not in_columns
        if invalid:  # later edits could repair it: stop while the oracle is certain
            break
    return toml(doc, top=True), invalid


garbage = st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode))


def quiet_main(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, err.getvalue()


def _check_config(case, folder):
    text, invalid = case if isinstance(case, tuple) else (case, True)
    path = Path(folder) / "fuzz.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    code, err = quiet_main(["run", str(path), "--samples", "200", "--jobs", "1", "--quiet"])
    assert code in (0, 1, 2), (code, err, text)  # 3 would be a crash of ours on a config
    if invalid:
        assert code == 2, (code, err, text)
    if code == 2:
        assert err.startswith("error: ") and "Traceback" not in err


@settings(max_examples=FUZZ_FAST, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.one_of(mutated_configs(), garbage))
def test_fuzz_config_loader_fast(case):
    with tempfile.TemporaryDirectory() as folder:
        _check_config(case, folder)


@pytest.mark.slow  # 2,000 generated configs (~5 min)
@settings(max_examples=FUZZ_SLOW, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.one_of(mutated_configs(), garbage))
def test_fuzz_config_loader(case):
    with tempfile.TemporaryDirectory() as folder:
        _check_config(case, folder)


def _results_base():
    """One real results.json (a small run), built once per process for the fuzz."""
    if not hasattr(_results_base, "payload"):
        with tempfile.TemporaryDirectory() as folder:
            code, _ = quiet_main(["run", *CORRECT, "--samples", "20000", "--quiet", "--out", f"{folder}/r"])
            assert code == 0
            _results_base.payload = json.loads(Path(f"{folder}/r/results.json").read_text())
    return copy.deepcopy(_results_base.payload)


TYPED = {"seed", "samples", "confidence", "seconds", "delta", "epsilon_lower", "verdict", "finding", "as_expected",
         "records", "scenarios", "scenario", "mechanism", "relation", "pair", "estimate", "bounds", "counts"}
REQUIRED_RESULTS = {"records", "scenarios", "seed", "samples", "confidence", "as_expected", "verdict", "finding",
                    "estimate", "bounds", "relation", "scenario", "mechanism", "pair", "delta"}


@st.composite
def mutated_results(draw):
    """(JSON text, certainly invalid?) from a real results.json with one to three edits."""
    doc, invalid, raw, done = _results_base(), False, None, []
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths_of(doc)))
        parent, key = node(doc, path[:-1]), path[-1]
        op = draw(st.sampled_from(["replace", "wrong-type", "negative", "delete", "nan", "confidence"]))
        done.append((op, path))
        unread = {"params", "environment", "claims"} & set(path) or "event" in path[:-1]  # not read by any report
        typed = key in TYPED and not unread
        if op == "replace":
            parent[key] = draw(values)
        elif op == "wrong-type" and typed:
            parent[key] = draw(unknown_tables)
            invalid = True
        elif op == "negative" and "counts" in path and isinstance(parent[key], int):
            parent[key] = -1 - draw(st.integers(0, 10))
            invalid = True
        elif op == "delete" and isinstance(parent, dict):
            del parent[key]
            invalid = key in REQUIRED_RESULTS and not unread and "event" not in path
        elif op == "confidence" and key == "confidence" and not unread and "event" not in path:
            parent[key] = draw(st.one_of(st.floats(max_value=0.4999), st.floats(min_value=1.0)))
            invalid = True
        elif op == "nan":
            raw = "NaN"
        if invalid or raw:  # later edits could repair it: stop while the oracle is certain
            break
    text = json.dumps(doc, allow_nan=True)
    if raw:  # a NaN token where a number was: not JSON
        text = text.replace('"seconds": ', '"seconds": NaN, "_": ', 1) if '"seconds": ' in text else text + "x"
        invalid = True
    return text, invalid, done


def _check_results(case, folder):
    text, invalid, edits = case if isinstance(case, tuple) else (case, True, "garbage")
    path = Path(folder) / "results.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    code, err = quiet_main(["summary", str(path)])
    assert code in (0, 1, 2), (code, err, edits)
    if invalid:
        assert code == 2, (code, err, edits)
    if code == 2:
        assert err.startswith("error: ") and "Traceback" not in err


@pytest.mark.slow  # over 4 s in the fast tier (issue #12: the fast tier within 180 s)
@settings(max_examples=FUZZ_FAST, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.one_of(mutated_results(), garbage))
def test_fuzz_results_loader_fast(case):
    with tempfile.TemporaryDirectory() as folder:
        _check_results(case, folder)


@pytest.mark.slow  # 2,000 generated results files (~1 min)
@settings(max_examples=FUZZ_SLOW, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.one_of(mutated_results(), garbage))
def test_fuzz_results_loader(case):
    with tempfile.TemporaryDirectory() as folder:
        _check_results(case, folder)


def _check_report(case, folder):
    text, invalid, edits = case
    path = Path(folder) / "results.json"
    path.write_text(text)
    code, err = quiet_main(["report", str(path), "-o", str(Path(folder) / "r.pdf")])
    assert code in (0, 2), (code, err, edits)  # a file the loader accepts, the report can draw
    if invalid:
        assert code == 2, (code, err, edits)


@pytest.mark.slow  # the PDF of 60 generated results files (~2 min)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated_results())
def test_fuzz_report_of_accepted_results(case):
    with tempfile.TemporaryDirectory() as folder:
        _check_report(case, folder)
