"""Fixtures the slow tier's files share (kept out of tests/conftest.py, which the fast tier owns).

:func:`one_torch_thread`: torch's intra-op pool left at its default (one thread per core) makes every
small tensor operation of a training step a parallel region; on two cores with two pytest-xdist workers
(or any other load) those threads spin waiting for each other.  Measured on the Opacus pipeline audit
(the CHEAP setting, m = 1000, T = 200, one run, load average ~8): 15-18 CPU s with torch's default of 2
threads, 1.5 CPU s with one.  The audits' results do not depend on it (the same seeded draws, in order).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """torch on one intra-op thread for the module's tests; the previous count is restored after."""
    torch = pytest.importorskip("torch", reason="the opacus extra is not installed (CI installs it: .ci/run)")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
