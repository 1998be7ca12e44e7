"""A run's checkpoint: every finished chunk's counts appended to ``DIR/checkpoint.jsonl`` with the
run's fingerprint and a checksum, so ``--resume`` reuses exactly the chunks of this run; and
beside it, ``DIR/checkpoint.reached.jsonl``: what the mechanism reached from the import of its
modules through each audit's first chunk (:mod:`dpaudit.runtime.reach`), checked before any chunk
is reused."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.core import InputError
from dpaudit.runtime.files import append_line, read_text_nofollow, write_atomic
from dpaudit.runtime.reach import Reach, watch

REACHED_SUFFIX = ".reached.jsonl"  # checkpoint.jsonl -> checkpoint.reached.jsonl


class Checkpoint:
    """Finished chunks' counts, appended line by line to ``path``, each line checked on reading.

    A line carries the run's ``fingerprint`` (:mod:`dpaudit.runs.rundir`), what it counts (scenario
    key, events, phase, side, chunk), its own sample count, the counts, and ``check``: the
    SHA-256 of the canonical line salted with the fingerprint.  On reading, a line that is torn,
    fails its checksum (edited, or moved to another chunk id), or disagrees with another line
    for the same chunk is rejected and its chunk redrawn; a line of another run is *foreign*
    (the caller refuses to resume).  So no chunk is ever counted twice or counted from another
    run.  The checksum guards against accidents and naive edits, not a forger who reads the code.

    ``fresh`` starts a new file (an existing one is an error: a run never appends to another's).

    The fingerprint is fixed before anything runs, so it cannot hold what ``sample`` reaches only
    when it is called, nor what its modules read when they were imported (a module, a file, an
    environment variable).  That is recorded while each audit's first chunk is drawn
    (:meth:`recording`, which takes in what :func:`dpaudit.runtime.reach.from_import` recorded
    before the command line imported the user's modules), hashed, and appended to
    :attr:`reached_path` before any count of that audit; reopening the checkpoint recomputes those
    hashes and refuses (:class:`InputError`, naming what changed) when one differs.
    """

    def __init__(self, path: str | os.PathLike, fingerprint: str = "", *, fresh: bool = False) -> None:
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.done: dict[tuple, tuple[int, list[int]]] = {}
        self.rejected: list[str] = []  # why each unusable line was dropped
        self.foreign: list[int] = []   # line numbers written by another run
        self.reached_path = self.path.with_name(self.path.stem + REACHED_SUFFIX)
        self.reached = Reach()  # what the mechanism reached, as recorded so far
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:
            if self.path.exists() or self.path.is_symlink():
                raise InputError(f"{self.path} already exists: a new run never appends to another run's checkpoint")
            self.reached_path.unlink(missing_ok=True)  # without its counts it records nothing of use
        else:
            if self.path.exists() or self.path.is_symlink():
                self._read()
            self._check_reached()

    def _read(self) -> None:
        conflicts = set()
        for number, line in enumerate(read_text_nofollow(self.path).splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                body = {k: rec[k] for k in _LINE_KEYS}
                found = (tuple(int(k) for k in body["key"]), str(body["events"]), int(body["phase"]), int(body["side"]),
                         int(body["chunk"]))
                entry = (int(body["samples"]), [int(c) for c in body["counts"]])
                check = rec["check"]
            except (ValueError, KeyError, TypeError, RecursionError):
                self.rejected.append(f"line {number}: unreadable (torn by a kill, or edited)")
                continue
            if body["run"] != self.fingerprint:
                self.foreign.append(number)
                continue
            if check != _checksum(self.fingerprint, body):
                self.rejected.append(f"line {number}: checksum mismatch (edited, or moved to another chunk)")
                continue
            if found in self.done:
                if self.done[found] != entry:
                    conflicts.add(found)
                else:
                    self.rejected.append(f"line {number}: a repeat of an earlier line (counted once)")
            self.done[found] = entry
        for found in conflicts:
            del self.done[found]
            self.rejected.append(f"chunk {found[4]} (side {found[3]}) of scenario {list(found[0])}: two lines "
                                 "with different counts")

    def _check_reached(self) -> None:
        """Read :attr:`reached_path` and refuse when what it records changed since (or cannot be read)."""
        where, name = self.path.parent, self.reached_path.name
        if not (self.reached_path.exists() or self.reached_path.is_symlink()):
            if self.done:  # counts without the record: written by an older dpaudit, or the file was removed
                raise InputError(f"{where}: {self.path.name} holds counts but {name} (what the mechanism reached "
                                 "while the run's first chunk ran) is missing, so a resume cannot tell whether that "
                                 "code or those files changed: refusing to resume; start a new run")
            return
        text = read_text_nofollow(self.reached_path)
        lines = text.splitlines()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                run, reach, check = rec["run"], Reach.from_dict(rec["reached"]), rec["check"]
            except (ValueError, KeyError, TypeError, RecursionError):
                if number == len(lines) and not text.endswith("\n"):  # torn by a kill while it was written:
                    # no count was appended after it; dropped, so the next line does not land on its end
                    write_atomic(self.reached_path, "".join(kept + "\n" for kept in lines[:-1]))
                    continue
                raise InputError(f"{where}: {name} line {number} is unreadable (edited): a resume cannot tell "
                                 "what the mechanism reached; refusing to resume; start a new run") from None
            if run != self.fingerprint:
                raise InputError(f"{where}: {name} line {number} belongs to another run (a different fingerprint): "
                                 "refusing to mix two runs' counts; start a new run")
            if check != _reached_checksum(self.fingerprint, reach):
                raise InputError(f"{where}: {name} line {number}: checksum mismatch (edited): refusing to resume; "
                                 "start a new run")
            self.reached = self.reached.merged(reach)
        changed = self.reached.changed()
        if changed:
            shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
            them = "it" if len(changed) == 1 else "they"
            raise InputError(f"cannot resume {where}: the mechanism reached {shown} while the run's first chunk "
                             f"ran or when its modules were imported before it, and {them} changed since (the "
                             f"SHA-256 is not the one {name} recorded): refusing to mix counts of two versions of "
                             "its code or inputs; restore them as they were, or start a new run (--overwrite)")

    @contextmanager
    def recording(self) -> Iterator[None]:
        """Record what the process reaches inside the block (:func:`dpaudit.runtime.reach.watch`) and,
        when it ends without an error, append what is new to :attr:`reached_path` (the file is
        written at the first window even when nothing was reached: its presence says the run
        recorded)."""
        with watch() as window:
            yield
        new = window.reach.beyond(self.reached)
        if new or not self.reached_path.exists():
            append_line(self.reached_path, json.dumps({"run": self.fingerprint, "reached": new.to_dict(),
                                                       "check": _reached_checksum(self.fingerprint, new)}) + "\n")
            self.reached = self.reached.merged(new)

    def get(self, key: tuple, events: str, side: int, chunk: int, n_events: int, size: int,
            phase: int = 1) -> np.ndarray | None:
        """The saved counts of a chunk, or None (also when they cannot be right: then it is recounted)."""
        found = self.done.get((tuple(key), events, phase, side, chunk))
        if found is None:
            return None
        samples, counts = found
        if samples != size or len(counts) != n_events or not all(0 <= c <= size for c in counts):
            return None
        return np.asarray(counts, dtype=np.int64)

    def add(self, key: tuple, events: str, side: int, chunk: int, counts: np.ndarray, size: int,
            phase: int = 1) -> None:
        ints, values = [int(k) for k in key], [int(c) for c in counts]
        body = {"run": self.fingerprint, "key": ints, "events": events, "phase": phase, "side": side, "chunk": chunk,
                "samples": int(size), "counts": values}
        append_line(self.path, json.dumps({**body, "check": _checksum(self.fingerprint, body)}) + "\n")
        self.done[(tuple(ints), events, phase, side, chunk)] = (int(size), values)

    def compact(self) -> None:
        """Rewrite the file with only the lines that are used (after rejected or foreign lines)."""
        lines = []
        for (key, events, phase, side, chunk), (samples, counts) in sorted(self.done.items()):
            body = {"run": self.fingerprint, "key": list(key), "events": events, "phase": phase, "side": side,
                    "chunk": chunk, "samples": samples, "counts": counts}
            lines.append(json.dumps({**body, "check": _checksum(self.fingerprint, body)}) + "\n")
        write_atomic(self.path, "".join(lines))
        self.rejected, self.foreign = [], []


_LINE_KEYS = ("run", "key", "events", "phase", "side", "chunk", "samples", "counts")


def _checksum(fingerprint: str, body: dict[str, Any]) -> str:
    canonical = json.dumps({k: body[k] for k in _LINE_KEYS}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{fingerprint}\n{canonical}".encode()).hexdigest()


def _reached_checksum(fingerprint: str, reach: Reach) -> str:
    canonical = json.dumps(reach.to_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{fingerprint}\nreached\n{canonical}".encode()).hexdigest()


def recording(checkpoint: Checkpoint | None) -> AbstractContextManager[None]:
    """:meth:`Checkpoint.recording`, or nothing to record without a checkpoint."""
    return checkpoint.recording() if checkpoint is not None else nullcontext()


def events_fingerprint(events: list, levels: Any, n_est: int) -> str:
    """Identifies the counted events, so a checkpoint is only reused for the same audit."""
    text = json.dumps([e.to_dict() for e in events], sort_keys=True, default=str) + repr(levels) + repr(n_est)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


