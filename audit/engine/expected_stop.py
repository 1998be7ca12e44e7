"""Where a sequential audit is expected to stop, for the progress line's projected end.

The sequential rule (:data:`dpaudit.engine.runner.RULE`) stops at the first look whose bound
certifies a violation, or at a look where no target can be reached any more.  With the events'
frequencies so far — on the selection split before the first look, then on the estimation
samples counted — the bound each later look would give is the Clopper–Pearson bound of counts
scaled to that look's sample size, at that look's share of α.  The first look where it exceeds
a target is the expected stop; when no look would, the rule is expected to give up at the next
look.  Frequencies measured on the split that chose the events are optimistic (the winner of a
selection looks better on its own data), so the first estimate errs early; each look updates it.
This is a forecast for the display only: it never changes when the rule stops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpaudit.engine.estimate import bound_from_counts

__all__ = ["expected_look"]


def expected_look(events: Sequence[Any], deltas: Sequence[float], confidences: Sequence[float], counts: np.ndarray,
                  n: int, looks: Sequence[tuple[int, float]], targets: Mapping[int, float], after: int = 0) -> int:
    """Index of the look (≥ ``after``) at which the rule is expected to stop.

    ``counts[side, i]`` are event ``i``'s counts among ``n`` outputs per side; ``looks`` the
    (estimation samples per side, share of α) of every look; ``targets`` level → ε it must
    exceed."""
    for j in range(after, len(looks)):
        m, share = looks[j]
        for i, target in targets.items():
            bound = bound_from_counts(events[i], deltas[i], counts[0, i] / n * m, m, counts[1, i] / n * m, m,
                                      1 - (1 - confidences[i]) * share)
            if bound.epsilon_lower > target:
                return j
    return min(after, len(looks) - 1)
