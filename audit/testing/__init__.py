"""Testing helpers for users' own test suites: :func:`assert_private`, :func:`check_mechanism`,
:func:`assert_private_one_run` (a training function audited in one run, with canaries), the
budget (:class:`settings`, profiles) and the pytest plugin.

    from dpaudit.testing import assert_private, assert_private_one_run, check_mechanism, settings

Names are imported on first use (PEP 562): pytest loads :mod:`dpaudit.testing.pytest_plugin`
in every run of every project where dpaudit is installed, and importing this package on the way
must cost nothing until a test calls a helper.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "assert_private": "dpaudit.testing.assertions",
    "assert_private_one_run": "dpaudit.testing.one_run",
    "check_mechanism": "dpaudit.testing.assertions",
    "MechanismCheckError": "dpaudit.testing.assertions",
    "PrivacyViolation": "dpaudit.testing.assertions",
    "default_samples": "dpaudit.testing.budget",
    "set_default_samples": "dpaudit.testing.assertions",
    "settings": "dpaudit.testing.budget",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from dpaudit.testing.assertions import MechanismCheckError as MechanismCheckError
    from dpaudit.testing.assertions import PrivacyViolation as PrivacyViolation
    from dpaudit.testing.assertions import assert_private as assert_private
    from dpaudit.testing.assertions import check_mechanism as check_mechanism
    from dpaudit.testing.assertions import set_default_samples as set_default_samples
    from dpaudit.testing.budget import default_samples as default_samples
    from dpaudit.testing.budget import settings as settings
    from dpaudit.testing.one_run import assert_private_one_run as assert_private_one_run


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'dpaudit.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
