"""The code blocks a user copies from the README and the documentation site, read as the tests see them.

A block is a :class:`Block`: its file, line, language and text, and how the test treats it:

* a **fragment** does not run on its own (it names objects the reader supplies), and says so where the
  reader sees it.  Markdown marks it with a visible line right before its fence, ``*Fragment: why.*``
  (an HTML comment would be hidden by the rendered page, so it marks nothing); reStructuredText with the
  directive option ``:class: fragment`` and the word "fragment" in the paragraph that introduces it;
* a block that needs an **extra** or a third-party package says so in its first line, as a comment a
  reader can act on: ``# needs the onerun extra: python3 -m pip install '.[onerun]'`` or
  ``# needs diffprivlib: python3 -m pip install diffprivlib``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# extra -> a module it installs (the test runs a block only where the module imports)
EXTRA_MODULES = {"report": "reportlab", "dask": "distributed", "onerun": "dp_accounting", "opendp": "opendp",
                 "opacus": "opacus", "test": "pytest", "docs": "sphinx", "libraries": "pydp"}

_NEEDS = re.compile(r"#\s*needs (?:the (?P<extra>[\w-]+) extra|(?P<package>[\w-]+))\b[^:]*:")
_MD_FENCE = re.compile(r"^```(?P<lang>\w+)\n(?P<code>.*?)^```", flags=re.S | re.M)
_FRAGMENT_LINE = re.compile(r"^\*Fragment:\s*\S[^*]*\*\s*$")  # visible on the rendered page, in italics


@dataclass(frozen=True)
class Block:
    """One code block of a page."""

    path: Path
    line: int
    language: str
    code: str
    fragment: bool

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def needs(self) -> tuple[str, str] | None:
        """``("extra", name)`` or ``("package", name)`` when the first line names one, else None."""
        first = self.code.splitlines()[0] if self.code.strip() else ""
        match = _NEEDS.match(first.strip())
        if match is None:
            return None
        return ("extra", match["extra"]) if match["extra"] else ("package", match["package"])

    @property
    def module(self) -> str | None:
        """The module whose import tells whether the block's need is installed."""
        need = self.needs
        if need is None:
            return None
        kind, name = need
        return EXTRA_MODULES[name] if kind == "extra" else name.replace("-", "_")


def markdown_blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in _MD_FENCE.finditer(text):
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        blocks.append(Block(path, text[:match.start()].count("\n") + 1, match["lang"], match["code"],
                            bool(_FRAGMENT_LINE.match(before))))
    return blocks


def introduction(block: Block) -> str:
    """The visible text right before a block: the Markdown line before its fence, or the
    reStructuredText paragraph before its directive."""
    lines = block.path.read_text(encoding="utf-8").splitlines()[:block.line - 1]
    if block.path.suffix == ".md":
        return lines[-1] if lines else ""
    while lines and not lines[-1].strip():
        lines.pop()
    paragraph = []
    while lines and lines[-1].strip():
        paragraph.append(lines.pop().strip())
    return " ".join(reversed(paragraph))


def rst_blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        match = re.match(r"\.\. code-block:: (\w+)", lines[i])
        if match is None:
            i += 1
            continue
        j, options = i + 1, []
        while j < len(lines) and re.match(r"\s+:[\w-]+:", lines[j]):
            options.append(lines[j].strip())
            j += 1
        body = []
        while j < len(lines) and (not lines[j].strip() or lines[j].startswith("   ")):
            body.append(lines[j][3:])
            j += 1
        fragment = any(o.startswith(":class:") and "fragment" in o.split() for o in options)
        blocks.append(Block(path, i + 1, match[1], "\n".join(body).strip("\n") + "\n", fragment))
        i = j
    return blocks


