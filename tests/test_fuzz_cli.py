"""Fuzz of the command line (issue #29): random ``run``/``list``/``summary``/``report``/``sweep``/
``plan`` invocations and configs with tiny budgets, and corrupted results files, in process.

The oracle, for every invocation:

* the exit status is 0, 1 or 2 — 3 only where the test injected an environment fault (a write
  that fails with ENOSPC); never a traceback, never "internal error … please report it";
* an exit 2 is one ``error: …`` line;
* an exit 1 is a real finding: every record that made the run fail is either a violation of a
  claim that is false — the claim's ε is below the mechanism's true ε (known here: the plugin
  mechanisms' scales, the built-ins' ``epsilon`` parameter on a sensitivity-1 pair, or the
  white-box ε_exact) — or an expectation the config set and the budget did not meet (MISSED, a
  statement about the budget, not a privacy finding);
* a results file that ``summary`` accepts (0 or 1) holds records whose bounds and verdicts an
  independent recomputation (``scipy.stats.beta`` quantiles, not :mod:`dpaudit.engine.bounds`) confirms.

A claim at the mechanism's true ε is refuted with probability at most 1 − confidence (each bound
holds with probability ≥ confidence); the draws are fixed by the seeds, so the test is
deterministic.  The slow tier runs ≥ 2,000 invocations and ≥ 300 results files; the fast tier a
small sample of both, with the same oracle.
"""

import contextlib
import copy
import errno
import functools
import io
import json
import math
import random

import numpy as np
import pytest
from scipy import optimize, stats

from dpaudit.cli import commands as cli_commands
from dpaudit.cli import common as cli_common
from dpaudit.cli import main
from dpaudit.cli import run as cli_run
from dpaudit.cli import sweep as cli_sweep
from dpaudit.engine.verdicts import outcome
from tests.clirun import skip_report_pdf

PAIR = "tests.plugins.user_mechanisms:pair"
PLUGINS = {"tests.plugins.user_mechanisms:correct": 1.0, "tests.plugins.user_mechanisms:leaky": 2.0}
TRUE_EPSILON = {"user-noisy-count": 1.0, "user-noisy-count-leaky": 2.0,
                # tests.plugins.misbehaving: a Laplace count of scale 1 (true epsilon 1) with a faulty extra,
                # or data-independent draws (true epsilon 0)
                "junk-guarantees": 1.0, "junk-guarantee-items": 1.0, "string-exact": 1.0, "counts-exit": 0.0}
BUILT_INS = {"randomized-response": "bit", "laplace": "value"}
SEED = 20261124


class Invocation:
    """One command line, what it is known to be (its truth), and whether a fault was injected."""

    def __init__(self, argv, fault=False, truth=None):
        self.argv, self.fault = [str(a) for a in argv], fault
        self.truth = dict(TRUE_EPSILON, **(truth or {}))  # mechanism name -> its true epsilon on the pair


def _as_epsilon(text):
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def _number(rng, valid):
    choices = [*valid, "nan", "inf", "-1", "1e400", "abc", "", "0x10", "1e-400", "--quiet", "1_000", " 5 "]
    return rng.choice(valid) if rng.random() < 0.8 else rng.choice(choices)


def _write_data(folder):
    """npz pairs for the built-ins (sensitivity 1: their true ε is their ``epsilon`` parameter)."""
    np.savez(folder / "bit_d.npz", bit=np.array([0]))
    np.savez(folder / "bit_dp.npz", bit=np.array([0, 1]))
    np.savez(folder / "value_d.npz", value=np.array([0.0, 1.0]))
    np.savez(folder / "value_dp.npz", value=np.array([0.0, 1.0, 1.0]))
    (folder / "junk.npz").write_bytes(b"PK\x03\x04 not really")
    (folder / "empty.toml").write_text("")


