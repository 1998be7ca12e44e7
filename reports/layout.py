"""The page layout of the PDF report: reportlab's platypus flows headings, paragraphs, tables and
figures down A4 frames by their measured extent (nothing sits at a fixed height), wraps table
cells in their column, and continues a long table on the next page under its repeated header.

Text is set in DejaVu Sans (the font matplotlib ships, so the [report] extra needs no other font
file): ε, δ, μ and ≥ print as themselves.  The document is built with reportlab's ``invariant``
mode (no creation date, fixed document id), so the same results give the same bytes.
"""

from __future__ import annotations

import functools
import io
import os
import re
from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import escape, unescape

import matplotlib
from reportlab import rl_config
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.lib.units import mm
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.platypus import (
    BaseDocTemplate,
    CondPageBreak,
    Flowable,
    Frame,
    Image,
    KeepTogether,
    PageTemplate,
    Paragraph,
    Spacer,
    Table,
    TableStyle,
)

from dpaudit.reports.text import printable

MARGIN = 16 * mm
WIDTH = A4[0] - 2 * MARGIN  # the frame's width in points
HEIGHT = A4[1] - 2 * MARGIN
HEAD_FILL = colors.HexColor("#e8eef5")
REFUTED_FILL = colors.HexColor("#fdecea")
GRID = colors.HexColor("#b0b0b0")
RED = colors.HexColor("#c0392b")
MIN_POINTS = 7.0  # the smallest text anywhere in the report: cells, footers, sub- and superscripts
PAD = 2.5  # points: a table cell's left and right padding
PER_ROW_DELTA = "at the row's delta"  # a table header's words for numbers each at its own row's delta
BREAK_AFTER = "/-_"  # a word too wide for its column is broken only after one of these, never mid-word
THEN_AFTER = "=[(,;"  # ... and a piece between them still too wide, after one of these (a vector: "phi=[" / "0.2...")


@functools.cache
def _fonts() -> str:
    """Register DejaVu Sans from matplotlib's data folder once; returns the family name."""
    folder = os.path.join(matplotlib.get_data_path(), "fonts", "ttf")
    for name, file in (("DV", "DejaVuSans.ttf"), ("DV-Bold", "DejaVuSans-Bold.ttf"),
                       ("DV-Mono", "DejaVuSansMono.ttf")):
        pdfmetrics.registerFont(TTFont(name, os.path.join(folder, file)))
    # No italics in the report: each registered face costs a parse of its file.
    pdfmetrics.registerFontFamily("DV", normal="DV", bold="DV-Bold", italic="DV", boldItalic="DV-Bold")
    return "DV"


@functools.cache
def styles() -> dict[str, ParagraphStyle]:
    font = _fonts()
    body = ParagraphStyle("body", fontName=font, fontSize=8, leading=10.4, spaceAfter=3.5)
    return {
        "title": ParagraphStyle("title", parent=body, fontName="DV-Bold", fontSize=15, leading=19, spaceAfter=6),
        "h1": ParagraphStyle("h1", parent=body, fontName="DV-Bold", fontSize=13, leading=16, spaceBefore=2,
                             spaceAfter=5, keepWithNext=1),
        "h2": ParagraphStyle("h2", parent=body, fontName="DV-Bold", fontSize=10, leading=13, spaceBefore=6,
                             spaceAfter=3, keepWithNext=1),
        "body": body,
        "alert": ParagraphStyle("alert", parent=body, fontName="DV-Bold", fontSize=9.5, leading=12, textColor=RED),
        "small": ParagraphStyle("small", parent=body, fontSize=7, leading=8.8, spaceAfter=2.5),
        # MIN_POINTS: no text of the report is smaller (table cells included).
        "cell": ParagraphStyle("cell", parent=body, fontSize=MIN_POINTS, leading=8.4, spaceAfter=0),
        "head": ParagraphStyle("head", parent=body, fontName="DV-Bold", fontSize=MIN_POINTS, leading=8.4,
                               spaceAfter=0),
        # the errata appendix's entries: large enough that a subscript of MIN_POINTS reads as one
        "math": ParagraphStyle("math", parent=body, fontSize=8, leading=12.5, spaceAfter=0),
        "mono": ParagraphStyle("mono", parent=body, fontName="DV-Mono", fontSize=MIN_POINTS, leading=8.6, spaceAfter=3),
    }


