"""No function of the package over 80 lines (``python3 .ci/function_lengths.py [FOLDER ...]``).

A function that reads as steps fits on a screen: this walks every ``.py`` file of the package's
folders (``audit/``, ``mechanisms/``, ``neighbors/``, ``reports/``, or the folders given as
arguments), parses it with :mod:`ast` and measures every function and method, nested ones
included, from its ``def`` line (decorators excluded) to its last line, docstring and comments
inside it included.  Each one longer than :data:`LIMIT` is printed as ``path:line name N lines``.
Exit 0 none, 1 some (each named), 2 a file that does not parse.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("audit", "mechanisms", "neighbors", "reports")  # the folders the `dpaudit` wheel is made of
LIMIT = 80


@dataclass(frozen=True)
class LongFunction:
    """One function over the limit: where its ``def`` is, its qualified name and its length."""

    path: str
    line: int
    name: str
    lines: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.name} {self.lines} lines"


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function in ``tree`` with its dotted name (``Class.method``, ``outer.inner``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{node.name}"
            yield name, node
            yield from _functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def long_functions(path: Path, *, shown_as: str, limit: int = LIMIT) -> list[LongFunction]:
    """The functions of one file longer than ``limit`` lines, ``def`` line to last line inclusive."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for name, node in _functions(tree):
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        if length > limit:
            found.append(LongFunction(path=shown_as, line=node.lineno, name=name, lines=length))
    return found


def python_files(folder: Path) -> list[Path]:
    """The ``.py`` files under ``folder``, sorted, without following links (one path per file)."""
    return sorted(p for p in folder.rglob("*.py") if not any(part.is_symlink() for part in (p, *p.parents)))


def scan(folders: Sequence[Path], *, base: Path, limit: int = LIMIT) -> list[LongFunction]:
    """Every function over ``limit`` lines in ``folders``, paths shown relative to ``base``."""
    found = []
    for folder in folders:
        for path in python_files(folder):
            shown = path.relative_to(base) if path.is_relative_to(base) else path
            found.extend(long_functions(path, shown_as=shown.as_posix(), limit=limit))
    return found


def main(argv: Sequence[str]) -> int:
    """Print each function over the limit; exit 1 if there is any, 2 if a folder or file is unreadable."""
    folders = [Path(a).resolve() for a in argv] or [ROOT / name for name in FOLDERS]
    missing = [str(f) for f in folders if not f.is_dir()]
    if missing:
        print(f"function_lengths: no such folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        found = scan(folders, base=Path.cwd().resolve() if argv else ROOT)
    except (SyntaxError, UnicodeDecodeError, OSError) as error:
        print(f"function_lengths: cannot read the source: {error}", file=sys.stderr)
        return 2
    for item in found:
        print(item)
    if found:
        print(f"{len(found)} function(s) over {LIMIT} lines: split each into steps", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
