"""Mechanisms to audit, one module per source, and the protocol they share.

This package never imports ``audit`` or ``reports``.
"""

from mechanisms.base import Guarantee, InputError, Mechanism

__all__ = ["Guarantee", "InputError", "Mechanism"]
