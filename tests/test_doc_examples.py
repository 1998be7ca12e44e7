"""Every example of the README and the documentation site works as a user pastes it.

* each Python block runs in a fresh interpreter from an empty folder, unless it is marked a fragment
  (see :mod:`tests.docexamples`) or its first line names an extra or package that is not installed
  (CI installs the ``dev`` extra, which holds every extra the examples name), and prints what its
  comments say it prints (``print(x)   # 9.28``: :func:`tests.docexamples.stated`);
* a fragment says so where a reader sees it (a visible line above it on the rendered page);
* every install command installs from a checkout (no package index serves ``dpaudit``);
* every command line of the pages is accepted by the command's own parser.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys

import pytest

from dpaudit.cli.parser import UsageError, build_parser
from tests.docexamples import ROOT, WRAPPER, all_blocks, commands, introduction, mismatch, pages, printed, stated

BLOCKS = all_blocks()
PYTHON = [b for b in BLOCKS if b.language == "python"]
RUNNABLE = [b for b in PYTHON if not b.fragment]
SHELL = [b for b in BLOCKS if b.language in ("bash", "console", "text")]
# what in a block's code needs an extra: the accountant's curves (dp-accounting), OpenDP, Dask
NEEDS_EXTRA = {"onerun": r"\b\w+_profile\(", "opendp": r"^\s*(?:import|from) opendp\b",
               "dask": r"^\s*(?:import|from) (?:dask|distributed)\b"}
# an extra that carries another (pyproject.toml): the libraries extra pins OpenDP, the opacus extra the onerun one
CARRIES = {"libraries": {"opendp"}, "opacus": {"onerun"}}
COMMAND = re.compile(r"^(?:python3? -m (?:dpaudit|audit)|dpaudit)\s+(?P<args>.*)$")


def test_the_pages_hold_examples():
    """The reader finds the blocks (an empty list would make every test below vacuous)."""
    assert len(RUNNABLE) >= 10 and len(SHELL) >= 10
    assert {b.path.name for b in RUNNABLE} >= {"README.md", "guide.rst", "pytest.rst"}


# Blocks that run in the slow tier (CI runs both: every block still runs there).  OpenDP draws one output
# per call into its native library (about 20 s of CPU per 10^5); the libraries extra's examples drive
# OpenDP too; diffprivlib's example draws 10^5 outputs by one Python call each and the Opacus example
# trains a model (4-6 CPU s each, measured at 3a2da36, issue 45).
SLOW_EXTRAS = (("extra", "opendp"), ("extra", "libraries"), ("extra", "opacus"), ("package", "diffprivlib"))
# A block whose audit draws 10^7 samples per side or more (README's Algorithm 2 example, ~4.5 CPU s).
SLOW_SAMPLES = 10_000_000


def slow(block) -> bool:
    """Whether the block runs in the slow tier (see SLOW_EXTRAS and SLOW_SAMPLES)."""
    sizes = [int(s.replace("_", "")) for s in re.findall(r"\bsamples=([\d_]+)\b", block.code)]
    return block.needs in SLOW_EXTRAS or any(s >= SLOW_SAMPLES for s in sizes)


def test_the_slow_rule_picks_the_heavy_blocks():
    """The rule above puts the heavy blocks in the slow tier and leaves the others in the fast one."""
    heavy = {b.where for b in RUNNABLE if slow(b)}
    assert any(b.needs == ("extra", "opacus") for b in RUNNABLE if b.where in heavy)
    assert any("samples=10_000_000" in b.code for b in RUNNABLE if b.where in heavy)
    assert len(heavy) < len(RUNNABLE) // 2 and not any(slow(b) for b in RUNNABLE if "samples=100_000," in b.code
                                                       and b.needs is None)


@pytest.mark.parametrize("block", [pytest.param(b, marks=pytest.mark.slow) if slow(b) else b
                                   for b in RUNNABLE], ids=[b.where for b in RUNNABLE])
def test_python_example_runs_as_pasted(block, tmp_path):
    if block.module is not None and importlib.util.find_spec(block.module) is None:
        pytest.skip(f"{block.where} needs {block.needs[1]} ({block.module} is not installed)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed package, as a user has it
    # print calls tagged with their line (docexamples.WRAPPER, one line before the block): what each prints
    # is checked against what the block says it prints
    proc = subprocess.run([sys.executable, "-c", WRAPPER + block.code], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, f"{block.where} fails as pasted:\n{proc.stderr[-3000:]}"
    shown = printed(proc.stdout)
    for line, said in stated(block).items():
        wrong = mismatch(said, shown.get(line, ""))
        assert wrong is None, f"{block.where}, line {line}: {wrong} (it says '# {said}')"


def test_fragments_are_few_and_say_why():
    """A fragment is the exception: each names what the reader supplies."""
    fragments = [b for b in PYTHON if b.fragment]
    assert len(fragments) <= 4, [b.where for b in fragments]
    for block in fragments:  # visibly: an HTML comment or a CSS class alone is hidden on the rendered page
        said = introduction(block)
        assert re.search(r"\bfragment\b", said, flags=re.I), f"{block.where}: say it is a fragment, visibly"
    hidden = [b for b in PYTHON if not b.fragment and b.path.suffix == ".md" and "<!--" in introduction(b)]
    assert not hidden, [b.where for b in hidden]


def test_an_example_of_tests_passes_under_pytest(tmp_path):
    """A block that defines tests (the pytest how-to's) passes when pasted into a test file and run.
    The blocks are pasted into files of their own and run by one pytest session (one interpreter
    and one plugin start for all), which must pass every test each block defines."""
    testing = [b for b in RUNNABLE if re.search(r"^def test_", b.code, flags=re.M)]
    assert {b.path.name for b in testing} >= {"README.md", "pytest.rst"}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    pasted = {f"test_pasted_{i}.py": block for i, block in enumerate(testing)
              if block.module is None or importlib.util.find_spec(block.module) is not None}
    for name, block in pasted.items():
        (tmp_path / name).write_text(block.code)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "--dp-profile", "ci",
                           *pasted], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    for name, block in pasted.items():
        for test in re.findall(r"^def (test_\w+)", block.code, flags=re.M):
            said = f"{block.where} fails under pytest as pasted:\n{proc.stdout[-3000:]}"
            assert f"PASSED {name}::{test}" in proc.stdout, said
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_an_example_that_needs_an_extra_says_so_on_its_first_line():
    """Blocks that import a module of an extra name it first (the onerun accountant, OpenDP)."""
    for block in RUNNABLE:
        uses = {extra for extra, pattern in NEEDS_EXTRA.items() if re.search(pattern, block.code, flags=re.M)}
        if uses:
            named = block.needs[1] if block.needs is not None else None
            assert named in uses or uses <= CARRIES.get(named, set()), f"{block.where} needs {uses}: say so first"


def test_install_commands_install_from_a_checkout():
    """No package index serves dpaudit: every install is of the checkout (``.`` or ``'.[extra]'``)."""
    for page in pages():
        text = page.read_text(encoding="utf-8")
        wrong = re.findall(r"pip install\s+(?:-e\s+)?['\"]?dpaudit\b[^\s`]*", text)
        assert not wrong, f"{page.relative_to(ROOT)}: {wrong} installs from an index that does not serve dpaudit"


def test_the_pages_say_to_use_a_virtual_environment():
    for page in (ROOT / "README.md", ROOT / "docs" / "guide.rst"):
        assert "python3 -m venv" in page.read_text(encoding="utf-8"), page.name


@pytest.mark.parametrize("block", SHELL, ids=[b.where for b in SHELL])
def test_command_lines_are_accepted_by_the_parser(block):
    parser = build_parser()
    for line in commands(block):
        match = COMMAND.match(line)
        if match is None:
            continue
        # a synopsis writes optional parts in brackets (``[--out bench.json]``): check the line without them
        argv = shlex.split(re.sub(r"\s\[[^\]]*\]", "", match["args"]))
        if "--help" in argv or "-h" in argv or argv == ["--version"]:
            continue
        try:
            parser.parse_args(argv)
        except (SystemExit, UsageError) as exc:
            pytest.fail(f"{block.where}: `{line}` is refused by the parser ({exc})")