def _run_invocation(rng, folder, index):
    argv, truth = ["run"], {}
    kind = rng.random()
    if kind < 0.45:
        argv += ["--mechanism", rng.choice(list(PLUGINS)), "--pair", PAIR if rng.random() < 0.95 else
                 rng.choice(["tests.plugins.hostile29_pairs:none_pair", "nope:pair", "tests:x", "x"])]
    elif kind < 0.85:
        name = rng.choice([*BUILT_INS, "no-such-mechanism"])
        column = BUILT_INS.get(name, "bit")
        epsilon = _number(rng, ["0.5", "1", "2", "0.25"])
        argv += ["--mechanism", name, "--param", f"epsilon={epsilon}"]
        truth = {name: _as_epsilon(epsilon)}
        if rng.random() < 0.1:
            argv += ["--param", rng.choice(["bogus=1", "epsilon", "=3", "column=nope"])]
        d, dp = folder / f"{column}_d.npz", folder / f"{column}_dp.npz"
        if rng.random() < 0.08:
            dp = rng.choice([folder / "junk.npz", folder / "missing.npz", folder, folder / "empty.toml"])
        argv += ["--data", d, "--data-prime", dp]
    else:
        argv += rng.choice([["--suite", rng.choice(["nope", "default"]), "--family", "nope"], [folder / "empty.toml"],
                            ["--mechanism", "tests.plugins.misbehaving:" + rng.choice(
                                ["generator_exits", "no_columns", "bad_array", "raising_name", "junk_guarantees",
                                 "string_exact", "counts_exit", "mutates"]), "--pair", PAIR]])
    if rng.random() < 0.7:
        argv += ["--epsilon", _number(rng, ["0.3", "0.5", "1", "1.5", "3", "10"])]
        if rng.random() < 0.3:
            argv += ["--delta", _number(rng, ["0", "1e-6", "0.01"])]
    elif rng.random() < 0.1:
        argv += ["--delta", _number(rng, ["0", "1e-6", "5"])]
    argv += ["--samples", _number(rng, [str(rng.randint(100, 3000))] * 6 + ["99", "1e30"])]
    for flag, values in (("--seed", [str(rng.randint(0, 10**6))]), ("--confidence", ["0.9", "0.95", "0.99"]),
                         ("--events", ["auto", "rows", "threshold", "histogram"]),
                         ("--relation", ["add-remove", "swap", "zero-out"])):
        if rng.random() < 0.25:
            argv += [flag, _number(rng, values)]
    for flag in ("--sequential", "--witness"):
        if rng.random() < 0.15:
            argv.append(flag)
    if rng.random() < 0.05:
        argv += ["--search", rng.choice(["queries:2", "queries:0", "records", "nonsense"])]
    fault = False
    if rng.random() < 0.2:
        out = folder / f"out{index}"
        argv += ["--out", rng.choice([out, out, folder / "empty.toml", folder, "", "/"])]
        if rng.random() < 0.2:
            argv.append("--overwrite")
        fault = rng.random() < 0.15
    elif rng.random() < 0.03:
        argv += ["--resume", rng.choice([folder, folder / "nowhere", ""])]
    argv += ["--jobs", "1", "--quiet"]
    if rng.random() < 0.03:  # a stray token or a flag without its value
        argv.insert(rng.randint(1, len(argv)), rng.choice(["--samples", "--bogus", "-x", "extra"]))
    return Invocation(argv, fault, truth)


BASE_CONFIG = """
[run]
samples = {samples}
seed = {seed}
confidence = {confidence}

[[scenario]]
name = "rr"
mechanism = "randomized-response"
params = {{ epsilon = {epsilon} }}
expected = {{ "user/claim" = "{expected}" }}
[scenario.data]
columns = {{ bit = [0] }}
[scenario.neighbour]
add = {{ bit = 1 }}
[[scenario.claim]]
epsilon = {claim}
id = "user/claim"
"""


def _config_invocation(rng, folder, index):
    fields = {"samples": rng.choice([str(rng.randint(100, 3000)), "0", "-5", "1e30", '"many"', "1.5"]),
              "seed": rng.choice(["1", "7", "-1", "2.5"]), "confidence": rng.choice(["0.9", "0.95", "1.5", '"x"']),
              "epsilon": rng.choice(["1.0", "0.5", "2.0", "-1.0", "nan", '"e"']),
              "expected": rng.choice(["pass", "pass", "violation", "bogus"]),
              "claim": rng.choice(["1.0", "2.0", "0.3", "inf", "-2", "[1]"])}
    chosen = {k: v if rng.random() < 0.85 else rng.choice(list(fields.values())) for k, v in fields.items()}
    text = BASE_CONFIG.format(**chosen)
    lines = text.splitlines()
    for _ in range(rng.choice([0, 0, 1, 2])):  # line-level damage: deletions, duplicates, junk
        i = rng.randrange(len(lines))
        op = rng.random()
        if op < 0.4:
            del lines[i]
        elif op < 0.7:
            lines.insert(i, lines[i])
        else:
            lines[i] = lines[i][: rng.randint(0, len(lines[i]))] + rng.choice(["", "]", "= =", "x_y = 3", "\x00"])
    path = folder / f"c{index}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
    return Invocation(["run", path, "--jobs", "1", "--quiet"], truth={"randomized-response": _as_epsilon(
        chosen["epsilon"])})


