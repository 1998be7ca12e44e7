"""The estimation split's chunks, described by two integers instead of listed.

A chunk is the unit of seeding, counting and checkpointing: chunk c of side s draws from its own
generator (:func:`dpaudit.engine.runner.chunk_rng`), so its counts never depend on where or when it runs.  A
budget of 10^13 outputs per side is 3.8·10^7 chunks of 2^18; listing their sizes, their
arguments and their per-chunk counts held gigabytes before the first count.  :class:`Chunks`
answers the size of chunk c and the outputs in the first m chunks by arithmetic, and the number
of chunks per side is capped at :data:`MAX_CHUNKS`: past ``MAX_CHUNKS × base`` outputs a chunk
grows, and a chunk larger than :data:`PART` outputs is drawn as consecutive parts of at most
:data:`PART` from its one generator (:func:`parts`), so the memory held per chunk in flight stays
that of :data:`PART` outputs.  Budgets below the cap (3.4·10^10 per side at the base of 2^18)
are chunked exactly as before, with the same seeds and counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

PART = 1 << 18          # outputs drawn at once: the runner's CHUNK
MAX_CHUNKS = 1 << 17    # chunks per side at most (a checkpoint holds one line per chunk)

__all__ = ["MAX_CHUNKS", "PART", "Chunks", "parts", "plan_chunks"]


@dataclass(frozen=True)
class Chunks:
    """``total`` outputs in chunks of ``size`` (the last one shorter), as a sequence of sizes."""

    total: int
    size: int

    def __post_init__(self) -> None:
        if self.total < 0 or self.size < 1:
            raise ValueError(f"chunks of {self.total} outputs by {self.size}: need total >= 0 and size >= 1")

    def __len__(self) -> int:
        return -(-self.total // self.size)

    def __getitem__(self, c: int) -> int:
        if not 0 <= c < len(self):
            raise IndexError(f"chunk {c} of {len(self)}")
        return min(self.size, self.total - c * self.size)

    def __iter__(self) -> Iterator[int]:
        return (self[c] for c in range(len(self)))

    def upto(self, m: int) -> int:
        """Outputs in the first ``m`` chunks."""
        return min(self.total, max(0, m) * self.size)


def plan_chunks(total: int, base: int, cap: int = MAX_CHUNKS) -> Chunks:
    """``total`` outputs in chunks of ``base``, or of the least size that keeps them at ``cap`` chunks."""
    return Chunks(total, max(base, -(-total // cap)))


def parts(size: int, part: int = PART) -> Iterator[int]:
    """The sizes a chunk of ``size`` outputs is drawn in: ``part`` at a time, the rest last."""
    full, rest = divmod(size, part)
    yield from (part for _ in range(full))
    if rest:
        yield rest
