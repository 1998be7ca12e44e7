"""The command line run in the test process: ``dpaudit.cli.main`` with its output captured, and
what a killed run leaves in its folder."""

import contextlib
import io
from dataclasses import dataclass

from pytest import MonkeyPatch

from dpaudit.cli import main


@dataclass(frozen=True)
class CliRun:
    """What one in-process ``python -m audit ...`` returned and printed (the fields of a
    ``subprocess.CompletedProcess`` the tests read)."""

    returncode: int
    stdout: str
    stderr: str


def in_process(*args: object) -> CliRun:
    """``python -m audit *args`` without a new interpreter (about 2 s saved per call)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse's usage errors, --help and --version
            code = exc.code if isinstance(exc.code, int) else 2
    return CliRun(code, out.getvalue(), err.getvalue())


def killed_after(folder, keep: int) -> None:
    """Make ``folder`` what a kill after ``keep`` checkpoint lines leaves: the lines, no results."""
    checkpoint = folder / "checkpoint.jsonl"
    checkpoint.write_text("".join(line + "\n" for line in checkpoint.read_text().splitlines()[:keep]))
    for name in ("results.json", "summary.txt", "report.pdf"):
        (folder / name).unlink(missing_ok=True)


def skip_report_pdf(patch: MonkeyPatch) -> None:
    """``run --out`` in this test process skips report.pdf, as it does without the [report] extra: for
    tests that read results.json, the checkpoint, summary.txt, the exit status or the output and never
    the PDF (tests/test_report*.py test it), where drawing it was most of each run's CPU time."""
    patch.setattr("dpaudit.cli.run.write_report", lambda final, path: False)
