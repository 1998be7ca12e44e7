"""One phrase, one place: what a user's code did (``called sys.exit(CODE)`` / ``raised NAME``) is
worded by :func:`dpaudit.runtime.blame.what_code_did` alone, and every message that blames the
user's code (a mechanism's ``sample``/``sample_counts``/``name``, a plugin's builder, the command
line's last net) says it through that helper."""

from __future__ import annotations

from pathlib import Path

from dpaudit.runtime.blame import what_code_did
from tests.layout import module_files

ROOT = Path(__file__).resolve().parents[1]


def test_an_exit_is_called_by_its_code_and_anything_else_raised_by_its_name():
    assert what_code_did(SystemExit(0)) == "called sys.exit(0)"
    assert what_code_did(SystemExit("bye")) == "called sys.exit('bye')"
    assert what_code_did(SystemExit()) == "called sys.exit(None)"
    assert what_code_did(SystemExit(3), detail=True) == "called sys.exit(3)"  # its code is the detail
    assert what_code_did(ValueError("bad")) == "raised ValueError"
    assert what_code_did(ValueError("bad"), detail=True) == "raised ValueError: bad"
    assert what_code_did(KeyboardInterrupt()) == "raised KeyboardInterrupt"


def test_the_exit_phrase_is_built_in_blame_alone():
    """A second spelling of the phrase (an f-string of ``sys.exit({``) anywhere else in the package
    would drift from the first: each message takes it from the helper."""
    files = module_files(ROOT)
    assert "dpaudit.runtime.blame" in files and len(files) > 100
    built = sorted(str(path.relative_to(ROOT)) for path in files.values()
                   if "sys.exit({" in path.read_text(encoding="utf-8"))
    assert built == ["audit/runtime/blame.py"]
