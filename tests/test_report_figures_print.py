"""The default report's figures read at print size (issue 41, item 17): on the chain figure of the
classic family (p. 6 of the default report) the three lower bounds sat within 2 points of their
claims of 1, on an axis from 0 to 1.15; on the KL family's (p. 12) each "exact = inf" note was
printed across the row above it.  Measured here on the figures as drawn (display coordinates,
72 points an inch at the figure's printed width), from the saved default run."""

import gzip
import json
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from dpaudit.reports import plots

DATA = Path(__file__).resolve().parent / "data" / "report"
MARKER_POINTS = 6.0  # the lower bound's triangle is 6 points wide: closer than that, it covers the claim


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return json.loads(gzip.decompress((DATA / "default-results.json.gz").read_bytes()))["records"]


def _rows(records: list[dict], scenarios: tuple[str, ...] | None = None, prefix: str = "") -> list:
    return [(f"{r['scenario']}: {r['claim_id']}", r) for r in records
            if r["claim_id"] and r.get("kind") != "one-run" and r["finding"] != "not-applicable"
            and (scenarios is None or r["scenario"] in scenarios) and r["scenario"].startswith(prefix)]


def _points(fig: plt.Figure, ax, x: float) -> float:
    """The horizontal position of data value ``x`` on ``ax``, in printed points."""
    return ax.transData.transform((x, 0))[0] / fig.dpi * 72


def test_the_classic_chain_draws_each_lower_bound_apart_from_its_claim(records):
    rows = _rows(records, ("rr", "laplace", "expmech"))
    assert len(rows) == 3
    fig = plots.chain_figure(rows)
    try:
        ax = fig.axes[0]
        fig.canvas.draw()
        for label, r in rows:
            lower, claim = float(r["epsilon_lower"]), float(r["epsilon_claim"])
            assert claim - lower >= 0.005 * claim  # a gap the reader must see (0.7 % to 4 %)
            gap = _points(fig, ax, claim) - _points(fig, ax, lower)
            assert gap >= MARKER_POINTS, (label, round(gap, 2))
        left, right = ax.get_xlim()
        assert left > 0  # the axis spans the values, and its ticks say where it starts
        assert all(left < float(r[k]) < right for _, r in rows for k in ("epsilon_lower", "epsilon_claim"))
    finally:
        plt.close(fig)


def test_a_chain_of_spread_values_still_starts_at_zero():
    rows = [("a: x", {"epsilon_lower": 0.2, "epsilon_exact": 0.5, "epsilon_claim": 1.0, "finding": "holds"}),
            ("b: y", {"epsilon_lower": 0.0, "epsilon_exact": 0.9, "epsilon_claim": 1.0, "finding": "holds"})]
    for chosen in (rows, rows[:1]):
        assert plots.chain_scale(chosen)[:2] == (False, 0.0)


def test_exact_inf_notes_stay_in_their_own_row(records):
    rows = _rows(records, prefix="kl-mab")
    infinite = [y for y, (_, r) in enumerate(rows) if r["epsilon_exact"] == "inf"]
    assert len(infinite) >= 2
    fig = plots.chain_figure(rows)
    try:
        ax = fig.axes[0]
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        notes = [t for t in ax.texts if t.get_text() == "exact = inf"]
        assert len(notes) == len(infinite)
        for note, y in zip(notes, infinite, strict=True):
            box = note.get_window_extent(renderer)
            # the row's band: halfway to the rows above and below (the y axis runs downwards)
            top, bottom = ax.transData.transform((0, y - 0.5))[1], ax.transData.transform((0, y + 0.5))[1]
            assert bottom <= box.y0 and box.y1 <= top, (rows[y][0], box.y0, box.y1, bottom, top)
    finally:
        plt.close(fig)
