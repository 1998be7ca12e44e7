"""Issue #29, plumbing and trust: a user's fault is exit 2 naming the part, never a false finding,
never "internal error … please report it"; files are only regular files; saved verdicts are
recomputed.  Each case of the hostile sweep has a test with the exit status the issue states."""

import importlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from dpaudit.core import InputError
from dpaudit.engine.estimate import audit_samples
from tests.clirun import in_process, killed_after

ROOT = Path(__file__).resolve().parents[1]
PAIR = ["--pair", "tests.plugins.user_mechanisms:pair"]
CORRECT = ["--mechanism", "tests.plugins.user_mechanisms:correct", *PAIR, "--epsilon", "1"]


@contextmanager
def deadline(seconds):
    """Fail instead of hanging (a FIFO opened for reading blocks until a writer comes)."""
    def expired(signum, frame):
        raise AssertionError(f"still running after {seconds} s: a hang")
    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def refused(result, *fragments):
    """Exit 2, one line, no traceback, naming every fragment."""
    assert result.returncode == 2, result.stderr
    err = result.stderr
    assert err.startswith("error: ") and "Traceback" not in err and "please report" not in err, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


# --- resume after the mechanism's code changed -------------------------------------------------

PLUGIN = '''
import numpy as np

EPS = 3


class Lap:
    name = "plug-laplace"

    def sample(self, data, size, rng):
        return np.round(float(np.sum(data)) + rng.laplace(0.0, 1.0 / EPS, size), 3)


mech = Lap()
pair = (np.array([0.0, 1.0]), np.array([0.0, 1.0, 1.0]))
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A plugin module ``plugmod`` (Laplace with scale 1/EPS, EPS = 3: leaky against a claim of 1)
    in its own folder on sys.path; yields (module file, import hook that re-imports it fresh)."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    path = folder / "plugmod.py"
    path.write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # an edit within one second must not hit a stale .pyc

    def fresh():
        sys.modules.pop("plugmod", None)
        importlib.invalidate_caches()

    fresh()
    yield path, fresh
    fresh()


@pytest.mark.parametrize("edit", [("EPS = 3", "EPS = 1"),
                                  ("1.0 / EPS, size), 3)", "1.0, size), 3)")],
                         ids=["module-constant", "sample-body"])
def test_a_resume_whose_mechanism_code_changed_is_refused(plugin, tmp_path, edit, no_report_pdf):
    path, fresh = plugin
    out = tmp_path / "run"
    args = ["run", "--mechanism", "plugmod:mech", "--pair", "plugmod:pair", "--epsilon", "1", "--samples", "1000000",
            "--quiet"]
    first = in_process(*args, "--out", out)
    assert first.returncode == 1, first.stderr  # EPS = 3: a real finding
    killed_after(out, 3)
    path.write_text(path.read_text().replace(*edit))
    fresh()
    resumed = in_process("run", "--resume", out, "--allow-plugin", "plugmod", "--quiet")
    refused(resumed, "mechanism's code changed", "plugmod")
    assert not (out / "results.json").exists() and len((out / "checkpoint.jsonl").read_text().splitlines()) == 3
    fresh()
    path.write_text(path.read_text().replace(edit[1], edit[0]))  # the code it started with: resumes
    assert in_process("run", "--resume", out, "--allow-plugin", "plugmod", "--quiet").returncode == 1


@pytest.mark.slow  # a real kill of a subprocess mid-run (~20 s)
def test_a_killed_run_whose_module_was_edited_is_not_resumed(tmp_path):
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "plugmod.py").write_text(textwrap.dedent(PLUGIN).replace(
        "    def sample(self, data, size, rng):\n",
        "    def sample(self, data, size, rng):\n        import time\n        time.sleep(0.3)\n"))
    env = {"PYTHONPATH": f"{folder}:{ROOT}", "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "audit", "run", "--mechanism", "plugmod:mech", "--pair",
                             "plugmod:pair", "--epsilon", "1", "--samples", "3000000", "--jobs", "1", "--quiet",
                             "--out", str(out)], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    checkpoint = out / "checkpoint.jsonl"
    try:
        for _ in range(1200):
            if checkpoint.exists() and len(checkpoint.read_text().splitlines()) >= 6:
                break
            proc.wait(timeout=0.1) if proc.poll() is not None else None
            import time
            time.sleep(0.1)
    finally:
        proc.kill()
        proc.wait()
    assert not (out / "results.json").exists() and len(checkpoint.read_text().splitlines()) >= 6
    module = folder / "plugmod.py"
    module.write_text(module.read_text().replace("EPS = 3", "EPS = 1"))
    resumed = subprocess.run([sys.executable, "-m", "audit", "run", "--resume", str(out), "--allow-plugin",
                              "plugmod"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 2, resumed.stderr
    assert "mechanism's code changed" in resumed.stderr and "plugmod" in resumed.stderr


def test_a_resumed_folder_imports_no_plugin_the_command_line_did_not_allow(plugin, tmp_path, no_report_pdf):
    """A run folder someone sent: its run.json names ``plugmod``, whose import has a side effect
    (here a marker file).  Resuming needs --allow-plugin plugmod, as a config's plugin does."""
    path, fresh = plugin
    marker = tmp_path / "imported"
    path.write_text(path.read_text() + f"\nopen({str(marker)!r}, 'w').close()\n")
    out = tmp_path / "sent"
    assert in_process("run", "--mechanism", "plugmod:mech", "--pair", "plugmod:pair", "--epsilon", "1", "--samples",
                      "2000", "--quiet", "--out", out).returncode == 1
    killed_after(out, 0)
    fresh()
    marker.unlink()
    for allowed in ([], ["--allow-plugin", "plug"], ["--allow-plugin", "tests.plugins"]):
        refused(in_process("run", "--resume", out, "--quiet", *allowed), "--allow-plugin plugmod")
        assert "plugmod" not in sys.modules and not marker.exists()  # refused before any import
    assert in_process("run", "--resume", out, "--quiet", "--allow-plugin", "plugmod").returncode == 1
    assert marker.exists()


# --- read-only inputs ---------------------------------------------------------------------------

@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_mechanism_that_writes_to_its_dataset_is_named(jobs):
    """The in-place drift of the sweep (data -= 5 on every call): exit 0 at a bound about no named
    pair before; now the first write stops the run, in process and in worker processes."""
    result = in_process("run", "--mechanism", "tests.plugins.misbehaving:mutates", *PAIR, "--epsilon", "1",
                        "--samples", "600000", "--jobs", jobs, "--quiet")
    refused(result, "mechanism 'mutates-dataset' wrote to its dataset", "read-only")


def test_a_mechanism_that_changes_a_list_dataset_is_named():
    result = in_process("run", "--mechanism", "tests.plugins.misbehaving:mutates_list", "--pair",
                        "tests.plugins.hostile29_pairs:list_pair", "--epsilon", "1", "--samples", "2000", "--quiet")
    refused(result, "mechanism 'mutates-list' changed its datasets")


def test_a_correct_mechanism_still_passes_on_read_only_data():
    """The twin of the two above: read-only views change nothing for a mechanism that only reads."""
    assert in_process("run", *CORRECT, "--samples", "200000", "--quiet").returncode == 0


# --- one classification: the user's fault is exit 2 naming the part ----------------------------

MISBEHAVING = {
    "generator_exits": "raised GeneratorExit while sampling",
    "no_columns": "output shape = (",
    "bad_array": "cannot be read as an array of outputs (RuntimeError: cannot be an array)",
    "raising_name": "reading its name raised RuntimeError: no name today",
    "junk_guarantees": "guarantees returned 42",
    "junk_guarantee_items": "guarantees returned 'one'",
    "string_exact": "exact_epsilon returned '1.0' (str)",
    "counts_exit": "sample_counts called sys.exit(0)",
}


@pytest.mark.parametrize("name", MISBEHAVING)
def test_a_misbehaving_mechanism_is_exit_2_naming_it(name):
    result = in_process("run", "--mechanism", f"tests.plugins.misbehaving:{name}", *PAIR, "--samples", "2000",
                        "--jobs", "1", "--quiet")
    refused(result, MISBEHAVING[name])


def test_a_module_attribute_that_raises_is_exit_2():
    result = in_process("run", "--mechanism", "tests.plugins.raises_on_attribute:x", *PAIR, "--samples", "2000")
    refused(result, "raised RuntimeError: attribute x exploded")


@pytest.mark.slow  # starts a local Dask cluster (~15 s)
def test_dask_with_a_mechanism_of_empty_rows_is_exit_2():
    pytest.importorskip("distributed")
    result = in_process("run", "--mechanism", "tests.plugins.misbehaving:no_columns", *PAIR, "--samples", "2000",
                        "--backend", "dask", "--jobs", "1", "--quiet")
    refused(result, "output shape = (")


def _loop(t):
    (t / "loop").symlink_to(t / "loop")
    return t / "loop"


def _sysfs(t):
    if os.geteuid() == 0:
        return "/sys/dpaudit-out"
    locked = t / "locked"
    locked.mkdir(mode=0o500)
    return locked / "out"


@pytest.mark.parametrize("args,fragment", [
    (lambda t: ["run", _loop(t), "--quiet"], "Too many levels of symbolic links"),
    (lambda t: ["summary", _loop(t)], "Too many levels of symbolic links"),
    (lambda t: ["run", "--mechanism", "laplace", "--param", "epsilon=1", "--data", _loop(t), "--data-prime",
                t / "loop", "--quiet"], "Too many levels of symbolic links"),
    (lambda t: ["run", *CORRECT, "--out", _loop(t), "--samples", "1000", "--quiet"], "is not a folder"),
    (lambda t: ["run", *CORRECT, "--out", f"{t}/a\0b", "--samples", "1000", "--quiet"], "NUL byte"),
    (lambda t: ["run", f"{t}/a\0b.toml", "--quiet"], "NUL byte"),
    (lambda t: ["summary", f"{t}/a\0b.json"], "NUL byte"),
    (lambda t: ["run", f"{t}/{'x' * 4000}.toml", "--quiet"], "longer than 255 bytes"),
    (lambda t: ["run", *CORRECT, "--out", f"{t}/{'x' * 4000}", "--samples", "1000", "--quiet"], "longer than 255"),
    (lambda t: ["run", *CORRECT, "--out", "/".join([str(t)] + ["y" * 200] * 21), "--quiet"], "a path has at most"),
    (lambda t: ["report", t / "r.json", "-o", f"{t}/{'x' * 4000}.pdf"], "longer than 255 bytes"),
    (lambda t: ["sweep", "kl-mab", "--n", "10", "--samples", "1000", "--out", _sysfs(t)], "sweep --out"),
    (lambda t: ["run", "--mechanism", "tests.plugins.user_mechanisms:correct", *PAIR, "--delta", "5", "--samples",
                "1000", "--quiet"], "--delta 5.0 goes with --epsilon"),
    (lambda t: ["run", "--delta", "5", "--samples", "1000", "--quiet"], "--delta"),
    (lambda t: ["run", "--resume", "", "--quiet"], "argument --resume: '' is empty"),
    (lambda t: ["run", *CORRECT, "--out", "", "--quiet"], "argument --out: '' is empty"),
    (lambda t: ["run", *CORRECT, "--out", "/", "--samples", "1000", "--quiet"], "root of the file system"),
    (lambda t: ["run", "--mechanism", "tests.plugins.user_mechanisms:correct", "--pair",
                "tests.plugins.hostile29_pairs:none_pair", "--samples", "1000", "--quiet"], "pair = (None, None)"),
], ids=["loop-config", "loop-summary", "loop-data", "loop-out", "nul-out", "nul-config", "nul-summary",
        "long-config", "long-out", "long-path", "long-report", "sweep-unwritable", "delta-without-epsilon",
        "delta-with-suite", "resume-empty", "out-empty", "out-root", "pair-none"])
def test_bad_paths_and_flags_are_exit_2(tmp_path, args, fragment):
    (tmp_path / "r.json").write_text("{}")
    refused(in_process(*args(tmp_path)), fragment)


def test_report_into_an_existing_folder_is_exit_2(tmp_path, finished):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    result = in_process("report", finished, "-o", folder)
    refused(result, "report -o", "is a folder")
    assert "wrote" not in result.stdout and folder.is_dir()


def test_a_non_empty_folder_holding_no_run_is_refused_unless_overwrite(tmp_path, no_report_pdf):
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "thesis.tex").write_text("precious")
    refused(in_process("run", *CORRECT, "--samples", "1000", "--quiet", "--out", folder), "is not empty (thesis.tex)")
    assert sorted(p.name for p in folder.iterdir()) == ["thesis.tex"]  # no .lock left behind
    assert in_process("run", *CORRECT, "--samples", "1000", "--quiet", "--out", folder, "--overwrite").returncode == 0
    assert (folder / "thesis.tex").read_text() == "precious" and (folder / "results.json").is_file()
    failed = tmp_path / "failed-before"  # only a run's own error.log (a start that failed): not someone else's
    failed.mkdir()
    (failed / "error.log").write_text("Traceback ...")
    assert in_process("run", *CORRECT, "--samples", "1000", "--quiet", "--out", failed).returncode == 0


def test_pytest_dp_samples_beyond_the_maximum_is_a_usage_error():
    from dpaudit.testing.pytest_plugin import _samples
    with pytest.raises(pytest.UsageError, match="too large"):
        _samples("1e30")
    with pytest.raises(pytest.UsageError, match=r"in \[100, 1e\+18\]"):
        _samples(str(10**18 + 1))
    assert _samples("1e18") == 10**18


# --- audit_samples validates where input enters -------------------------------------------------

@pytest.mark.parametrize("x,y,kwargs,field", [
    ([[1.0, 2.0], [3.0]], [1.0, 2.0, 3.0], {}, "x: a list that cannot be read"),
    ([1.0, 2.0], [1.0, 2.0], {}, "x length = 2"),
    (np.zeros(2), np.zeros(20_000), {}, "x length = 2"),
    (np.zeros((100, 0)), np.zeros((100, 0)), {}, "x output shape = (100, 0)"),
    (np.zeros((20, 50_000)), np.zeros((20, 50_000)), {}, "x output shape = (20, 50000)"),
    (np.arange(1000.0), np.arange(1000.0), {"seed": -1}, "seed = -1"),
    (np.arange(1000.0), np.arange(1000.0), {"seed": 1.5}, "seed = 1.5"),
], ids=["ragged", "two-elements", "2-vs-20000", "n-by-0", "50000-wide", "seed-minus-1", "seed-1.5"])
def test_audit_samples_refuses_bad_input_naming_the_field(x, y, kwargs, field):
    with pytest.raises(InputError) as caught:
        audit_samples(x, y, **kwargs)
    assert field in str(caught.value)


def test_audit_samples_accepts_the_smallest_valid_input():
    est = audit_samples(np.arange(10.0), np.arange(10.0) + 100)
    assert est.epsilon_lower >= 0


# --- files: regular files only, writes checked ----------------------------------------------------

@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("plumbing") / "run"
    assert in_process("run", *CORRECT, "--samples", "20000", "--quiet", "--out", out).returncode == 0
    return out


def _device(folder):
    """A character device node of our own (1, 7: the kernel's 'full' device) in a temporary folder."""
    node = folder / "full"
    try:
        os.mknod(node, 0o600 | stat.S_IFCHR, os.makedev(1, 7))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here ({exc})")
    return node


def test_report_onto_a_device_node_leaves_the_device_and_exits_2(tmp_path, finished):
    node = _device(tmp_path)
    result = in_process("report", finished, "-o", node)
    refused(result, str(node), "not a regular file")
    assert stat.S_ISCHR(os.lstat(node).st_mode) and "wrote" not in result.stdout


def test_a_checkpoint_that_is_a_device_node_is_refused(tmp_path, finished):
    copy = tmp_path / "run"
    shutil.copytree(finished, copy, ignore=shutil.ignore_patterns(".lock"))
    (copy / "checkpoint.jsonl").unlink()
    _device(copy).rename(copy / "checkpoint.jsonl")
    (copy / "results.json").unlink()
    result = in_process("run", "--resume", copy, "--allow-plugin", "tests.plugins", "--quiet")
    assert result.returncode == 2 and "not a regular file" in result.stderr, result.stderr
    assert stat.S_ISCHR(os.lstat(copy / "checkpoint.jsonl").st_mode)


@pytest.fixture
def tiny_disk(tmp_path):
    """A 48 KiB tmpfs (root only): a full disk of our own."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_a_write_that_runs_out_of_space_exits_3_naming_the_path(tiny_disk, finished):
    # with its report.pdf (no no_report_pdf): the PDF may be what fills the disk
    result = in_process("run", *CORRECT, "--samples", "200000", "--quiet", "--out", tiny_disk / "run")
    assert result.returncode == 3, result.stderr
    assert "No space left on device" in result.stderr and str(tiny_disk / "run") in result.stderr
    assert "Traceback" not in result.stderr
    (tiny_disk / "run" / "error.log").unlink(missing_ok=True)
    big = json.loads((finished / "results.json").read_text())
    # larger than the disk (trailing white space: the closed schema refuses an unknown key): the PDF's and
    # the rename's failure, not ours
    (tiny_disk.parent / "big.json").write_text(json.dumps(big) + " " * 100_000)
    report = in_process("report", tiny_disk.parent / "big.json", "-o", tiny_disk / "r.pdf")
    if report.returncode == 3:  # the PDF did not fit: no 'wrote' line, the path named
        assert "wrote" not in report.stdout and str(tiny_disk / "r.pdf") in report.stderr
    else:
        assert report.returncode == 0 and (tiny_disk / "r.pdf").read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder"])
@pytest.mark.parametrize("command", ["config", "summary", "data"])
def test_inputs_must_be_regular_files_and_are_refused_at_once(tmp_path, kind, command):
    if kind == "fifo":
        target = tmp_path / "pipe"
        os.mkfifo(target)
    elif kind == "dev-zero":
        target = Path("/dev/zero")
    else:
        target = tmp_path
    args = {"config": ["run", target, "--quiet"], "summary": ["summary", target],
            "data": ["run", "--mechanism", "laplace", "--param", "epsilon=1", "--data", target, "--data-prime",
                     target, "--samples", "1000", "--quiet"]}[command]
    with deadline(30):
        result = in_process(*args)
    assert result.returncode == 2, result.stderr
    assert "regular file" in result.stderr or "folder" in result.stderr, result.stderr


def test_a_config_beyond_the_size_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr("dpaudit.runtime.files.MAX_INPUT_BYTES", 1000)
    path = tmp_path / "big.toml"
    path.write_text("# padding\n" * 200)
    refused(in_process("run", path, "--quiet"), "is 2000 bytes: at most 1000 are read")


# --- summary and report recompute ---------------------------------------------------------------

def _exact_pass(payload):
    rec = payload["records"][0]
    rec.update(epsilon_exact=5.0, exact_verdict="pass")


def _lower_contradicted(payload):
    rec = payload["records"][0]
    rec["epsilon_lower"] = rec["event"]["epsilon_lower"] = 0.5
    rec["slack"], rec["tightness"] = rec["epsilon_claim"] - 0.5, 0.5


def _huge_integer(payload):
    return json.dumps(payload).replace('"seed": 0', '"seed": 1' + "0" * 400, 1)


@pytest.mark.parametrize("edit,fragment", [
    (_exact_pass, "records[0].exact_verdict = 'pass' contradicts the record's own numbers: epsilon_exact 5 is above"),
    (_lower_contradicted, "records[0].event.epsilon_lower = 0.5 contradicts the record's own numbers: its counts give"),
    (_huge_integer, "seed: 1000"),
], ids=["exact-pass-above-claim", "lower-contradicted", "integer-10-400"])
@pytest.mark.parametrize("command", ["summary", "report"])
def test_saved_records_are_recomputed_and_refused_when_they_disagree(finished, tmp_path, edit, fragment, command):
    payload = json.loads((finished / "results.json").read_text())
    text = edit(payload) or json.dumps(payload)
    (tmp_path / "r.json").write_text(text)
    args = ["summary", tmp_path / "r.json"] if command == "summary" else ["report", tmp_path / "r.json", "-o",
                                                                         tmp_path / "r.pdf"]
    result = in_process(*args)
    refused(result, fragment)
    assert not (tmp_path / "r.pdf").exists()


def test_an_untouched_results_file_is_read_back(finished):
    """The twin of the refusals above: the recomputation agrees with what a run wrote."""
    assert in_process("summary", finished).returncode == 0


# --- also seen ----------------------------------------------------------------------------------

def test_plan_returns_where_the_bisection_used_to_stall():
    with deadline(300):
        result = in_process("plan", "rr", "--samples", "1000", "--epsilon", "0.5", "--jobs", "1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("samples_per_side=")


def test_the_bisection_narrows_on_any_interval():
    from dpaudit.engine.plan import _smallest
    for threshold in (101, 102, 150, 10**6 + 7):  # exact near low, within the 1 % tolerance above
        found = _smallest(lambda n, t=threshold: n >= t, low=100, high=10**7)
        assert threshold <= found <= threshold * 1.01
