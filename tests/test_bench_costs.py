"""``dpaudit bench``'s costs: what a process is charged, and how repeated commands are interleaved."""

from pathlib import Path

import pytest

from dpaudit.runs import costs


def test_command_cost_charges_the_process_and_the_children_it_waited_for():
    """A child that burns CPU in a grandchild it waits for is charged that CPU (``os.wait4``'s
    usage includes waited-for descendants), with its exit code and last line; its memory is the
    resident set of a process that touched 200 MiB."""
    burn = ("import subprocess, sys; subprocess.run([sys.executable, '-c', "
            "'import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.3: pass']); "
            "b = bytearray(200 * 2**20); print('first'); print('last line'); sys.exit(3)")
    cost = costs.command_cost(("-c", burn), module=False)
    assert cost.exit_code == 3 and (cost.first_line, cost.last_line) == ("first", "last line")
    assert cost.cpu_seconds >= 0.3  # the grandchild's busy loop, charged to the child
    assert cost.peak_mb >= 200
    assert cost.command.startswith("python -c")


def test_command_cost_of_a_quiet_cheap_child_is_small():
    """The twin: a child that does nothing is charged well under the busy one's 0.3 s of CPU, and
    prints no last line."""
    cost = costs.command_cost(("-c", "pass"), module=False)
    assert cost.exit_code == 0 and cost.last_line == "" and cost.cpu_seconds < 0.3


def test_interleaved_reverses_the_order_every_other_round(monkeypatch):
    seen = []
    monkeypatch.setattr(costs, "command_cost", lambda args: seen.append(args[0]) or costs.Cost(
        command=args[0], cpu_seconds=1.0, wall_seconds=1.0, peak_mb=1.0, exit_code=0, last_line=""))
    runs = costs.interleaved({"a": ("a",), "b": ("b",)}, reps=3)
    assert seen == ["a", "b", "b", "a", "a", "b"]
    assert [len(runs["a"]), len(runs["b"])] == [3, 3]


def test_costs_ratio_is_list_json_over_list_and_table_prints_each(monkeypatch):
    """Each figure's median CPU; ``list --json`` ÷ ``list`` from the same run; the README's plan
    example prints its first line (its requirement)."""
    charge = {"list": [1.0, 3.0, 1.2], "--json": [2.0, 2.4, 9.0]}

    def fake(args, **kwargs):
        key = "--json" if "--json" in args else args[0]
        cpu = charge[key].pop(0) if key in charge else 0.5
        return costs.Cost(command=" ".join(args), cpu_seconds=cpu, wall_seconds=cpu, peak_mb=10.0, exit_code=0,
                          last_line=f"last of {args[-1]}", first_line=f"first of {args[-1]}")

    monkeypatch.setattr(costs, "command_cost", fake)
    monkeypatch.setattr(costs, "rules_bench", lambda ms, reps: [{"m": ms[0], "planned_over_fixed": 1.25,
                                                                  "planned_eps_over_fixed_eps": 1.5,
                                                                  "fixed_cpu_s": 0.5}])
    figures = costs.costs(reps=3)
    assert figures["list"]["cpu_seconds"] == 1.2 and figures["list_json"]["cpu_seconds"] == 2.4
    assert figures["list_json_over_list"] == pytest.approx(2.0)
    assert "errata_suite" not in figures and "test_command" not in figures
    text = "\n".join(costs.table(figures))
    assert "list --json / list: 2.00" in text and "it prints: first of align-alg2-zero-out" in text
    assert "m = 1,000,000: the rule planned from its claims / Fixed(m/10, m/10): 1.25" in text


def test_the_test_command_is_the_readmes():
    """The measured test command is the README's (its cache plugin off so that it writes nothing)."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert 'python3 -m pytest -q -m "not slow" -n 2' in readme
    assert costs.TEST_COMMAND[:7] == ("-m", "pytest", "-q", "-m", "not slow", "-n", "2")
