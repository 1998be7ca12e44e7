"""The command line and the API agree for one seed once they draw from the same streams (issue 35):
the command line's scenario i draws from spawn_key (i, ...), which RunContext(key=(i,)) gives the API."""

import json
import subprocess
import sys

import dpaudit
from dpaudit.engine.api import RunContext
from tests.conftest import ROOT
from tests.plugins.user_mechanisms import leaky, pair


def test_the_api_reproduces_the_command_lines_scenario_with_its_key():
    proc = subprocess.run([sys.executable, "-m", "dpaudit", "run", "--mechanism", "tests.plugins.user_mechanisms:leaky",
                           "--pair", "tests.plugins.user_mechanisms:pair", "--epsilon", "1", "--samples", "1e5",
                           "--seed", "0", "--json", "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr  # the leaky count is refuted at epsilon = 1
    cli = json.loads(proc.stdout)["records"][0]["epsilon_lower"]
    keyed = dpaudit.audit_mechanism(leaky, *pair, samples=100_000, seed=0, context=RunContext(key=(0,)))
    plain = dpaudit.audit_mechanism(leaky, *pair, samples=100_000, seed=0)
    assert keyed.epsilon_lower == cli  # the same streams: the same number, bit for bit
    assert plain.epsilon_lower != cli  # without the scenario's key: other (independent) draws