class LaidOnce(Paragraph):
    """A paragraph whose lines are broken once per width.  A table wraps each cell's paragraph to size
    its rows, again for each page it is split across and again to draw it, at its column's width each
    time; reportlab's ``wrap`` depends on the width alone (the lines, and the height from them), so a
    repeat at the width of the last wrap returns what that wrap found.  (A paragraph split across a
    frame drops its lines, ``blPara``: then the next wrap breaks them again.)"""

    _laid: tuple[float, tuple[float, float]] | None = None

    def wrap(self, availWidth: float, availHeight: float) -> tuple[float, float]:
        if self._laid is not None and self._laid[0] == availWidth and hasattr(self, "blPara"):
            return self._laid[1]
        laid = super().wrap(availWidth, availHeight)
        self._laid = (availWidth, laid)
        return laid


SHOWN_CHARS = 1_000  # of one payload string: a longer one (a searched pair's vectors) would not fit a table cell


def text(value: Any) -> str:
    """A payload string made safe for paragraph markup and printable (names come from users), cut
    after :data:`SHOWN_CHARS` characters (the whole of it is in results.json): a table cell taller
    than a page cannot be laid out (a 10,000-character claim id once ended ``report`` in exit 3)."""
    shown = printable(str(value))
    if len(shown) > SHOWN_CHARS:
        shown = f"{shown[:SHOWN_CHARS]}… ({len(shown) - SHOWN_CHARS} more characters in results.json)"
    return escape(shown)


def para(markup: str, style: str = "body") -> Paragraph:
    """A paragraph of ``markup`` (already escaped where it holds payload text)."""
    return LaidOnce(markup, styles()[style])


def heading(title: str, level: str = "h1") -> Paragraph:
    return LaidOnce(text(title), styles()[level])


_TAG = re.compile(r"(<[^>]*>)")
def _pieces(after: str) -> re.Pattern[str]:
    """Runs of a word that each end after one of ``after`` (the last run: wherever the word ends)."""
    chars = re.escape(after)
    return re.compile(rf"[^{chars}]*[{chars}]+|[^{chars}]+")


_PIECE, _THEN = _pieces(BREAK_AFTER), _pieces(THEN_AFTER)


def _width(word: str, size: float, face: str) -> float:
    """The printed width of a markup word (its entities unescaped) in ``face``."""
    _fonts()
    return pdfmetrics.stringWidth(unescape(word), face, size)


def _broken(word: str, room: float, size: float, face: str) -> str:
    """``word`` with a line break (``<br/>``) after a ``/``, ``-`` or ``_`` wherever the run so far
    would no longer fit ``room`` points; a word that fits is returned as it is.  A piece between two
    such characters still wider than ``room`` is broken after ``=``, ``[``, ``(``, ``,`` or ``;``
    (a vector written without spaces), and one wider still is left whole (its caller sizes columns
    so that the ids and numbers it holds fit)."""
    if _width(word, size, face) <= room:
        return word
    pieces = [small for piece in _PIECE.findall(word)
              for small in ([piece] if _width(piece, size, face) <= room else _THEN.findall(piece))]
    lines = [""]
    for piece in pieces:
        if lines[-1] and _width(lines[-1] + piece, size, face) > room:
            lines.append(piece)
        else:
            lines[-1] += piece
    return "<br/>".join(lines)


def breakable(markup: str, room: float, size: float = MIN_POINTS, bold: bool = False) -> str:
    """``markup`` whose words wider than ``room`` points are broken only after ``/``, ``-`` or
    ``_`` (:func:`_broken`): reportlab would otherwise cut a long word at whatever character
    reaches the column's edge (``kl-rlhf/thm3-label-correcte`` / ``d``).  Tags are kept as they
    are; a word is measured in the face it is set in (``bold``: the whole paragraph's, else
    inside ``<b>``)."""
    out = []
    depth = 0
    for part in _TAG.split(markup):
        if part.startswith("<"):
            depth += {"<b>": 1, "</b>": -1}.get(part.lower(), 0)
            out.append(part)
        elif part.strip():
            face = "DV-Bold" if bold or depth > 0 else "DV"
            out.append("".join(_broken(w, room, size, face) if w.strip() else w for w in re.split(r"(\s+)", part)))
        else:
            out.append(part)
    return "".join(out)


