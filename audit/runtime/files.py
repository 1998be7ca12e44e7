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
  runs never interleave their checkpoints.  ``fcntl`` is POSIX-only and imported only there, so the
  package (and an audit through the API, which writes no folder) imports on any platform.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from types import ModuleType, TracebackType

from dpaudit.core import InputError
from dpaudit.runtime.paths import path_problem

LOCK_NAME = ".lock"


def _refuse_link(path: Path) -> None:
    if path.is_symlink():
        raise InputError(f"{path} is a symbolic link: dpaudit does not write through links (remove it, or "
                         "choose another path)")


# Inputs are read whole: a config or a results file larger than this is not one dpaudit wrote.
MAX_INPUT_BYTES = 64 * 2**20




def _regular_or_absent(path: Path) -> None:
    """Refuse a target that exists and is not a regular file: renaming over a device node, a FIFO
    or a socket would replace it (a report written over ``/dev/full`` would silently become a file)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{path} is a folder: give a file name to write")
    if not stat.S_ISREG(mode) and not stat.S_ISLNK(mode):
        raise InputError(f"{path} exists and is not a regular file (a device, FIFO or socket): dpaudit writes "
                         "only regular files; choose another path")


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` through an exclusive, randomly named
    temporary file in the same folder, flushed and fsynced, then an atomic rename; never through
    a symbolic link, never over anything but a regular file.  A failure to write is an
    ``OSError`` naming ``path`` (the caller reports it: a full disk is an environment failure)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _refuse_link(path)
    _regular_or_absent(path)
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
        _sync_folder(path.parent)
    except OSError as exc:  # name the file: "File too large" alone does not say which one
        Path(tmp).unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _sync_folder(folder: Path) -> None:
    """fsync the folder, so the rename itself survives a crash (the file's data was synced before)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):  # file systems that cannot sync a folder
            raise
    finally:
        os.close(fd)


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
    fd = _open_nofollow(Path(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(f"{path} exists and is not a regular file (a device, FIFO or socket): dpaudit "
                             "appends only to regular files")
        written = os.write(fd, raw)
        if written != len(raw):  # a short write: the disk is full; the torn line is ignored on reading
            raise OSError(errno.ENOSPC, f"short write ({written} of {len(raw)} bytes)", str(path))
        os.fsync(fd)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    finally:
        os.close(fd)


def read_regular(path: str | os.PathLike, what: str, limit: int | None = None, follow: bool = True) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them; anything else (a
    symbolic link unless ``follow``, a FIFO, a device such as ``/dev/zero``, a folder, a larger file) is an
    :class:`InputError` naming ``what`` and the path.  Opened non-blocking, so a FIFO with no
    writer is refused at once instead of hanging.  ``limit`` defaults to :data:`MAX_INPUT_BYTES`."""
    path = Path(path)
    limit = MAX_INPUT_BYTES if limit is None else limit
    problem = path_problem(str(path))
    if problem:
        raise InputError(f"{what} {path!s:.200} {problem}")
    try:
        fd = (os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC) if follow
              else _open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK))
    except InputError:
        raise InputError(f"{what} {path} is a symbolic link: dpaudit does not read through links") from None
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file (a device, FIFO or socket)"
            raise InputError(f"{what} {path} is {kind}: give a regular file")
        if info.st_size > limit:
            raise InputError(f"{what} {path} is {info.st_size} bytes: at most {limit} are read")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise InputError(f"{what} {path} is more than {limit} bytes: at most {limit} are read")
    return raw


def check_regular(path: str | os.PathLike, what: str) -> None:
    """Refuse, at once, anything at ``path`` but a readable regular file (see :func:`read_regular`)."""
    _regular_input(Path(path), what)


def _regular_input(path: Path, what: str) -> None:
    problem = path_problem(str(path))
    if problem:
        raise InputError(f"{what} {path!s:.200} {problem}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(f"{what} {path} is not a regular file (a folder, device, FIFO or socket): give a "
                             "regular file")
    finally:
        os.close(fd)


def check_output(path: str | os.PathLike, flag: str, folder: bool) -> None:
    """Refuse an output path before any work: it must be nameable, and its nearest existing
    ancestor (or itself, for a ``folder``) a writable folder; a file target must not be a folder
    or a non-regular file.  Failures after this check are environment failures (exit 3)."""
    path = Path(path)
    problem = path_problem(str(path))
    if problem:
        raise InputError(f"{flag} {path!s:.200} {problem}")
    if not folder:
        if path.is_symlink():
            raise InputError(f"{flag} {path} is a symbolic link: dpaudit does not write through links")
        try:
            _regular_or_absent(path)
        except OSError as exc:
            raise InputError(f"{flag} {path}: {exc.strerror or exc}") from None
        except InputError as exc:
            raise InputError(f"{flag} {exc}") from None
    probe = path if folder else path.parent
    try:
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        usable = probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)
    except (OSError, ValueError) as exc:
        raise InputError(f"{flag} {path}: {exc}") from None
    if not usable:
        raise InputError(f"{flag} {path}: {probe} is not a writable folder")
    if str(probe).startswith(("/proc", "/sys")) and probe != path:
        raise InputError(f"{flag} {path}: {probe} is a kernel file system, not a place for files")


def read_text_nofollow(path: str | os.PathLike) -> str:
    """The UTF-8 text at ``path`` (undecodable bytes replaced), refusing a symbolic link."""
    fd = _open_nofollow(Path(path), os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a device (endless zeros) or a FIFO (no end): refused
            raise InputError(f"{path} is not a regular file (a device, FIFO or socket): dpaudit reads only "
                             "regular files")
        os.set_blocking(fd, True)
        return fh.read().decode("utf-8", errors="replace")


def _fcntl() -> ModuleType:
    """The ``fcntl`` module, or an ``OSError`` (an environment failure, exit 3) saying what is missing."""
    try:
        import fcntl  # optional: POSIX only (not on Windows), and only a run's folder lock needs it
    except ImportError:
        raise OSError(errno.ENOSYS, "locking a run's folder (--out, --resume) needs fcntl.flock, which this "
                      "platform does not have (POSIX only: Linux, macOS); an audit through the Python API "
                      "writes no folder and runs without it") from None
    return fcntl


class FolderLock:
    """An exclusive ``flock`` on ``folder/.lock`` (non-blocking: a second run is refused at once).

    The lock file holds the pid of the run that holds it, for the message of the one refused.
    :meth:`release` deletes it while still holding the lock, so a finished run's folder holds no
    ``.lock``.  A run that opened the file just before it was deleted would then lock a file no
    longer in the folder, and a third run a new one: so :meth:`acquire` keeps a lock only when the
    file it locked is still the one at ``folder/.lock`` (same inode), and otherwise tries again.
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self.fd: int | None = None

    def acquire(self) -> None:
        fcntl = _fcntl()  # before the file is opened: nothing to close if the platform has no flock
        path = self.folder / LOCK_NAME
        for _ in range(100):  # each retry means another run released (and deleted) the file meanwhile
            fd = _open_nofollow(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 32).decode("ascii", errors="replace").strip() or "?"
                os.close(fd)
                raise InputError(f"{self.folder} is in use by another dpaudit run (pid {holder}): wait for it to "
                                 "finish, or write to another --out") from None
            if self._current(fd):
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self.fd = fd
                return
            os.close(fd)  # locked a file its holder deleted on release: lock the folder's new one
        raise InputError(f"{self.folder} is in use by other dpaudit runs starting and ending: try again")

    def _current(self, fd: int) -> bool:
        """Whether ``fd`` is the file now at ``folder/.lock`` (not one deleted since it was opened)."""
        try:
            here = os.stat(self.folder / LOCK_NAME, follow_symlinks=False)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)

    def release(self) -> None:
        """Delete ``.lock`` (still holding it, so no other run holds it meanwhile) and unlock."""
        if self.fd is not None:
            fcntl = _fcntl()
            try:
                if self._current(self.fd):
                    os.unlink(self.folder / LOCK_NAME)
            except OSError:  # a folder made read-only meanwhile: the file stays, the lock goes
                pass
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
