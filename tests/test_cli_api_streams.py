"""The command line and the API agree for one seed once they draw from the same streams (issue 35):
the command line's scenario i draws from spawn_key (i, ...), which RunContext(key=(i,)) gives the API.
The command runs in this process (``dpaudit.cli.main``, the same parser and run): what is compared
is the draws, not the process boundary (~2.5 CPU s of a new interpreter and its supervisor saved)."""

import json

import dpaudit
from dpaudit.engine.api import RunContext
from tests.clirun import in_process
from tests.plugins.user_mechanisms import leaky, pair


def test_the_api_reproduces_the_command_lines_scenario_with_its_key():
    proc = in_process("run", "--mechanism", "tests.plugins.user_mechanisms:leaky", "--pair",
                      "tests.plugins.user_mechanisms:pair", "--epsilon", "1", "--samples", "1e5", "--seed", "0",
                      "--json", "--quiet")
    assert proc.returncode == 1, proc.stderr  # the leaky count is refuted at epsilon = 1
    cli = json.loads(proc.stdout)["records"][0]["epsilon_lower"]
    keyed = dpaudit.audit_mechanism(leaky, *pair, samples=100_000, seed=0, context=RunContext(key=(0,)))
    plain = dpaudit.audit_mechanism(leaky, *pair, samples=100_000, seed=0)
    assert keyed.epsilon_lower == cli  # the same streams: the same number, bit for bit
    assert plain.epsilon_lower != cli  # without the scenario's key: other (independent) draws
