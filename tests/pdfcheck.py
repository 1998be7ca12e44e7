"""Layout checks of a PDF from its text positions (pdfplumber): overlapping words, text leaving its
table cell, and how full each page is.  Used by the report tests; each check returns the offences
it found (empty when the layout is clean), so a test can show a broken layout IS caught."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pdfplumber

TOLERANCE = 0.6  # points: glyph boxes of adjacent lines may touch by rounding, never overlap more


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (min(a["x1"], b["x1"]) - max(a["x0"], b["x0"]) > TOLERANCE
            and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > TOLERANCE)


def overlapping_words(page: Any) -> list[tuple[str, str]]:
    """Pairs of words whose boxes overlap (a heading printed over a paragraph, say)."""
    words = sorted(page.extract_words(keep_blank_chars=False, use_text_flow=False), key=lambda w: w["top"])
    found = []
    for i, a in enumerate(words):
        for b in words[i + 1:]:
            if b["top"] >= a["bottom"]:
                break
            if _overlap(a, b):
                found.append((a["text"], b["text"]))
    return found


def escaped_cells(page: Any) -> list[str]:
    """Words of a table (found from its ruling lines) that are not wholly inside one cell: a cell's
    text cut by its border, run into the next cell or past the table's edge."""
    found = []
    tables = page.find_tables({"vertical_strategy": "lines", "horizontal_strategy": "lines"})
    if not tables:
        return found
    words = page.extract_words()
    for tab in tables:
        cells = [c for c in tab.cells if c is not None]
        x0, top, x1, bottom = tab.bbox
        for w in words:
            cx, cy = (w["x0"] + w["x1"]) / 2, (w["top"] + w["bottom"]) / 2
            if not (x0 - 20 <= cx <= x1 + 20 and top <= cy <= bottom):
                continue
            if not any(w["x0"] >= c[0] - TOLERANCE and w["x1"] <= c[2] + TOLERANCE
                       and w["top"] >= c[1] - TOLERANCE and w["bottom"] <= c[3] + TOLERANCE for c in cells):
                found.append(f"{w['text']!r} at ({w['x0']:.1f}, {w['top']:.1f})")
    return found


def fullness(page: Any, margin: float, footer: float = 30.0) -> float:
    """The share of the text frame's height from its top down to the lowest text, figure or rule."""
    height = page.height - 2 * margin
    bottoms = [c["bottom"] for c in page.chars if c["bottom"] < page.height - footer]
    bottoms += [im["bottom"] for im in page.images] + [r["bottom"] for r in page.rects] + \
               [ln["bottom"] for ln in page.lines]
    if not bottoms:
        return 0.0
    return (max(bottoms) - margin) / height


def starts_section(page: Any, size: float = 12.5, within: float = 80.0) -> bool:
    """A page whose top holds a section heading (13 pt or larger)."""
    return any(c["size"] >= size for c in page.chars if c["top"] < within)


def offences(path: Path) -> dict[str, list[Any]]:
    """Every overlap and escaped cell of every page, keyed 'page N: kind'."""
    found: dict[str, list[Any]] = {}
    with pdfplumber.open(path) as pdf:
        for n, page in enumerate(pdf.pages, 1):
            for kind, items in (("overlap", overlapping_words(page)), ("cell", escaped_cells(page))):
                if items:
                    found[f"page {n}: {kind}"] = items[:5]
    return found
