"""What a mechanism reached while it ran: the user's modules loaded, the files it read and the
environment variables it looked up — hashed, so a resume can tell whether they changed.

A run's fingerprint (:mod:`dpaudit.runs.rundir`) holds the mechanism's state and the files of the
modules that define it and that they import by name.  Code and constants reached only when
``sample`` runs escape it: ``import helper`` inside ``sample``, ``importlib.import_module``, a
constant read from a data file or an environment variable.  A resume after such an edit would
mix the counts of two mechanisms.  So while the first chunk of each audit is drawn (in the
parent process: :func:`dpaudit.engine.runner.estimate` draws it there), :func:`watch` records

* every module of the user's (a file that is neither dpaudit's, the interpreter's nor an installed
  package's: :func:`dpaudit.engine.blame.is_user_file`) loaded in the process when the chunk
  ends — all of them, not only those the chunk loaded: a module imported before (by the
  plugin's own import) can still be fetched from ``sys.modules`` by ``importlib`` at call time;
* every user's file opened for reading and never for writing (a file the run writes is its own
  scratch, not an input), through one process-wide audit hook on the ``open`` event (PEP 578:
  ``open``, ``os.open``, ``io.open_code``, hence ``numpy.load`` and ``Path.read_text`` too);
* every environment variable looked up through ``os.environ`` (``os.getenv``, ``os.environ[..]``,
  ``.get``, ``in``): ``os.environ`` is not audited, so its class's ``__getitem__``, which all of
  these go through, is wrapped once per process.

Each item is recorded by its SHA-256 (a file larger than :data:`HASH_LIMIT` by its size and
modification time), an absent file as ``missing``, an unset variable as ``unset``; values are
never stored.  :meth:`Reach.changed` recomputes them.  Audit hooks cannot be removed, so the hook
and the wrapper are installed once and do nothing unless a window is open.

Not seen: what the mechanism reaches only in later chunks (the first is drawn on D: a file read
only on D' is missed), in worker processes or child processes; reads made before the first chunk
(when its module was imported, or cached by an earlier call in the process such as a search
pilot's); C code's ``getenv`` and ``os.environb``; the interpreter and installed packages (the
environment).
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dpaudit.engine.blame import is_user_file

__all__ = ["HASH_LIMIT", "Reach", "Window", "watch"]

# A file larger than this is recorded by size and modification time: hashing a data set of
# many GB once per audit would cost more than the run it protects.
HASH_LIMIT = 256 * 2**20
_KERNEL = ("/proc/", "/sys/", "/dev/")  # pseudo-files: their content is the system's state, not an input


@dataclass(frozen=True)
class Reach:
    """What one or more windows reached: ``modules`` file -> (module name, digest), ``files``
    path -> digest, ``env`` variable -> digest (see the module docstring).  Modules are keyed by
    their file: two windows may load two files under one name."""

    modules: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.modules or self.files or self.env)

    def to_dict(self) -> dict[str, Any]:
        return {"modules": {k: list(v) for k, v in sorted(self.modules.items())},
                "files": dict(sorted(self.files.items())), "env": dict(sorted(self.env.items()))}

    @classmethod
    def from_dict(cls, raw: Any) -> Reach:
        """The record :meth:`to_dict` wrote; ``ValueError`` for anything else."""
        if not isinstance(raw, dict) or set(raw) != {"modules", "files", "env"}:
            raise ValueError("not a record of what a mechanism reached")
        modules, files, env = raw["modules"], raw["files"], raw["env"]
        if not (isinstance(modules, dict) and all(isinstance(v, list) and len(v) == 2 and all(
                isinstance(x, str) for x in v) for v in modules.values())):
            raise ValueError("modules: each must be [name, digest]")
        if not all(isinstance(m, dict) and all(isinstance(v, str) for v in m.values()) for m in (files, env)):
            raise ValueError("files and env: each must map a name to a digest")
        return cls({str(k): (v[0], v[1]) for k, v in modules.items()}, dict(files), dict(env))

    def merged(self, other: Reach) -> Reach:
        return Reach({**self.modules, **other.modules}, {**self.files, **other.files}, {**self.env, **other.env})

    def beyond(self, known: Reach) -> Reach:
        """What this record holds that ``known`` does not hold with the same digest."""
        return Reach({k: v for k, v in self.modules.items() if known.modules.get(k) != v},
                     {k: v for k, v in self.files.items() if known.files.get(k) != v},
                     {k: v for k, v in self.env.items() if known.env.get(k) != v})

    def changed(self) -> list[str]:
        """What differs now from the record, e.g. ``module helper (/x/helper.py)``, ``file
        /x/eps.txt``, ``environment variable EPS``; empty when nothing does."""
        out = [f"module {_shown(name)} ({_shown(path)})" for path, (name, digest) in sorted(self.modules.items())
               if file_digest(path) != digest]
        out += [f"file {_shown(path)}" for path, digest in sorted(self.files.items()) if file_digest(path) != digest]
        out += [f"environment variable {_shown(name)}" for name, digest in sorted(self.env.items())
                if env_digest(name) != digest]
        return out


def _shown(text: str) -> str:
    """``text`` for a message: escaped when it holds a control character (the record is read from a
    folder that may come from someone else, and a terminal obeys escape sequences)."""
    return text if text.isprintable() else ascii(text)


def file_digest(path: str) -> str:
    """``sha256:HEX`` of the file's bytes (``stat:SIZE:MTIME_NS`` past :data:`HASH_LIMIT`),
    ``missing`` when there is none, ``unreadable`` when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO put in its place must not hang the resume
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return f"not a regular file (mode {stat.S_IFMT(info.st_mode):o})"
            if info.st_size > HASH_LIMIT:
                return f"stat:{info.st_size}:{info.st_mtime_ns}"
            os.set_blocking(fd, True)
            return "sha256:" + hashlib.file_digest(fh, "sha256").hexdigest()
    except FileNotFoundError:
        return "missing"
    except (OSError, ValueError):
        return "unreadable"


