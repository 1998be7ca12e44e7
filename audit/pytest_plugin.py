"""pytest plugin (registered through the ``pytest11`` entry point): ``--dp-samples N`` sets
the budget of :func:`audit.testing.assert_private`; the ``dp_samples`` fixture reads it."""

from __future__ import annotations

import pytest

from audit import testing


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--dp-samples", type=int, default=None, metavar="N",
                     help="samples per side for dpaudit's assert_private (default 1000000)")


def pytest_configure(config: pytest.Config) -> None:
    testing.set_default_samples(config.getoption("--dp-samples"))


def pytest_unconfigure(config: pytest.Config) -> None:
    testing.set_default_samples(None)


@pytest.fixture
def dp_samples() -> int:
    """The per-side sample budget of this run (``--dp-samples``, or 10^6)."""
    return testing.default_samples()