def table(head: Sequence[str], rows: Sequence[Sequence[str]], widths: Sequence[float],
          shaded: Sequence[bool] = (), align_right: Sequence[int] = ()) -> Table:
    """A table whose cells wrap in their column (``widths`` are fractions of the frame), the header
    repeated on every page it continues on; ``shaded`` rows get the refutation fill."""
    st = styles()
    right = ParagraphStyle("cell-right", parent=st["cell"], alignment=2)
    total = sum(widths)
    points = [WIDTH * w / total for w in widths]
    cells = [[LaidOnce(breakable(text(h), w - 2 * PAD, bold=True), st["head"])
              for h, w in zip(head, points, strict=True)]]
    for row in rows:
        cells.append([LaidOnce(breakable(c, w - 2 * PAD), right if i in align_right else st["cell"])
                      for i, (c, w) in enumerate(zip(row, points, strict=True))])
    t = Table(cells, colWidths=points, repeatRows=1, hAlign="LEFT")
    commands: list[tuple[Any, ...]] = [
        ("GRID", (0, 0), (-1, -1), 0.4, GRID),
        ("BACKGROUND", (0, 0), (-1, 0), HEAD_FILL),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("LEFTPADDING", (0, 0), (-1, -1), PAD),
        ("RIGHTPADDING", (0, 0), (-1, -1), PAD),
        ("TOPPADDING", (0, 0), (-1, -1), 1.5),
        ("BOTTOMPADDING", (0, 0), (-1, -1), 2.5),
    ]
    commands += [("BACKGROUND", (0, i + 1), (-1, i + 1), REFUTED_FILL) for i, s in enumerate(shaded) if s]
    t.setStyle(TableStyle(commands))
    return t


def kv_table(rows: Sequence[Sequence[str]], key_width: float = 0.2, style: str = "cell") -> Table:
    """A two-column table of (key, markup) rows without a header: the key bold, the value wrapping
    (in ``style``: "math" for the errata appendix's typeset formulas)."""
    st = styles()
    value = st[style]
    room = WIDTH * (1 - key_width) - 2 * PAD
    cells = [[LaidOnce(breakable(text(k), WIDTH * key_width - 2 * PAD, bold=True), st["head"]),
              LaidOnce(breakable(v, room, value.fontSize), value)] for k, v in rows]
    t = Table(cells, colWidths=[WIDTH * key_width, WIDTH * (1 - key_width)], hAlign="LEFT")
    t.setStyle(TableStyle([
        ("GRID", (0, 0), (-1, -1), 0.4, GRID),
        ("BACKGROUND", (0, 0), (0, -1), HEAD_FILL),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("LEFTPADDING", (0, 0), (-1, -1), PAD),
        ("RIGHTPADDING", (0, 0), (-1, -1), PAD),
        ("TOPPADDING", (0, 0), (-1, -1), 1.5),
        ("BOTTOMPADDING", (0, 0), (-1, -1), 2.5),
    ]))
    return t


def figure(png: bytes, width_in: float, height_in: float) -> Image:
    """A matplotlib figure's PNG at its drawn size (inches), scaled down to the frame if wider or taller."""
    width, height = width_in * 72, height_in * 72
    scale = min(1.0, WIDTH / width, (HEIGHT - 30) / height)
    width, height = width * scale, height * scale
    return Image(io.BytesIO(png), width=width, height=height)


def section_break() -> CondPageBreak:
    """A new section starts on a new page unless at least 40 % of this one is left for it."""
    return CondPageBreak(0.4 * HEIGHT)


def keep(*flowables: Flowable) -> KeepTogether:
    return KeepTogether(list(flowables))


def gap(points: float = 4) -> Spacer:
    return Spacer(1, points)


def _footer(canvas: Any, doc: Any) -> None:
    canvas.saveState()
    canvas.setFont("DV", MIN_POINTS)
    canvas.setFillColor(colors.HexColor("#555555"))
    canvas.drawString(MARGIN, MARGIN / 2, "dpaudit report")
    canvas.drawRightString(A4[0] - MARGIN, MARGIN / 2, f"page {doc.page}")
    canvas.restoreState()


def build(story: list[Flowable], title: str) -> bytes:
    """Lay the story out on A4 pages and return the PDF's bytes (the same story, the same bytes)."""
    _fonts()
    buffer = io.BytesIO()
    doc = BaseDocTemplate(buffer, pagesize=A4, leftMargin=MARGIN, rightMargin=MARGIN, topMargin=MARGIN,
                          bottomMargin=MARGIN, title=title, author="dpaudit", creator="dpaudit", producer="dpaudit",
                          subject="", keywords="", invariant=1)
    frame = Frame(MARGIN, MARGIN, WIDTH, HEIGHT, id="body", leftPadding=0, rightPadding=0,
                  topPadding=0, bottomPadding=0)
    doc.addPageTemplates([PageTemplate(id="page", frames=[frame], onPage=_footer)])
    ascii85 = rl_config.useA85
    rl_config.useA85 = 0  # binary streams: ASCII85 would add a quarter to every embedded figure
    try:
        doc.build(story)
    finally:
        rl_config.useA85 = ascii85
    return buffer.getvalue()