def env_digest(name: str) -> str:
    value = os.environ.get(name)
    return "unset" if value is None else "sha256:" + hashlib.sha256(os.fsencode(value)).hexdigest()


@dataclass
class Window:
    """What the process touched while a window was open (raw, before filtering)."""

    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    env: set[str] = field(default_factory=set)
    reach: Reach = field(default_factory=Reach)  # the result, once the window closed without an error


_open: Window | None = None  # the window being recorded, read by the hook and the wrapper
_installed = False


def _on_event(event: str, args: tuple[Any, ...]) -> None:
    """The audit hook: notes the path of an ``open`` while a window is open.  It must never raise
    (an exception here would fail the user's own ``open``)."""
    window = _open
    if window is None or event != "open":
        return
    try:
        path, mode, flags = args[0], args[1], args[2]
        if isinstance(path, int):  # open(fd): the file was opened before, by path
            return
        name = os.path.abspath(os.fsdecode(path))
        writes = any(c in mode for c in "wax+") if isinstance(mode, str) else (
            isinstance(flags, int) and flags & os.O_ACCMODE != os.O_RDONLY)
        (window.written if writes else window.read).add(name)
    except Exception:  # a path we cannot read is one we cannot record: nothing to do
        return


def _install() -> None:
    global _installed
    if _installed:
        return
    sys.addaudithook(_on_event)
    environ = type(os.environ)
    original = environ.__getitem__

    @functools.wraps(original)
    def getitem(self: Any, key: Any) -> Any:
        window = _open
        if window is not None and self is os.environ and isinstance(key, str):
            window.env.add(key)
        return original(self, key)

    setattr(environ, "__getitem__", getitem)  # noqa: B010  (a class attribute of the stdlib's: no other way)
    _installed = True


@contextmanager
def watch() -> Iterator[Window]:
    """Record what the process reaches inside the ``with`` block; when it ends without an error,
    the window's ``reach`` holds the filtered, hashed record (see the module docstring)."""
    global _open
    _install()
    window = Window()
    _open = window
    try:
        yield window
    finally:
        _open = None
    window.reach = _hashed(window)


@functools.lru_cache(maxsize=4096)
def _users(path: str) -> bool:
    return is_user_file(path)


def _hashed(window: Window) -> Reach:
    modules = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and _users(path):
            path = os.path.abspath(path)
            modules[path] = (name, file_digest(path))
    files = {path: file_digest(path) for path in sorted(window.read - window.written - set(modules))
             if _input(path)}
    return Reach(modules, files, {name: env_digest(name) for name in sorted(window.env)})


def _input(path: str) -> bool:
    """A file whose content can decide the outputs: the user's, not a kernel pseudo-file, not a
    compiled cache (its module's source is recorded), not a folder."""
    if path.startswith(_KERNEL) or path.endswith((".pyc", ".pyo")) or os.path.isdir(path):
        return False
    return is_user_file(path)
