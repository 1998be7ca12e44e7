"""The project stands alone: no docstring, comment, message, registry entry, config, README line or
documentation page cites a document that is not in the repository (a design note or a specification
kept elsewhere).  A fact is stated where it is used, or the paper's own theorem or section is cited."""

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The real folders of the package (pyproject.toml's package-dir maps them to `dpaudit` and its subpackages).
PACKAGE_FOLDERS = ("audit", "mechanisms", "neighbors", "reports")
SUFFIXES = (".py", ".md", ".toml", ".rst", ".txt")

# "the dpaudit specification §A.4.2", "spec A.2.4 row 3", "(spec §0)", "spec part C", "spec/claims.md",
# "the spec's table", "DESIGN.md", "../shared/...", and the registry's old document key "dpaudit spec".
EXTERNAL = re.compile(
    r"specification|\bspec(?:'s)?\s*(?:§|part\s|[A-E]\.?\d)|\bspec/|\bthe spec\b|\bspec\.md|claims\.md"
    r"|mechanisms\.md|design\.md|\bshared/|dpaudit spec\b",
    re.IGNORECASE)


def files(roots: list[Path]) -> list[Path]:
    out = []
    for root in roots:
        if root.is_file():
            out.append(root)
            continue
        for folder, dirs, names in os.walk(root, followlinks=False):
            dirs[:] = [d for d in dirs if d != "__pycache__" and d != "_build"]
            out += [Path(folder) / n for n in names if n.endswith(SUFFIXES)]
    return out


def external_references(roots: list[Path]) -> list[str]:
    """``path:line: text`` of every line citing a document outside the repository."""
    found = []
    for path in files(roots):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if EXTERNAL.search(line):
                found.append(f"{path.relative_to(path.anchor)}:{number}: {line.strip()}")
    return found


def test_package_readme_and_docs_cite_no_document_outside_the_repository():
    roots = [ROOT / f for f in PACKAGE_FOLDERS] + [ROOT / "README.md", ROOT / "docs", ROOT / "pyproject.toml"]
    assert external_references(roots) == []


def test_the_claim_registry_cites_only_documents_it_declares_and_none_outside():
    from dpaudit import catalog

    texts = [f"{d.key} {d.reference}" for d in catalog.documents().values()]
    texts += [" ".join([c.document, c.where, c.statement, c.reason, *c.premises]) for c in catalog.claims().values()]
    assert [t for t in texts if EXTERNAL.search(t)] == []


@pytest.mark.parametrize("planted", [
    '"""Witness (dpaudit specification, §A.2.4, row 3): arms b = {1}."""',
    "    # the convention of spec A.2.1",
    'source="spec B.2 fix: sigma on the exact curve"',
    "Neighbour relations (spec §0); all are symmetric.",
    "The fixtures of spec/claims.md for po/* (spec part C).",
    "See DESIGN.md, \"Statistics\", or ../shared/spec/mechanisms.md.",
    'Document(key="dpaudit spec", reference="...")',
])
def test_a_planted_reference_is_caught(tmp_path, planted):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "clean.py").write_text('"""Clopper–Pearson bounds (KL paper, Theorem 1, eq. (9))."""\n'
                                              "def space_from_spec(spec):\n    return spec['x']\n")
    assert external_references([tmp_path / "pkg"]) == []  # paper citations and a variable named spec pass
    (tmp_path / "pkg" / "leaky.py").write_text(f"x = 1\n{planted}\n")
    found = external_references([tmp_path / "pkg"])
    assert len(found) == 1 and found[0].endswith(planted.strip()) and ":2:" in found[0]
