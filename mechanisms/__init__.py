"""Mechanisms to audit, one module per source, and the protocol they share.

This package never imports ``audit`` or ``reports``.
"""

from dpaudit.core import Guarantee, InputError
from dpaudit.mechanisms.base import Mechanism

__all__ = ["Guarantee", "InputError", "Mechanism"]
