"""Formulas typeset for the PDF: the registry writes a claim's statement in plain text with TeX's
sub- and superscript marks (``Σ_D^{-1}``, ``e^{2B}``, ``λ_min``, ``N0^{3/2}``); :func:`typeset`
turns them into reportlab paragraph markup (``<sub>``, ``<super>``), so the errata appendix prints
Σ with a subscript D and a superscript −1 instead of the marks.  Scripts are set at
:data:`dpaudit.reports.layout.MIN_POINTS`, the report's smallest text.

A combining accent (the tilde of Σ̃, the private covariance; of θ̃) is drawn by the font at the
height of a lowercase letter, and reportlab does not position marks (no OpenType GPOS): over a
capital or a tall letter it falls inside the letter and vanishes, and "Σ̃_D = Σ_D + G" printed as
"Σ_D = Σ_D + G", a false statement.  :func:`typeset` raises such an accent above its letter.
"""

from __future__ import annotations

import re

from dpaudit.reports.layout import MIN_POINTS

_TAGS = {"_": "sub", "^": "super"}
# points each script is raised (lowered): less than reportlab's default, so a nested script (Σ_D^{-1} as
# a subscript) stays within the line's leading instead of running into the next line
_RISE = {"sub": 1.8, "super": 2.8}  # reportlab lowers a sub by its rise
# An unbraced script: a word (Greek letters and primes included: ε_J, e^ε, ε_add/rm), or one sign (the _+ of (x)_+).
_WORD = re.compile(r"[\w′]+(?:/\w+)?|[+−]")
ACCENTS = "\u0303\u0302\u0304\u0307"  # combining tilde, circumflex, macron, dot above
# letters that reach above a lowercase letter's height: an accent over them is raised by ACCENT_RISE
_TALL = set("bdfhkltθδλβζξϑ")
ACCENT_RISE = 0.3  # of the font size: a capital's height (0.73 em in DejaVu Sans) less a lowercase's (0.55), and a gap
BODY_POINTS = 8.0  # the size of the text a formula is set in (the report's body and "math" styles)


def _closing(markup: str, start: int) -> int:
    """The index of the brace closing the one at ``start`` (-1 when it is never closed)."""
    depth = 0
    for i in range(start, len(markup)):
        depth += {"{": 1, "}": -1}.get(markup[i], 0)
        if depth == 0:
            return i
    return -1


def _script(markup: str, start: int) -> tuple[str, int] | None:
    """(the script's text, the index after it) of a script mark's argument at ``start``."""
    if start < len(markup) and markup[start] == "{":
        end = _closing(markup, start)
        return (markup[start + 1:end], end + 1) if end > 0 else None
    found = _WORD.match(markup, start)
    return (found.group(), found.end()) if found else None


def accented(markup: str, size: float = BODY_POINTS) -> str:
    """``markup`` with each combining accent (:data:`ACCENTS`) that follows a capital or a tall
    letter raised by :data:`ACCENT_RISE` of ``size`` points, so it is drawn above the letter
    instead of inside it; the text (the letter, then its accent) is unchanged for a reader or a search."""
    out = []
    for i, ch in enumerate(markup):
        before = markup[i - 1] if i else ""
        if ch in ACCENTS and (before.isupper() or before in _TALL):
            out.append(f"<super size='{size:g}' rise='{ACCENT_RISE * size:.2g}'>{ch}</super>")
        else:
            out.append(ch)
    return "".join(out)


def typeset(markup: str) -> str:
    """``markup`` (escaped paragraph text) with each ``_x``, ``_{...}``, ``^x`` and ``^{...}`` that
    follows a character (not a space) set as a sub- or superscript, nested as written; a minus
    before a digit in a script is the minus sign (−1, not -1); an accent over a capital or a tall
    letter raised above it (:func:`accented`).  Anything else is left as it is."""
    return accented(_scripts(markup))


def _scripts(markup: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(markup):
        mark = markup[i]
        found = _script(markup, i + 1) if mark in _TAGS and i > 0 and not markup[i - 1].isspace() else None
        if found is None:
            out.append(mark)
            i += 1
            continue
        inner, i = found
        tag = _TAGS[mark]
        inner = _scripts(re.sub(r"-(?=[0-9])", "−", inner))
        out.append(f"<{tag} size='{MIN_POINTS:g}' rise='{_RISE[tag]:g}'>{inner}</{tag}>")
    return "".join(out)