def _other_invocation(rng, folder, index, results):
    kind = rng.choice(["list", "summary", "report", "sweep", "plan", "bench", "junk"])
    if kind == "list":
        return Invocation(rng.choice([["list", "--configs"], ["list", "laplace"], ["list", "nope"],
                                      ["list", "x", "y"]]))
    if kind == "summary":
        return Invocation(["summary", rng.choice([results, folder, folder / "missing.json", folder / "empty.toml"])])
    if kind == "report":
        return Invocation(["report", rng.choice([folder / "missing.json", folder / "empty.toml"]), "-o",
                           rng.choice([folder / "r.pdf", folder, f"{folder}/{'x' * 300}.pdf"])])
    if kind == "sweep":
        return Invocation(["sweep", rng.choice(["nope", "kl-mab"]), "--n", rng.choice(["1", "x", "10,1", ""]),
                           "--samples", rng.choice(["50", "200"])])
    if kind == "plan":
        return Invocation(["plan", rng.choice(["nope", "rr-x"]), "--samples", rng.choice(["1e30", "50", "1000"])])
    if kind == "bench":
        return Invocation(["bench", "--samples", rng.choice(["5", "1e30", "x"])])
    return Invocation(rng.choice([[], ["--bogus"], ["run", "--samples"], ["nope"], ["run", "--jobs", "0"],
                                  ["run", "--confidence", "1"], ["--version"]]))


def _invocations(count, folder, results):
    rng = random.Random(SEED)
    out = []
    for index in range(count):
        roll = rng.random()
        if roll < 0.55:
            out.append(_run_invocation(rng, folder, index))
        elif roll < 0.85:
            out.append(_config_invocation(rng, folder, index))
        else:
            out.append(_other_invocation(rng, folder, index, results))
    return out


def _failure_is_real(record, truths):
    """Why a record that failed the run is a real finding (None: it is not)."""
    result = outcome(record)
    if result.startswith("MISSED") or result.startswith("MISMATCH"):
        return "an expectation of the config the budget did not meet"
    if result != "UNEXPECTED violation":
        return "ok"
    claim, exact = record["epsilon_claim"], record.get("epsilon_exact")
    if isinstance(exact, (int, float)) and exact > claim:
        return "white box: epsilon_exact > claim"
    truth = truths.get(record["mechanism"])
    if truth is not None and claim < truth * (1 - 1e-9):
        return f"claim {claim} < true epsilon {truth}"
    return None


@contextlib.contextmanager
def _captured_records(monkeypatch):
    seen = []
    real = cli_run.summary_table

    def capture(records, **options):
        seen.append(copy.deepcopy(records))
        return real(records, **options)

    monkeypatch.setattr(cli_run, "summary_table", capture)
    yield seen


# every verb module that writes files: the fault hits each of their writes
_CLI_WRITERS = [m for m in (cli_commands, cli_common, cli_run, cli_sweep) if hasattr(m, "write_atomic")]


def _full_disk(path, data):
    raise OSError(errno.ENOSPC, "No space left on device", str(path))


def _check(invocation, monkeypatch, seen):
    if seen is not None:
        seen.clear()
    out, err = io.StringIO(), io.StringIO()
    with monkeypatch.context() as patch:
        if invocation.fault:  # an environment fault of our making: every result write fails
            for module in _CLI_WRITERS:
                patch.setattr(module, "write_atomic", _full_disk)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(invocation.argv)
            except SystemExit as exc:  # --help, --version
                code = exc.code if isinstance(exc.code, int) else 2
    text, where = err.getvalue(), " ".join(invocation.argv)[:400]
    assert "Traceback" not in text + out.getvalue(), (where, text)
    assert "please report" not in text and "internal error" not in text, (where, text)
    allowed = (0, 1, 2, 3) if invocation.fault else (0, 1, 2)
    assert code in allowed, (code, where, text)
    if code == 3:
        assert "No space left on device" in text, (where, text)
    if code == 2:  # after any progress lines ("[dpaudit] ..."), the error is one line that says so
        said = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("[dpaudit] "))
        assert said.startswith("error: ") or said.startswith("usage:"), (where, text)
    if code == 1 and seen is not None:  # (a results file's exit 1 is checked by recomputing it instead)
        failing = [r for batch in seen[-1:] for r in batch if not r["as_expected"]]
        assert failing, (where, text)  # an exit 1 names the records that failed
        for record in failing:
            assert _failure_is_real(record, invocation.truth) is not None, (where, record)
    return code


