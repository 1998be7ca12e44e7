"""The trade-off panels of the default report read at print size (issue 41, item 17): p. 19 drew every
test's box corner, and 47 of 50, 44 of 48 and 42 of 48 markers lay within a marker's width of another
(a thick green line, no test told apart).  Only the tests that refute a claim no other test refutes
are drawn now (:func:`dpaudit.reports.plots.refuting`), each apart from the others: checked on the
figure as drawn (printed points at the figure's printed width) from the saved default run, and the
selection checked against every (eps, delta) claim on a grid."""

import gzip
import itertools
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from dpaudit.reports import plots

DATA = Path(__file__).resolve().parent / "data" / "report"


@pytest.fixture(scope="module")
def panels() -> list:
    run = json.loads(gzip.decompress((DATA / "default-results.json.gz").read_bytes()))
    by: dict[str, list] = {}
    for r in run["records"]:
        by.setdefault(r["scenario"], []).append(r)
    items = [(sc, by.get(sc["scenario"], [])) for sc in run["scenarios"]
             if plots.tradeoff_meaningful(sc, by.get(sc["scenario"], []))]
    assert len(items) == 3  # p. 19: align-alg2-swap, align-alg2-zero-out, align-trajectory-h1-cov
    return items


def _refuted(fpr: np.ndarray, tpr: np.ndarray, eps: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Which claims (eps[i], delta[i]) some test (fpr[j], tpr[j]) refutes: TPR > e^eps FPR + delta."""
    return (tpr[None, :] > np.exp(eps)[:, None] * fpr[None, :] + delta[:, None]).any(axis=1)


def _claims() -> tuple[np.ndarray, np.ndarray]:
    eps, delta = np.meshgrid(np.linspace(0, 3, 301), np.concatenate([[0.0], np.logspace(-8, -0.5, 76)]))
    return eps.ravel(), delta.ravel()


def test_the_drawn_tests_refute_every_claim_any_test_refutes(panels):
    eps, delta = _claims()
    for sc, _ in panels:
        fpr, tpr = plots.tradeoff_tests(sc["estimate"]["tradeoff"])
        kept = plots.refuting(fpr, tpr)
        assert kept.size < fpr.size / 3, (sc["scenario"], kept.size, fpr.size)
        every = _refuted(fpr, tpr, eps, delta)
        assert every.sum() > 1000  # the grid reaches refuted claims
        assert np.array_equal(_refuted(fpr[kept], tpr[kept], eps, delta), every), sc["scenario"]
        # and each kept test is needed: without it some claim (on a finer look at its slopes) goes unrefuted
        for i in kept:
            rest = np.setdiff1d(kept, [i])
            s = np.linspace(1, max(1.0, float(tpr[i] / fpr[i])), 4001)
            margin = tpr[i] - s * fpr[i] - np.maximum((tpr[rest, None] - s * fpr[rest, None]).max(axis=0), 0)
            assert margin.max() > 0, (sc["scenario"], int(i))


def test_a_test_left_out_loses_a_refutation():
    """The check above can fail: of three tests on a concave curve, the middle one refutes claims the
    other two do not, and leaving it out is seen on the claims' grid."""
    fpr, tpr = np.array([0.01, 0.1, 0.5]), np.array([0.05, 0.3, 0.9])
    assert list(plots.refuting(fpr, tpr)) == [0, 1, 2]
    eps, delta = _claims()
    assert not np.array_equal(_refuted(fpr[[0, 2]], tpr[[0, 2]], eps, delta), _refuted(fpr, tpr, eps, delta))
    # a test with a larger FPR and a smaller TPR than another refutes nothing it does not
    assert list(plots.refuting(np.array([0.1, 0.2]), np.array([0.3, 0.25]))) == [0]


def test_no_two_test_markers_overlap_on_the_page(panels):
    fig = plots.tradeoff_figure(panels)
    try:
        fig.canvas.draw()
        for ax, (sc, _) in zip(fig.axes, panels, strict=False):
            (line,) = [ln for ln in ax.lines if ln.get_marker() == "o"]
            at = ax.transData.transform(np.column_stack(line.get_data())) / fig.dpi * 72
            assert len(at) >= 5, sc["scenario"]
            gaps = [float(np.hypot(*(a - b))) for a, b in itertools.combinations(at, 2)]
            assert min(gaps) >= plots.TEST_MARKER, (sc["scenario"], round(min(gaps), 2))
            fpr, tpr = plots.tradeoff_tests(sc["estimate"]["tradeoff"])
            kept = plots.refuting(fpr, tpr)
            needed = ax.transData.transform(np.column_stack([fpr[kept], np.log(tpr[kept] / fpr[kept])])) / fig.dpi * 72
            # every refuting test is drawn, or lies within a marker of a drawn one (the legend says how many)
            assert all(np.hypot(*(at - p).T).min() < plots.TEST_MARKER for p in needed), sc["scenario"]
            label = line.get_label()
            assert f"the {kept.size} of {fpr.size}" in label
            assert ("within a marker" in label) == (len(at) < kept.size)
            for text in ax.get_legend().get_texts():
                assert text.get_fontsize() >= plots.MIN_POINTS
    finally:
        plt.close(fig)
