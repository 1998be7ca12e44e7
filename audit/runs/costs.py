"""What a user and a contributor pay, each figure a ratio measured in one run (``dpaudit bench``).

Every command here runs as its own process, as a user types it (``python -m dpaudit ...``), and is
charged the CPU seconds, wall seconds and peak resident memory the kernel reports for it and the
children it waited for (``os.wait4``'s resource usage: what ``/usr/bin/time -v`` prints).  CPU
seconds rather than wall clock carry the comparisons, because a shared machine inflates wall time
without changing the work; a ratio is taken between commands measured in the same run, interleaved
(``reps`` rounds, the order reversed every other round, the median of each), so that a machine
busier in one half of the run does not favour either side.

The figures:

* the default run (``run --quiet``): CPU, wall and peak memory;
* ``list --json`` ÷ ``list``: the JSON catalog is a description of the same catalog;
* ``plan`` of a typo: how long a user waits to hear the name is wrong;
* ``plan align-alg2-zero-out``: the README's example, with the requirement it prints first;
* a one-run bound at m = 10⁶ under the rule planned from its claims ÷ under ``Fixed``
  (:func:`dpaudit.onerun.bench.rules_bench`, in this process: a library call, not a command);
* optionally, the errata suite (``run --suite errata --quiet``) and the README's test command.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.onerun.bench import rules_bench

__all__ = ["README_PLAN", "TEST_COMMAND", "Cost", "command_cost", "costs", "interleaved"]

README_PLAN = ("plan", "align-alg2-zero-out")
"""The README's ``plan`` example: a scenario of the default suite with a joint-score search."""

TYPO_PLAN = ("plan", "align-alg2-zero-ot")
"""``plan`` of a name one letter off the README's: answered with a suggestion, exit 2."""

TEST_COMMAND = ("-m", "pytest", "-q", "-m", "not slow", "-n", "2", "-p", "no:cacheprovider")
"""The README's test command (its cache plugin off, so that the measurement writes nothing)."""


@dataclasses.dataclass(frozen=True)
class Cost:
    """One process's cost: ``cpu_seconds`` (user + system, its waited-for children included),
    ``wall_seconds``, ``peak_mb`` (the largest resident set of it or any waited-for child, MiB),
    its exit code and the first and last lines it printed."""

    command: str
    cpu_seconds: float
    wall_seconds: float
    peak_mb: float
    exit_code: int
    last_line: str
    first_line: str = ""


def _environment() -> dict[str, str]:
    """The environment of a measured child: it imports the dpaudit this bench runs from."""
    home = str(Path(__file__).parents[2])  # the folder holding the `dpaudit` package
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [home, os.environ.get("PYTHONPATH")]))}


