"""What a mechanism reached from its import through its first chunk: the user's modules loaded,
the files its code read and the environment variables it looked up — hashed, so a resume can tell
whether they changed.

A run's fingerprint (:mod:`dpaudit.runs.rundir`) holds the mechanism's state and the files of the
modules that define it and that they import by name.  Code and constants reached otherwise escape
it: ``import helper`` inside ``sample``, ``importlib.import_module``, a constant read from a data
file or an environment variable — at call time, or when the user's module is imported (``EPS =
float(os.environ["EPS"])`` or ``from helper import NOISE`` at its top).  A resume after such an
edit would mix the counts of two mechanisms.  So :func:`from_import` opens a window before the
command line imports the user's modules (a config's plugins, ``--mechanism``, ``--pair``), and
:func:`watch` one while each audit's first chunk is drawn (in the parent process:
:func:`dpaudit.engine.runner.estimate` draws it there); the first :func:`watch` takes in what the
import-time window saw and closes it.  They record

* every module of the user's (a file that is neither dpaudit's, the interpreter's nor an installed
  package's: :func:`dpaudit.runtime.blame.is_user_file`) loaded in the process when the chunk
  ends — all of them, wherever they were imported: a module imported before (by the plugin's own
  import) can still be fetched from ``sys.modules`` by ``importlib`` at call time — and the source
  of each one the user's code loaded in the window even if it left ``sys.modules`` since (its
  ``.py`` or cached ``.pyc`` was opened);
* every user's file the user's code opened for reading and never for writing (a file the run
  writes is its own scratch, not an input), through one process-wide audit hook on the ``open``
  event (PEP 578: ``open``, ``os.open``, ``io.open_code``, hence ``numpy.load`` and
  ``Path.read_text`` too);
* every environment variable the user's code looked up through ``os.environ`` or ``os.environb``
  (``os.getenv``, ``os.getenvb``, ``[..]``, ``.get``, ``in``): these mappings are not audited, so
  their class's ``__getitem__``, which all of these go through, is wrapped once per process;
* a whole-environment read (iterating, ``len``, ``copy()``, ``dict(os.environ)``, ``items()``,
  printing) as the hash of the whole environment, :data:`WHOLE_ENVIRONMENT` — every name and value
  — besides the variables it looked up one by one (``copy`` and ``dict`` do): such code can depend
  on any variable, so any change refuses the resume, naming the variables that were read one by
  one (but for :data:`SHELL_BOOKKEEPING`, which a shell changes between any two commands: code that
  reads the whole environment has none of them recorded, even by a lookup of its own).
  Refusing such a resume outright would refuse it even when nothing changed; the hash
  refuses exactly when the environment differs.

"The user's code" is a read with a frame of a user's file on the call stack above where the window
was opened: dpaudit's own reads (its config, data files and run folder, which the fingerprint and
the checkpoint's checksums cover) are not inputs of the mechanism, and the frames of whoever
called dpaudit (a test calling the command line in its process) are not the mechanism's either.
Installed packages that the user's code calls or imports inside the window are recorded (their
reads have the user's frame below them).

Each item is recorded by its SHA-256 (a file larger than :data:`HASH_LIMIT` by its size and
modification time), an absent file as ``missing``, an unset variable as ``unset``; values are
never stored.  :meth:`Reach.changed` recomputes them.  Audit hooks cannot be removed, so the hook
and the wrappers are installed once and do nothing unless a window is open.

Not seen: what the mechanism reaches only in later chunks (the first is drawn on D: a file read
only on D' is missed), in worker processes or child processes; reads made before the window
(a module imported before the command line ran, as in a program calling the API, or a library's
import-time reads when dpaudit imported it first, such as numpy's); C code's ``getenv`` and
``open`` (an extension module's own reads, ``posix.environ``); the interpreter and installed
packages' own files (the environment, named by dpaudit's version only); one-run games.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import os
import stat
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from dpaudit.runtime.blame import is_user_file

__all__ = ["HASH_LIMIT", "WHOLE_ENVIRONMENT", "Reach", "Window", "from_import", "watch"]

# A file larger than this is recorded by size and modification time: hashing a data set of
# many GB once per audit would cost more than the run it protects.
HASH_LIMIT = 256 * 2**20
_KERNEL = ("/proc/", "/sys/", "/dev/")  # pseudo-files: their content is the system's state, not an input
# The record of a whole-environment read: no variable's name can hold "=" (it separates name from value).
WHOLE_ENVIRONMENT = "="
# What a shell changes between two commands of the same session without being asked: the last
# command's path (``_``), the nesting depth (``SHLVL``: one lower in a script's background job), the
# folders (``PWD``, ``OLDPWD``: a run folder may be resumed from anywhere) and the terminal's size.
# A whole-environment read is hashed without them (a lookup of one of them by name is still recorded).
SHELL_BOOKKEEPING = frozenset({b"_", b"SHLVL", b"PWD", b"OLDPWD", b"COLUMNS", b"LINES"})


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
        out += [_env_shown(name) for name, digest in sorted(self.env.items()) if env_digest(name) != digest]
        return out


def _env_shown(name: str) -> str:
    if name == WHOLE_ENVIRONMENT:
        return ("the whole environment (the code read all of it: iterated, copied or printed os.environ; a variable "
                "was set, unset or changed)")
    return f"environment variable {_shown(name)}"


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
    """``sha256:HEX`` of the variable's value (``unset``); of every name and value for
    :data:`WHOLE_ENVIRONMENT`."""
    if name == WHOLE_ENVIRONMENT:
        # the raw mapping, read around the wrapped methods (this read is dpaudit's, not the user's);
        # the variables a shell sets for itself on every command (SHELL_BOOKKEEPING) are left out
        raw = ((os.fsencode(k), os.fsencode(v)) for k, v in getattr(os.environ, "_data", {}).items())
        pairs = sorted((k, v) for k, v in raw if k not in SHELL_BOOKKEEPING)
        return "sha256:" + hashlib.sha256(b"\0".join(k + b"=" + v for k, v in pairs)).hexdigest()
    value = os.environ.get(name)
    return "unset" if value is None else "sha256:" + hashlib.sha256(os.fsencode(value)).hexdigest()


@dataclass
class Window:
    """What the process touched while a window was open (raw, before filtering)."""

    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    env: set[str] = field(default_factory=set)
    reach: Reach = field(default_factory=Reach)  # the result, once the window closed without an error
    base: FrameType | None = None  # the frame that opened it: frames below are its caller's, not the mechanism's

    def take(self, other: Window) -> None:
        self.read |= other.read
        self.written |= other.written
        self.env |= other.env


_windows: list[Window] = []  # the windows being recorded, read by the hook and the wrappers
_from_import: Window | None = None  # the import-time window, until the first watch takes it in
_installed = False


def _users_code(window: Window, frame: FrameType | None) -> bool:
    """Whether a frame of a user's file is on the stack from ``frame`` down to the window's base
    (included: a test's own reads inside ``with watch()`` are its code's)."""
    while frame is not None:
        if _users(frame.f_code.co_filename):
            return True
        if frame is window.base:
            return False
        frame = frame.f_back
    return False


def _on_event(event: str, args: tuple[Any, ...]) -> None:
    """The audit hook: notes the path of an ``open`` by the user's code while a window is open.  It
    must never raise (an exception here would fail the user's own ``open``)."""
    if not _windows or event != "open":
        return
    try:
        path, mode, flags = args[0], args[1], args[2]
        if isinstance(path, int):  # open(fd): the file was opened before, by path
            return
        name = os.path.abspath(os.fsdecode(path))
        writes = any(c in mode for c in "wax+") if isinstance(mode, str) else (
            isinstance(flags, int) and flags & os.O_ACCMODE != os.O_RDONLY)
        caller = sys._getframe(1)
        for window in list(_windows):
            if _users_code(window, caller):
                (window.written if writes else window.read).add(name)
    except Exception:  # a path we cannot read is one we cannot record: nothing to do
        return


def _note_env(self: Any, key: Any) -> None:
    """A lookup of ``key`` (:data:`WHOLE_ENVIRONMENT`: of all of it) in ``os.environ`` or
    ``os.environb``, noted in each open window whose user's code made it."""
    if not _windows or not (self is os.environ or self is getattr(os, "environb", None)):
        return
    if isinstance(key, bytes):
        key = os.fsdecode(key)
    if not isinstance(key, str):
        return
    caller = sys._getframe(2)
    for window in list(_windows):
        if _users_code(window, caller):
            window.env.add(key)


def _wrap_environ() -> None:
    """Wrap the lookups of the environment's mapping class (``os.environ`` and ``os.environb``
    share it): ``__getitem__`` notes the key; ``__iter__``, ``__len__`` and ``__repr__`` read
    every name (``copy``, ``dict()``, ``items()`` go through them) and note the whole environment."""
    environ = type(os.environ)
    getitem = environ.__getitem__

    @functools.wraps(getitem)
    def noted_getitem(self: Any, key: Any) -> Any:
        _note_env(self, key)
        return getitem(self, key)

    setattr(environ, "__getitem__", noted_getitem)  # noqa: B010  (a class attribute of the stdlib's: no other way)
    for method in ("__iter__", "__len__", "__repr__"):
        setattr(environ, method, _noting_whole(getattr(environ, method)))


def _noting_whole(original: Any) -> Any:
    @functools.wraps(original)
    def noted(self: Any) -> Any:
        _note_env(self, WHOLE_ENVIRONMENT)
        return original(self)
    return noted


def _install() -> None:
    global _installed
    if _installed:
        return
    sys.addaudithook(_on_event)
    _wrap_environ()
    _installed = True


def _opener() -> FrameType | None:
    """The frame that entered the ``with`` block of the context manager calling this: two frames
    down (the generator, then contextlib's ``__enter__``), and past any ``@contextmanager``
    generator that wraps it (``Checkpoint.recording``): a generator is suspended while the block
    runs, so it would never be met on the way down and every frame below would count."""
    frame: FrameType | None = sys._getframe(3)
    while frame is not None and frame.f_code.co_flags & inspect.CO_GENERATOR and frame.f_back is not None:
        frame = frame.f_back.f_back
    return frame


def _opened(base: FrameType | None) -> Window:
    _install()
    window = Window(base=base)
    _windows.append(window)
    return window


def _closed(window: Window) -> None:
    if window in _windows:
        _windows.remove(window)


@contextmanager
def from_import() -> Iterator[None]:
    """Record, from before the user's modules are imported, what the user's code reaches (see the
    module docstring): the first :func:`watch` takes it in and closes it; otherwise it closes
    with the block, and what it saw is dropped (a run without a checkpoint records nothing)."""
    global _from_import
    window = _opened(_opener())
    _from_import = window
    try:
        yield
    finally:
        _closed(window)
        if _from_import is window:
            _from_import = None


@contextmanager
def watch() -> Iterator[Window]:
    """Record what the process reaches inside the ``with`` block; when it ends without an error,
    the window's ``reach`` holds the filtered, hashed record (see the module docstring), with what
    the open :func:`from_import` window saw, which closes."""
    global _from_import
    window = _opened(_opener())
    try:
        yield window
    finally:
        _closed(window)
    earlier, _from_import = _from_import, None
    if earlier is not None:
        _closed(earlier)
        window.take(earlier)
    window.reach = _hashed(window)


@functools.cache
def _users(path: str) -> bool:
    # Unbounded: every window scans all of sys.modules in the same order, so a cache smaller than
    # sys.modules (a bounded LRU of 4096 against the 4,000-6,000 modules of a process that has
    # imported torch, scikit-learn and pandas) evicts each path just before it is asked again, and
    # every lookup resolves its path anew (21 CPU s of the fast test tier).  Paths are few and fixed.
    return is_user_file(path)


def _hashed(window: Window) -> Reach:
    modules = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and _users(path):
            path = os.path.abspath(path)
            modules[path] = (name, file_digest(path))
    read = {_source(path) for path in window.read} - window.written - set(modules)
    files = {path: file_digest(path) for path in sorted(read) if _input(path)}
    return Reach(modules, files, {name: env_digest(name) for name in sorted(_env_names(window.env))})


def _env_names(names: set[str]) -> set[str]:
    """The variables a window records: with the whole environment read (a copy or an iteration, which
    also looks up every name one by one), not the shell's bookkeeping, which a shell changes between
    any two commands (:data:`SHELL_BOOKKEEPING`; the whole environment's hash leaves them out too)."""
    if WHOLE_ENVIRONMENT not in names:
        return names
    return {name for name in names if os.fsencode(name) not in SHELL_BOOKKEEPING}


def _input(path: str) -> bool:
    """A file whose content can decide the outputs: the user's, not a kernel pseudo-file, not a
    compiled cache (its module's source is recorded), not a folder."""
    if path.startswith(_KERNEL) or path.endswith(".pyo") or os.path.isdir(path):
        return False
    return is_user_file(path)


def _source(path: str) -> str:
    """The source of a compiled cache ``__pycache__/m.cpython-311.pyc`` the import system opened
    (``m.py``: a module loaded from its cache is recorded by its source); any other path as is."""
    if not path.endswith(".pyc"):
        return path
    try:
        return importlib.util.source_from_cache(path)
    except ValueError:  # a .pyc outside __pycache__ (a sourceless module): recorded as itself
        return path
