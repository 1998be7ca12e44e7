"""The default confidence where it is documented: 0.95 for every audit (API, command line,
configs), 0.99 for assert_private (a test suite's false-alarm rate adds up over its tests), and
each docstring, help text and the README say which, and why the two differ."""

import inspect
import re
from pathlib import Path

import pytest

import dpaudit
from dpaudit import assert_private, audit_mechanism, audit_samples, search_pair
from dpaudit.cli.parser import build_parser
from dpaudit.engine.plan import plan
from dpaudit.runs.config import RunSettings
from dpaudit.runs.sweep import sweep
from dpaudit.testing import budget

ROOT = Path(__file__).resolve().parents[1]
AUDIT, TEST = 0.95, 0.99


@pytest.mark.parametrize("fn", [audit_samples, audit_mechanism, search_pair, plan, sweep])
def test_every_audit_defaults_to_0_95(fn):
    assert inspect.signature(fn).parameters["confidence"].default == AUDIT


def test_the_command_line_and_configs_default_to_0_95():
    assert RunSettings().confidence == AUDIT  # `run` takes the config's (or this) when --confidence is absent
    parser = build_parser()
    assert parser.parse_args(["sweep", "kl-rlhf"]).confidence == AUDIT
    # plan without --confidence plans a suite's scenario at its suite's, a one-run design at 0.95
    # (tests/test_suite_confidence.py); the flag's absence is None, as run's
    assert parser.parse_args(["plan", "align-alg2-zero-out"]).confidence is None
    assert "a one-run design or --onerun at 0.95" in " ".join(build_help("plan").split())
    assert "default: 0.95; assert_private's is 0.99" in " ".join(build_help("run").split())


def build_help(verb):
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a.choices, dict) and verb in a.choices)
    return action.choices[verb].format_help()


def test_assert_private_defaults_to_0_99_in_every_profile():
    assert inspect.signature(assert_private).parameters["confidence"].default is None  # None: the budget's
    assert {name: b.confidence for name, b in budget.PROFILES.items()} == {"default": TEST, "ci": TEST,
                                                                           "nightly": TEST}
    assert budget.current().confidence == TEST


def flat(text):
    return " ".join(text.split())


def test_the_docstrings_state_their_default_and_the_other_one():
    for doc in (audit_mechanism.__doc__, audit_samples.__doc__, assert_private.__doc__, dpaudit.__doc__):
        assert "0.95" in doc and "0.99" in doc
    assert "1 − 0.99^20 ≈ 18 %" in flat(assert_private.__doc__) and "0.99 — not the audits' 0.95" in flat(
        budget.__doc__)


def test_the_readme_states_both_defaults_and_why():
    readme = flat((ROOT / "README.md").read_text(encoding="utf-8"))
    section = re.search(r"\*\*Two default confidences, on purpose\.\*\*(.*?)to change it\.", readme).group(1)
    assert "defaults to confidence 0.95" in section and "`assert_private` fails a build" in section
    assert "so it defaults to 0.99" in section and "1 − 0.99^20 ≈ 18 %" in section
