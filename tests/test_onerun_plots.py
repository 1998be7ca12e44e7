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
