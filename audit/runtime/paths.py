"""Whether a text can name a file at all (standard library only: the command line's parser checks
its path flags with it before anything heavy is imported)."""

from __future__ import annotations

import os

__all__ = ["NAME_MAX", "PATH_MAX", "path_problem"]

NAME_MAX, PATH_MAX = 255, 4095  # bytes, as Linux counts them (a longer name fails with ENAMETOOLONG)

def path_problem(text: str) -> str | None:
    """Why ``text`` cannot name a file (empty, a NUL byte, a lone surrogate, a name or a path too long),
    or None."""
    if not text.strip():
        return "is empty: give a path"
    if "\0" in text:
        return "contains a NUL byte, which no file name can hold"
    try:
        raw = os.fsencode(text)
    except UnicodeEncodeError:  # a lone surrogate (from JSON's "\ud800"): no byte string spells it
        return "holds a lone surrogate character, which no file name can hold"
    if len(raw) > PATH_MAX:
        return f"is {len(raw)} bytes long: a path has at most {PATH_MAX}"
    if any(len(part) > NAME_MAX for part in raw.split(b"/")):
        return f"holds a name longer than {NAME_MAX} bytes, the longest a file name can be"
    return None
