"""Adapters for mechanisms written for other DP libraries.

dpaudit calls ``mechanism.sample(data, size, rng)`` with a seeded ``numpy.random.Generator``
and expects ``size`` outputs at once.  Three common shapes of third-party code do not fit:

* **diffprivlib-style** mechanisms take a ``random_state`` (an int or a legacy
  ``numpy.random.RandomState``) and release one value per ``randomise`` call:
  :func:`numpy_random_state` turns the audit's generator into such a ``RandomState``, so the
  mechanism stays seeded and the audit reproducible.
* **OpenDP-style** measurements are functions of the data that release one value per call
  and draw their noise from the operating system, so they cannot be seeded: :func:`per_call`
  makes one a vectorised mechanism (through a process pool for large sizes) and records
  ``seeded = False``; results and reports then say "not reproducible: unseeded mechanism".
* **Library objects that cannot be pickled** (OpenDP's measurements hold ctypes pointers):
  :func:`from_factory` takes a picklable factory instead, builds the object once in each worker
  process, and takes an optional ``batch`` hook for a library that draws many outputs per call.
"""

from dpaudit.adapters.factory import LibraryMechanism, from_factory
from dpaudit.adapters.percall import PerCall, per_call
from dpaudit.adapters.randomstate import numpy_random_state
from dpaudit.adapters.shipping import PER_CALL_BLOCK

__all__ = ["PER_CALL_BLOCK", "LibraryMechanism", "PerCall", "from_factory", "numpy_random_state", "per_call"]
