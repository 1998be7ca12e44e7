"""Messages that say what to do next (issue 35, item 6): "did you mean" for flags, mechanism names,
module attributes and config keys; integral floats where the config wants an integer; config
errors with their key path; one path per message; no ``.lock`` left behind; help text that says
what the commands do; ``plan NAME --json`` and ``list NAME --json``; the budget a missed
refutation needs."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from dpaudit.cli import expectations
from dpaudit.core import InputError
from dpaudit.engine import plan as budget_plan
from dpaudit.results.schema import plan_schema
from dpaudit.runtime.files import LOCK_NAME, FolderLock
from tests.clirun import in_process

SCHEMAS = Path(__file__).resolve().parents[1] / "audit" / "cli" / "schemas"
PAIR = ["--pair", "tests.plugins.user_mechanisms:pair"]
CORRECT = ["--mechanism", "tests.plugins.user_mechanisms:correct", *PAIR, "--epsilon", "1"]

SCENARIO = """
[[scenario]]
name = "lap"
mechanism = "laplace"
params = {{ epsilon = {epsilon} }}

[scenario.data]
columns = {{ value = [0.0, 1.0] }}

[scenario.{neighbour}]
remove = 0
"""


def _config(tmp_path: Path, run: str = "", epsilon: str = "1.0", neighbour: str = "neighbour") -> Path:
    path = tmp_path / "audit.toml"
    path.write_text(run + SCENARIO.format(epsilon=epsilon, neighbour=neighbour))
    return path


def _validate(doc: dict, schema_name: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = plan_schema() if schema_name == "plan.schema.json" else json.loads((SCHEMAS / schema_name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(doc)


# --- did you mean ---------------------------------------------------------------------------------


def test_a_mistyped_flag_is_told_the_flag_it_meant():
    run = in_process("run", "--sampels", "1e5")
    assert run.returncode == 2
    assert "unrecognized arguments: --sampels (did you mean --samples?)" in run.stderr
    assert "did you mean --seed" in in_process("plan", "x", "--sed=3").stderr


def test_a_mistyped_command_is_told_the_command_it_meant():
    assert "did you mean 'run'" in in_process("rnu").stderr


def test_a_mistyped_mechanism_name_gets_the_closest_names():
    run = in_process("run", "--mechanism", "rn", "--param", "epsilon=1", *PAIR)
    assert run.returncode == 2
    assert "did you mean" in run.stderr and "'randomized-response'" in run.stderr, run.stderr
    assert "did you mean 'laplace'?" in in_process("run", "--mechanism", "laplce", *PAIR).stderr
    assert "did you mean 'laplace'?" in in_process("list", "laplce").stderr


def test_close_names_finds_misspellings_and_abbreviations_only():
    from dpaudit.core import close_names

    known = ["randomized-response", "report-noisy-max", "laplace", "dp-npg", "neighbour"]
    assert close_names("rr", known)[0] == "randomized-response"
    assert "dp-npg" not in close_names("rn", known)  # an abbreviation starts as the name does
    assert close_names("neighbor", known) == ["neighbour"]
    assert close_names("zzzzzz", known) == []


def test_a_missing_module_attribute_gets_the_closest_attributes(tmp_path, monkeypatch):
    (tmp_path / "my_messages_mechs.py").write_text("correct = 1\nunrelated = 2\n")
    monkeypatch.chdir(tmp_path)
    run = in_process("run", "--mechanism", "my_messages_mechs:corect", *PAIR)
    assert run.returncode == 2
    assert "has no attribute 'corect' (did you mean 'correct'?)" in run.stderr, run.stderr


@pytest.mark.parametrize(("run", "neighbour", "path", "meant"), [
    ("", "neighbor", "scenario[0].neighbor", "neighbour"),
    ("[run]\nsampels = 1000\n", "neighbour", "run.sampels", "samples"),
])
def test_an_unknown_config_key_names_its_path_and_the_key_meant(tmp_path, run, neighbour, path, meant):
    result = in_process("run", _config(tmp_path, run=run, neighbour=neighbour), "--quiet")
    assert result.returncode == 2
    assert f"config: {path} = " in result.stderr and f"unknown key (did you mean {meant!r}?)" in result.stderr, \
        result.stderr


def test_an_unknown_key_of_a_nested_table_names_its_path(tmp_path):
    path = _config(tmp_path)
    path.write_text(path.read_text().replace("columns =", "colums =") + "\n[[scenario.claim]]\nepsilon = 1.0\n")
    result = in_process("run", path, "--quiet")
    assert "config: scenario[0].data.colums = " in result.stderr and "did you mean 'columns'?" in result.stderr
    path.write_text(path.read_text().replace("colums =", "columns =").replace("epsilon = 1.0\n", "epsilonn = 1.0\n"))
    result = in_process("run", path, "--quiet")
    assert "config: scenario[0].claim[0].epsilonn = " in result.stderr and "did you mean 'epsilon'?" in result.stderr


def test_a_mistyped_mechanism_in_a_config_gets_the_closest_names(tmp_path):
    path = _config(tmp_path)
    path.write_text(path.read_text().replace('"laplace"', '"laplce"'))
    result = in_process("run", path, "--quiet")
    assert "config: scenario[0].mechanism = 'laplce' is invalid" in result.stderr
    assert "did you mean 'laplace'?" in result.stderr


# --- integers, key paths, paths -----------------------------------------------------------------------


def test_an_integral_float_is_an_integer_in_a_config_as_on_the_command_line(tmp_path):
    result = in_process("run", _config(tmp_path, run="[run]\nsamples = 1e3\nseed = 2.0\njobs = 1.0\n"), "--quiet")
    assert result.returncode == 0, result.stderr
    assert "budget 1000 samples per side" in result.stdout and "seed 2" in result.stdout


@pytest.mark.parametrize(("line", "path"), [("seed = 1.5e0", "run.seed"), ("samples = 1000.5", "run.samples"),
                                            ("samples = inf", "run.samples"), ("seed = true", "run.seed")])
def test_a_fractional_float_is_still_refused(tmp_path, line, path):
    result = in_process("run", _config(tmp_path, run=f"[run]\n{line}\n"), "--quiet")
    assert result.returncode == 2 and f"config: {path} = " in result.stderr and "must be an integer" in result.stderr


def test_whole_number():
    from dpaudit.core import whole_number

    assert whole_number(100_000.0) == 100_000 and whole_number(7) == 7
    assert whole_number(1.5) is None and whole_number(True) is None and whole_number(float("nan")) is None
    assert whole_number(1e300) is None and whole_number("5") is None


def test_a_bad_parameter_in_a_config_names_its_key_path(tmp_path):
    result = in_process("run", _config(tmp_path, epsilon="'one'"), "--quiet")
    assert result.returncode == 2
    assert "error: config: scenario[0].params.epsilon = 'one' is invalid: " in result.stderr, result.stderr


def test_a_missing_data_file_is_named_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = in_process("run", "--mechanism", "laplace", "--param", "epsilon=1", "--data", "nofile.npz",
                        "--data-prime", "nofile.npz")
    assert result.returncode == 2
    line = next(x for x in result.stderr.splitlines() if x.startswith("error:"))
    assert line.count("nofile.npz") == 1, line
    assert line.startswith("error: --data nofile.npz: cannot be read")


# --- .lock ------------------------------------------------------------------------------------------------


def test_a_finished_run_leaves_no_lock(tmp_path):
    out = tmp_path / "out"
    assert in_process("run", *CORRECT, "--samples", "1000", "--quiet", "--out", out).returncode == 0
    assert (out / "results.json").is_file() and not (out / LOCK_NAME).exists()


def test_a_run_that_fails_leaves_no_lock(tmp_path):
    out = tmp_path / "out"
    run = in_process("run", "--mechanism", "tests.plugins.user_mechanisms:crashes", *PAIR, "--samples", "1000",
                     "--quiet", "--out", out)
    assert run.returncode == 2
    assert not (out / LOCK_NAME).exists()


def test_the_lock_still_keeps_a_second_run_out_and_is_gone_after(tmp_path):
    first, second = FolderLock(tmp_path), FolderLock(tmp_path)
    first.acquire()
    assert (tmp_path / LOCK_NAME).read_text().strip() == str(os.getpid())
    with pytest.raises(InputError, match="in use by another dpaudit run"):
        second.acquire()
    first.release()
    assert not (tmp_path / LOCK_NAME).exists()
    with second:
        assert (tmp_path / LOCK_NAME).exists()
    assert not (tmp_path / LOCK_NAME).exists()


def test_a_lock_on_a_deleted_file_is_not_kept(tmp_path):
    """A run that opened ``.lock`` just before its holder deleted it must not hold the folder (a
    third run would lock the new file): acquire keeps a lock only on the file now in the folder."""
    lock = FolderLock(tmp_path)
    stale = os.open(tmp_path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    os.unlink(tmp_path / LOCK_NAME)
    try:
        assert not lock._current(stale)
    finally:
        os.close(stale)
    lock.acquire()
    assert lock.fd is not None and lock._current(lock.fd)
    lock.release()


# --- help ------------------------------------------------------------------------------------------------


def test_run_help_says_out_writes_the_report_too():
    text = " ".join(in_process("run", "--help").stdout.split())
    assert re.search(r"--out DIR write the run to DIR: results.json, summary.txt and, with the \[report\] extra "
                     r"installed, report.pdf", text), text


def test_help_lists_the_subcommands_in_one_order():
    text = in_process("--help").stdout
    usage = re.search(r"\{([a-z,]+)\}", text).group(1).split(",")
    listed = re.findall(r"^    ([a-z]+) ", text, flags=re.MULTILINE)
    assert listed == usage, (usage, listed)
    missing = in_process()
    assert missing.stderr.strip().endswith("choose one of " + ", ".join(usage))


# --- --json ---------------------------------------------------------------------------------------------------


def test_plan_json_for_a_multi_run_scenario(monkeypatch):
    """The --json and the text answer of one plan.  The planner (seconds of CPU: its simulated
    selections) runs once; the text run is handed the same BudgetPlan, so what differs between the two
    runs is only what is checked here, the rendering (the plan's determinism is not at stake)."""
    planned: list[budget_plan.BudgetPlan] = []
    calls = []
    real = budget_plan.plan

    def plan_once(*args, **kwargs):
        calls.append(args)
        if not planned:
            planned.append(real(*args, **kwargs))
        return planned[0]

    monkeypatch.setattr(budget_plan, "plan", plan_once)
    run = in_process("plan", "kl-rlhf-addremove", "--json", "--jobs", "1")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    _validate(doc, "plan.schema.json")
    text = in_process("plan", "kl-rlhf-addremove", "--jobs", "1").stdout
    assert len(calls) == 2 and len(planned) == 1  # both runs asked the planner; it planned once
    assert doc["kind"] == "multi-run-plan" and text.startswith(f"samples_per_side={doc['samples_per_side']}\n")
    assert [r["claim_id"] for r in doc["requirements"]] == ["kl-rlhf/thm4-addremove"]


def test_the_plan_schema_still_takes_one_run_plans():
    run = in_process("plan", "--onerun", "--epsilon", "2", "--mu", "1.5", "--json")
    assert run.returncode == 0, run.stderr
    _validate(json.loads(run.stdout), "plan.schema.json")


def test_list_name_json(listed_json):
    run = in_process("list", "laplace", "--json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    _validate(doc, "list.schema.json")
    assert doc["kind"] == "mechanism" and doc["family"] == "classic" and doc["mechanism"]["name"] == "laplace"
    whole = json.loads(listed_json.stdout)  # in_process("list", "--json"), shared
    _validate(whole, "list.schema.json")
    classic = next(f for f in whole["families"] if f["name"] == "classic")
    assert next(m for m in classic["mechanisms"] if m["name"] == "laplace") == doc["mechanism"]
    assert in_process("list", "--configs", "--json").returncode == 2


# --- the budget a missed refutation needs -----------------------------------------------------------------------


class _Found:
    def __init__(self, n: int | None) -> None:
        self.samples_per_side = n


def _notes(monkeypatch, needed: int | None, factor: float = 1.0) -> list[str]:
    monkeypatch.setattr(budget_plan, "plan", lambda *a, **k: _Found(needed))  # expectations imports it on first use

    class Scenario:
        name, samples_factor = "kl-rlhf-addremove", factor

    records = [{"scenario": "kl-rlhf-addremove", "finding": "holds at this budget", "expected_verdict": "violation",
                "claim_status": "refuted", "claim_id": "kl-rlhf/thm4-addremove"}]
    assert expectations.outcome(records[0]) == expectations.MISSED
    return expectations.missed_notes(records, [Scenario()], samples=100_000, confidence=0.95, seed=0,
                                     program="dpaudit")


def test_every_missed_note_names_the_samples_flag(monkeypatch):
    note, = _notes(monkeypatch, 264_164)
    assert "needs about 2.64e+05 samples per side, i.e. --samples 2.64e+05" in note, note
    note, = _notes(monkeypatch, 400_000, factor=2.0)
    assert "--samples 2e+05" in note, note


def test_a_missed_note_never_names_a_budget_the_run_already_had(monkeypatch):
    """The planner's median run may refute below the budget this run had (it was unlucky, or the
    planner undershoots, as it did for kl-rlhf-addremove: 3.4e4 named after a run at 1e5 missed)."""
    note, = _notes(monkeypatch, 34_000)
    assert "needs about 3.4e+04" not in note and "--samples 3.4e+04" not in note, note
    assert "100000" in note or "1e+05" in note
    assert "--seed" in note and "--samples" in note, note


def test_an_unknown_key_of_a_one_run_scenario_gets_the_key_meant(tmp_path):
    path = tmp_path / "onerun.toml"
    path.write_text('[[scenario]]\nname = "dp"\nmechanism = "m:x"\nscorr = "m:s"\ncanaries = 100\n')
    result = in_process("run", path, "--quiet")
    assert result.returncode == 2
    assert "config: scenario[0].scorr = 'm:s' is invalid: unknown key (did you mean 'scorer'?)" in result.stderr, \
        result.stderr


def test_a_mistyped_parameter_gets_the_parameter_meant(tmp_path):
    run = in_process("run", "--mechanism", "laplace", "--param", "epsilon=1", "--param", "sensitivty=2", *PAIR)
    assert run.returncode == 2
    assert "--param sensitivty=2 is invalid: laplace takes no parameter 'sensitivty' (did you mean 'sensitivity'?)" \
        in run.stderr, run.stderr
    result = in_process("run", _config(tmp_path, epsilon="1.0, sensitivty = 2"), "--quiet")
    assert "config: scenario[0].params.sensitivty = 2 is invalid: laplace takes no parameter 'sensitivty' (did you " \
           "mean 'sensitivity'?)" in result.stderr, result.stderr


def test_a_plugin_builders_refusal_names_its_key_path(tmp_path, monkeypatch):
    (tmp_path / "my_messages_builder.py").write_text(
        "from dpaudit.core import check_positive\n"
        "from tests.plugins.user_mechanisms import NoisyCount\n\n\n"
        "def build(epsilon):\n    return NoisyCount(check_positive('epsilon', epsilon))\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))
    path = tmp_path / "plugin.toml"
    path.write_text(SCENARIO.format(epsilon="'one'", neighbour="neighbour").replace(
        '"laplace"', '"my_messages_builder:build"'))
    result = in_process("run", path, "--allow-plugin", "my_messages_builder", "--quiet")
    assert result.returncode == 2
    assert "config: scenario[0].params.epsilon = 'one' is invalid" in result.stderr, result.stderr
