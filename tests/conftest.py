import sys
from pathlib import Path

# Tests run against the checkout (also when it is installed in editable mode).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

pytest_plugins = ["pytester"]

import json  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def default_suite_run(tmp_path_factory):
    """One `python -m audit run --out DIR` of the default suite, shared by the CLI and report tests."""
    from audit.cli import main
    out = tmp_path_factory.mktemp("default-run")
    code = main(["run", "--out", str(out), "--quiet"])
    return code, json.loads((out / "results.json").read_text()), out
