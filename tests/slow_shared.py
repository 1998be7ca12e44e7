"""Fixtures the slow tier's files share (kept out of tests/conftest.py, which the fast tier owns).

:func:`kl_family_at_1e5_fixture` (the fixture ``kl_family_at_1e5``): one run of the KL family, read by
every test that asked for that run.

:func:`one_torch_thread`: torch's intra-op pool left at its default (one thread per core) makes every
small tensor operation of a training step a parallel region; on two cores with two pytest-xdist workers
(or any other load) those threads spin waiting for each other.  Measured on the Opacus pipeline audit
(the CHEAP setting, m = 1000, T = 200, one run, load average ~8): 15-18 CPU s with torch's default of 2
threads, 1.5 CPU s with one.  The audits' results do not depend on it (the same seeded draws, in order).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """torch on one intra-op thread for the module's tests; the previous count is restored after."""
    torch = pytest.importorskip("torch", reason="the opacus extra is not installed (CI installs it: .ci/run)")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@dataclass(frozen=True)
class SharedRun:
    """One in-process ``python -m audit run ... --out DIR`` shared by several tests (they only read it)."""

    returncode: int
    stdout: str
    stderr: str
    out: Path


def shared_run(tmp_path_factory: pytest.TempPathFactory, name: str, *args: str) -> SharedRun:
    """``run *args --out DIR`` (without the PDF: the report tests render the default run's) once per
    test session: under pytest-xdist the first worker to need it runs it under an exclusive lock in
    the session's common temporary folder and the others read what it left (as tests/conftest.py's
    ``default_suite_run``).  A run that wrote no results.json is not shared: the next caller tries again."""
    from dpaudit import reports
    from tests.clirun import in_process

    common = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        common = common.parent  # one per session, shared by its workers
    out, record = common / f"shared-{name}", common / f"shared-{name}.json"
    with open(common / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            out.mkdir(exist_ok=True)
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(reports, "write_pdf", lambda payload, path, sweeps=(), **_: None)
                run = in_process("run", *args, "--out", out)
            found = {"returncode": run.returncode, "stdout": run.stdout, "stderr": run.stderr}
            if (out / "results.json").exists():
                record.write_text(json.dumps(found))
        else:
            found = json.loads(record.read_text())
    return SharedRun(**found, out=out)


@pytest.fixture(scope="session", name="kl_family_at_1e5")
def kl_family_at_1e5_fixture(tmp_path_factory: pytest.TempPathFactory) -> SharedRun:
    """The KL family at ``--samples 1e5`` (one job, quiet): a budget that misses Theorem 1's witness
    row 1 (about 3e6 per side) and kl-rlhf-addremove, so the run exits 1 and computes its MISSED notes
    (the planner's pilots, ~90 CPU s).  Read by tests/test_cli.py and tests/test_voice.py, which
    until issue 45 ran it three times (once at 2e5)."""
    return shared_run(tmp_path_factory, "kl-1e5", "--samples", "1e5", "--family", "kl", "--quiet", "--jobs", "1")
