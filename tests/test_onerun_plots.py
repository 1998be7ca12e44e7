"""The one-run PDF page draws from a result (or its saved JSON with scores)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpaudit.onerun import Fixed, one_run_bound

pytest.importorskip("matplotlib")


def test_page_draws_from_result_and_json(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    from dpaudit.reports.onerun_plots import guesses_curve, onerun_page

    secret = np.random.default_rng(0).integers(0, 2, 400)
    scores = 2.0 * secret + np.random.default_rng(1).standard_normal(400)
    res = one_run_bound(scores, secret, rule=Fixed(20, 20))
    onerun_page(res, str(tmp_path / "a.pdf"))
    onerun_page(json.loads(res.to_json(include_scores=True)), str(tmp_path / "b.pdf"))
    assert (tmp_path / "a.pdf").stat().st_size > 1000 and (tmp_path / "b.pdf").stat().st_size > 1000
    rs, eps = guesses_curve(scores, secret, delta=1e-5, alpha=0.05)
    assert rs.size == eps.size and eps.max() > 0
    with pytest.raises(ValueError, match="scores"):
        onerun_page(json.loads(res.to_json()))


def test_the_thresholds_split_the_guesses_as_the_rule_counts_them():
    from dpaudit.onerun.rules import counts
    from dpaudit.reports.onerun_plots import thresholds

    secret = np.random.default_rng(2).integers(0, 2, 300)
    scores = secret + np.random.default_rng(3).standard_normal(300)
    for k_plus, k_minus in ((10, 10), (40, 5), (150, 150)):
        upper, lower = thresholds(scores, k_plus, k_minus)
        guessed_in, guessed_out = scores >= upper, scores <= lower
        assert guessed_in.sum() == k_plus and guessed_out.sum() == k_minus  # continuous scores: no ties
        right = int(secret[guessed_in].sum() + (1 - secret[guessed_out]).sum())
        assert right == counts(scores, secret, k_plus, k_minus)
    assert thresholds(scores, 0, 0) == (None, None)


def test_the_report_figure_is_a_png_of_the_saved_scores_and_the_same_twice():
    from dpaudit.reports.onerun_plots import page_figure

    secret = np.random.default_rng(0).integers(0, 2, 400)
    scores = 2.0 * secret + np.random.default_rng(1).standard_normal(400)
    saved = json.loads(one_run_bound(scores, secret, rule=Fixed(20, 20)).to_json(include_scores=True))
    png, width, height = page_figure(saved)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and 0 < height < width
    assert page_figure(json.loads(json.dumps(saved)))[0] == png
    other = {**saved, "scores": list(reversed(saved["scores"]))}
    assert page_figure(other)[0] != png  # drawn from the scores, not from a constant
    with pytest.raises(ValueError, match="scores"):
        page_figure({k: v for k, v in saved.items() if k != "scores"})
