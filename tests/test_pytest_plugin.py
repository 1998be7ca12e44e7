"""The pytest plugin is light (nothing heavy imported until used), hides dpaudit's frames in a
failure, and takes its budget from profiles, --dp-samples and settings (decorator, context
manager, marker), innermost first."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dpaudit.mechanisms.classic import RandomizedResponse
from dpaudit.neighbors import Dataset
from dpaudit.testing import PrivacyViolation, assert_private, budget, default_samples, settings

ROOT = Path(__file__).resolve().parents[1]
BIT = Dataset({"bit": [0]})
HEAVY = ("numpy", "scipy", "joblib", "dpaudit.core", "dpaudit.engine.api")


# --- a light plugin --------------------------------------------------------------------------

TRIVIAL = """
import os, sys

def test_trivial():
    loaded = "dpaudit.testing.pytest_plugin" in sys.modules
    assert loaded == (os.environ["EXPECT_DPAUDIT"] == "1")
    heavy = [m for m in {heavy!r} if m in sys.modules]
    assert heavy == [], heavy
"""


def _pytest(folder: Path, *extra: str, expect: bool) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EXPECT_DPAUDIT": "1" if expect else "0"}
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "test_trivial.py"],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow  # two pytest subprocesses
def test_the_plugin_is_loaded_and_imports_nothing_heavy(tmp_path):
    """What the plugin costs a project is what it imports: nothing heavy (its time is a bench's business)."""
    (tmp_path / "test_trivial.py").write_text(TRIVIAL.format(heavy=HEAVY))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    _pytest(tmp_path, expect=True)
    _pytest(tmp_path, "-p", "no:dpaudit", expect=False)


# --- failures read like the user's own assertion ------------------------------------------------

@pytest.mark.slow  # over 4 s in the fast tier (issue #12: the fast tier within 180 s)
def test_a_failing_assert_private_shows_no_dpaudit_frame(pytester):
    pytester.makepyfile(test_leaky="""
        from dpaudit.testing import assert_private
        from dpaudit.mechanisms.classic import RandomizedResponse
        from dpaudit.neighbors import Dataset

        def test_leaky():
            d = Dataset({"bit": [0]})
            assert_private(RandomizedResponse(1.0), d, d.add({"bit": 1}), epsilon=0.2, samples=40_000)
    """)
    result = pytester.runpytest_subprocess("--tb=long")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "PrivacyViolation" in text and "assert_private(RandomizedResponse(1.0)" in text
    frames = re.findall(r"^\S*?([\w.-]+[/\\])*(audit|dpaudit.core|mechanisms|neighbors|reports)[/\\][\w/\\]+\.py:\d+",
                        text, flags=re.M)
    assert frames == [], text


def test_the_failure_names_the_pair_and_explains_the_per_look_confidence():
    with pytest.raises(PrivacyViolation) as err:
        assert_private(RandomizedResponse(1.0), BIT, BIT.add({"bit": 1}), epsilon=0.2, samples=2_000_000)
    text = str(err.value)
    assert "on the pair D = 1 records (bit), D' = 2 records (bit) [add-remove]" in text
    assert "Sequential rule: alpha-spending" in text and "stopped at look 1 of 4" in text
    assert "its own confidence 1 - 0.01 x (its share of alpha), here 0.99875 (share 0.125)" in text
    assert "violation holds with confidence >= 0.99" in text
    with pytest.raises(PrivacyViolation, match="on the pair rr on one bit"):
        assert_private(RandomizedResponse(1.0), BIT, BIT.add({"bit": 1}), epsilon=0.2, samples=40_000,
                       pair="rr on one bit")


# --- the budget: profiles, --dp-samples, settings -----------------------------------------------

def test_settings_is_a_context_manager_and_a_decorator_and_the_innermost_wins():
    assert default_samples() == 1_000_000 and budget.current().confidence == 0.99
    with settings(samples=5000) as now:
        assert now.samples == 5000 and default_samples() == 5000
        with settings(confidence=0.999):
            assert budget.current() == budget.Budget(5000, 0.999)
        assert budget.current() == budget.Budget(5000, 0.99)
    assert default_samples() == 1_000_000

    @settings(samples=3000, confidence=0.9)
    def audited():
        return assert_private(RandomizedResponse(1.0), BIT, BIT.add({"bit": 1}), epsilon=1.0, sequential=False)

    result = audited()
    assert audited.__name__ == "audited" and result.samples == 3000 and result.confidence == 0.9
    assert default_samples() == 1_000_000


@pytest.mark.parametrize("kwargs", [{"samples": 10}, {"samples": 1.5}, {"samples": True}, {"confidence": 1.0},
                                    {"confidence": 0.2}, {"confidence": "high"}])
def test_bad_settings_are_refused_naming_the_field(kwargs):
    with pytest.raises(ValueError, match=f"^{next(iter(kwargs))} = "):
        settings(**kwargs)


def test_a_registered_profile_builds_on_its_parent():
    settings.register_profile("tiny-test-profile", samples=1000, parent="ci")
    try:
        budget.load_profile("tiny-test-profile")
        assert budget.current() == budget.Budget(1000, 0.99)
    finally:
        budget.reset()
        del budget.PROFILES["tiny-test-profile"]
    with pytest.raises(ValueError, match="dp profile = 'nope'"):
        budget.load_profile("nope")


BUDGET_PROBE = """
    import pytest
    from dpaudit.testing import budget
    from dpaudit.testing import default_samples, settings

    def test_run_budget(dp_samples):
        assert (dp_samples, default_samples(), budget.current().confidence) == ({samples}, {samples}, 0.99)

    @settings(samples=2000)
    def test_decorated_budget(dp_samples):
        assert dp_samples == {samples} and default_samples() == 2000

    @pytest.mark.dp_settings(samples=3000, confidence=0.95)
    def test_marked_budget():
        assert budget.current() == budget.Budget(3000, 0.95)
"""


SLOW = pytest.mark.slow  # each case is a pytest subprocess; one stays in the fast tier


@pytest.mark.parametrize("args, samples", [(("--dp-profile", "ci"), 100_000),
                                           pytest.param((), 1_000_000, marks=SLOW),
                                           pytest.param(("--dp-profile", "nightly"), 10_000_000, marks=SLOW),
                                           pytest.param(("--dp-samples", "2.5e4"), 25_000, marks=SLOW),
                                           pytest.param(("--dp-profile", "ci", "--dp-samples", "1e4"), 10_000,
                                                        marks=SLOW)])
def test_dp_profile_and_dp_samples_set_the_runs_budget(pytester, args, samples):
    pytester.makepyfile(BUDGET_PROBE.format(samples=samples))
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=3)
    if args:
        assert f"dpaudit: profile {'ci' if 'ci' in args else 'nightly' if 'nightly' in args else 'default'}" \
               in result.stdout.str()


@pytest.mark.parametrize("args, message", [(("--dp-profile", "weekly"), "dp profile = 'weekly' is invalid"),
                                           (("--dp-samples", "1.5e0"), "not an integer"),
                                           (("--dp-samples", "50"), "must be an integer in [100, 1e+18]")])
def test_bad_budget_options_are_usage_errors(pytester, args, message):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess(*args)
    assert result.ret != 0
    assert message in result.stderr.str() + result.stdout.str()
