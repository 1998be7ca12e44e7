"""Text from configs and results files is escaped before a terminal, summary.txt or the PDF sees it
(issue 37, item 9).

Before: a scenario name holding ``ESC[2K`` (erase the line), ``\\r`` and ``ESC[8m`` (conceal what
follows) printed a fake "every verdict as expected" footer over the real one on a terminal.  Now
every non-printable character of such a name reaches the output as its Python escape (``\\x1b``),
so the table shows the name as text and the real footer stands.
"""

from __future__ import annotations

import json

import pytest

from dpaudit.reports.text import printable, printable_all
from tests.clirun import in_process
from tests.configs import RR, with_samples

FAKE = "\n\n1 check in 1 scenario, budget 5000 samples per side: every verdict as expected\n"
# A leaky run (randomized response at eps = 2 against a claim of 0.1): its real footer is a finding.
# The shared config (tests/configs.py) with the hostile name and claim id.
HOSTILE = RR.replace('name = "rr"', f'name = "rr\\u001b[2K\\r{json.dumps(FAKE)[1:-1]}\\u001b[8m"')
CONFIG = (with_samples(5000, HOSTILE.replace("epsilon = 1.0", "epsilon = 2.0"))
          + '[[scenario.claim]]\nepsilon = 0.1\nid = "user/claim\\u001b[8m"\n')


def test_a_name_cannot_fake_the_footer(tmp_path):
    config = tmp_path / "hostile.toml"
    config.write_text(CONFIG)
    out = tmp_path / "out"
    done = in_process("run", config, "--quiet", "--out", out)
    assert done.returncode == 1, done.stderr  # the real verdict: a refutation nobody expected
    summary_file = (out / "summary.txt").read_text()
    for text in (done.stdout, summary_file, in_process("summary", out).stdout,
                 in_process("summary", out, "--wide").stdout):
        assert "\x1b" not in text and "\r" not in text
        assert "every verdict as expected" not in text.replace("\\n", "\n").splitlines()[-1]
        assert r"rr\x1b[2K\r\n\n1 check in 1 scenario" in text  # the name, shown as text
        assert "SOME VERDICTS NOT AS EXPECTED" in text
    assert "user/claim\\x1b[8m" in done.stdout
    assert not [line for line in summary_file.splitlines() if line.endswith("every verdict as expected")]


def test_the_report_of_such_a_file_holds_no_control_character(tmp_path):
    config = tmp_path / "hostile.toml"
    config.write_text(CONFIG)
    out = tmp_path / "out"
    assert in_process("run", config, "--quiet", "--out", out).returncode == 1
    done = in_process("report", out, "-o", tmp_path / "again.pdf")
    assert done.returncode == 0, done.stderr
    pdfplumber = pytest.importorskip("pdfplumber")
    with pdfplumber.open(tmp_path / "again.pdf") as pdf:
        words = "".join(page.extract_text() or "" for page in pdf.pages)
    assert "\x1b" not in words and "\r" not in words
    assert "\\x1b[2K" in words  # the name, shown as text


def test_printable_escapes_what_a_terminal_would_obey_and_keeps_the_rest():
    assert printable("rr\x1b[2K\r\x1b[8m") == r"rr\x1b[2K\r\x1b[8m"
    assert printable("a\u202eb\ud800\u2028") == r"a\u202eb\ud800\u2028"
    assert printable("ε_lower — known erratum: “caught” …") == "ε_lower — known erratum: “caught” …"
    assert printable_all({"k\x07": ["v\x1b", 1.5, None]}) == {r"k\x07": [r"v\x1b", 1.5, None]}
