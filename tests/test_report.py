"""The PDF report: complete (every claim id, verdict and number), readable, reproducible, and honest
about bad or partial input."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from pypdf import PdfReader

from dpaudit.cli import main
from dpaudit.reports.text import fmt

ROOT = Path(__file__).resolve().parents[1]
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}


@pytest.fixture(scope="module")
def default_report(default_suite_run):
    assert default_suite_run.code == 0, default_suite_run.stderr[-4000:]
    return default_suite_run.out


def text_of(pdf: Path) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(pdf).pages)


def squeezed(text: str) -> str:
    """Text without whitespace: table cells wrap an id or a verdict across lines."""
    return "".join(text.split())


@pytest.mark.slow  # the session's default-suite run (~60 s + ~30 s PDF)
def test_every_claim_id_verdict_and_number_appears(default_report):
    text = squeezed(text_of(default_report / "report.pdf"))
    records = json.loads((default_report / "results.json").read_text())["records"]
    for r in records:
        assert squeezed(r["claim_id"]) in text
        assert squeezed(r["finding"]) in text
        for key in ("delta", "epsilon_claim", "epsilon_lower", "epsilon_exact"):
            if r[key] is not None:
                assert fmt(r[key]) in text, (r["claim_id"], key, fmt(r[key]))
    for word in ("whatitmeans", "Errata", "Reproducibility", "SeedSequence"):
        assert word in text


@pytest.mark.slow  # the session's default-suite run (~60 s + ~30 s PDF)
def test_gaussian_scenarios_show_a_labelled_mu_gdp_and_white_box_errata_are_explained(default_report):
    text = squeezed(text_of(default_report / "report.pdf"))
    assert squeezed("mu-GDP fit, ASSUMING a Gaussian trade-off curve") in text  # e.g. the alignment covariance
    assert squeezed("reject a Gaussian trade-off") in text    # e.g. Laplace: the fit says it does not apply
    assert squeezed("exact loss (white box)") in text          # align/alg2-printed under zero-out
    assert squeezed("computed from the exact output distributions of our model") in text


@pytest.mark.slow  # the session's default-suite run (~60 s + ~30 s PDF) and one more PDF
def test_regenerating_from_the_same_results_is_byte_identical(default_report, tmp_path):
    """``report`` in this process re-renders, byte for byte, the PDF the run's own process wrote."""
    assert main(["report", str(default_report / "results.json"), "-o", str(tmp_path / "a.pdf")]) == 0
    assert (tmp_path / "a.pdf").read_bytes() == (default_report / "report.pdf").read_bytes()


@pytest.mark.slow  # the session's default-suite run (~60 s + ~30 s PDF)
def test_pages_render_and_are_not_blank(default_report, tmp_path):
    if shutil.which("pdftoppm") is None:
        pytest.skip("pdftoppm (poppler-utils) is not installed: pages cannot be rendered here")
    from PIL import Image
    subprocess.run(["pdftoppm", "-r", "30", "-png", str(default_report / "report.pdf"), str(tmp_path / "p")],
                   check=True)
    pages = sorted(tmp_path.glob("p-*.png"))
    assert len(pages) == len(PdfReader(default_report / "report.pdf").pages)
    for page in pages:
        ink = (np.asarray(Image.open(page).convert("L")) < 200).mean()
        assert ink > 0.005, page.name


@pytest.mark.slow  # over 4 s in the fast tier (issue #12: the fast tier within 180 s)
def test_a_report_with_a_sweep_has_the_rate_page(tmp_path):
    assert main(["sweep", "kl-rlhf", "--n", "10,20,40", "--samples", "5000", "--out", str(tmp_path)]) == 0
    assert main(["run", str(ROOT / "audit" / "configs" / "kl-rlhf.toml"), "--out", str(tmp_path / "r"), "--quiet"]) == 0
    assert main(["report", str(tmp_path / "r" / "results.json"), str(tmp_path / "sweep.json"),
                 "-o", str(tmp_path / "with-sweep.pdf")]) == 0
    assert "Rates: kl-rlhf" in text_of(tmp_path / "with-sweep.pdf")


@pytest.mark.parametrize("content,message", [
    ("{not json", "not valid JSON"),
    (json.dumps({"schema": 99, "records": []}), "schema = 99"),
    (json.dumps({"schema": 2, "records": "x", "scenarios": []}), "records"),
])
def test_malformed_or_incompatible_results_exit_2(tmp_path, content, message, capsys):
    (tmp_path / "results.json").write_text(content)
    assert main(["report", str(tmp_path / "results.json"), "-o", str(tmp_path / "r.pdf")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r.pdf").exists()


@pytest.mark.slow  # over 4 s in the fast tier (issue #12: the fast tier within 180 s)
def test_an_interrupted_run_still_gives_a_report_that_says_it_is_partial(tmp_path):
    config = tmp_path / "two.toml"
    config.write_text("""
[run]
samples = 3000000
[[scenario]]
name = "fast"
mechanism = "randomized-response"
params = { epsilon = 1.0 }
[scenario.data]
columns = { bit = [0] }
[scenario.neighbour]
add = { bit = 1 }
[[scenario]]
name = "slow"
mechanism = "tests.plugins.slow:slow"
[scenario.data]
columns = { x = [0.0, 1.0] }
[scenario.neighbour]
add = { x = 1.0 }
[[scenario.claim]]
epsilon = 1.0
""")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "audit", "run", str(config), "--out", str(out), "--quiet",
                             "--allow-plugin", "tests.plugins.slow"],
                            cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and not (out / "results.json").exists():
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = json.loads((out / "results.json").read_text())
    assert partial["complete"] is False and len(partial["scenarios"]) == 1
    # the PDF is written, marked partial, and the exit status is summary's: never 0 for an incomplete run
    assert main(["report", str(out / "results.json"), "-o", str(tmp_path / "partial.pdf")]) == 130
    assert "PARTIAL RESULTS" in text_of(tmp_path / "partial.pdf")
