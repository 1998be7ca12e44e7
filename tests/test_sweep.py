"""Rates: the KL mechanisms' exact loss decays like the paper's O(1/n)."""

import pytest

from dpaudit.cli import main
from dpaudit.core import InputError
from dpaudit.runs.sweep import loglog_slope, slopes, sweep


@pytest.mark.parametrize("family", ["kl-mab", "kl-linear", "kl-rlhf"])
def test_exact_loss_decays_about_like_one_over_n(family):
    records = sweep(family, [20, 40, 80, 160], samples=50_000)
    fitted = slopes(records)
    assert fitted and all(-1.3 < s["epsilon_exact"] < -0.7 for s in fitted.values())
    for r in records:
        assert r["epsilon_lower"] <= r["epsilon_exact"] * (1 + 1e-9)


def test_the_printed_rlhf_bound_is_below_the_exact_loss_at_every_n():
    records = sweep("kl-rlhf", [10, 40, 160], samples=20_000)
    printed = [r for r in records if r["claim_id"] == "kl-rlhf/thm3-label"]
    corrected = [r for r in records if r["claim_id"] == "kl-rlhf/thm3-label-corrected"]
    assert all(r["exact_verdict"] == "violation" for r in printed)
    assert all(r["exact_verdict"] == "pass" for r in corrected)


def test_loglog_slope_of_a_power_law():
    assert loglog_slope([1, 2, 4, 8], [8, 4, 2, 1]) == pytest.approx(-1.0)


def test_bad_family_is_rejected():
    with pytest.raises(InputError, match="family"):
        sweep("kl-nothing", [10])


def test_cli_sweep_writes_json(tmp_path):
    assert main(["sweep", "kl-rlhf", "--n", "10,20", "--samples", "5000", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "sweep.json").exists()
    assert main(["sweep", "kl-rlhf", "--n", "1"]) == 2
