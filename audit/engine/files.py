"""Safe files: atomic writes, no-follow appends, and an exclusive lock on a run's folder.

Result files are read by people and by CI, and a run's folder may sit in a shared place, so
no write ever follows a symbolic link planted at the target (it could overwrite any file the
user can write) and no reader ever sees half a file:

* :func:`write_atomic` writes to a randomly named temporary file created in the target's own
  folder with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (``tempfile.mkstemp``), fsyncs it and renames
  it over the target; a target that is a symbolic link is refused.
* :func:`append_line` appends one line with one ``write`` and an ``fsync`` through
  ``O_NOFOLLOW``, so a checkpoint that was replaced by a link is refused, not followed.
* :class:`FolderLock` holds ``fcntl.flock`` on ``DIR/.lock`` while a run writes ``DIR``, so two
  runs never interleave their checkpoints.
"""

from __future__ import annotations

import errno
import fcntl
import os
import tempfile
from pathlib import Path
from types import TracebackType

from dpaudit.core import InputError

LOCK_NAME = ".lock"


def _refuse_link(path: Path) -> None:
    if path.is_symlink():
        raise InputError(f"{path} is a symbolic link: dpaudit does not write through links (remove it, or "
                         "choose another path)")


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` through an exclusive, randomly named
    temporary file in the same folder, then an atomic rename; never through a symbolic link."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _refuse_link(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # O_EXCL | O_NOFOLLOW
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp's 0600 would surprise whoever reads the results
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:  # name the file: "File too large" alone does not say which one
        Path(tmp).unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _open_nofollow(path: Path, flags: int, mode: int = 0o666) -> int:
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{path} is a symbolic link: dpaudit does not read or write through links") from None
        raise


def append_line(path: str | os.PathLike, line: str) -> None:
    """Append one line (one ``write``, then ``fsync``), refusing a symbolic link at ``path``."""
    raw = line.encode("utf-8")
    fd = _open_nofollow(Path(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        written = os.write(fd, raw)
        if written != len(raw):  # a short write: the disk is full; the torn line is ignored on reading
            raise OSError(errno.ENOSPC, f"short write ({written} of {len(raw)} bytes)", str(path))
        os.fsync(fd)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    finally:
        os.close(fd)


def read_text_nofollow(path: str | os.PathLike) -> str:
    """The UTF-8 text at ``path`` (undecodable bytes replaced), refusing a symbolic link."""
    fd = _open_nofollow(Path(path), os.O_RDONLY)
    with os.fdopen(fd, "rb") as fh:
        return fh.read().decode("utf-8", errors="replace")


class FolderLock:
    """An exclusive ``flock`` on ``folder/.lock`` (non-blocking: a second run is refused at once).

    The lock file is never deleted (deleting it would let two runs lock two different files);
    it holds the pid of the run that holds it, for the message of the one refused.
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self.fd: int | None = None

    def acquire(self) -> None:
        path = self.folder / LOCK_NAME
        fd = _open_nofollow(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode("ascii", errors="replace").strip() or "?"
            os.close(fd)
            raise InputError(f"{self.folder} is in use by another dpaudit run (pid {holder}): wait for it to "
                             "finish, or write to another --out") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
