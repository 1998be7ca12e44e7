"""The one-run audit's PDF page: canary scores by inclusion, and ε_LB against the number of guesses.

matplotlib is imported when a figure is drawn, never at import.  The second panel is
*exploratory*: each point is the bound a rule fixed at that k would have given, so the curve
as a whole is a look at the data, not a bound (its maximum is not valid without the Bonferroni
correction the audit's own rule carries); the panel says so on the figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpaudit.onerun.rules import counts
from dpaudit.onerun.steinke import epsilon_lower

__all__ = ["guesses_curve", "guesses_figure", "onerun_page", "scores_figure"]


def _arrays(result: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(result, Mapping):
        scores, secret = result.get("scores"), result.get("secret")
    else:
        scores, secret = getattr(result, "scores", None), getattr(result, "secret", None)
    if scores is None or secret is None:
        raise ValueError("the one-run plots need the scores and the secret (save with include_scores=True)")
    return np.asarray(scores, dtype=float), np.asarray(secret, dtype=int)


def guesses_curve(scores: np.ndarray, secret: np.ndarray, *, delta: float, alpha: float,
                  ks: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(r, ε_LB at r = 2k guesses, k₊ = k₋ = k) for each k: exploratory, see the module docstring."""
    m = scores.size
    if ks is None:
        ks = np.unique(np.round(np.geomspace(1, m // 2, 30)).astype(int))
    rs = np.array([2 * k for k in ks])
    eps = np.array([epsilon_lower(m, 2 * k, counts(scores, secret, int(k), int(k)), delta=delta, alpha=alpha)
                    for k in ks])
    return rs, eps


def scores_figure(result: Any, ax: Any = None) -> Any:
    """Histogram of the scores of included vs excluded canaries."""
    import matplotlib.pyplot as plt  # optional dependency (the PDF extra)

    scores, secret = _arrays(result)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    bins = np.histogram_bin_edges(scores, bins=40)
    ax.hist(scores[secret == 1], bins=bins, alpha=0.6, label=f"included ({int(secret.sum())})")
    ax.hist(scores[secret == 0], bins=bins, alpha=0.6, label=f"excluded ({int((secret == 0).sum())})")
    ax.set_xlabel("canary score (higher = guessed in)")
    ax.set_ylabel("canaries")
    ax.legend()
    return ax


def guesses_figure(result: Any, *, delta: float, alpha: float, ax: Any = None, chosen_r: int | None = None) -> Any:
    """ε_LB against the number of guesses (exploratory), with the audit's own r marked."""
    import matplotlib.pyplot as plt  # optional dependency (the PDF extra)

    scores, secret = _arrays(result)
    rs, eps = guesses_curve(scores, secret, delta=delta, alpha=alpha)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(rs, eps, marker="o", ms=3)
    ax.set_xscale("log")
    ax.set_xlabel("number of guesses r (k+ = k- = r/2)")
    ax.set_ylabel(f"eps lower bound at delta={delta:g}")
    if chosen_r is not None:
        ax.axvline(chosen_r, color="k", ls="--", lw=1, label=f"the audit's rule: r={chosen_r}")
        ax.legend()
    ax.set_title("exploratory: each point alone, not a bound as a curve", fontsize=8)
    return ax


def onerun_page(result: Any, path: str | None = None) -> Any:
    """Both panels on one figure (a PDF page); saved to ``path`` when given."""
    import matplotlib.pyplot as plt  # optional dependency (the PDF extra)

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    scores_figure(result, ax=a)
    doc = result if isinstance(result, Mapping) else result.to_dict()
    delta = float(doc["bounds"][0]["delta"])
    guesses_figure(result, delta=delta, alpha=float(doc["alpha"]), ax=b, chosen_r=int(doc["r"]))
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig
