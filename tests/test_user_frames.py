"""A mechanism that raises is shown at its own code (issue 41, item 18): the one-line error names the
innermost frame of the user's file, and with ``--out`` the user's frames of the traceback (only
theirs: no dpaudit, numpy or joblib frame) are in DIR/error.log, whose path the line gives."""

import os
import subprocess
import sys
import textwrap

import pytest

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
def user_folder(tmp_path):
    (tmp_path / "mymech.py").write_text(MECHANISM)
    (tmp_path / "mypair.py").write_text(PAIR)
    return tmp_path


def run(folder, *extra):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-m", "dpaudit", "run", "--mechanism", "mymech:RAISES", "--pair",
                           "mypair:PAIR", "--samples", "2000", "--quiet", *extra], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


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