def command_cost(args: Sequence[str], *, module: bool = True, cwd: str | Path | None = None) -> Cost:
    """Run ``python -m dpaudit ARGS`` (``python ARGS`` when ``module`` is false) to its end and
    return its :class:`Cost`.  Its output goes to temporary files, not pipes, so that a child
    printing much never blocks on a reader; its first and last lines are stdout's (stderr's when
    stdout is empty: a refusal)."""
    argv = [sys.executable, *(("-m", "dpaudit") if module else ()), *args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=_environment(), cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        # its result on stdout; stderr's progress lines and messages only when stdout is empty (a refusal)
        lines = _lines(out) or _lines(err)
    shown = " ".join(["python", *(("-m", "dpaudit") if module else ()), *args])
    return Cost(command=shown, cpu_seconds=usage.ru_utime + usage.ru_stime, wall_seconds=wall,
                peak_mb=usage.ru_maxrss / 1024,  # Linux reports KiB
                exit_code=proc.returncode, last_line=lines[-1] if lines else "", first_line=lines[0] if lines else "")


def _lines(file: Any) -> list[str]:
    file.seek(0)
    return file.read().decode(errors="replace").strip().splitlines()


def interleaved(commands: Mapping[str, Sequence[str]], reps: int) -> dict[str, list[Cost]]:
    """Each named command ``reps`` times, round by round, in reverse order every other round."""
    names = list(commands)
    runs: dict[str, list[Cost]] = {name: [] for name in names}
    for rep in range(reps):
        for name in names if rep % 2 == 0 else names[::-1]:
            runs[name].append(command_cost(commands[name]))
    return runs


def _median(runs: Sequence[Cost], field: str) -> float:
    return float(np.median([getattr(c, field) for c in runs]))


def _summary(runs: Sequence[Cost]) -> dict[str, Any]:
    """The median CPU, wall and memory of repeated runs, with the first run's command, exit code and
    first and last lines."""
    return {"command": runs[0].command, "runs": len(runs), "cpu_seconds": _median(runs, "cpu_seconds"),
            "wall_seconds": _median(runs, "wall_seconds"), "peak_mb": max(c.peak_mb for c in runs),
            "exit_code": runs[0].exit_code, "first_line": runs[0].first_line, "last_line": runs[0].last_line}


def costs(reps: int = 3, errata: bool = False, tests: bool = False) -> dict[str, Any]:
    """The figures of the module docstring (each command ``reps`` times, interleaved; the long ones once)."""
    listing = interleaved({"list": ("list",), "list_json": ("list", "--json")}, reps)
    out: dict[str, Any] = {"list": _summary(listing["list"]), "list_json": _summary(listing["list_json"])}
    out["list_json_over_list"] = out["list_json"]["cpu_seconds"] / out["list"]["cpu_seconds"]
    out["plan_typo"] = _summary(interleaved({"typo": TYPO_PLAN}, reps)["typo"])
    out["plan_readme"] = _summary([command_cost(README_PLAN)])
    out["default_run"] = _summary([command_cost(("run", "--quiet"))])
    out["onerun_rules"] = rules_bench((10**6,), reps=reps)[0]
    if errata:
        out["errata_suite"] = _summary([command_cost(("run", "--suite", "errata", "--quiet"))])
    if tests:
        root = Path(__file__).parents[2]
        out["test_command"] = (_summary([command_cost(TEST_COMMAND, module=False, cwd=root)])
                               if (root / "tests").is_dir() else {"skipped": f"no tests folder in {root}"})
    return out


def table(figures: Mapping[str, Any]) -> list[str]:
    """The figures as lines of text (each command's CPU, wall and memory; the ratios)."""
    lines = ["costs (each a process as a user types it; CPU = user + system, its children included; "
             "median of interleaved runs)"]
    for key, row in figures.items():
        if not isinstance(row, Mapping) or not ("command" in row or "skipped" in row):
            continue  # a ratio or a library call's row: printed below
        if "skipped" in row:
            lines.append(f"  {key:14s} skipped: {row['skipped']}")
            continue
        lines.append(f"  {key:14s} {row['cpu_seconds']:7.2f} CPU s {row['wall_seconds']:7.2f} s wall "
                     f"{row['peak_mb']:6.0f} MB  exit {row['exit_code']}  ({row['command']}; x{row['runs']})")
        if key == "plan_readme":  # its requirement, the line a script reads
            lines.append(f"  {'':14s} it prints: {row['first_line']}")
    if "list_json_over_list" in figures:
        lines.append(f"  list --json / list: {figures['list_json_over_list']:.2f} (CPU, same run)")
    rules = figures.get("onerun_rules")
    if rules:
        lines.append(f"  one-run bound at m = {rules['m']:,}: the rule planned from its claims / Fixed(m/10, m/10): "
                     f"{rules['planned_over_fixed']:.2f} with a GDP claim, {rules['planned_eps_over_fixed_eps']:.2f} "
                     f"with an (eps, delta) claim (CPU, Fixed {rules['fixed_cpu_s']:.2f} s)")
    return lines