def pages() -> list[Path]:
    """The README and every page of the documentation site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.rst")), *sorted((ROOT / "docs").rglob("*.md"))]


def all_blocks() -> list[Block]:
    out: list[Block] = []
    for page in pages():
        out += markdown_blocks(page) if page.suffix == ".md" else rst_blocks(page)
    return out


def commands(block: Block) -> list[str]:
    """The shell commands of a console/bash block: ``$ `` lines (console) or every line (bash), with
    backslash continuations joined and trailing comments dropped."""
    raw = block.code.replace("\\\n", " ")
    out = []
    for line in raw.splitlines():
        line = line.strip()
        if block.language == "console":
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if not line or line.startswith("#"):
            continue
        out.append(re.sub(r"\s+#\s.*$", "", line).strip())
    return out


# A block's stated output: the comment after a print call, up to its first explanation in
# parentheses or after a dash ("# refuted (empirical) 9.28 (the same on every run)" states
# "refuted (empirical) 9.28"; a finding's own parentheses are kept).  A number is printed as stated;
# "~x" is within 2 % of x; "a-b" is a range the printed number falls in; a quoted text with "..." is
# a piece of the printed text; every other word is printed too, in order.
FINDINGS = ("refuted (empirical)", "refuted (white box)", "holds at this budget")
_PRINT_LINE = re.compile(r"^\s*print\(.*\)\s*#\s*(?P<said>.+)$")
_NUMBER = r"-?\d+(?:\.\d+)?(?:e-?\d+)?"
_TOKEN = re.compile(rf"~?{_NUMBER}\s*[-–]\s*{_NUMBER}|~?{_NUMBER}|\S+")
TAG = "\x1e"  # separates each print call's output, with the line it was called from
WRAPPER = ("import builtins as _b, sys as _s; _p = _b.print; print = lambda *a, **k: "
           f"(_p({TAG!r} + str(_s._getframe(1).f_lineno - 1), end={TAG!r}), _p(*a, **k))\n")


def stated(block: Block) -> dict[int, str]:
    """{line in the block (1-based): the output its print call states}."""
    out = {}
    for i, line in enumerate(block.code.splitlines(), 1):
        found = _PRINT_LINE.match(line)
        if found is None:
            continue
        said = found["said"].strip()
        if said.startswith('"'):
            out[i] = said
            continue
        kept = said
        for finding in FINDINGS:
            kept = kept.replace(finding, finding.replace(" (", "\x00").replace(")", "\x01"))
        kept = re.split(r"\s\(|\s[—–]\s", kept)[0]
        out[i] = kept.replace("\x00", " (").replace("\x01", ")").strip()
    return out


def printed(stdout: str) -> dict[int, str]:
    """{line: what its print calls printed} from the output of a block run under :data:`WRAPPER`."""
    out: dict[int, str] = {}
    parts = stdout.split(TAG)
    for line, text in zip(parts[1::2], parts[2::2], strict=False):
        out[int(line)] = out.get(int(line), "") + text
    return out


def _number_matches(token: str, value: float) -> bool:
    approx = token.startswith("~")
    token = token.lstrip("~")
    bounds = re.fullmatch(rf"({_NUMBER})\s*[-–]\s*({_NUMBER})", token)
    if bounds:
        return float(bounds[1]) <= value <= float(bounds[2])
    if approx:
        return abs(value - float(token)) <= 0.02 * abs(float(token))
    return value == float(token)


def mismatch(said: str, shown: str) -> str | None:
    """Why ``shown`` (a print call's output) is not what ``said`` states, or None when it is."""
    if said.startswith('"'):
        pieces = [p.strip() for p in said.strip('"').split("...") if p.strip()]
        missing = [p for p in pieces if p not in shown]
        return f"does not print {missing}" if missing else None
    rest = shown
    for token in _TOKEN.findall(said):
        if re.fullmatch(rf"~?{_NUMBER}(?:\s*[-–]\s*{_NUMBER})?", token):
            found = re.search(_NUMBER, rest)
            if found is None or not _number_matches(token, float(found[0])):
                return f"states {token}, prints {found[0] if found else 'no number'}"
            rest = rest[found.end():]
        else:
            where = rest.find(token)
            if where < 0:
                return f"states {token!r}, which it does not print (in order)"
            rest = rest[where + len(token):]
    return None
