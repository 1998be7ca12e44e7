"""Mechanisms to audit, one module per source, and the protocol they share.

This package never imports ``audit`` or ``reports``.
"""

from dpcore import Guarantee, InputError
from mechanisms.base import Mechanism

__all__ = ["Guarantee", "InputError", "Mechanism"]
