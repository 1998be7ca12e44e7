"""Datasets, neighbour relations, worst-case pair search and synthetic data.

This package never imports ``audit`` or ``reports``.
"""

from dpaudit.neighbors.dataset import Dataset
from dpaudit.neighbors.relations import Pair, add_remove, label_flip, neighbours, swap, zero_out

__all__ = ["Dataset", "Pair", "add_remove", "label_flip", "neighbours", "swap", "zero_out"]
