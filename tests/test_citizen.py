"""dpaudit beside a user's own project: none of its generic module names may break ours, and none
of ours may break theirs.

The scratch project holds ``audit.py``, ``reports.py``, ``mechanisms/``, ``neighbors.py`` and
``dpcore.py``, each defining something else; dpaudit is the one installed in this environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole runs of the command line and of pytest, in new processes

PROJECT = {
    "audit.py": "def audit_trail():\n    return 'the user audit'\n",
    "reports.py": "raise RuntimeError('the user reports module is not a library')\n",
    "mechanisms/__init__.py": "KIND = 'the user mechanisms'\n",
    "neighbors.py": "def neighbours():\n    return ['the user neighbours']\n",
    "dpcore.py": "CORE = 'the user core'\n",
    "test_own.py": textwrap.dedent("""
        import audit
        import mechanisms
        import neighbors
        import dpcore


        def test_the_project_sees_its_own_modules():
            assert audit.audit_trail() == 'the user audit'
            assert mechanisms.KIND == 'the user mechanisms'
            assert neighbors.neighbours() == ['the user neighbours']
            assert dpcore.CORE == 'the user core'
        """),
    "test_private.py": textwrap.dedent("""
        import numpy as np
        import pytest

        from dpaudit.testing import PrivacyViolation, assert_private


        class CountWithLaplace:
            name = "count-laplace"

            def __init__(self, epsilon):
                self.epsilon = epsilon

            def sample(self, data, size, rng):
                return np.round(float(np.sum(data)) + rng.laplace(0.0, 1.0 / self.epsilon, size), 6)


        def test_a_private_count_passes(dp_samples):
            assert_private(CountWithLaplace(1.0), np.array([0.0]), np.array([0.0, 1.0]), epsilon=1.0, seed=0,
                           samples=dp_samples, events="threshold")


        def test_a_leaky_count_is_caught(dp_samples):
            with pytest.raises(PrivacyViolation):
                assert_private(CountWithLaplace(4.0), np.array([0.0]), np.array([0.0, 1.0]), epsilon=1.0, seed=0,
                               samples=dp_samples, events="threshold")
        """),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("user-project")
    for name, text in PROJECT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    # The user's environment: dpaudit installed, no PYTHONPATH pointing at this checkout.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)


def console_script() -> str:
    script = Path(sys.executable).with_name("dpaudit")
    if not script.exists():
        pytest.skip("the dpaudit console script is not installed beside this interpreter")
    return str(script)


def test_the_projects_own_tests_pass_under_python_m_pytest_and_pytest(project):
    for command in ([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--dp-samples", "2e5"],
                    [str(Path(sys.executable).with_name("pytest")), "-q", "-p", "no:cacheprovider",
                     "--dp-samples", "2e5"]):
        proc = run(command, project)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "3 passed" in proc.stdout, proc.stdout


def test_the_command_line_runs_from_the_project_folder(project):
    proc = run([sys.executable, "-m", "dpaudit", "run", "--family", "classic", "--quiet"], project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run([console_script(), "run", "--quiet"], project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_users_module_named_on_the_command_line_is_found_in_the_working_folder(project, tmp_path):
    (project / "my_mechanism.py").write_text(textwrap.dedent("""
        import numpy as np

        from dpaudit.neighbors import Dataset


        class Leaky:
            name = "leaky-count"

            def sample(self, data, size, rng):
                return np.round(float(np.sum(data["x"])) + rng.laplace(0.0, 0.25, size), 6)


        mechanism = Leaky()
        pair = (Dataset({"x": [0.0]}), Dataset({"x": [0.0, 1.0]}))
        """), encoding="utf-8")
    args = ["run", "--mechanism", "my_mechanism:mechanism", "--pair", "my_mechanism:pair", "--epsilon", "1",
            "--samples", "1e5", "--events", "threshold", "--quiet"]
    for command in ([sys.executable, "-m", "dpaudit", *args], [console_script(), *args]):
        proc = run(command, project)
        assert proc.returncode == 1, proc.stdout + proc.stderr  # a real finding: the count leaks at eps = 4
        assert "Traceback" not in proc.stderr


def test_the_pytest_plugin_imports_nothing_of_dpaudit_until_asked(project, tmp_path):
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "test_probe.py").write_text(textwrap.dedent("""
        import sys


        def test_nothing_of_dpaudit_is_loaded():
            loaded = sorted(m for m in sys.modules if m.startswith("dpaudit."))
            assert loaded == ["dpaudit.testing", "dpaudit.testing.pytest_plugin"], loaded
            assert "numpy" not in sys.modules
        """), encoding="utf-8")
    proc = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"], probe)
    assert proc.returncode == 0, proc.stdout + proc.stderr
