"""The run machinery under the engine: where chunks run (local processes or a Dask cluster) and how
they are planned (:mod:`~dpaudit.runtime.chunks`), the run folder's files and checkpoint, what a
mechanism reached from its import (``reach``, ``identity``, ``readonly``), which code to blame for an
error, Ctrl-C, progress lines and heartbeats.

None of it is statistics: the engine (:mod:`dpaudit.engine`) imports it, it imports only
:mod:`dpaudit.core` and :mod:`dpaudit.neighbors` (``tests/test_architecture.py`` keeps that direction).
"""
