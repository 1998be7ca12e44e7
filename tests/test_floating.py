"""The floating view: reachable-set leaks of floating-point mechanisms (Mironov, CCS 2012) become
certified events; the snapping mechanism and grid-rounded references stay clean.  Confidence 0.95,
fixed seeds."""

import numpy as np
import pytest

from dpaudit import audit_mechanism, audit_samples
from dpaudit.engine.views.floating import Floating, applies, codes, describe_code
from dpaudit.mechanisms.classic import Laplace, SnappingLaplace
from dpaudit.mechanisms.faulty import TextbookFloatLaplace
from dpaudit.neighbors import Dataset


def test_codes_read_sign_exponent_and_trailing_zeros():
    # 1.0: exponent 2^0, mantissa 0 (capped trailing class); 1 + 2^-52: last bit set; -0.75: sign, 2^-1
    c = codes(np.array([1.0, 1.0 + 2.0 ** -52, 1.0 + 2.0 ** -51, -0.75]))
    assert [describe_code(v) for v in c] == [
        "[2^0, 2^1) with trailing zero bits >= 4", "[2^0, 2^1) with trailing zero bits = 0",
        "[2^0, 2^1) with trailing zero bits = 1", "[-2^-1, -2^0) with trailing zero bits >= 4"]


def test_the_view_applies_to_real_scalars_only():
    assert applies(np.zeros(3)) and applies(np.zeros((3, 1)))
    assert not applies(np.zeros(3, dtype=np.int64)) and not applies(np.zeros((3, 2)))


def test_mironovs_example_event_has_probability_zero_under_q_1():
    """For q = 1, outputs in [-1, -0.5) end in a zero bit; for q = 0 about half end in 1."""
    rng = np.random.default_rng(0)
    for q, lowest_bit_set in ((1.0, False), (0.0, True)):
        y = TextbookFloatLaplace(1.0).sample(q, 200_000, rng)
        window = y[(y >= -1) & (y < -0.5)]
        odd = (window.view(np.uint64) & np.uint64(1)).astype(bool)
        assert odd.any() == lowest_bit_set


def test_textbook_float_laplace_is_caught_at_its_claim():
    r = audit_mechanism(TextbookFloatLaplace(1.0), 0.0, 1.0, samples=1_000_000, seed=0, epsilon=1.0)  # default views
    assert r.verdict == "violation"
    assert r.epsilon_lower >= 5
    assert r.estimates[0].event.view == "floating"


def test_twin_the_snapping_mechanism_passes_at_its_claim_with_the_same_audit():
    r = audit_mechanism(SnappingLaplace(1.0), 0.0, 1.0, samples=1_000_000, seed=0, epsilon=1.0)
    assert r.verdict == "pass"
    assert r.epsilon_lower <= 1.0


def test_grid_rounded_reference_laplace_gives_the_floating_view_nothing():
    d = Dataset({"value": [0.5]})
    r = audit_mechanism(Laplace(1.0), d, d.add({"value": 1.0}), samples=1_000_000, seed=0, events="floating")
    assert r.epsilon_lower <= 1.0


def test_the_view_skips_integer_outputs():
    x = np.arange(100) % 3
    assert Floating().candidates(*_split(x, x), None) == []


def _split(x, y):
    from dpaudit.engine.views import Split
    h = len(x) // 2
    return (Split(x[:h], y[:h], x[h:], y[h:]),)


@pytest.mark.slow
def test_snapping_passes_200_of_200_seeded_audits_and_the_view_stays_valid():
    """200 audits at 2e4 samples per side, confidence 0.95: no violation of the claim ε = 1, and at
    most 10 bounds above the true ε = 1/λ, with the default views (floating among them) and with the
    floating view alone."""
    mech = SnappingLaplace(1.0)
    truth = 1.0 / mech.scale
    runs = [audit_mechanism(mech, 0.0, 1.0, samples=20_000, seed=s, epsilon=1.0)
            for s in range(200)]
    assert sum(r.verdict == "violation" for r in runs) == 0
    assert sum(r.epsilon_lower > truth for r in runs) <= 10
    alone = sum(audit_mechanism(mech, 0.0, 1.0, samples=20_000, seed=s, events="floating").epsilon_lower > truth
                for s in range(200))
    assert alone <= 10


@pytest.mark.slow
def test_power_twin_textbook_float_laplace_is_caught_in_most_small_audits():
    caught = sum(audit_mechanism(TextbookFloatLaplace(1.0), 0.0, 1.0, samples=20_000, seed=s,
                                 epsilon=1.0).verdict == "violation" for s in range(40))
    assert caught >= 36


def test_audit_samples_sees_the_leak_in_samples_drawn_elsewhere():
    rng = np.random.default_rng(1)
    x, y = rng.laplace(size=200_000), 1.0 + rng.laplace(size=200_000)
    assert audit_samples(x, y).epsilon_lower > 3  # "auto" includes the floating view
    assert audit_samples(x, y, events=("threshold", "histogram")).epsilon_lower < 1  # the values alone show no leak