# --- results files ---------------------------------------------------------------------------

def _independent_lower(event):
    """ε_lower from an event's counts with scipy.stats alone (not dpaudit.engine): the test saved with
    the event, the Clopper–Pearson pair (scipy.stats.beta) or the joint test of the ratio (Fisher's
    noncentral hypergeometric law, scipy.stats.nchypergeom_fisher, solved by brentq)."""
    counts, fav = event["counts"], event["event"]["favours"]
    (k1, n1), (k2, n2) = (counts["D"], counts["D'"]) if fav == "D" else (counts["D'"], counts["D"])
    if event.get("test", "clopper-pearson") == "joint":
        return _joint_lower(k1, n1, k2, n2, event["delta"], event["confidence"])
    alpha = (1 - event["confidence"]) / 2
    lo = 0.0 if k1 == 0 else stats.beta.ppf(alpha, k1, n1 - k1 + 1)
    hi = 1.0 if k2 == n2 else stats.beta.ppf(1 - alpha, k2 + 1, n2 - k2)
    excess = lo - event["delta"]
    return 0.0 if excess <= 0 else max(0.0, math.log(excess / hi))


@functools.cache
def _joint_lower(k1, n1, k2, n2, delta, confidence):
    """The joint test: ψ_lo solves P_ψ[K₁ ≥ k₁ | k₁ + k₂] = 0.9 α; p/q ≥ ψ_lo − p_hi·max(0, ψ_lo − 1) with
    p_hi the Clopper–Pearson upper bound of the favoured rate at 0.1 α (at 0.05 α, and p_lo at 0.05 α
    for the factor 1 − δ/p_lo, when δ > 0)."""
    alpha = 1 - confidence
    a_psi, a_p = 0.9 * alpha, 0.1 * alpha
    m = k1 + k2
    if k1 <= max(0, m - n2):
        psi = 0.0
    else:
        law = lambda log_psi: stats.nchypergeom_fisher(n1 + n2, n1, m, math.exp(log_psi)).sf(k1 - 1) - a_psi
        psi = math.exp(optimize.brentq(law, -30.0, 30.0, xtol=1e-12))
    p_hi = 1.0 if k1 == n1 else stats.beta.ppf(1 - (a_p if delta == 0 else a_p / 2), k1 + 1, n1 - k1)
    ratio = psi - p_hi * max(0.0, psi - 1.0)
    if ratio <= 0:
        return 0.0
    eps = math.log(ratio)
    if delta > 0:
        p_lo = 0.0 if k1 == 0 else stats.beta.ppf(a_p / 2, k1, n1 - k1 + 1)
        if p_lo <= delta:
            return 0.0
        eps += math.log1p(-delta / p_lo)
    return max(0.0, eps)


def _corrupt(rng, payload):
    doc = copy.deepcopy(payload)
    op = rng.random()
    paths = []

    def walk(node, prefix):
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
        for key, value in items:
            paths.append((*prefix, key))
            walk(value, (*prefix, key))

    walk(doc, ())
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(paths)
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            key = path[-1]
            value = parent[key]
        except (KeyError, IndexError, TypeError):
            continue
        if not isinstance(parent, (dict, list)):  # an earlier edit made a container a string: its path is gone
            continue
        if op < 0.35 and isinstance(value, (int, float)) and not isinstance(value, bool):
            parent[key] = rng.choice([value * rng.choice([0.5, 2, -1, 1.0001]), value + rng.choice([1, -1]),
                                      10**400, 2**63, 0, 1e308])
        elif op < 0.55:
            parent[key] = rng.choice([None, "inf", "x", [], {}, True, -1, 1.5, "pass", "violation"])
        elif op < 0.7 and isinstance(parent, dict):
            del parent[key]
        elif op < 0.8 and isinstance(value, str):
            parent[key] = rng.choice(["pass", "violation", "not-applicable", "", "holds at this budget"])
        else:
            parent[key] = copy.deepcopy(rng.choice([v for v in (doc.get("records") or [None])]))
    text = json.dumps(doc)
    if rng.random() < 0.1:  # byte-level damage
        cut = rng.randint(0, len(text))
        text = rng.choice([text[:cut], text[:cut] + "NaN" + text[cut:], text.replace('"', "'", 1),
                           text[:cut] + text[cut + 1:]])
    return text


