"""A mechanism that raises is shown at its own code (issue 41, item 18): the one-line error names the
innermost frame of the user's file, and with ``--out`` the user's frames of the traceback (only
theirs: no dpaudit, numpy or joblib frame) are in DIR/error.log, whose path the line gives.

The command runs in this process (``dpaudit.cli.main``) from the user's folder: what is checked is the
message and the log, which the supervisor passes through unchanged (its exit 2 for a failing mechanism is
tests/test_hostile.py's); ~1.2 CPU s of a new interpreter and its supervisor saved per run."""

import sys
import textwrap

import pytest

from tests.clirun import in_process

MECHANISM = textwrap.dedent("""\
    import numpy as np


    def helper(x):
        return np.asarray(x).reshape(-1, 7)  # numpy raises inside: its frames are not the user's


    class Raises:
        name = "raises"

        def sample(self, data, size, rng):
            return helper(rng.normal(size=size))


    RAISES = Raises()
    """)
PAIR = "import numpy as np\nPAIR = (np.array([0.0]), np.array([0.0, 1.0]))\n"


@pytest.fixture
def user_folder(tmp_path, monkeypatch):
    """The working folder, holding the user's modules; they leave ``sys.modules`` after the test (the
    next test's folder holds its own files of the same names)."""
    (tmp_path / "mymech.py").write_text(MECHANISM)
    (tmp_path / "mypair.py").write_text(PAIR)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in ("mymech", "mypair"):
        sys.modules.pop(name, None)


def run(folder, *extra):
    assert folder.samefile(".")  # the user's folder is the working folder (user_folder)
    return in_process("run", "--mechanism", "mymech:RAISES", "--pair", "mypair:PAIR", "--samples", "2000", "--quiet",
                      *extra)


# with two workers joblib sends the worker's traceback back as text: read from it (a pool's start: slow tier)
@pytest.mark.parametrize("jobs", ["1", pytest.param("2", marks=pytest.mark.slow)])
def test_the_error_names_the_users_line_and_the_log_holds_only_the_users_frames(user_folder, jobs):
    proc = run(user_folder, "--out", "out", "--jobs", jobs)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "raised ValueError while sampling" in line
    assert f"at {user_folder / 'mymech.py'}:5 in helper" in line, line
    log = user_folder / "out" / "error.log"
    assert "in out/error.log" in line or str(log) in line, line
    text = log.read_text()
    assert "mymech.py\", line 12, in sample" in text and "mymech.py\", line 5, in helper" in text, text
    assert "ValueError: cannot reshape" in text
    files = [ln for ln in text.splitlines() if ln.strip().startswith("File ")]
    assert files and all("mymech.py" in ln for ln in files), files  # no dpaudit, numpy or joblib frame


def test_without_out_the_line_still_names_the_users_line(user_folder):
    proc = run(user_folder)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert f"at {user_folder / 'mymech.py'}:5 in helper" in line and "error.log" not in line, line
