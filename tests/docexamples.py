"""The code blocks a user copies from the README and the documentation site, read as the tests see them.

A block is a :class:`Block`: its file, line, language and text, and how the test treats it:

* a **fragment** does not run on its own (it names objects the reader supplies).  Markdown marks it with
  an HTML comment on the line before its fence, ``<!-- fragment: why -->`` (invisible on the page);
  reStructuredText with the directive option ``:class: fragment``;
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
_FRAGMENT_COMMENT = re.compile(r"<!--\s*fragment\b[^>]*-->\s*$")


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
                            bool(_FRAGMENT_COMMENT.search(before))))
    return blocks


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
