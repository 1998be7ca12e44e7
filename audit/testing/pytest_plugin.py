"""pytest plugin (registered through the ``pytest11`` entry point ``dpaudit``).

Options: ``--dp-profile NAME`` (``default``, ``ci``: a small budget, ``nightly``: a large one,
or a profile registered with ``dpaudit.testing.settings.register_profile``) and ``--dp-samples N``
(samples per side for the whole run, e.g. ``1e5``); the marker
``@pytest.mark.dp_settings(samples=..., confidence=...)`` sets one test's budget; the fixture
``dp_samples`` gives the run's samples per side.

pytest loads this plugin in every run of every project where dpaudit is installed, so it imports
nothing of dpaudit's until it is asked for: :mod:`dpaudit.testing.budget` (the standard library)
when a ``--dp-*`` option, the ``dp_settings`` marker or the ``dp_samples`` fixture is used; numpy,
scipy and the audit engine when a test calls ``assert_private``.  Its name sits under ``dpaudit``,
so a project's own ``audit.py`` or ``testing.py`` can never stand in for it.  ``-p no:dpaudit``
disables it.

A passing ``assert_private`` says what it could have caught (the smallest leak it refutes 9 times
in 10, :mod:`dpaudit.engine.detectable`): the plugin listens on the ``dpaudit.testing`` logger at
INFO and lists each pass, with its test, in a section at the end of the run's terminal summary
(under pytest-xdist, the passes of the tests run in the main process).
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Generator
from types import ModuleType

import pytest

_BUDGET = "dpaudit.testing.budget"
_LOGGER = "dpaudit.testing"  # dpaudit.testing.assertions.LOG: a pass says what it could have caught there


class _Passes(logging.Handler):
    """The passing assertions of the run, each with the test it ran in (for the terminal summary)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.test = ""
        self.previous = logging.NOTSET  # the logger's level before the run
        self.passes: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("assert_private("):
            self.passes.append((self.test, record.getMessage()))


_PASSES = _Passes()


def _budget() -> ModuleType:
    return importlib.import_module(_BUDGET)


def _samples(text: str) -> int:
    budget = _budget()
    try:
        return budget.parse_count(text, "--dp-samples", budget.MIN_SAMPLES)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dpaudit", "differential-privacy audits (dpaudit)")
    group.addoption("--dp-samples", type=_samples, default=None, metavar="N",
                    help="samples per side for assert_private in this run, e.g. 1e5 (overrides the profile)")
    group.addoption("--dp-profile", default=None, metavar="NAME",
                    help="budget profile of assert_private: default (1e6 samples per side, confidence 0.99), "
                         "ci (1e5), nightly (1e7), or a registered one")


def pytest_configure(config: pytest.Config) -> None:
    logger = logging.getLogger(_LOGGER)  # the standard library only: nothing of dpaudit is imported here
    _PASSES.passes.clear()
    if _PASSES not in logger.handlers:
        logger.addHandler(_PASSES)
    _PASSES.previous = logger.level
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)  # assert_private words its pass only when INFO is listened to
    config.addinivalue_line("markers", "dp_settings(samples=None, confidence=None): the budget of the "
                                       "assert_private calls in this test (as dpaudit.testing.settings)")
    profile, samples = config.getoption("--dp-profile"), config.getoption("--dp-samples")
    if profile is None and samples is None and _BUDGET not in sys.modules:
        return  # nothing asked of dpaudit: import nothing of it
    budget = _budget()
    if profile is not None:
        try:
            budget.load_profile(profile)
        except ValueError as exc:
            raise pytest.UsageError(f"--dp-profile: {exc}") from None
    budget.set_default_samples(samples)


def pytest_unconfigure(config: pytest.Config) -> None:
    logger = logging.getLogger(_LOGGER)
    logger.removeHandler(_PASSES)
    logger.setLevel(_PASSES.previous)
    if _BUDGET in sys.modules:
        sys.modules[_BUDGET].reset()


def pytest_report_header(config: pytest.Config) -> str | None:
    if config.getoption("--dp-profile") is None and config.getoption("--dp-samples") is None:
        return None
    budget = _budget()
    now = budget.current()
    return f"dpaudit: profile {budget.active_profile()}, {now.samples} samples per side, confidence {now.confidence:g}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per passing ``assert_private`` of the run: its test, and what it could have caught."""
    if not _PASSES.passes:
        return
    terminalreporter.write_sep("-", "dpaudit: what each passing assert_private could have caught")
    for test, said in _PASSES.passes:
        terminalreporter.write_line(f"{test}: {said}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    _PASSES.test = item.nodeid
    marker = item.get_closest_marker("dp_settings")
    if marker is None:
        return (yield)
    if marker.args:
        raise pytest.UsageError(f"{item.nodeid}: dp_settings takes keywords only (samples=, confidence=)")
    with _budget().settings(**marker.kwargs):
        return (yield)


@pytest.fixture
def dp_samples() -> int:
    """The run's samples per side (``--dp-samples``, else the ``--dp-profile``'s; 10^6 by default)."""
    return _budget().default_samples()
