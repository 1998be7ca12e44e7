"""Views of the outputs: the ways candidate events are cut, all fitted on the selection split
only (so choosing among them costs no confidence).

* ``rows``       — each distinct output (scalar or row of an integer vector) is a category;
  skipped when there are too many distinct outputs to count (the fallback is the views below);
* ``threshold``  — S = {s ≥ t} or {s ≤ t} for a scalar statistic s;
* ``histogram``  — categories = atoms of s and quantile bins of the rest, dense in both tails;
  S = a prefix in likelihood-ratio order;
* ``floating``   — categories of a real output's double (sign, binade, trailing zero bits of the
  mantissa): reachable-set leaks of floating-point arithmetic (:mod:`dpaudit.engine.views.floating`).

Each view is one class in its own module implementing :class:`View`; :data:`VIEWS`, filled
below, is the one registration point, and its order is the order views are searched in.
"""

from dpaudit.engine.views.base import SIDES, VIEWS, ChunkCache, Event, Family, Split, View
from dpaudit.engine.views.floating import Floating
from dpaudit.engine.views.histogram import Histogram
from dpaudit.engine.views.rows import MAX_ROWS, Rows
from dpaudit.engine.views.threshold import Threshold

VIEWS.update((view.name, view) for view in (Rows(), Threshold(), Histogram(), Floating()))

__all__ = ["MAX_ROWS", "SIDES", "VIEWS", "ChunkCache", "Event", "Family", "Floating", "Histogram", "Rows", "Split",
           "Threshold", "View"]