def _check_results_file(text, folder, monkeypatch, index, report):
    path = folder / f"r{index}.json"
    path.write_text(text)
    code = _check(Invocation(["summary", path]), monkeypatch, None)
    if code in (0, 1):  # accepted: every bound and verdict must be what its counts say
        payload = json.loads(text)
        for rec in payload["records"]:
            event = rec.get("event")
            if event is not None:
                again = _independent_lower(event)
                assert math.isclose(again, rec["epsilon_lower"], rel_tol=1e-6, abs_tol=1e-9), (index, rec)
            if rec["verdict"] in ("pass", "violation"):
                assert (rec["verdict"] == "violation") == (rec["epsilon_lower"] > rec["epsilon_claim"]), (index, rec)
    if report:
        _check(Invocation(["report", path, "-o", folder / f"r{index}.pdf"]), monkeypatch, None)
    return code


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """Real results files: a pass, a finding (the leaky plugin), a built-in with a white-box ε."""
    folder = tmp_path_factory.mktemp("fuzz-bases")
    _write_data(folder)
    runs = [["--mechanism", "tests.plugins.user_mechanisms:correct", "--pair", PAIR, "--epsilon", "1"],
            ["--mechanism", "tests.plugins.user_mechanisms:leaky", "--pair", PAIR, "--epsilon", "1"],
            ["--mechanism", "randomized-response", "--param", "epsilon=1", "--data", folder / "bit_d.npz",
             "--data-prime", folder / "bit_dp.npz", "--epsilon", "0.5"]]
    out = []
    for i, args in enumerate(runs):
        target = folder / f"base{i}"
        # only their results.json are read (corrupted, then fed to summary and report): their PDFs, most
        # of their CPU time, are skipped as without the [report] extra (the fuzzed runs still draw theirs)
        with contextlib.redirect_stdout(io.StringIO()), pytest.MonkeyPatch.context() as m:
            skip_report_pdf(m)
            code = main(["run", *map(str, args), "--samples", "20000", "--quiet", "--out", str(target)])
        assert code in (0, 1)
        out.append(json.loads((target / "results.json").read_text()))
    return folder, out


def _fuzz(tmp_path, monkeypatch, bases, invocations, files, reports):
    folder, payloads = bases
    _write_data(tmp_path)
    codes = {}
    with _captured_records(monkeypatch) as seen:
        for invocation in _invocations(invocations, tmp_path, folder / "base0" / "results.json"):
            code = _check(invocation, monkeypatch, seen)
            codes[code] = codes.get(code, 0) + 1
    rng = random.Random(SEED + 1)
    file_codes = {}
    for index in range(files):
        text = _corrupt(rng, rng.choice(payloads))
        code = _check_results_file(text, tmp_path, monkeypatch, index, report=index < reports)
        file_codes[code] = file_codes.get(code, 0) + 1
    # The generator reaches every outcome (else the oracle above checked less than it claims).
    assert codes.get(0) and codes.get(1) and codes.get(2), codes
    assert file_codes.get(2) and (file_codes.get(0) or file_codes.get(1)), file_codes
    return codes, file_codes


def test_fuzz_cli_fast(tmp_path, monkeypatch, bases):
    _fuzz(tmp_path, monkeypatch, bases, invocations=120, files=30, reports=1)


@pytest.mark.slow  # 2,000 invocations and 300 results files in process (a few minutes)
def test_fuzz_cli(tmp_path, monkeypatch, bases):
    codes, file_codes = _fuzz(tmp_path, monkeypatch, bases, invocations=2000, files=320, reports=20)
    assert sum(codes.values()) >= 2000 and sum(file_codes.values()) >= 300
    print(f"invocations by exit status {dict(sorted(codes.items()))}; results files {dict(sorted(file_codes.items()))}")
